//! The formats over HTTP: content negotiation with the Accept headers that
//! Prometheus sends, gzip, the other routes, and every body checked against
//! what was written: text bodies by promtool and prometheus_client's
//! parsers, protobuf bodies decoded with prost into client_model's
//! messages.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use prost::Message;
use shmetrics_core::{FamilyDesc, Kind, Options, Store};
use shmetrics_expo::protobuf::proto::{MetricFamily, MetricType};
use shmetrics_expo::{Escaping, Format};

use crate::util::*;

/// A sample the exposition must contain.
struct Want {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
    /// An OpenMetrics `_created` sample: compared to within a microsecond.
    created: bool,
}

/// A family the exposition must contain.
struct WantFamily {
    /// The family name as prometheus_client reports it (counters without
    /// `_total`).
    name: String,
    kind: &'static str,
    help: String,
    unit: String,
    samples: Vec<Want>,
}

fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl WantFamily {
    fn new(desc: &FamilyDesc) -> WantFamily {
        let name = match desc.kind {
            Kind::Counter => desc.name.strip_suffix("_total").unwrap_or(&desc.name),
            _ => &desc.name,
        };
        WantFamily {
            name: name.to_string(),
            kind: desc.kind.as_str(),
            help: desc.help.clone(),
            unit: desc.unit.clone(),
            samples: Vec::new(),
        }
    }

    fn sample(&mut self, suffix: &str, labels: Vec<(String, String)>, value: f64) {
        self.samples.push(Want {
            name: format!("{}{suffix}", self.name),
            labels,
            value,
            created: false,
        });
    }

    fn created(&mut self, labels: Vec<(String, String)>, unix_ns: u64) {
        self.samples.push(Want {
            name: format!("{}_created", self.name),
            labels,
            value: unix_ns as f64 / 1e9,
            created: true,
        });
    }
}

/// The creation time the store recorded for a series.
fn created_ns(store: &Store, family: &str, values: &[&str]) -> u64 {
    let snap = store.snapshot().unwrap();
    let fam = snap.family(family).unwrap();
    let s = fam
        .series()
        .find(|s| s.label_values().eq(values.iter().copied()))
        .unwrap();
    s.created_unix_ns()
}

const HTTP_HELP: &str = "Requests served.\nSecond line with a backslash \\ and \"quotes\".";
const TRICKY_ROUTE: &str = "/a\"b\\c\nd";

/// Writes the store; returns what every exposition must contain and the
/// writing store (kept open, so its writer stays live).
fn write_store(path: &Path) -> (Vec<WantFamily>, Store) {
    let store = Store::open(
        path,
        &Options {
            max_series: 1024,
            max_writers: 8,
            ..Options::default()
        },
    )
    .unwrap();
    let mut want = Vec::new();

    // A counter with labels that need escaping, integral and fractional
    // increments.
    let desc = FamilyDesc::new("http_requests_total", Kind::Counter)
        .help(HTTP_HELP)
        .labels(&["route", "status"]);
    let c = store.register(&desc).unwrap();
    let mut f = WantFamily::new(&desc);
    let rows: [(&str, &str, &[f64]); 3] = [
        ("/", "200", &[3.0]),
        ("/login", "500", &[1.0, 0.5]),
        (TRICKY_ROUTE, "é日本 ✓", &[2.0, 0.25]),
    ];
    for (route, status, adds) in rows {
        let s = store.series(&c, &[route, status]).unwrap();
        for a in adds {
            store.counter_add(s, *a).unwrap();
        }
        let labels = l(&[("route", route), ("status", status)]);
        f.sample("_total", labels.clone(), adds.iter().sum());
        f.created(
            labels,
            created_ns(&store, "http_requests", &[route, status]),
        );
    }
    want.push(f);

    // Gauges: labelled, negative, and one with a unit.
    let desc = FamilyDesc::new("room_temperature_celsius", Kind::Gauge)
        .help("Room temperature.")
        .unit("celsius")
        .labels(&["room"]);
    let g = store.register(&desc).unwrap();
    let mut f = WantFamily::new(&desc);
    for (room, v) in [("kitchen", 21.5), ("cellar", -3.25), ("attic", 0.0)] {
        store
            .gauge_set(store.series(&g, &[room]).unwrap(), v)
            .unwrap();
        f.sample("", l(&[("room", room)]), v);
    }
    want.push(f);

    let desc = FamilyDesc::new("queue_size_bytes", Kind::Gauge)
        .help("Bytes queued.")
        .unit("bytes");
    let g = store.register(&desc).unwrap();
    store
        .gauge_set(store.series(&g, &[]).unwrap(), 1024.0)
        .unwrap();
    let mut f = WantFamily::new(&desc);
    f.sample("", vec![], 1024.0);
    want.push(f);

    // A histogram: buckets computed here from the observations.
    let bounds = [0.1, 0.5, 1.0, 5.0];
    let le = ["0.1", "0.5", "1.0", "5.0", "+Inf"];
    let desc = FamilyDesc::new("request_duration_seconds", Kind::Histogram)
        .help("Request latency.")
        .unit("seconds")
        .labels(&["method"])
        .buckets(&bounds);
    let h = store.register(&desc).unwrap();
    let mut f = WantFamily::new(&desc);
    let rows: [(&str, &[f64]); 2] = [
        ("GET", &[0.0625, 0.1, 0.375, 0.375, 2.0, 12.0]),
        ("POST", &[]),
    ];
    for (method, obs) in rows {
        let s = store.series(&h, &[method]).unwrap();
        for o in obs {
            store.observe(s, *o).unwrap();
        }
        for (i, b) in bounds.iter().chain(&[f64::INFINITY]).enumerate() {
            let n = obs.iter().filter(|o| **o <= *b).count();
            f.sample("_bucket", l(&[("method", method), ("le", le[i])]), n as f64);
        }
        f.sample("_count", l(&[("method", method)]), obs.len() as f64);
        f.sample("_sum", l(&[("method", method)]), obs.iter().sum());
        f.created(
            l(&[("method", method)]),
            created_ns(&store, "request_duration_seconds", &[method]),
        );
    }
    want.push(f);

    // A summary.
    let desc = FamilyDesc::new("rpc_duration_seconds", Kind::Summary)
        .help("RPC latency.")
        .labels(&["service"]);
    let sm = store.register(&desc).unwrap();
    let s = store.series(&sm, &["auth"]).unwrap();
    store.observe(s, 1.5).unwrap();
    store.observe(s, 2.5).unwrap();
    let mut f = WantFamily::new(&desc);
    f.sample("_count", l(&[("service", "auth")]), 2.0);
    f.sample("_sum", l(&[("service", "auth")]), 4.0);
    f.created(
        l(&[("service", "auth")]),
        created_ns(&store, "rpc_duration_seconds", &["auth"]),
    );
    want.push(f);

    (want, store)
}

/// Checks the store's families in a parsed exposition: they come first,
/// in registration order, with exactly the samples written.
fn check_store_families(parsed: &[ParsedFamily], want: &[WantFamily], om: bool, what: &str) {
    assert!(parsed.len() >= want.len(), "{what}: too few families");
    for (got, want) in parsed.iter().zip(want) {
        let at = format!("{what}: family {}", want.name);
        assert_eq!(got.name, want.name, "{at}: name (families out of order?)");
        assert_eq!(got.kind, want.kind, "{at}: type");
        assert_eq!(got.help, want.help, "{at}: help");
        if om {
            assert_eq!(got.unit, want.unit, "{at}: unit");
        }
        let want_samples: Vec<&Want> = want.samples.iter().filter(|s| om || !s.created).collect();
        assert_eq!(
            got.samples.len(),
            want_samples.len(),
            "{at}: sample count; got {:#?}",
            got.samples
        );
        for w in want_samples {
            let labels: BTreeMap<String, String> = w.labels.iter().cloned().collect();
            let g = got
                .samples
                .iter()
                .find(|s| s.name == w.name && s.labels == labels)
                .unwrap_or_else(|| {
                    panic!(
                        "{at}: missing {}{:?}; got {:#?}",
                        w.name, labels, got.samples
                    )
                });
            if w.created {
                assert!(
                    (g.value - w.value).abs() <= 1e-6,
                    "{at}: {}{labels:?} = {}, expected {}",
                    w.name,
                    g.value,
                    w.value
                );
            } else {
                assert_eq!(g.value, w.value, "{at}: {}{labels:?}", w.name);
            }
        }
    }
}

/// The exporter's and the store's own families, as prometheus_client
/// names them, with their types.
const OWN: &[(&str, &str)] = &[
    ("shmetrics_build_info", "gauge"),
    ("shmetrics_exporter_scrapes", "counter"),
    ("shmetrics_exporter_scrapes_by_format", "counter"),
    ("shmetrics_exporter_renders", "counter"),
    ("shmetrics_exporter_render_seconds", "counter"),
    ("shmetrics_exporter_response_bytes", "counter"),
    ("shmetrics_exporter_rejected_connections", "counter"),
    ("shmetrics_exporter_tls_handshake_failures", "counter"),
    ("shmetrics_exporter_last_render_seconds", "gauge"),
    ("shmetrics_exporter_snapshot_bytes", "gauge"),
    ("shmetrics_store_attached", "gauge"),
    ("shmetrics_store_file_info", "gauge"),
    ("shmetrics_store_attached_since_seconds", "gauge"),
    ("shmetrics_store_file_removed", "gauge"),
    ("shmetrics_store_attaches", "counter"),
    ("shmetrics_store_families", "gauge"),
    ("shmetrics_store_series", "gauge"),
    ("shmetrics_store_label_bytes", "gauge"),
    ("shmetrics_store_writers", "gauge"),
    ("shmetrics_store_writer_claims", "counter"),
    ("shmetrics_store_writer_reuses", "counter"),
    ("shmetrics_store_writers_exhausted", "counter"),
    ("shmetrics_store_overflows", "counter"),
    ("shmetrics_store_lock_recoveries", "counter"),
    ("shmetrics_store_series_expired", "counter"),
    ("shmetrics_exporter_connections", "gauge"),
    ("shmetrics_exporter_evicted_connections", "counter"),
];

/// Checks the own families: all present with their types and the values
/// known at this point. `earlier_scrapes` is how many `/metrics`
/// responses this server sent before this one.
fn check_own_families(parsed: &[ParsedFamily], n_user: usize, earlier_scrapes: u64, what: &str) {
    let own: Vec<&ParsedFamily> = parsed[n_user..].iter().collect();
    let names: Vec<(&str, &str)> = own
        .iter()
        .map(|f| (f.name.as_str(), f.kind.as_str()))
        .collect();
    assert_eq!(names, OWN, "{what}: the own families");
    let by = |n: &str| own.iter().find(|f| f.name == n).unwrap();
    let total = |n: &str| format!("{n}_total");
    for f in &own {
        assert!(!f.help.is_empty(), "{what}: {} has no help", f.name);
        assert!(!f.samples.is_empty(), "{what}: {} has no sample", f.name);
        for s in &f.samples {
            assert!(
                s.value.is_finite() && s.value >= 0.0,
                "{what}: {} = {}",
                s.name,
                s.value
            );
        }
    }
    let n = "shmetrics_exporter_scrapes";
    assert_eq!(
        by(n).value(&total(n), &[]),
        Some(earlier_scrapes as f64),
        "{what}: {n} must count the scrapes answered before this one"
    );
    let n = "shmetrics_exporter_scrapes_by_format";
    let by_format: Vec<(String, f64)> = by(n)
        .samples
        .iter()
        .map(|s| (s.labels["format"].clone(), s.value))
        .collect();
    let names: Vec<&str> = by_format.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["text", "openmetrics", "protobuf"], "{what}: {n}");
    assert_eq!(
        by_format.iter().map(|(_, v)| v).sum::<f64>(),
        earlier_scrapes as f64,
        "{what}: {n} must add up to the scrapes"
    );
    let n = "shmetrics_exporter_rejected_connections";
    assert_eq!(by(n).value(&total(n), &[]), Some(0.0), "{what}: {n}");
    let n = "shmetrics_exporter_renders";
    let renders = by(n).value(&total(n), &[]).unwrap();
    // Sequential scrapes share nothing: each one arrived after the last
    // render started, so each rendered anew (and a render counts the
    // renders done before it).
    assert_eq!(
        renders, earlier_scrapes as f64,
        "{what}: {renders} renders after {earlier_scrapes} sequential scrapes"
    );
    let fams = by("shmetrics_store_families");
    assert_eq!(
        fams.value("shmetrics_store_families", &[("kind", "used")]),
        Some(n_user as f64),
        "{what}: families used"
    );
    assert_eq!(
        fams.value("shmetrics_store_families", &[("kind", "capacity")]),
        Some(Options::default().max_families as f64),
        "{what}: families capacity"
    );
    let series = by("shmetrics_store_series");
    assert_eq!(
        series.value("shmetrics_store_series", &[("kind", "capacity")]),
        Some(1024.0),
        "{what}: series capacity"
    );
    let used = series
        .value("shmetrics_store_series", &[("kind", "used")])
        .unwrap();
    // 3 counters, 3 + 1 gauges, 2 histograms, 1 summary written; overflow
    // series may be allocated on top.
    assert!(used >= 10.0, "{what}: {used} series allocated");
    let writers = by("shmetrics_store_writers");
    assert_eq!(
        writers.value("shmetrics_store_writers", &[("state", "live")]),
        Some(1.0),
        "{what}: one live writer (this process)"
    );
    assert_eq!(
        writers.value("shmetrics_store_writers", &[("state", "capacity")]),
        Some(8.0),
        "{what}: writer slots"
    );
}

/// Replaces the values of the exporter's own samples, which advance from
/// one scrape to the next (scrapes, bytes, render time).
fn mask_own(body: &str) -> String {
    body.lines()
        .map(|line| match line.rsplit_once(' ') {
            Some((series, _)) if line.starts_with("shmetrics_exporter_") => format!("{series} X\n"),
            _ => format!("{line}\n"),
        })
        .collect()
}

/// Turns `\"` into `"`, leaving every other escape sequence as it is.
fn unescape_quotes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('"') => out.push('"'),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// promtool on a text-format body: it must parse and lint clean.
fn promtool_text(body: &str, what: &str) {
    let (code, out) = promtool_check(body);
    assert_eq!(
        code, 0,
        "{what}: promtool check metrics failed:\n{out}\n--- body:\n{body}"
    );
    assert!(out.trim().is_empty(), "{what}: promtool printed:\n{out}");
}

/// promtool on an OpenMetrics body. promtool has no OpenMetrics parser;
/// its text parser reads OpenMetrics except for `\"` in HELP, which is
/// undone here. It must parse (exit 1 is a parse error), and its only lint
/// findings may be those OpenMetrics naming causes in a text linter:
/// `_created` samples and counters' `_total` samples read as families
/// without help.
fn promtool_openmetrics(body: &str, counters: &[&str], what: &str) {
    assert!(body.ends_with("\n# EOF\n"), "{what}: no # EOF at the end");
    let for_promtool: String = body
        .lines()
        .map(|l| match l.strip_prefix("# HELP ") {
            Some(help) => format!("# HELP {}\n", unescape_quotes(help)),
            None => format!("{l}\n"),
        })
        .collect();
    let (code, out) = promtool_check(&for_promtool);
    assert!(
        code == 0 || code == 3,
        "{what}: promtool could not parse OpenMetrics (exit {code}):\n{out}\n{for_promtool}"
    );
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let name = line
            .strip_suffix(" no help text")
            .unwrap_or_else(|| panic!("{what}: unexpected promtool finding: {line}\n{out}"));
        let explained = name.ends_with("_created")
            || name
                .strip_suffix("_total")
                .is_some_and(|base| counters.contains(&base));
        assert!(
            explained,
            "{what}: unexpected promtool finding: {line}\n{out}"
        );
    }
}

#[test]
fn formats_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let (want, _writer) = write_store(&path);
    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
    });
    let addr = server.addr;

    let r = get(addr, "/healthz", &[]);
    assert_eq!(r.status, 200, "/healthz: {}", r.text());
    assert!(r.text().starts_with("ok: "), "/healthz: {}", r.text());

    let counters: Vec<&str> = want
        .iter()
        .filter(|f| f.kind == "counter")
        .map(|f| f.name.as_str())
        .chain(OWN.iter().filter(|(_, k)| *k == "counter").map(|(n, _)| *n))
        .collect();
    let cases: &[(&str, Option<&str>, Format, &str)] = &[
        ("no Accept", None, Format::PrometheusText, CT_TEXT),
        (
            "Prometheus 2.x",
            Some(ACCEPT_PROM2),
            Format::OpenMetrics,
            CT_OPENMETRICS,
        ),
        (
            "Prometheus 3.x",
            Some(ACCEPT_PROM3),
            Format::OpenMetrics,
            CT_OPENMETRICS_UTF8,
        ),
        (
            "Prometheus 3.x, text first",
            Some(ACCEPT_PROM3_TEXT_FIRST),
            Format::PrometheusText,
            CT_TEXT_UTF8,
        ),
        (
            "Prometheus 2.0-2.4",
            Some(ACCEPT_PROM20),
            Format::PrometheusText,
            CT_TEXT,
        ),
    ];
    let mut scrapes = 0u64;
    for (case, accept, format, want_ct) in cases {
        let mut plain_body = None;
        for gzip in [false, true] {
            let what = format!("{case}{}", if gzip { ", gzip" } else { "" });
            let mut headers = Vec::new();
            if let Some(a) = accept {
                headers.push(("Accept", *a));
            }
            if gzip {
                headers.push(("Accept-Encoding", "gzip, deflate, br"));
            }
            let r = get(addr, "/metrics", &headers);
            assert_eq!(r.status, 200, "{what}");
            scrapes += 1;
            assert_eq!(r.header("content-type"), Some(*want_ct), "{what}");
            let vary = r.headers_named("vary").join(",").to_ascii_lowercase();
            assert!(
                vary.contains("accept") && vary.contains("accept-encoding"),
                "{what}: Vary is {vary:?}"
            );
            if gzip {
                assert_eq!(r.header("content-encoding"), Some("gzip"), "{what}");
                assert_eq!(&r.body[..2], &[0x1f, 0x8b], "{what}: not a gzip stream");
            } else {
                assert_eq!(r.header("content-encoding"), None, "{what}");
            }
            assert_eq!(
                r.header("content-length")
                    .map(|v| v.parse::<usize>().unwrap()),
                Some(r.body.len()),
                "{what}: Content-Length"
            );
            let body = r.text();
            assert!(
                body.ends_with('\n'),
                "{what}: body does not end in a newline"
            );

            // The same data, plain or compressed: only the exporter's own
            // counters move between the two scrapes.
            match &plain_body {
                None => plain_body = Some(body.clone()),
                Some(plain) => assert_eq!(
                    mask_own(&body),
                    mask_own(plain),
                    "{what}: the gzip body differs from the plain one"
                ),
            }

            let om = *format == Format::OpenMetrics;
            match format {
                Format::PrometheusText => promtool_text(&body, &what),
                Format::OpenMetrics => promtool_openmetrics(&body, &counters, &what),
                Format::Protobuf => unreachable!("protobuf_over_http checks protobuf"),
            }
            let parsed = python_parse(&body, if om { "openmetrics" } else { "text" }, dir.path());
            check_store_families(&parsed, &want, om, &what);
            check_own_families(&parsed, want.len(), scrapes - 1, &what);
            // The raw text: the tricky label value escaped as the formats
            // require, the help's newline and backslash escaped.
            assert!(
                body.contains(r#"route="/a\"b\\c\nd",status="é日本 ✓""#),
                "{what}: the escaped label value is missing:\n{body}"
            );
            assert!(
                body.contains(r"Requests served.\nSecond line with a backslash \\ and "),
                "{what}: the escaped help is missing:\n{body}"
            );
        }
    }

    // The renderer's gzip, exactly: a render compressed as it is made
    // and a plain render of the same (unchanged) store, without the
    // exporter's own metrics, which change with every render.
    server.renderer.exporter_metrics_on_page(false);
    for format in Format::ALL {
        let arrived = Instant::now();
        let zipped = server
            .renderer
            .get(format, Escaping::Underscores, true, arrived)
            .unwrap();
        let plain = server
            .renderer
            .get(format, Escaping::Underscores, false, arrived)
            .unwrap();
        assert_eq!(
            gunzip(&zipped.body.to_vec()),
            plain.body.to_vec(),
            "{format:?}: gzip does not decompress to the plain render"
        );
        assert!(
            plain.body.len() > 500,
            "{format:?}: {} bytes",
            plain.body.len()
        );
    }
    // Idle, the renderer gives its pages back (only pages no scrape asked
    // for within the idle time), and renders the same page after.
    let text = |arrived| {
        let r = server.renderer.get(
            Format::PrometheusText,
            Escaping::Underscores,
            false,
            arrived,
        );
        r.unwrap().body.to_vec()
    };
    let before = text(Instant::now());
    let kept = server.renderer.snapshot_bytes();
    assert!(kept > 0, "no snapshot kept after a scrape");
    assert!(
        !server.renderer.release_idle(Duration::from_secs(3600)),
        "a fresh page released"
    );
    assert_eq!(server.renderer.snapshot_bytes(), kept);
    assert!(
        server.renderer.release_idle(Duration::ZERO),
        "the pages were not released"
    );
    assert_eq!(
        server.renderer.snapshot_bytes(),
        0,
        "the snapshot was kept while idle"
    );
    assert!(
        !server.renderer.release_idle(Duration::ZERO),
        "released twice"
    );
    assert_eq!(text(Instant::now()), before);
    server.renderer.exporter_metrics_on_page(true);

    // HEAD: the headers of a scrape, no body.
    let r = request(addr, "HEAD", "/metrics", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some(CT_TEXT));

    // The landing page links /metrics and shows the status: the store
    // and the families with most series.
    let r = get(addr, "/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let page = r.text();
    assert!(page.contains("<a href=\"/metrics\">"), "{page}");
    assert!(
        page.contains(&path.display().to_string()),
        "the status page does not name the store:\n{page}"
    );
    assert!(page.contains("<h2>Largest families</h2>"), "{page}");
    for (fam, kind, n) in [
        ("http_requests", "counter", 3),
        ("room_temperature_celsius", "gauge", 3),
        ("request_duration_seconds", "histogram", 2),
        ("queue_size_bytes", "gauge", 1),
        ("rpc_duration_seconds", "summary", 1),
    ] {
        let row = format!("<tr><td>{fam}</td><td>{kind}</td><td class=\"n\">{n}</td>");
        assert!(
            page.contains(&row),
            "the status page does not list {fam} with {n} series:\n{page}"
        );
    }
    assert!(page.contains("<th>series</th><td>"), "{page}");

    // Other paths and methods.
    for p in ["/nope", "/metrics/", "/metricsx", "/healthz/x"] {
        let r = get(addr, p, &[]);
        assert_eq!(r.status, 404, "GET {p}: {}", r.text());
    }
    for m in ["POST", "PUT", "DELETE"] {
        let r = request(addr, m, "/metrics", &[("Content-Length", "0")]).unwrap();
        assert_eq!(r.status, 405, "{m} /metrics");
        let allow = r.header("allow").unwrap_or("");
        assert!(
            allow.contains("GET") && allow.contains("HEAD"),
            "{m} /metrics: Allow is {allow:?}"
        );
    }
    // After all that, the scrape count is exact.
    assert_eq!(
        server
            .renderer
            .stats
            .scrapes
            .load(std::sync::atomic::Ordering::Relaxed),
        scrapes + 1, // the HEAD request
    );
    server.stop();
}

/// Families and series created after the exporter started (and after it
/// rendered) appear in the next scrape, with their values; so do updates.
#[test]
fn later_writes_appear_in_later_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(
        &path,
        &Options {
            max_series: 64,
            max_writers: 4,
            ..Options::default()
        },
    )
    .unwrap();
    let c = store
        .register(
            &FamilyDesc::new("early_total", Kind::Counter)
                .help("Early.")
                .labels(&["k"]),
        )
        .unwrap();
    store
        .counter_inc(store.series(&c, &["a"]).unwrap())
        .unwrap();
    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
    });
    let body = get(server.addr, "/metrics", &[]).text();
    assert!(body.contains("\nearly_total{k=\"a\"} 1\n"), "{body}");
    assert!(!body.contains("late_seconds"), "{body}");

    // A new series in a known family, a new family, an update.
    store
        .counter_add(store.series(&c, &["b"]).unwrap(), 5.0)
        .unwrap();
    store
        .counter_inc(store.series(&c, &["a"]).unwrap())
        .unwrap();
    let h = store
        .register(
            &FamilyDesc::new("late_seconds", Kind::Histogram)
                .help("Late.")
                .buckets(&[1.0]),
        )
        .unwrap();
    store.observe(store.series(&h, &[]).unwrap(), 0.5).unwrap();
    for accept in [None, Some(ACCEPT_PROM3)] {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let body = get(server.addr, "/metrics", &headers).text();
        let what = format!("Accept {accept:?}");
        assert!(
            body.contains("\nearly_total{k=\"a\"} 2\n"),
            "{what}: {body}"
        );
        assert!(
            body.contains("\nearly_total{k=\"b\"} 5\n"),
            "{what}: {body}"
        );
        assert!(
            body.contains("\nlate_seconds_bucket{le=\"1.0\"} 1\n"),
            "{what}: {body}"
        );
        assert!(body.contains("\nlate_seconds_count 1\n"), "{what}: {body}");
    }
    let page = get(server.addr, "/", &[]).text();
    assert!(
        page.contains("<tr><td>late_seconds</td><td>histogram</td>"),
        "{page}"
    );
    server.stop();
}

/// Decodes a protobuf body (length-delimited `MetricFamily` messages) into
/// the samples Prometheus' protobuf parser makes of it
/// (`model/textparse/protobufparse.go`): a counter's sample is named as its
/// family; a histogram has `_bucket` samples with `le` (a `+Inf` bucket
/// from `sample_count` when the message has none), `_count` and `_sum`; a
/// summary `quantile` samples, `_count` and `_sum`. Families are named as
/// prometheus_client's parsers name them (a counter without `_total`), and
/// creation times become `_created` samples, so that the checks of the
/// OpenMetrics bodies apply as they are. Panics on anything a well-formed
/// exposition of this exporter does not hold.
fn parse_protobuf(body: &[u8], what: &str) -> Vec<ParsedFamily> {
    let mut rest = body;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let mf = MetricFamily::decode_length_delimited(&mut rest)
            .unwrap_or_else(|e| panic!("{what}: not a length-delimited MetricFamily: {e}"));
        let name = mf.name.clone().expect("a family name");
        let t = MetricType::try_from(mf.r#type.expect("a family type")).unwrap();
        let (kind, family) = match t {
            MetricType::Counter => (
                "counter",
                name.strip_suffix("_total")
                    .unwrap_or_else(|| panic!("{what}: counter {name} without _total")),
            ),
            MetricType::Gauge => ("gauge", name.as_str()),
            MetricType::Histogram => ("histogram", name.as_str()),
            MetricType::Summary => ("summary", name.as_str()),
            other => panic!("{what}: {name} has type {other:?}"),
        };
        assert!(!mf.metric.is_empty(), "{what}: {name} has no series");
        let mut samples = Vec::new();
        for m in &mf.metric {
            let labels: BTreeMap<String, String> = m
                .label
                .iter()
                .map(|l| (l.name.clone().unwrap(), l.value.clone().unwrap()))
                .collect();
            assert_eq!(labels.len(), m.label.len(), "{what}: {name}: a label twice");
            assert_eq!(m.timestamp_ms, None, "{what}: {name}: a sample timestamp");
            let set = [
                m.counter.is_some(),
                m.gauge.is_some(),
                m.summary.is_some(),
                m.untyped.is_some(),
                m.histogram.is_some(),
            ];
            assert_eq!(
                set.iter().filter(|s| **s).count(),
                1,
                "{what}: {name}: {m:?}"
            );
            let mut push = |n: String, extra: Option<(&str, String)>, value: f64| {
                let mut labels = labels.clone();
                if let Some((k, v)) = extra {
                    labels.insert(k.to_string(), v);
                }
                samples.push(ParsedSample {
                    name: n,
                    labels,
                    value,
                });
            };
            let created = |ts: Option<shmetrics_expo::protobuf::proto::Timestamp>| {
                ts.map(|t| t.seconds as f64 + f64::from(t.nanos) / 1e9)
            };
            let ct = match t {
                MetricType::Counter => {
                    let c = m.counter.as_ref().expect("a counter");
                    push(name.clone(), None, c.value.expect("a counter value"));
                    created(c.created_timestamp)
                }
                MetricType::Gauge => {
                    let g = m.gauge.as_ref().expect("a gauge");
                    push(name.clone(), None, g.value.expect("a gauge value"));
                    None
                }
                MetricType::Histogram => {
                    let h = m.histogram.as_ref().expect("a histogram");
                    assert_eq!(h.schema, None, "{what}: {name}: native buckets");
                    let count = h.sample_count.expect("a count");
                    for b in &h.bucket {
                        let le = prometheus_float(b.upper_bound.unwrap());
                        push(
                            format!("{name}_bucket"),
                            Some(("le", le)),
                            b.cumulative_count.unwrap() as f64,
                        );
                    }
                    if !h
                        .bucket
                        .last()
                        .is_some_and(|b| b.upper_bound == Some(f64::INFINITY))
                    {
                        push(
                            format!("{name}_bucket"),
                            Some(("le", "+Inf".into())),
                            count as f64,
                        );
                    }
                    push(format!("{name}_count"), None, count as f64);
                    push(format!("{name}_sum"), None, h.sample_sum.expect("a sum"));
                    created(h.created_timestamp)
                }
                MetricType::Summary => {
                    let s = m.summary.as_ref().expect("a summary");
                    for q in &s.quantile {
                        let quantile = prometheus_float(q.quantile.unwrap());
                        push(name.clone(), Some(("quantile", quantile)), q.value.unwrap());
                    }
                    push(
                        format!("{name}_count"),
                        None,
                        s.sample_count.unwrap() as f64,
                    );
                    push(format!("{name}_sum"), None, s.sample_sum.unwrap());
                    created(s.created_timestamp)
                }
                _ => unreachable!(),
            };
            if let Some(ct) = ct {
                push(format!("{family}_created"), None, ct);
            }
        }
        out.push(ParsedFamily {
            name: family.to_string(),
            kind: kind.to_string(),
            help: mf.help.clone().expect("help is always set"),
            unit: mf.unit.clone().unwrap_or_default(),
            samples,
        });
    }
    out
}

/// A float as Prometheus' protobuf parser writes `le` and `quantile`
/// (Go's shortest form, with `.0` added to an integer).
fn prometheus_float(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = format!("{f}");
    if s.contains(['.', 'e', 'N']) {
        s
    } else {
        format!("{s}.0")
    }
}

#[test]
fn protobuf_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let (want, _writer) = write_store(&path);
    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
    });
    let addr = server.addr;

    let cases: &[(&str, &str)] = &[
        ("Prometheus 2.42, native histograms", ACCEPT_PROM242_NATIVE),
        ("Prometheus 1.x", ACCEPT_PROM1),
        (
            "protobuf only",
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
        ),
    ];
    let mut scrapes = 0u64;
    for (case, accept) in cases {
        let mut plain_families: Option<Vec<MetricFamily>> = None;
        for gzip in [false, true] {
            let what = format!("{case}{}", if gzip { ", gzip" } else { "" });
            let mut headers = vec![("Accept", *accept)];
            if gzip {
                // As Prometheus sends it.
                headers.push(("Accept-Encoding", "gzip"));
            }
            let r = get(addr, "/metrics", &headers);
            assert_eq!(r.status, 200, "{what}");
            scrapes += 1;
            assert_eq!(r.header("content-type"), Some(CT_PROTOBUF), "{what}");
            let vary = r.headers_named("vary").join(",").to_ascii_lowercase();
            assert!(
                vary.contains("accept") && vary.contains("accept-encoding"),
                "{what}: Vary is {vary:?}"
            );
            assert_eq!(
                r.header("content-length")
                    .map(|v| v.parse::<usize>().unwrap()),
                Some(r.body.len()),
                "{what}: Content-Length"
            );
            let body = if gzip {
                assert_eq!(r.header("content-encoding"), Some("gzip"), "{what}");
                gunzip(&r.body)
            } else {
                assert_eq!(r.header("content-encoding"), None, "{what}");
                r.body.clone()
            };

            let parsed = parse_protobuf(&body, &what);
            check_store_families(&parsed, &want, true, &what);
            check_own_families(&parsed, want.len(), scrapes - 1, &what);
            let own = parsed
                .iter()
                .find(|f| f.name == "shmetrics_exporter_scrapes_by_format")
                .unwrap();
            assert_eq!(
                own.value(
                    "shmetrics_exporter_scrapes_by_format_total",
                    &[("format", "protobuf")]
                ),
                Some((scrapes - 1) as f64),
                "{what}: every earlier scrape was protobuf"
            );

            // The same store families, plain or compressed.
            let mut rest = body.as_slice();
            let mut families = Vec::new();
            while !rest.is_empty() {
                families.push(MetricFamily::decode_length_delimited(&mut rest).unwrap());
            }
            families.truncate(want.len());
            match &plain_families {
                None => plain_families = Some(families),
                Some(plain) => assert_eq!(&families, plain, "{what}: gzip and plain differ"),
            }
        }
    }
    assert_eq!(
        server.renderer.stats.scrapes_by_format[2].load(std::sync::atomic::Ordering::Relaxed),
        scrapes
    );

    // HEAD with Prometheus' header: the protobuf headers, no body.
    let r = request(
        addr,
        "HEAD",
        "/metrics",
        &[("Accept", ACCEPT_PROM242_NATIVE)],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some(CT_PROTOBUF));
    assert!(r.body.is_empty());
    server.stop();
}

/// `shmetrics dump --format protobuf` writes the store's families, binary,
/// to standard output: the same messages `/metrics` serves, without the
/// exporter's own.
#[test]
fn dump_writes_protobuf() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let (want, _writer) = write_store(&path);
    let out = std::process::Command::new(shmetrics_bin())
        .args(["dump", "--format", "protobuf", "--store"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "shmetrics dump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed = parse_protobuf(&out.stdout, "dump");
    assert_eq!(parsed.len(), want.len(), "only the store's families");
    check_store_families(&parsed, &want, true, "dump");

    let out = std::process::Command::new(shmetrics_bin())
        .args(["dump", "--format", "proto", "--store"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("use prometheus, openmetrics or protobuf"),
        "{err}"
    );
}

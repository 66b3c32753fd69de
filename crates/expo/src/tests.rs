//! Golden tests: small stores written through a real `Store`, rendered and
//! compared with the exact expected text.

use std::time::{SystemTime, UNIX_EPOCH};

use shmetrics_core::{
    Created, FamilyDesc, GaugeMode, Hints, Kind, OpenMetricsType, Options, Store,
};

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    t0: f64,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_series: 256,
        label_bytes: 1 << 16,
        max_writers: 4,
        ..Options::default()
    };
    let store = Store::open(dir.path().join("store"), &opts).unwrap();
    Fixture {
        _dir: dir,
        store,
        t0: now() - 1.0,
    }
}

impl Fixture {
    /// Renders the store. `_created` values are checked to be a time
    /// between the fixture's creation and now, then replaced by `T`.
    fn render(&self, format: Format) -> String {
        self.render_escaped(format, Escaping::Underscores)
    }

    fn render_escaped(&self, format: Format, escaping: Escaping) -> String {
        let mut out = b"prefix\n".to_vec();
        let snap = self.store.snapshot().unwrap();
        encode_escaped(&snap, &[], format, escaping, &mut out);
        assert_chunks_join_to(&snap, &[], format, escaping, &out[b"prefix\n".len()..]);
        let text = String::from_utf8(out).unwrap();
        let text = text.strip_prefix("prefix\n").expect("encode appends");
        let t1 = now() + 1.0;
        let mut normalized = String::new();
        for line in text.lines() {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let name = match series.strip_prefix("{\"") {
                // A quoted name: `{"name",...} value`.
                Some(quoted) => quoted.split('"').next().unwrap(),
                None => series.split('{').next().unwrap(),
            };
            if !line.starts_with('#') && name.ends_with("_created") {
                assert!(format.is_text(), "{line}");
                let t: f64 = value.parse().unwrap();
                assert!(
                    self.t0 <= t && t <= t1,
                    "{line}: not in [{}, {t1}]",
                    self.t0
                );
                let (secs, frac) = value.split_once('.').expect("created has a point");
                assert!(
                    !secs.is_empty() && !frac.is_empty() && frac.len() <= 9,
                    "{value}"
                );
                assert!(frac == "0" || !frac.ends_with('0'), "{value}");
                normalized.push_str(series);
                normalized.push_str(" T\n");
            } else {
                normalized.push_str(line);
                normalized.push('\n');
            }
        }
        assert_eq!(
            normalized.len(),
            text.len() - count_created_digits(text),
            "{text}"
        );
        normalized
    }
}

/// A chunked render, at piece sizes from one byte (a piece per series) to
/// more than the page, is the whole render in pieces of at least the size
/// asked (but the last).
fn assert_chunks_join_to(
    snap: &Snapshot,
    extra: &[ExtraFamily<'_>],
    format: Format,
    escaping: Escaping,
    whole: &[u8],
) {
    for chunk in [1, 7, 64, 1 << 20] {
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        encode_chunked(snap, extra, format, escaping, chunk, &mut |b| {
            pieces.push(std::mem::take(b));
        });
        assert_eq!(pieces.concat(), whole, "{format:?} in pieces of {chunk}");
        let (last, full) = pieces
            .split_last()
            .map_or((None, &[][..]), |(l, f)| (Some(l), f));
        assert!(
            full.iter().all(|p| p.len() >= chunk),
            "{format:?}: a short piece"
        );
        assert!(
            last.is_none_or(|l| !l.is_empty()),
            "{format:?}: an empty last piece"
        );
    }
}

#[test]
fn chunked_renders_of_every_kind_and_format_join_to_the_whole() {
    let f = fixture();
    let store = &f.store;
    let c = store
        .register(&FamilyDesc::new("c", Kind::Counter).labels(&["k"]))
        .unwrap();
    let h = store
        .register(
            &FamilyDesc::new("h", Kind::Histogram)
                .labels(&["k"])
                .buckets(&[1.0, 2.0]),
        )
        .unwrap();
    let s = store
        .register(
            &FamilyDesc::new("s", Kind::Summary)
                .labels(&["k"])
                .quantiles(&[0.5]),
        )
        .unwrap();
    let g = store
        .register(&FamilyDesc::new("g", Kind::Gauge).labels(&["k"]))
        .unwrap();
    for i in 0..20 {
        let k = format!("v{i}");
        store.counter_inc(store.series(&c, &[&k]).unwrap()).unwrap();
        store
            .observe(store.series(&h, &[&k]).unwrap(), 1.5)
            .unwrap();
        store
            .observe(store.series(&s, &[&k]).unwrap(), 3.0)
            .unwrap();
        store
            .gauge_set(store.series(&g, &[&k]).unwrap(), -1.0)
            .unwrap();
    }
    let extra = [ExtraFamily {
        name: "own",
        help: "Own.",
        kind: Kind::Counter,
        samples: (0..3)
            .map(|i| ExtraSample {
                labels: vec![("i", ["a", "b", "c"][i])],
                value: 1.0,
            })
            .collect(),
    }];
    let snap = store.snapshot().unwrap();
    for format in Format::ALL {
        let mut whole = Vec::new();
        encode_escaped(&snap, &extra, format, Escaping::Underscores, &mut whole);
        assert!(whole.len() > 1000, "{format:?}");
        assert_chunks_join_to(&snap, &extra, format, Escaping::Underscores, &whole);
    }
}

/// How many characters the `T` substitution removes.
fn count_created_digits(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            let name = match l.strip_prefix("{\"") {
                Some(quoted) => quoted.split('"').next().unwrap(),
                None => l.split([' ', '{']).next().unwrap(),
            };
            !l.starts_with('#') && name.ends_with("_created")
        })
        .map(|l| l.rsplit_once(' ').unwrap().1.len() - 1)
        .sum()
}

#[test]
fn empty_store() {
    let f = fixture();
    assert_eq!(f.render(Format::PrometheusText), "");
    assert_eq!(f.render(Format::OpenMetrics), "# EOF\n");
}

#[test]
fn counter() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("http_requests_total", Kind::Counter)
                .help("Requests served.")
                .labels(&["route", "status"]),
        )
        .unwrap();
    let ok = s.series(&c, &["/", "200"]).unwrap();
    let err = s.series(&c, &["/login", "500"]).unwrap();
    s.counter_add(ok, 3.0).unwrap();
    s.counter_inc(err).unwrap();
    s.counter_add(err, 0.5).unwrap();
    let plain = s
        .register(&FamilyDesc::new("jobs", Kind::Counter).help("Jobs."))
        .unwrap();
    s.series(&plain, &[]).unwrap();

    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP http_requests_total Requests served.\n\
         # TYPE http_requests_total counter\n\
         http_requests_total{route=\"/\",status=\"200\"} 3\n\
         http_requests_total{route=\"/login\",status=\"500\"} 1.5\n\
         # HELP jobs_total Jobs.\n\
         # TYPE jobs_total counter\n\
         jobs_total 0\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE http_requests counter\n\
         # HELP http_requests Requests served.\n\
         http_requests_total{route=\"/\",status=\"200\"} 3\n\
         http_requests_created{route=\"/\",status=\"200\"} T\n\
         http_requests_total{route=\"/login\",status=\"500\"} 1.5\n\
         http_requests_created{route=\"/login\",status=\"500\"} T\n\
         # TYPE jobs counter\n\
         # HELP jobs Jobs.\n\
         jobs_total 0\n\
         jobs_created T\n\
         # EOF\n"
    );
}

#[test]
fn counter_named_as_given() {
    let f = fixture();
    let s = &f.store;
    for name in ["http_status", "bandwidth_total"] {
        let c = s
            .register(
                &FamilyDesc::new(name, Kind::Counter)
                    .help("h")
                    .name_as_given(),
            )
            .unwrap();
        s.counter_add(s.series(&c, &[]).unwrap(), 2.0).unwrap();
    }
    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP http_status h\n\
         # TYPE http_status counter\n\
         http_status 2\n\
         # HELP bandwidth_total h\n\
         # TYPE bandwidth_total counter\n\
         bandwidth_total 2\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE http_status counter\n\
         # HELP http_status h\n\
         http_status_total 2\n\
         http_status_created T\n\
         # TYPE bandwidth counter\n\
         # HELP bandwidth h\n\
         bandwidth_total 2\n\
         bandwidth_created T\n\
         # EOF\n"
    );
    // The default name and the name as given are different definitions.
    let e = s
        .register(&FamilyDesc::new("http_status", Kind::Counter).help("h"))
        .unwrap_err();
    assert_eq!(e.kind(), shmetrics_core::ErrorKind::Conflict, "{e}");
    s.register(&FamilyDesc::new("bandwidth", Kind::Counter).help("h"))
        .expect("bandwidth_total either way");
}

#[test]
fn gauge_with_unit_and_without_help() {
    let f = fixture();
    let s = &f.store;
    let g = s
        .register(
            &FamilyDesc::new("queue_size_bytes", Kind::Gauge)
                .help("Bytes queued.")
                .unit("bytes")
                .labels(&["queue"]),
        )
        .unwrap();
    s.gauge_set(s.series(&g, &["in"]).unwrap(), 2.5).unwrap();
    s.gauge_set(s.series(&g, &["out"]).unwrap(), -4.0).unwrap();
    let bare = s
        .register(&FamilyDesc::new("temperature", Kind::Gauge))
        .unwrap();
    s.gauge_set(s.series(&bare, &[]).unwrap(), 21.75).unwrap();

    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP queue_size_bytes Bytes queued.\n\
         # TYPE queue_size_bytes gauge\n\
         queue_size_bytes{queue=\"in\"} 2.5\n\
         queue_size_bytes{queue=\"out\"} -4\n\
         # TYPE temperature gauge\n\
         temperature 21.75\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE queue_size_bytes gauge\n\
         # UNIT queue_size_bytes bytes\n\
         # HELP queue_size_bytes Bytes queued.\n\
         queue_size_bytes{queue=\"in\"} 2.5\n\
         queue_size_bytes{queue=\"out\"} -4\n\
         # TYPE temperature gauge\n\
         temperature 21.75\n\
         # EOF\n"
    );
}

#[test]
fn histogram() {
    let f = fixture();
    let s = &f.store;
    let h = s
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .unit("seconds")
                .labels(&["method"])
                .buckets(&[0.005, 1.0, 2.5]),
        )
        .unwrap();
    let get = s.series(&h, &["GET"]).unwrap();
    for v in [0.00390625, 0.5, 3.0] {
        s.observe(get, v).unwrap();
    }
    s.series(&h, &["POST"]).unwrap();
    let bare = s
        .register(&FamilyDesc::new("size", Kind::Histogram).buckets(&[1e6, 1e7]))
        .unwrap();
    s.observe(s.series(&bare, &[]).unwrap(), 2e6).unwrap();

    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP latency_seconds Latency.\n\
         # TYPE latency_seconds histogram\n\
         latency_seconds_bucket{method=\"GET\",le=\"0.005\"} 1\n\
         latency_seconds_bucket{method=\"GET\",le=\"1.0\"} 2\n\
         latency_seconds_bucket{method=\"GET\",le=\"2.5\"} 2\n\
         latency_seconds_bucket{method=\"GET\",le=\"+Inf\"} 3\n\
         latency_seconds_count{method=\"GET\"} 3\n\
         latency_seconds_sum{method=\"GET\"} 3.50390625\n\
         latency_seconds_bucket{method=\"POST\",le=\"0.005\"} 0\n\
         latency_seconds_bucket{method=\"POST\",le=\"1.0\"} 0\n\
         latency_seconds_bucket{method=\"POST\",le=\"2.5\"} 0\n\
         latency_seconds_bucket{method=\"POST\",le=\"+Inf\"} 0\n\
         latency_seconds_count{method=\"POST\"} 0\n\
         latency_seconds_sum{method=\"POST\"} 0\n\
         # TYPE size histogram\n\
         size_bucket{le=\"1e+06\"} 0\n\
         size_bucket{le=\"1e+07\"} 1\n\
         size_bucket{le=\"+Inf\"} 1\n\
         size_count 1\n\
         size_sum 2000000\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE latency_seconds histogram\n\
         # UNIT latency_seconds seconds\n\
         # HELP latency_seconds Latency.\n\
         latency_seconds_bucket{method=\"GET\",le=\"0.005\"} 1\n\
         latency_seconds_bucket{method=\"GET\",le=\"1.0\"} 2\n\
         latency_seconds_bucket{method=\"GET\",le=\"2.5\"} 2\n\
         latency_seconds_bucket{method=\"GET\",le=\"+Inf\"} 3\n\
         latency_seconds_count{method=\"GET\"} 3\n\
         latency_seconds_sum{method=\"GET\"} 3.50390625\n\
         latency_seconds_created{method=\"GET\"} T\n\
         latency_seconds_bucket{method=\"POST\",le=\"0.005\"} 0\n\
         latency_seconds_bucket{method=\"POST\",le=\"1.0\"} 0\n\
         latency_seconds_bucket{method=\"POST\",le=\"2.5\"} 0\n\
         latency_seconds_bucket{method=\"POST\",le=\"+Inf\"} 0\n\
         latency_seconds_count{method=\"POST\"} 0\n\
         latency_seconds_sum{method=\"POST\"} 0\n\
         latency_seconds_created{method=\"POST\"} T\n\
         # TYPE size histogram\n\
         size_bucket{le=\"1e+06\"} 0\n\
         size_bucket{le=\"1e+07\"} 1\n\
         size_bucket{le=\"+Inf\"} 1\n\
         size_count 1\n\
         size_sum 2000000\n\
         size_created T\n\
         # EOF\n"
    );
}

#[test]
fn default_buckets() {
    let f = fixture();
    let s = &f.store;
    let h = s.register(&FamilyDesc::new("d", Kind::Histogram)).unwrap();
    s.observe(s.series(&h, &[]).unwrap(), 0.02).unwrap();
    let text = f.render(Format::PrometheusText);
    let les: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("d_bucket{le=\""))
        .map(|l| l.split('"').next().unwrap())
        .collect();
    assert_eq!(
        les,
        [
            "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0",
            "+Inf"
        ]
    );
    assert!(
        text.contains("d_bucket{le=\"0.01\"} 0\nd_bucket{le=\"0.025\"} 1\n"),
        "{text}"
    );
}

#[test]
fn summary() {
    let f = fixture();
    let s = &f.store;
    let sm = s
        .register(
            &FamilyDesc::new("rpc_seconds", Kind::Summary)
                .help("RPC time.")
                .labels(&["service"]),
        )
        .unwrap();
    let a = s.series(&sm, &["a"]).unwrap();
    s.observe(a, 1.5).unwrap();
    s.observe(a, 2.5).unwrap();

    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP rpc_seconds RPC time.\n\
         # TYPE rpc_seconds summary\n\
         rpc_seconds_count{service=\"a\"} 2\n\
         rpc_seconds_sum{service=\"a\"} 4\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE rpc_seconds summary\n\
         # HELP rpc_seconds RPC time.\n\
         rpc_seconds_count{service=\"a\"} 2\n\
         rpc_seconds_sum{service=\"a\"} 4\n\
         rpc_seconds_created{service=\"a\"} T\n\
         # EOF\n"
    );
}

#[test]
fn families_without_series_keep_their_metadata() {
    let f = fixture();
    let s = &f.store;
    // Registration order, not alphabetical.
    s.register(&FamilyDesc::new("zeta", Kind::Counter).help("Z."))
        .unwrap();
    s.register(&FamilyDesc::new("alpha_seconds", Kind::Histogram).unit("seconds"))
        .unwrap();
    s.register(&FamilyDesc::new("mid", Kind::Summary).help("M."))
        .unwrap();
    s.register(&FamilyDesc::new("beta", Kind::Gauge)).unwrap();
    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP zeta_total Z.\n\
         # TYPE zeta_total counter\n\
         # TYPE alpha_seconds histogram\n\
         # HELP mid M.\n\
         # TYPE mid summary\n\
         # TYPE beta gauge\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE zeta counter\n\
         # HELP zeta Z.\n\
         # TYPE alpha_seconds histogram\n\
         # UNIT alpha_seconds seconds\n\
         # TYPE mid summary\n\
         # HELP mid M.\n\
         # TYPE beta gauge\n\
         # EOF\n"
    );
}

#[test]
fn escaping() {
    let f = fixture();
    let s = &f.store;
    let g = s
        .register(
            &FamilyDesc::new("esc", Kind::Gauge)
                .help("Line one\nback\\slash \"quoted\" é \\n")
                .labels(&["v"]),
        )
        .unwrap();
    for (i, v) in ["a\\b", "say \"hi\"", "two\nlines", "日本 ü", "", "\\n\"\n"]
        .iter()
        .enumerate()
    {
        s.gauge_set(s.series(&g, &[v]).unwrap(), i as f64).unwrap();
    }
    let samples = "esc{v=\"a\\\\b\"} 0\n\
                   esc{v=\"say \\\"hi\\\"\"} 1\n\
                   esc{v=\"two\\nlines\"} 2\n\
                   esc{v=\"日本 ü\"} 3\n\
                   esc{v=\"\"} 4\n\
                   esc{v=\"\\\\n\\\"\\n\"} 5\n";
    assert_eq!(
        f.render(Format::PrometheusText),
        format!(
            "# HELP esc Line one\\nback\\\\slash \"quoted\" é \\\\n\n\
             # TYPE esc gauge\n{samples}"
        )
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        format!(
            "# TYPE esc gauge\n\
             # HELP esc Line one\\nback\\\\slash \\\"quoted\\\" é \\\\n\n\
             {samples}# EOF\n"
        )
    );
}

#[test]
fn pid_label() {
    let f = fixture();
    let s = &f.store;
    let g = s
        .register(
            &FamilyDesc::new("workers_busy", Kind::Gauge)
                .labels(&["pool"])
                .gauge_mode(GaugeMode::All),
        )
        .unwrap();
    s.gauge_set(s.series(&g, &["web"]).unwrap(), 7.0).unwrap();
    let pid = std::process::id();
    let want = format!("# TYPE workers_busy gauge\nworkers_busy{{pool=\"web\",pid=\"{pid}\"}} 7\n");
    assert_eq!(f.render(Format::PrometheusText), want);
    assert_eq!(f.render(Format::OpenMetrics), format!("{want}# EOF\n"));
}

#[test]
fn overflow_label() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("hits", Kind::Counter)
                .labels(&["user"])
                .max_series(1),
        )
        .unwrap();
    s.counter_inc(s.series(&c, &["ann"]).unwrap()).unwrap();
    let over = s.series_or_overflow(&c, &["bob"]).unwrap();
    s.counter_add(over, 2.0).unwrap();
    let h = s
        .register(
            &FamilyDesc::new("lat", Kind::Histogram)
                .buckets(&[1.0])
                .max_series(1),
        )
        .unwrap();
    s.observe(s.series(&h, &[]).unwrap(), 0.5).unwrap();
    // The overflow series is allocated when the family is registered, so it
    // comes first in creation order.
    assert_eq!(
        f.render(Format::PrometheusText),
        "# TYPE hits_total counter\n\
         hits_total{user=\"\",shmetrics_overflow=\"true\"} 2\n\
         hits_total{user=\"ann\"} 1\n\
         # TYPE lat histogram\n\
         lat_bucket{le=\"1.0\"} 1\n\
         lat_bucket{le=\"+Inf\"} 1\n\
         lat_count 1\n\
         lat_sum 0.5\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE hits counter\n\
         hits_total{user=\"\",shmetrics_overflow=\"true\"} 2\n\
         hits_created{user=\"\",shmetrics_overflow=\"true\"} T\n\
         hits_total{user=\"ann\"} 1\n\
         hits_created{user=\"ann\"} T\n\
         # TYPE lat histogram\n\
         lat_bucket{le=\"1.0\"} 1\n\
         lat_bucket{le=\"+Inf\"} 1\n\
         lat_count 1\n\
         lat_sum 0.5\n\
         lat_created T\n\
         # EOF\n"
    );
}

#[test]
fn overflowing_histogram_puts_le_after_the_overflow_label() {
    let f = fixture();
    let s = &f.store;
    let h = s
        .register(
            &FamilyDesc::new("h", Kind::Histogram)
                .labels(&["k"])
                .buckets(&[1.0])
                .max_series(1),
        )
        .unwrap();
    s.series(&h, &["a"]).unwrap();
    s.observe(s.series_or_overflow(&h, &["b"]).unwrap(), 2.0)
        .unwrap();
    let text = f.render(Format::PrometheusText);
    assert!(
        text.contains(
            "h_bucket{k=\"\",shmetrics_overflow=\"true\",le=\"1.0\"} 0\n\
             h_bucket{k=\"\",shmetrics_overflow=\"true\",le=\"+Inf\"} 1\n\
             h_count{k=\"\",shmetrics_overflow=\"true\"} 1\n"
        ),
        "{text}"
    );
}

#[test]
fn float_edge_cases() {
    let f = fixture();
    let s = &f.store;
    let g = s
        .register(
            &FamilyDesc::new("edge", Kind::Gauge)
                .labels(&["case"])
                .gauge_mode(GaugeMode::MostRecent),
        )
        .unwrap();
    let cases = [
        ("tiny", 1e-9, "1e-9"),
        ("huge", 1e21, "1e21"),
        ("negzero", -0.0, "-0"),
        ("inf", f64::INFINITY, "+Inf"),
        ("neginf", f64::NEG_INFINITY, "-Inf"),
        ("third", 0.1 + 0.2, "0.30000000000000004"),
        ("max", f64::MAX, "1.7976931348623157e308"),
        ("denormal", 5e-324, "5e-324"),
        ("big_int", 9_007_199_254_740_991.0, "9007199254740991"),
        ("past_2_53", 9_007_199_254_740_994.0, "9007199254740994.0"),
    ];
    let mut want = String::from("# TYPE edge gauge\n");
    for (case, v, text) in cases {
        s.gauge_set(s.series(&g, &[case]).unwrap(), v).unwrap();
        want.push_str(&format!("edge{{case=\"{case}\"}} {text}\n"));
    }
    assert_eq!(f.render(Format::PrometheusText), want);
    // NaN never reaches a snapshot: the store refuses it.
    let nan = s.series(&g, &["nan"]).unwrap();
    assert!(s.gauge_set(nan, f64::NAN).is_err());
}

#[test]
fn counter_float_values() {
    let f = fixture();
    let s = &f.store;
    let c = s.register(&FamilyDesc::new("c", Kind::Counter)).unwrap();
    let one = s.series(&c, &[]).unwrap();
    s.counter_add(one, 0.25).unwrap();
    s.counter_add(one, 1e-9).unwrap();
    // +Inf never reaches a snapshot: a counter refuses it, as NaN.
    assert!(s.counter_add(one, f64::INFINITY).is_err());
    let mut want_c = Vec::new();
    write_float(&mut want_c, 0.25 + 1e-9);
    let want = format!(
        "# TYPE c_total counter\nc_total {}\n",
        String::from_utf8(want_c).unwrap()
    );
    assert_eq!(f.render(Format::PrometheusText), want);
    assert!(want.contains("c_total 0.250000001\n"), "{want}");
}

#[test]
fn openmetrics_drops_sums_it_cannot_carry() {
    let f = fixture();
    let s = &f.store;
    // A negative bucket bound: OpenMetrics allows no `_sum` (and so no
    // `_count`).
    let neg = s
        .register(&FamilyDesc::new("temp", Kind::Histogram).buckets(&[-10.0, 0.0, 10.0]))
        .unwrap();
    s.observe(s.series(&neg, &[]).unwrap(), -5.0).unwrap();
    // Non-negative bounds but a negative observation: a negative `_sum`.
    let h = s
        .register(&FamilyDesc::new("delta", Kind::Histogram).buckets(&[1.0]))
        .unwrap();
    s.observe(s.series(&h, &[]).unwrap(), -2.0).unwrap();
    let sm = s
        .register(&FamilyDesc::new("change", Kind::Summary))
        .unwrap();
    s.observe(s.series(&sm, &[]).unwrap(), -3.0).unwrap();

    assert_eq!(
        f.render(Format::PrometheusText),
        "# TYPE temp histogram\n\
         temp_bucket{le=\"-10.0\"} 0\n\
         temp_bucket{le=\"0.0\"} 1\n\
         temp_bucket{le=\"10.0\"} 1\n\
         temp_bucket{le=\"+Inf\"} 1\n\
         temp_count 1\n\
         temp_sum -5\n\
         # TYPE delta histogram\n\
         delta_bucket{le=\"1.0\"} 1\n\
         delta_bucket{le=\"+Inf\"} 1\n\
         delta_count 1\n\
         delta_sum -2\n\
         # TYPE change summary\n\
         change_count 1\n\
         change_sum -3\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE temp histogram\n\
         temp_bucket{le=\"-10.0\"} 0\n\
         temp_bucket{le=\"0.0\"} 1\n\
         temp_bucket{le=\"10.0\"} 1\n\
         temp_bucket{le=\"+Inf\"} 1\n\
         temp_created T\n\
         # TYPE delta histogram\n\
         delta_bucket{le=\"1.0\"} 1\n\
         delta_bucket{le=\"+Inf\"} 1\n\
         delta_created T\n\
         # TYPE change summary\n\
         change_count 1\n\
         change_created T\n\
         # EOF\n"
    );
}

#[test]
fn encode_appends() {
    let f = fixture();
    let c = f
        .store
        .register(&FamilyDesc::new("x", Kind::Gauge))
        .unwrap();
    f.store
        .gauge_set(f.store.series(&c, &[]).unwrap(), 1.0)
        .unwrap();
    let snap = f.store.snapshot().unwrap();
    let mut out = b"keep".to_vec();
    encode(&snap, Format::PrometheusText, &mut out);
    encode(&snap, Format::PrometheusText, &mut out);
    assert_eq!(out, b"keep# TYPE x gauge\nx 1\n# TYPE x gauge\nx 1\n");
}

#[test]
fn write_escaped_label_value_escapes_exactly_three_characters() {
    let mut out = Vec::new();
    write_escaped_label_value(&mut out, "\\\"\n\t\r'é\0");
    assert_eq!(out, "\\\\\\\"\\n\t\r'é\0".as_bytes());
}

// ----- formats and negotiation ---------------------------------------------

#[test]
fn content_types_and_names() {
    assert_eq!(
        Format::PrometheusText.content_type(),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert_eq!(
        Format::OpenMetrics.content_type(),
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert_eq!(Format::parse("prometheus"), Some(Format::PrometheusText));
    assert_eq!(Format::parse("text"), Some(Format::PrometheusText));
    assert_eq!(Format::parse("openmetrics"), Some(Format::OpenMetrics));
    assert_eq!(Format::parse("OpenMetrics"), Some(Format::OpenMetrics));
    assert_eq!(
        Format::Protobuf.content_type(),
        "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
    );
    assert_eq!(Format::parse("protobuf"), Some(Format::Protobuf));
    assert_eq!(Format::parse("ProtoBuf"), Some(Format::Protobuf));
    assert_eq!(Format::parse("proto"), None);
    assert_eq!(Format::parse(""), None);
    assert!(Format::PrometheusText.is_text() && Format::OpenMetrics.is_text());
    assert!(!Format::Protobuf.is_text());
}

/// Accept headers exactly as Prometheus versions send them.
const PROMETHEUS_ACCEPT: &[(&str, &str, Format)] = &[
    (
        "2.x, OpenMetrics 0.0.1 only",
        "application/openmetrics-text; version=0.0.1,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        Format::OpenMetrics,
    ),
    (
        "2.x, OpenMetrics 1.0.0 added",
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        Format::OpenMetrics,
    ),
    (
        // As captured from Debian's prometheus 2.42.0 run with
        // --enable-feature=native-histograms (the same string as
        // scrapeAcceptHeaderWithProtobuf in scrape/scrape.go).
        "2.x, native histograms, before scrape_protocols",
        PROMETHEUS_2_42_NATIVE,
        Format::Protobuf,
    ),
    (
        "2.x, with scrape_protocols",
        "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
        Format::OpenMetrics,
    ),
    (
        "2.x, with scrape_protocols, native histograms",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
        Format::Protobuf,
    ),
    (
        "3.x",
        "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
        Format::OpenMetrics,
    ),
    (
        "3.x, underscore escaping",
        "application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=underscores;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
        Format::OpenMetrics,
    ),
    (
        "3.x, protobuf first",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
        Format::Protobuf,
    ),
    (
        "3.3, escaping on every range",
        "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;escaping=allow-utf-8;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;escaping=allow-utf-8;q=0.3,*/*;q=0.2",
        Format::OpenMetrics,
    ),
    (
        "3.x, scrape_protocols: [PrometheusText1.0.0, PrometheusText0.0.4, OpenMetricsText1.0.0]",
        "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.6,text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.4,*/*;q=0.3",
        Format::PrometheusText,
    ),
    (
        "2.x, scrape_protocols: [PrometheusText0.0.4]",
        "text/plain;version=0.0.4;q=0.5,*/*;q=0.4",
        Format::PrometheusText,
    ),
    (
        // Prometheus 2.0 to 2.4 sent `text/plain;version=0.0.4;q=1,*/*;q=0.1`
        // (it parsed text only); this protobuf-first header is 1.x's, and
        // Telegraf's inputs.prometheus still sends it. Both parse protobuf.
        "1.x (and Telegraf)",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1",
        Format::Protobuf,
    ),
    (
        "2.0 to 2.4",
        "text/plain;version=0.0.4;q=1,*/*;q=0.1",
        Format::PrometheusText,
    ),
];

/// What Prometheus 2.42 sends with native histograms enabled.
const PROMETHEUS_2_42_NATIVE: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

#[test]
fn negotiate_prometheus_headers() {
    for (version, header, want) in PROMETHEUS_ACCEPT {
        assert_eq!(
            negotiate(Some(header)),
            *want,
            "Prometheus {version}: {header}"
        );
    }
}

#[test]
fn negotiate_other_clients() {
    let cases = [
        (None, Format::PrometheusText),
        (Some(""), Format::PrometheusText),
        (Some("*/*"), Format::PrometheusText),
        // curl, a browser.
        (
            Some("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"),
            Format::PrometheusText,
        ),
        (Some("application/openmetrics-text"), Format::OpenMetrics),
        (Some("application/openmetrics-text; version=1.0.0"), Format::OpenMetrics),
        (Some("APPLICATION/OpenMetrics-Text; Version=\"1.0.0\""), Format::OpenMetrics),
        (Some("text/plain"), Format::PrometheusText),
        (Some("text/*"), Format::PrometheusText),
        // An OpenMetrics version this crate does not write.
        (Some("application/openmetrics-text;version=2.0.0"), Format::PrometheusText),
        (
            Some("application/openmetrics-text;version=2.0.0,application/openmetrics-text;version=1.0.0;q=0.1"),
            Format::OpenMetrics,
        ),
        // q=0 means "not acceptable".
        (Some("application/openmetrics-text;q=0,text/plain;q=0.1"), Format::PrometheusText),
        (Some("application/openmetrics-text;q=0.000"), Format::PrometheusText),
        // The highest q wins, not the first listed; ties go to the first.
        (Some("text/plain;q=0.5,application/openmetrics-text;q=0.501"), Format::OpenMetrics),
        (Some("text/plain;q=0.9,application/openmetrics-text;q=0.8"), Format::PrometheusText),
        (Some("application/openmetrics-text;q=0.5,text/plain;q=0.5"), Format::OpenMetrics),
        (Some("text/plain;q=0.5,application/openmetrics-text;q=0.5"), Format::PrometheusText),
        (Some("text/plain;q=1.0,application/openmetrics-text;q=1"), Format::PrometheusText),
        // Invalid q values make their range unusable.
        (Some("text/plain;q=0.2,application/openmetrics-text;q=2"), Format::PrometheusText),
        (Some("text/plain;q=0.2,application/openmetrics-text;q=0.5555"), Format::PrometheusText),
        (Some("text/plain;q=0.2,application/openmetrics-text;q=x"), Format::PrometheusText),
        (Some("text/plain;q=0.2,application/openmetrics-text;q=-1"), Format::PrometheusText),
        // A parameter without a value is ignored.
        (Some(" application/openmetrics-text ; charset ; q=0.9 "), Format::OpenMetrics),
        // Protobuf: only the MetricFamily protocol, delimited.
        (
            Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"),
            Format::Protobuf,
        ),
        (
            Some("Application/Vnd.Google.Protobuf; Proto=\"io.prometheus.client.MetricFamily\"; Encoding=\"delimited\""),
            Format::Protobuf,
        ),
        (Some("application/vnd.google.protobuf"), Format::PrometheusText),
        (
            Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily"),
            Format::PrometheusText,
        ),
        (
            Some("application/vnd.google.protobuf;encoding=delimited"),
            Format::PrometheusText,
        ),
        (
            Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text,application/openmetrics-text;q=0.1"),
            Format::OpenMetrics,
        ),
        (
            Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=compact-text"),
            Format::PrometheusText,
        ),
        (
            Some("application/vnd.google.protobuf;proto=io.prometheus.write.WriteRequest;encoding=delimited"),
            Format::PrometheusText,
        ),
        (
            Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0,text/plain;q=0.1"),
            Format::PrometheusText,
        ),
        (
            Some("application/openmetrics-text;q=0.9,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.8"),
            Format::OpenMetrics,
        ),
    ];
    for (header, want) in cases {
        assert_eq!(negotiate(header), want, "{header:?}");
    }
}

#[test]
fn negotiate_text_skips_protobuf() {
    for (_, header, want) in PROMETHEUS_ACCEPT {
        let text_want = match want {
            Format::Protobuf => Format::OpenMetrics,
            other => *other,
        };
        if header.starts_with("application/vnd.google.protobuf")
            && header.contains(";q=0.7,text/plain")
        {
            // 1.x: no OpenMetrics in it.
            assert_eq!(
                negotiate_text(Some(header)),
                Format::PrometheusText,
                "{header}"
            );
        } else {
            assert_eq!(negotiate_text(Some(header)), text_want, "{header}");
        }
    }
    assert_eq!(
        negotiate_text(Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")),
        Format::PrometheusText
    );
    assert_eq!(negotiate_text(None), Format::PrometheusText);
}

#[test]
fn qvalues() {
    for (s, q) in [
        ("0", 0),
        ("1", 1000),
        ("0.5", 500),
        ("0.75", 750),
        ("0.001", 1),
        ("1.000", 1000),
        ("0.", 0),
    ] {
        assert_eq!(parse_qvalue(s), Some(q), "{s}");
    }
    for s in [
        "", "2", "1.001", "0.0001", "-0.5", ".5", "0,5", "0.5x", "01",
    ] {
        assert_eq!(parse_qvalue(s), None, "{s}");
    }
}

/// Exemplars: OpenMetrics writes the latest one after a counter's
/// `_total` and a histogram's `_bucket` samples; the text format has none.
#[test]
fn exemplars() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("jobs_total", Kind::Counter)
                .labels(&["queue"])
                .exemplars(true),
        )
        .unwrap();
    let q = s.series(&c, &["a"]).unwrap();
    s.counter_add_with_exemplar(q, 2.0, &[("trace_id", "t1")])
        .unwrap();
    s.counter_add_with_exemplar(q, 0.5, &[("trace_id", "t\\2\n")])
        .unwrap();
    s.series(&c, &["none"]).unwrap();
    let h = s
        .register(
            &FamilyDesc::new("lat", Kind::Histogram)
                .buckets(&[1.0, 2.0])
                .exemplars(true),
        )
        .unwrap();
    let l = s.series(&h, &[]).unwrap();
    s.observe_with_exemplar(l, 0.5, &[("trace_id", "x"), ("user", "é")])
        .unwrap();
    s.observe(l, 1.5).unwrap();
    s.observe_with_exemplar(l, 3.0, &[]).unwrap();

    let mut out = Vec::new();
    encode(&s.snapshot().unwrap(), Format::OpenMetrics, &mut out);
    let text = String::from_utf8(out).unwrap();
    let t1 = now() + 1.0;
    let mut normalized = String::new();
    for line in text.lines().filter(|l| !l.contains("_created")) {
        match line.split_once(" # {") {
            Some(_) => {
                let (head, ts) = line.rsplit_once(' ').unwrap();
                let t: f64 = ts.parse().unwrap();
                assert!(f.t0 <= t && t <= t1, "{line}");
                normalized.push_str(head);
                normalized.push_str(" T\n");
            }
            None => {
                normalized.push_str(line);
                normalized.push('\n');
            }
        }
    }
    assert_eq!(
        normalized,
        "# TYPE jobs counter\n\
         jobs_total{queue=\"a\"} 2.5 # {trace_id=\"t\\\\2\\n\"} 0.5 T\n\
         jobs_total{queue=\"none\"} 0\n\
         # TYPE lat histogram\n\
         lat_bucket{le=\"1.0\"} 1 # {trace_id=\"x\",user=\"é\"} 0.5 T\n\
         lat_bucket{le=\"2.0\"} 2\n\
         lat_bucket{le=\"+Inf\"} 3 # {} 3 T\n\
         lat_count 3\n\
         lat_sum 5\n\
         # EOF\n"
    );
    let mut out = Vec::new();
    encode(&s.snapshot().unwrap(), Format::PrometheusText, &mut out);
    assert!(!String::from_utf8(out).unwrap().contains(" # "));
}

/// A store with UTF-8 names, in every format and escaping scheme.
#[test]
fn utf8_names() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("http.requests_total", Kind::Counter)
                .help("Requests.")
                .labels(&["http.method", "code"]),
        )
        .unwrap();
    s.counter_add(s.series(&c, &["GET", "200"]).unwrap(), 3.0)
        .unwrap();
    let g = s
        .register(&FamilyDesc::new("temp \"°C\"", Kind::Gauge))
        .unwrap();
    s.gauge_set(s.series(&g, &[]).unwrap(), 21.5).unwrap();
    let h = s
        .register(
            &FamilyDesc::new("rpc.latency", Kind::Histogram)
                .labels(&["svc"])
                .buckets(&[1.0]),
        )
        .unwrap();
    s.observe(s.series(&h, &["a"]).unwrap(), 0.5).unwrap();
    let q = s
        .register(&FamilyDesc::new("job_size", Kind::Summary).labels(&["queue.name"]))
        .unwrap();
    s.observe(s.series(&q, &["q1"]).unwrap(), 2.0).unwrap();

    assert_eq!(
        f.render_escaped(Format::PrometheusText, Escaping::AllowUtf8),
        "# HELP \"http.requests_total\" Requests.\n\
         # TYPE \"http.requests_total\" counter\n\
         {\"http.requests_total\",\"http.method\"=\"GET\",code=\"200\"} 3\n\
         # TYPE \"temp \\\"°C\\\"\" gauge\n\
         {\"temp \\\"°C\\\"\"} 21.5\n\
         # TYPE \"rpc.latency\" histogram\n\
         {\"rpc.latency_bucket\",svc=\"a\",le=\"1.0\"} 1\n\
         {\"rpc.latency_bucket\",svc=\"a\",le=\"+Inf\"} 1\n\
         {\"rpc.latency_count\",svc=\"a\"} 1\n\
         {\"rpc.latency_sum\",svc=\"a\"} 0.5\n\
         # TYPE job_size summary\n\
         job_size_count{\"queue.name\"=\"q1\"} 1\n\
         job_size_sum{\"queue.name\"=\"q1\"} 2\n"
    );
    let underscores = "# HELP http_requests_total Requests.\n\
         # TYPE http_requests_total counter\n\
         http_requests_total{http_method=\"GET\",code=\"200\"} 3\n\
         # TYPE temp___C_ gauge\n\
         temp___C_ 21.5\n\
         # TYPE rpc_latency histogram\n\
         rpc_latency_bucket{svc=\"a\",le=\"1.0\"} 1\n\
         rpc_latency_bucket{svc=\"a\",le=\"+Inf\"} 1\n\
         rpc_latency_count{svc=\"a\"} 1\n\
         rpc_latency_sum{svc=\"a\"} 0.5\n\
         # TYPE job_size summary\n\
         job_size_count{queue_name=\"q1\"} 1\n\
         job_size_sum{queue_name=\"q1\"} 2\n";
    assert_eq!(
        f.render_escaped(Format::PrometheusText, Escaping::Underscores),
        underscores
    );
    // The default.
    assert_eq!(f.render(Format::PrometheusText), underscores);
    // Legacy names stay as they are (`job_size`, `code`, `svc`), as in
    // client_golang; the others take the scheme whole, suffix included.
    assert_eq!(
        f.render_escaped(Format::PrometheusText, Escaping::Dots),
        "# HELP http_dot_requests_total Requests.\n\
         # TYPE http_dot_requests_total counter\n\
         http_dot_requests_total{http_dot_method=\"GET\",code=\"200\"} 3\n\
         # TYPE temp______C__ gauge\n\
         temp______C__ 21.5\n\
         # TYPE rpc_dot_latency histogram\n\
         rpc_dot_latency_bucket{svc=\"a\",le=\"1.0\"} 1\n\
         rpc_dot_latency_bucket{svc=\"a\",le=\"+Inf\"} 1\n\
         rpc_dot_latency_count{svc=\"a\"} 1\n\
         rpc_dot_latency_sum{svc=\"a\"} 0.5\n\
         # TYPE job_size summary\n\
         job_size_count{queue_dot_name=\"q1\"} 1\n\
         job_size_sum{queue_dot_name=\"q1\"} 2\n"
    );
    assert_eq!(
        f.render_escaped(Format::PrometheusText, Escaping::Values),
        "# HELP U__http_2e_requests_total Requests.\n\
         # TYPE U__http_2e_requests_total counter\n\
         U__http_2e_requests_total{U__http_2e_method=\"GET\",code=\"200\"} 3\n\
         # TYPE U__temp_20__22__b0_C_22_ gauge\n\
         U__temp_20__22__b0_C_22_ 21.5\n\
         # TYPE U__rpc_2e_latency histogram\n\
         U__rpc_2e_latency_bucket{svc=\"a\",le=\"1.0\"} 1\n\
         U__rpc_2e_latency_bucket{svc=\"a\",le=\"+Inf\"} 1\n\
         U__rpc_2e_latency_count{svc=\"a\"} 1\n\
         U__rpc_2e_latency_sum{svc=\"a\"} 0.5\n\
         # TYPE job_size summary\n\
         job_size_count{U__queue_2e_name=\"q1\"} 1\n\
         job_size_sum{U__queue_2e_name=\"q1\"} 2\n"
    );
    assert_eq!(
        f.render_escaped(Format::OpenMetrics, Escaping::AllowUtf8),
        "# TYPE \"http.requests\" counter\n\
         # HELP \"http.requests\" Requests.\n\
         {\"http.requests_total\",\"http.method\"=\"GET\",code=\"200\"} 3\n\
         {\"http.requests_created\",\"http.method\"=\"GET\",code=\"200\"} T\n\
         # TYPE \"temp \\\"°C\\\"\" gauge\n\
         {\"temp \\\"°C\\\"\"} 21.5\n\
         # TYPE \"rpc.latency\" histogram\n\
         {\"rpc.latency_bucket\",svc=\"a\",le=\"1.0\"} 1\n\
         {\"rpc.latency_bucket\",svc=\"a\",le=\"+Inf\"} 1\n\
         {\"rpc.latency_count\",svc=\"a\"} 1\n\
         {\"rpc.latency_sum\",svc=\"a\"} 0.5\n\
         {\"rpc.latency_created\",svc=\"a\"} T\n\
         # TYPE job_size summary\n\
         job_size_count{\"queue.name\"=\"q1\"} 1\n\
         job_size_sum{\"queue.name\"=\"q1\"} 2\n\
         job_size_created{\"queue.name\"=\"q1\"} T\n\
         # EOF\n"
    );
    assert_eq!(
        f.render_escaped(Format::OpenMetrics, Escaping::Underscores),
        "# TYPE http_requests counter\n\
         # HELP http_requests Requests.\n\
         http_requests_total{http_method=\"GET\",code=\"200\"} 3\n\
         http_requests_created{http_method=\"GET\",code=\"200\"} T\n\
         # TYPE temp___C_ gauge\n\
         temp___C_ 21.5\n\
         # TYPE rpc_latency histogram\n\
         rpc_latency_bucket{svc=\"a\",le=\"1.0\"} 1\n\
         rpc_latency_bucket{svc=\"a\",le=\"+Inf\"} 1\n\
         rpc_latency_count{svc=\"a\"} 1\n\
         rpc_latency_sum{svc=\"a\"} 0.5\n\
         rpc_latency_created{svc=\"a\"} T\n\
         # TYPE job_size summary\n\
         job_size_count{queue_name=\"q1\"} 1\n\
         job_size_sum{queue_name=\"q1\"} 2\n\
         job_size_created{queue_name=\"q1\"} T\n\
         # EOF\n"
    );
}

/// A legacy store reads the same under every scheme.
#[test]
fn legacy_names_ignore_escaping() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("a_b:c", Kind::Counter)
                .labels(&["x_y"])
                .exemplars(true),
        )
        .unwrap();
    s.counter_add_with_exemplar(s.series(&c, &["1"]).unwrap(), 1.0, &[("trace_id", "t")])
        .unwrap();
    for format in [
        Format::PrometheusText,
        Format::OpenMetrics,
        Format::Protobuf,
    ] {
        let mut want = Vec::new();
        encode(&s.snapshot().unwrap(), format, &mut want);
        for e in Escaping::ALL {
            let mut got = Vec::new();
            encode_escaped(&s.snapshot().unwrap(), &[], format, e, &mut got);
            assert_eq!(got, want, "{format:?} {e:?}");
        }
    }
}

#[test]
fn utf8_exemplar_label_names() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(&FamilyDesc::new("c", Kind::Counter).exemplars(true))
        .unwrap();
    s.counter_add_with_exemplar(s.series(&c, &[]).unwrap(), 1.0, &[("trace.id", "t")])
        .unwrap();
    let line = |e| {
        let text = f.render_escaped(Format::OpenMetrics, e);
        let line = text
            .lines()
            .find(|l| l.starts_with("c_total"))
            .unwrap()
            .to_string();
        line.split(" # ")
            .nth(1)
            .unwrap()
            .split('}')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(line(Escaping::AllowUtf8), "{\"trace.id\"=\"t\"");
    assert_eq!(line(Escaping::Underscores), "{trace_id=\"t\"");
}

#[test]
fn negotiate_escaping_and_version() {
    use Escaping::*;
    let p3 = PROMETHEUS_ACCEPT
        .iter()
        .find(|(v, ..)| *v == "3.x")
        .unwrap()
        .1;
    let p3_underscores = PROMETHEUS_ACCEPT
        .iter()
        .find(|(v, ..)| *v == "3.x, underscore escaping")
        .unwrap()
        .1;
    let cases: &[(Option<&str>, Format, Escaping, &str)] = &[
        (None, Format::PrometheusText, Underscores, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"),
        (Some(p3), Format::OpenMetrics, AllowUtf8, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8"),
        (Some(p3_underscores), Format::OpenMetrics, Underscores, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"),
        (Some(PROMETHEUS_2_42_NATIVE), Format::Protobuf, Underscores, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores"),
        (
            Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8"),
            Format::Protobuf,
            AllowUtf8,
            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=allow-utf-8",
        ),
        (Some("text/plain;version=1.0.0;escaping=allow-utf-8"), Format::PrometheusText, AllowUtf8, "text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8"),
        (Some("text/plain;version=1.0.0;escaping=dots"), Format::PrometheusText, Dots, "text/plain; version=1.0.0; charset=utf-8; escaping=dots"),
        (Some("text/plain;version=1.0.0"), Format::PrometheusText, Underscores, "text/plain; version=1.0.0; charset=utf-8; escaping=underscores"),
        // UTF-8 names only where the version carries them.
        (Some("text/plain;version=0.0.4;escaping=allow-utf-8"), Format::PrometheusText, Underscores, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"),
        (Some("text/plain;escaping=allow-utf-8"), Format::PrometheusText, Underscores, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"),
        (Some("application/openmetrics-text;escaping=allow-utf-8"), Format::OpenMetrics, Underscores, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"),
        (Some("application/openmetrics-text;version=0.0.1;escaping=allow-utf-8"), Format::OpenMetrics, Underscores, "application/openmetrics-text; version=0.0.1; charset=utf-8; escaping=underscores"),
        // Schemes that write legacy names go with any version.
        (Some("text/plain;version=0.0.4;escaping=values"), Format::PrometheusText, Values, "text/plain; version=0.0.4; charset=utf-8; escaping=values"),
        // An unknown scheme is the default one; the escaping of the range
        // that wins counts, not another's.
        (Some("text/plain;version=1.0.0;escaping=hex"), Format::PrometheusText, Underscores, "text/plain; version=1.0.0; charset=utf-8; escaping=underscores"),
        (
            Some("text/plain;version=1.0.0;escaping=allow-utf-8;q=0.2,application/openmetrics-text;version=1.0.0;q=0.5"),
            Format::OpenMetrics,
            Underscores,
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores",
        ),
        (Some("*/*"), Format::PrometheusText, Underscores, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"),
    ];
    for (accept, format, escaping, ct) in cases {
        let n = negotiate_scrape(*accept, true);
        assert_eq!((n.format, n.escaping), (*format, *escaping), "{accept:?}");
        assert_eq!(n.content_type(), *ct, "{accept:?}");
    }
    // Without protobuf, the next range.
    let n = negotiate_scrape(Some(PROMETHEUS_2_42_NATIVE), false);
    assert_eq!((n.format, n.escaping), (Format::OpenMetrics, Underscores));
}

/// The hints of PromPHP, nginx-lua-prometheus and client_ruby: integer
/// bounds as `1`, no `_created`, in both text formats (the text format is
/// what those libraries serve; OpenMetrics still gets the bounds and no
/// `_created`).
#[test]
fn hints_short_bounds_and_no_created() {
    let f = fixture();
    let s = &f.store;
    let hints = Hints {
        short_bounds: true,
        created: Created::Never,
        text_only: true,
        ..Hints::default()
    };
    let h = s
        .register(
            &FamilyDesc::new("rt", Kind::Histogram)
                .buckets(&[0.5, 1.0, 10.0])
                .hints(hints),
        )
        .unwrap();
    s.observe(s.series(&h, &[]).unwrap(), 2.0).unwrap();
    let q = s
        .register(
            &FamilyDesc::new("q", Kind::Summary)
                .quantiles(&[0.5, 1.0])
                .hints(hints),
        )
        .unwrap();
    s.observe(s.series(&q, &[]).unwrap(), 3.0).unwrap();
    let c = s
        .register(
            &FamilyDesc::new("jobs", Kind::Counter)
                .name_as_given()
                .hints(hints),
        )
        .unwrap();
    s.counter_add(s.series(&c, &[]).unwrap(), 1.0).unwrap();
    let text = "# TYPE rt histogram\n\
         rt_bucket{le=\"0.5\"} 0\n\
         rt_bucket{le=\"1\"} 0\n\
         rt_bucket{le=\"10\"} 1\n\
         rt_bucket{le=\"+Inf\"} 1\n\
         rt_count 1\n\
         rt_sum 2\n\
         # TYPE q summary\n\
         q{quantile=\"0.5\"} 3\n\
         q{quantile=\"1\"} 3\n\
         q_count 1\n\
         q_sum 3\n\
         # TYPE jobs counter\n\
         jobs 1\n";
    assert_eq!(f.render(Format::PrometheusText), text);
    let om = f.render(Format::OpenMetrics);
    assert!(om.contains("rt_bucket{le=\"1\"} 0\n"), "{om}");
    assert!(om.contains("q{quantile=\"1\"} 3\n"), "{om}");
    assert!(!om.contains("_created"), "{om}");
    // Protobuf: no created_timestamp.
    let mut pb = Vec::new();
    encode(&s.snapshot().unwrap(), Format::Protobuf, &mut pb);
    let mut rest = &pb[..];
    let mut fams = Vec::new();
    while !rest.is_empty() {
        use prost::Message;
        fams.push(protobuf::proto::MetricFamily::decode_length_delimited(&mut rest).unwrap());
    }
    assert_eq!(fams.len(), 3);
    assert!(fams.iter().all(|f| f.metric.iter().all(|m| m
        .counter
        .as_ref()
        .is_none_or(|c| c.created_timestamp.is_none())
        && m.histogram
            .as_ref()
            .is_none_or(|h| h.created_timestamp.is_none())
        && m.summary
            .as_ref()
            .is_none_or(|h| h.created_timestamp.is_none()))));
    assert!(page_text_only(&s.snapshot().unwrap()));
}

/// prometheus_client in a single process: `_created` in every format, in
/// the text format as a gauge family of its own after the family.
#[test]
fn hints_created_in_every_format() {
    let f = fixture();
    let s = &f.store;
    let hints = Hints {
        created: Created::EveryFormat,
        ..Hints::default()
    };
    let c = s
        .register(
            &FamilyDesc::new("jobs", Kind::Counter)
                .help("Jobs.")
                .labels(&["q"])
                .hints(hints),
        )
        .unwrap();
    s.counter_add(s.series(&c, &["a"]).unwrap(), 1.0).unwrap();
    let g = s
        .register(&FamilyDesc::new("temp", Kind::Gauge).hints(hints))
        .unwrap();
    s.gauge_set(s.series(&g, &[]).unwrap(), 5.0).unwrap();
    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP jobs_total Jobs.\n\
         # TYPE jobs_total counter\n\
         jobs_total{q=\"a\"} 1\n\
         # HELP jobs_created Jobs.\n\
         # TYPE jobs_created gauge\n\
         jobs_created{q=\"a\"} T\n\
         # TYPE temp gauge\n\
         temp 5\n"
    );
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE jobs counter\n\
         # HELP jobs Jobs.\n\
         jobs_total{q=\"a\"} 1\n\
         jobs_created{q=\"a\"} T\n\
         # TYPE temp gauge\n\
         temp 5\n\
         # EOF\n"
    );
    assert!(!page_text_only(&s.snapshot().unwrap()));
}

/// Hints are not part of the definition: the first registration's stay.
#[test]
fn hints_of_the_first_registration_win() {
    let f = fixture();
    let s = &f.store;
    let first = Hints {
        short_bounds: true,
        ..Hints::default()
    };
    let h = s
        .register(
            &FamilyDesc::new("rt", Kind::Histogram)
                .buckets(&[1.0])
                .hints(first),
        )
        .unwrap();
    let again = s
        .register(&FamilyDesc::new("rt", Kind::Histogram).buckets(&[1.0]))
        .expect("other hints are no conflict");
    assert_eq!(h, again);
    s.observe(s.series(&h, &[]).unwrap(), 0.5).unwrap();
    let snap = s.snapshot().unwrap();
    assert_eq!(snap.families().next().unwrap().hints(), first);
    assert!(f.render(Format::PrometheusText).contains("le=\"1\""));
}

/// Decodes a protobuf exposition into its families.
fn decode_protobuf(store: &Store) -> Vec<protobuf::proto::MetricFamily> {
    use prost::Message;
    let mut pb = Vec::new();
    encode(&store.snapshot().unwrap(), Format::Protobuf, &mut pb);
    let mut rest = &pb[..];
    let mut fams = Vec::new();
    while !rest.is_empty() {
        fams.push(protobuf::proto::MetricFamily::decode_length_delimited(&mut rest).unwrap());
    }
    fams
}

/// prometheus_client in one process, in the protobuf format: after a
/// family hinted `Created::EveryFormat`, a gauge family `name_created`
/// (what Prometheus stores from the library's text page), besides
/// `created_timestamp`.
#[test]
fn hints_created_in_every_format_protobuf() {
    let f = fixture();
    let s = &f.store;
    let hints = Hints {
        created: Created::EveryFormat,
        ..Hints::default()
    };
    let c = s
        .register(
            &FamilyDesc::new("jobs", Kind::Counter)
                .help("Jobs.")
                .labels(&["q"])
                .hints(hints),
        )
        .unwrap();
    s.counter_add(s.series(&c, &["a"]).unwrap(), 1.0).unwrap();
    s.counter_add(s.series(&c, &["b"]).unwrap(), 2.0).unwrap();
    let g = s
        .register(&FamilyDesc::new("temp", Kind::Gauge).hints(hints))
        .unwrap();
    s.gauge_set(s.series(&g, &[]).unwrap(), 5.0).unwrap();
    let fams = decode_protobuf(s);
    let names: Vec<&str> = fams.iter().map(|f| f.name()).collect();
    assert_eq!(names, ["jobs_total", "jobs_created", "temp"]);
    let created = &fams[1];
    assert_eq!(created.r#type(), protobuf::proto::MetricType::Gauge);
    assert_eq!(created.help(), "Jobs.");
    assert_eq!(created.metric.len(), 2);
    let t1 = now() + 1.0;
    for (m, q) in created.metric.iter().zip(["a", "b"]) {
        assert_eq!((m.label[0].name(), m.label[0].value()), ("q", q));
        let v = m.gauge.as_ref().unwrap().value();
        assert!(f.t0 <= v && v <= t1, "{v}");
    }
    assert!(fams[0].metric.iter().all(|m| m
        .counter
        .as_ref()
        .is_some_and(|c| c.created_timestamp.is_some())));
}

/// prometheus_client's `Info` and `Enum` (gauges in the store): in
/// OpenMetrics typed `info` (the family named without `_info`) and
/// `stateset`; the text and protobuf formats write the gauges.
#[test]
fn hints_openmetrics_info_and_stateset() {
    let f = fixture();
    let s = &f.store;
    let typed = |t| Hints {
        openmetrics_type: Some(t),
        ..Hints::default()
    };
    let info = s
        .register(
            &FamilyDesc::new("build_info", Kind::Gauge)
                .help("Build.")
                .labels(&["version"])
                .hints(typed(OpenMetricsType::Info)),
        )
        .unwrap();
    s.gauge_set(s.series(&info, &["1.2"]).unwrap(), 1.0)
        .unwrap();
    let state = s
        .register(
            &FamilyDesc::new("state", Kind::Gauge)
                .help("State.")
                .labels(&["state"])
                .hints(typed(OpenMetricsType::StateSet)),
        )
        .unwrap();
    s.gauge_set(s.series(&state, &["up"]).unwrap(), 1.0)
        .unwrap();
    s.gauge_set(s.series(&state, &["down"]).unwrap(), 0.0)
        .unwrap();
    assert_eq!(
        f.render(Format::OpenMetrics),
        "# TYPE build info\n\
         # HELP build Build.\n\
         build_info{version=\"1.2\"} 1\n\
         # TYPE state stateset\n\
         # HELP state State.\n\
         state{state=\"up\"} 1\n\
         state{state=\"down\"} 0\n\
         # EOF\n"
    );
    assert_eq!(
        f.render(Format::PrometheusText),
        "# HELP build_info Build.\n\
         # TYPE build_info gauge\n\
         build_info{version=\"1.2\"} 1\n\
         # HELP state State.\n\
         # TYPE state gauge\n\
         state{state=\"up\"} 1\n\
         state{state=\"down\"} 0\n"
    );
    let fams = decode_protobuf(s);
    let names: Vec<(&str, _)> = fams.iter().map(|f| (f.name(), f.r#type())).collect();
    let gauge = protobuf::proto::MetricType::Gauge;
    assert_eq!(names, [("build_info", gauge), ("state", gauge)]);
    // A name outside the legacy set keeps its escaped form, `_info` after it.
    let utf8 = s
        .register(&FamilyDesc::new("my.app_info", Kind::Gauge).hints(typed(OpenMetricsType::Info)))
        .unwrap();
    s.gauge_set(s.series(&utf8, &[]).unwrap(), 1.0).unwrap();
    let om = f.render(Format::OpenMetrics);
    assert!(om.contains("# TYPE my_app info\nmy_app_info 1\n"), "{om}");
    let om = f.render_escaped(Format::OpenMetrics, Escaping::AllowUtf8);
    assert!(
        om.contains("# TYPE \"my.app\" info\n{\"my.app_info\"} 1\n"),
        "{om}"
    );
}

/// Registration refuses an OpenMetrics type a family cannot be written as.
#[test]
fn hints_openmetrics_type_checked() {
    let f = fixture();
    let typed = |t| Hints {
        openmetrics_type: Some(t),
        ..Hints::default()
    };
    let refused = [
        FamilyDesc::new("build_info", Kind::Counter).hints(typed(OpenMetricsType::Info)),
        FamilyDesc::new("build", Kind::Gauge).hints(typed(OpenMetricsType::Info)),
        FamilyDesc::new("_info", Kind::Gauge).hints(typed(OpenMetricsType::Info)),
        FamilyDesc::new("state", Kind::Gauge)
            .labels(&["other"])
            .hints(typed(OpenMetricsType::StateSet)),
    ];
    for d in &refused {
        let e = f.store.register(d).unwrap_err();
        assert_eq!(e.kind(), shmetrics_core::ErrorKind::InvalidOptions, "{d:?}");
    }
}

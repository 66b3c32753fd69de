//! The `dogstatsd` flavor, received over UDP and a Unix datagram socket
//! and read by a strict parser of the DogStatsD datagram format (no
//! DogStatsD agent is packaged for Debian or npm): tags, value packing,
//! datagram sizes, and sample rates whose implied counts equal the
//! histogram buckets' deltas exactly, flush by flush.

use std::collections::BTreeMap;
use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::prometheus::{doc_snippet_args, set_flag};
use crate::statsd_util::*;
use crate::util::{find_metric, Serve};

const INTERVAL: Duration = Duration::from_secs(1);

/// The datagrams of the one flush after `write` ran (in the middle of an
/// interval, so that a single flush carries all of it), each parsed
/// strictly.
fn one_flush(serve: &Serve, col: &Collector, max: usize, write: impl FnOnce()) -> Vec<Vec<Line>> {
    mid_interval(INTERVAL, 0.3);
    flush_now(serve, col, max, write)
}

/// As [`one_flush`], without waiting for the middle of an interval.
fn flush_now(serve: &Serve, col: &Collector, max: usize, write: impl FnOnce()) -> Vec<Vec<Line>> {
    let m = serve.exporter_metrics();
    let flushed = find_metric(&m, "shmetrics_statsd_flushes_total").unwrap_or(0.0) as u64;
    let sent = find_metric(&m, "shmetrics_statsd_datagrams_sent_total").unwrap_or(0.0) as usize;
    col.wait_count(sent);
    write();
    wait_flush_after(serve, flushed);
    let sent_after = self_metric(serve, "shmetrics_statsd_datagrams_sent_total") as usize;
    col.wait_count(sent_after);
    let got = col.since(sent);
    assert_eq!(got.len(), sent_after - sent, "more datagrams than sent");
    got.iter()
        .map(|d| {
            parse_datagram(d, max)
                .unwrap_or_else(|e| panic!("{e}\n--- datagram:\n{}", String::from_utf8_lossy(d)))
        })
        .collect()
}

/// Waits (bounded) until the exporter has logged `text`.
fn wait_stderr(serve: &Serve, text: &str) {
    crate::util::wait_for(
        &format!("{text:?} in the exporter's log"),
        FLUSH_WAIT,
        Duration::from_millis(20),
        || {
            let log = serve.stderr();
            if log.contains(text) {
                Ok(())
            } else {
                Err(log)
            }
        },
    );
}

fn lines_named<'a>(flush: &'a [Vec<Line>], name: &str) -> Vec<&'a Line> {
    flush.iter().flatten().filter(|l| l.name == name).collect()
}

/// The counts a distribution's lines imply, by (tags, value as written).
fn implied(lines: &[&Line]) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for l in lines {
        assert_eq!(l.ty, Type::Distribution, "{}", l.text);
        let w = l.weight().unwrap_or_else(|e| panic!("{e}: {}", l.text));
        for v in &l.raw_values {
            *out.entry((l.tag_string(), v.clone())).or_insert(0) += w;
        }
    }
    out
}

fn counts(pairs: &[(&str, &str, u64)]) -> BTreeMap<(String, String), u64> {
    pairs
        .iter()
        .map(|(t, v, n)| ((t.to_string(), v.to_string()), *n))
        .collect()
}

fn texts(lines: &[&Line]) -> Vec<String> {
    let mut t: Vec<String> = lines.iter().map(|l| l.text.clone()).collect();
    t.sort();
    t
}

#[test]
fn dogstatsd_over_udp_tags_packing_and_exact_sample_rates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let requests = store
        .register(
            &FamilyDesc::new("requests", Kind::Counter)
                .help("Requests.")
                .labels(&["route", "code"]),
        )
        .unwrap();
    let depth = store
        .register(
            &FamilyDesc::new("queue_depth", Kind::Gauge)
                .help("Depth.")
                .labels(&["queue"]),
        )
        .unwrap();
    let latency = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .labels(&["route"])
                .buckets(&[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0]),
        )
        .unwrap();
    let bounds: Vec<f64> = (1..=40).map(|i| f64::from(i) * 1.0625).collect();
    let wide = store
        .register(
            &FamilyDesc::new("wide", Kind::Histogram)
                .help("Forty buckets.")
                .buckets(&bounds),
        )
        .unwrap();
    let payload = store
        .register(&FamilyDesc::new("payload_bytes", Kind::Summary).help("Sizes."))
        .unwrap();

    let col = Collector::udp();
    const MAX: usize = 256;
    let serve = Serve::start(&[
        "--store",
        path.to_str().unwrap(),
        "--statsd.address",
        &col.address,
        "--statsd.flavor",
        "dogstatsd",
        "--statsd.interval",
        "1",
        "--statsd.max-datagram",
        &MAX.to_string(),
        "--statsd.prefix",
        "app",
    ]);
    wait_flush_after(&serve, 0);

    let api = store.series(&latency, &["/api"]).unwrap();
    let flush = one_flush(&serve, &col, MAX, || {
        let s = store
            .series(&requests, &["/api/v1 users,x|y", "200"])
            .unwrap();
        store.counter_add(s, 5.0).unwrap();
        store
            .counter_inc(store.series(&requests, &["/", ""]).unwrap())
            .unwrap();
        store
            .gauge_set(store.series(&depth, &["mail"]).unwrap(), -2.0)
            .unwrap();
        for (v, n) in [
            (0.001, 1000),
            (0.0075, 3),
            (0.02, 7),
            (0.04, 49),
            (0.075, 3),
            (0.2, 93),
            (0.3, 1),
            (10.0, 2),
        ] {
            for _ in 0..n {
                store.observe(api, v).unwrap();
            }
        }
        let w = store.series(&wide, &[]).unwrap();
        for b in &bounds {
            store.observe(w, b - 0.5).unwrap();
        }
        let p = store.series(&payload, &[]).unwrap();
        store.observe(p, 100.0).unwrap();
        store.observe(p, 300.0).unwrap();
    });
    // Several datagrams, each within the size (checked by the parser).
    assert!(flush.len() > 1, "{flush:?}");

    // Tags from labels: sanitized, an empty value left out.
    assert_eq!(
        texts(&lines_named(&flush, "app.requests")),
        [
            "app.requests:1|c|#route:/",
            "app.requests:5|c|#route:/api/v1 usersxy,code:200",
        ]
    );
    // A negative gauge: zero first, in the same datagram (the parser
    // checks the order).
    assert_eq!(
        texts(&lines_named(&flush, "app.queue_depth")),
        [
            "app.queue_depth:-2|g|#queue:mail",
            "app.queue_depth:0|g|#queue:mail",
        ]
    );
    // One value per bucket (its upper bound; +Inf's is the highest bound),
    // buckets with the same count packed on one line, the count in the
    // sample rate.
    let lat = lines_named(&flush, "app.latency_seconds");
    assert_eq!(
        texts(&lat),
        [
            "app.latency_seconds:0.005|d|@0.001|#route:/api",
            "app.latency_seconds:0.01:0.1|d|@0.3333333333333333|#route:/api",
            "app.latency_seconds:0.025|d|@0.14285714285714285|#route:/api",
            "app.latency_seconds:0.05|d|@0.02040816326530612|#route:/api",
            // 1/93 is 0.010752688172043012, whose inverse is
            // 92.99999999999999: an agent would count 92.
            "app.latency_seconds:0.25|d|@0.01075268817204301|#route:/api",
            "app.latency_seconds:0.5|d|#route:/api",
            "app.latency_seconds:5|d|@0.5|#route:/api",
        ]
    );
    let want_lat = counts(&[
        ("route:/api", "0.005", 1000),
        ("route:/api", "0.01", 3),
        ("route:/api", "0.025", 7),
        ("route:/api", "0.05", 49),
        ("route:/api", "0.1", 3),
        ("route:/api", "0.25", 93),
        ("route:/api", "0.5", 1),
        ("route:/api", "5", 2),
    ]);
    assert_eq!(implied(&lat), want_lat);
    // Forty values of one count: packed, over as many lines as the
    // datagram size needs, none split.
    let w = lines_named(&flush, "app.wide");
    assert!(w.len() > 1, "{w:?}");
    assert!(w.iter().all(|l| l.values.len() > 1 && l.rate.is_none()));
    let want_wide: BTreeMap<(String, String), u64> = bounds
        .iter()
        .map(|b| ((String::new(), b.to_string()), 1))
        .collect();
    assert_eq!(implied(&w), want_wide);
    // A summary: its mean, weighted by its count.
    assert_eq!(
        texts(&lines_named(&flush, "app.payload_bytes")),
        ["app.payload_bytes:200|d|@0.5"]
    );

    // The next flush sends deltas, not totals; nothing for what did not
    // change but the gauges, which are sent every time.
    let flush = one_flush(&serve, &col, MAX, || {
        for _ in 0..1000 {
            store.observe(api, 0.001).unwrap();
        }
        store.observe(api, 0.2).unwrap();
        store
            .counter_add(store.series(&requests, &["/", ""]).unwrap(), 2.0)
            .unwrap();
        store
            .gauge_set(store.series(&depth, &["mail"]).unwrap(), 3.0)
            .unwrap();
    });
    let all: Vec<&str> = flush.iter().flatten().map(|l| l.text.as_str()).collect();
    let mut all = all;
    all.sort();
    assert_eq!(
        all,
        [
            "app.latency_seconds:0.005|d|@0.001|#route:/api",
            "app.latency_seconds:0.25|d|#route:/api",
            "app.queue_depth:3|g|#queue:mail",
            "app.requests:2|c|#route:/",
        ]
    );
    // In all, what the rates imply is what the store counted.
    let snap = store.snapshot().unwrap();
    let series = snap
        .family("latency_seconds")
        .unwrap()
        .series()
        .next()
        .unwrap();
    let shmetrics_core::Value::Histogram { cumulative, .. } = series.value() else {
        panic!()
    };
    assert_eq!(*cumulative.last().unwrap(), 1158 + 1001);
}

#[test]
fn dogstatsd_over_a_unix_socket_keeps_deltas_until_the_agent_is_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let socket = dir.path().join("dsd.socket");
    let store = Store::open(&path, &Options::default()).unwrap();
    let jobs = store
        .register(
            &FamilyDesc::new("jobs_processed", Kind::Counter)
                .help("Jobs.")
                .labels(&["queue"]),
        )
        .unwrap();
    let latency = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .buckets(&[0.1, 0.5, 1.0]),
        )
        .unwrap();

    // The documented example, with this test's store and socket and a
    // short interval.
    let mut args = doc_snippet_args("dogstatsd");
    assert_eq!(args[..2], ["shmetrics", "serve"], "{args:?}");
    let mut args = args.split_off(2);
    set_flag(&mut args, "--store", path.to_str().unwrap());
    let doc = set_flag(
        &mut args,
        "--statsd.address",
        &format!("unix://{}", socket.display()),
    );
    assert!(doc.starts_with("unix:///"), "{doc}");
    assert_eq!(
        set_flag(&mut args, "--statsd.flavor", "dogstatsd"),
        "dogstatsd"
    );
    set_flag(&mut args, "--statsd.interval", "1");
    let serve = Serve::start(&args);

    // No agent yet: the flushes fail, and keep their deltas.
    let email = store.series(&jobs, &["email"]).unwrap();
    store.counter_add(email, 4.0).unwrap();
    let s = store.series(&latency, &[]).unwrap();
    for _ in 0..3 {
        store.observe(s, 0.25).unwrap();
    }
    let f = flushes(&serve);
    wait_flush_after(&serve, f + 1);
    assert!(self_metric(&serve, "shmetrics_statsd_send_errors_total") >= 1.0);
    wait_stderr(&serve, "cannot open a socket to unix://");
    store.counter_add(email, 1.0).unwrap();

    // The agent comes up: everything since the start arrives, once.
    mid_interval(INTERVAL, 0.3);
    let col = Collector::unix(&socket);
    let flush = flush_now(&serve, &col, 1432, || {
        store.observe(s, 0.75).unwrap();
    });
    let all: Vec<&str> = {
        let mut v: Vec<&str> = flush.iter().flatten().map(|l| l.text.as_str()).collect();
        v.sort();
        v
    };
    assert_eq!(
        all,
        [
            "jobs_processed:5|c|#queue:email",
            "latency_seconds:0.5|d|@0.3333333333333333",
            "latency_seconds:1|d",
        ],
        "{}",
        serve.stderr()
    );
    wait_stderr(&serve, "sending to unix://");
    // And later flushes send only what is new.
    let flush = one_flush(&serve, &col, 1432, || {
        store.counter_add(email, 2.0).unwrap();
    });
    let all: Vec<&str> = flush.iter().flatten().map(|l| l.text.as_str()).collect();
    assert_eq!(all, ["jobs_processed:2|c|#queue:email"]);
}

#[test]
fn serve_refuses_bad_statsd_settings_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    for (args, says) in [
        (
            &[
                "--statsd.address",
                "127.0.0.1:8125",
                "--statsd.interval",
                "3",
            ][..],
            "statsd interval 3: it must divide 10 seconds",
        ),
        (
            &[
                "--statsd.address",
                "127.0.0.1:8125",
                "--statsd.flavor",
                "graphite",
            ],
            "statsd flavor \"graphite\": use statsd or dogstatsd",
        ),
        (
            &["--statsd.address", "127.0.0.1"],
            "statsd address \"127.0.0.1\": expected HOST:PORT",
        ),
        (
            &["--statsd.address", "unix://dsd.socket"],
            "a Unix socket path must be absolute",
        ),
        (
            &[
                "--statsd.address",
                "127.0.0.1:8125",
                "--statsd.max-datagram",
                "10",
            ],
            "statsd max datagram 10: it must be between 64 and 65507 bytes",
        ),
        (
            &[
                "--statsd.address",
                "127.0.0.1:8125",
                "--statsd.prefix",
                "my app",
            ],
            "statsd prefix \"my app\"",
        ),
        (
            &["--statsd.interval", "5"],
            "--statsd.interval is given but --statsd.address is not",
        ),
    ] {
        let out = std::process::Command::new(crate::util::shmetrics_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--store", store])
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started:\n{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

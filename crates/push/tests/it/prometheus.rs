//! The real `shmetrics serve` pushes a store to a real Prometheus (Debian's
//! `prometheus` with `--web.enable-remote-write-receiver`), run with the
//! flags of docs/exporter.md's example; the values are read back with
//! PromQL.

use std::path::{Path, PathBuf};

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::util::*;

/// The `sh` block after `<!-- snippet: NAME -->` in docs/exporter.md, as
/// arguments (backslash-newline continuations joined).
pub fn doc_snippet_args(name: &str) -> Vec<String> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/exporter.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    let marker = format!("<!-- snippet: {name} -->");
    let after = &text[text
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker} in {}", doc.display()))..];
    let start = after
        .find("```sh\n")
        .expect("a ```sh block after the marker")
        + 6;
    let len = after[start..].find("```").expect("the block's end");
    after[start..start + len]
        .replace("\\\n", " ")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Replaces the value after `flag` in `args`; panics if `flag` is absent.
pub fn set_flag(args: &mut [String], flag: &str, value: &str) -> String {
    let i = args
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("no {flag} in {args:?}"));
    std::mem::replace(&mut args[i + 1], value.to_string())
}

/// Writes every kind of family; the values are chosen to be exact in
/// binary floating point. 11 series in the exposition.
pub fn write_store(path: &Path) -> Store {
    let store = Store::open(path, &Options::default()).unwrap();
    let jobs = store
        .register(
            &FamilyDesc::new("jobs_processed_total", Kind::Counter)
                .help("Jobs processed.")
                .labels(&["queue"]),
        )
        .unwrap();
    let email = store.series(&jobs, &["email"]).unwrap();
    for _ in 0..7 {
        store.counter_inc(email).unwrap();
    }
    store
        .counter_add(store.series(&jobs, &["sms"]).unwrap(), 2.5)
        .unwrap();
    let pool = store
        .register(&FamilyDesc::new("pool_size", Kind::Gauge).help("Pool size."))
        .unwrap();
    store
        .gauge_set(store.series(&pool, &[]).unwrap(), 3.0)
        .unwrap();
    let dur = store
        .register(
            &FamilyDesc::new("job_duration_seconds", Kind::Histogram)
                .help("Job durations.")
                .buckets(&[0.1, 0.5, 1.0]),
        )
        .unwrap();
    let s = store.series(&dur, &[]).unwrap();
    for v in [0.0625, 0.125, 0.25, 0.375, 0.75, 2.0] {
        store.observe(s, v).unwrap();
    }
    let size = store
        .register(
            &FamilyDesc::new("request_size_bytes", Kind::Summary)
                .help("Sizes.")
                .quantiles(&[0.5, 1.0]),
        )
        .unwrap();
    let s = store.series(&size, &[]).unwrap();
    store.observe(s, 100.0).unwrap();
    store.observe(s, 250.0).unwrap();
    store
}

/// The series `write_store` makes.
pub const SERIES: f64 = 13.0;

#[test]
fn the_documented_example_pushes_exact_values_to_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("store");
    let _store = write_store(&path);
    let prom = Receiver::start(
        Peer::Prometheus { receiver: true },
        &dir.path().join("prom"),
    );

    let mut args = doc_snippet_args("remote-write");
    assert_eq!(args[..2], ["shmetrics", "serve"], "{args:?}");
    let mut args = args.split_off(2);
    set_flag(&mut args, "--store", path.to_str().unwrap());
    let doc_url = set_flag(&mut args, "--remote-write.url", &prom.write_url());
    assert!(doc_url.ends_with("/api/v1/write"), "{doc_url}");
    let external = args
        .iter()
        .position(|a| a == "--remote-write.external-label")
        .map(|i| args[i + 1].clone())
        .expect("the example has an external label");
    let (ext_name, ext_value) = external.split_once('=').unwrap();
    // The first push is made at start, whatever the interval.
    let serve = Serve::start(&args);

    let sel = |s: &str| {
        if s.is_empty() {
            format!("{{{ext_name}=\"{ext_value}\"}}")
        } else {
            format!("{{{s},{ext_name}=\"{ext_value}\"}}")
        }
    };
    prom.wait_value(
        &format!("jobs_processed_total{}", sel("queue=\"email\"")),
        7.0,
    );
    prom.wait_value(
        &format!("jobs_processed_total{}", sel("queue=\"sms\"")),
        2.5,
    );
    prom.wait_value(&format!("pool_size{}", sel("")), 3.0);
    for (le, count) in [("0.1", 1.0), ("0.5", 4.0), ("1.0", 5.0), ("+Inf", 6.0)] {
        prom.wait_value(
            &format!(
                "job_duration_seconds_bucket{}",
                sel(&format!("le=\"{le}\""))
            ),
            count,
        );
    }
    prom.wait_value(&format!("job_duration_seconds_sum{}", sel("")), 3.5625);
    prom.wait_value(&format!("job_duration_seconds_count{}", sel("")), 6.0);
    prom.wait_value(&format!("request_size_bytes_sum{}", sel("")), 350.0);
    prom.wait_value(&format!("request_size_bytes_count{}", sel("")), 2.0);
    // Quantiles of two observations: the observations themselves, at the
    // nearest rank (an age bucket keeps its first 16 as they were).
    for (q, v) in [("0.5", 100.0), ("1.0", 250.0)] {
        prom.wait_value(
            &format!("request_size_bytes{}", sel(&format!("quantile=\"{q}\""))),
            v,
        );
    }
    // Every series carries the external label, and nothing else arrived.
    prom.wait_value(&format!("count({})", sel("")), SERIES);
    prom.wait_value("count({__name__=~\".+\"})", SERIES);
    // PromQL over the pushed buckets.
    prom.wait_value(
        "histogram_quantile(0.5, job_duration_seconds_bucket)",
        0.1 + (0.5 - 0.1) * ((3.0 - 1.0) / 3.0),
    );

    // The exporter's own metrics.
    let url = prom.write_url();
    let sent = serve.metric(&format!(
        "shmetrics_remote_write_samples_sent_total{{url=\"{url}\"}}"
    ));
    assert!(sent >= SERIES && sent % SERIES == 0.0, "sent {sent}");
    for zero in ["samples_failed_total", "samples_dropped_total"] {
        assert_eq!(
            serve.metric(&format!("shmetrics_remote_write_{zero}{{url=\"{url}\"}}")),
            0.0,
            "{zero}"
        );
    }
    let last = serve.metric(&format!(
        "shmetrics_remote_write_last_success_timestamp_seconds{{url=\"{url}\"}}"
    ));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        last > 0.0 && last <= now + 1.0,
        "last success {last}, now {now}"
    );
    assert_eq!(
        serve.metric(&format!(
            "shmetrics_remote_write_queue_batches{{url=\"{url}\",kind=\"capacity\"}}"
        )),
        10.0
    );
    let status = get(serve.addr, "/", &[]);
    assert!(
        status
            .text()
            .contains(&format!("<tr><th>remote write</th><td>{url}: ")),
        "{}",
        status.text()
    );
}

/// A Prometheus without the receiver answers 404: a status that is not
/// retried. The requests are dropped and counted, nothing piles up.
#[test]
fn a_refused_request_is_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = write_store(&path);
    let prom = Receiver::start(
        Peer::Prometheus { receiver: false },
        &dir.path().join("prom"),
    );
    let url = prom.write_url();
    let serve = Serve::start(&[
        "--store",
        path.to_str().unwrap(),
        "--remote-write.url",
        &url,
        "--remote-write.interval",
        "0.2",
        "--remote-write.queue-batches",
        "2",
    ]);
    let failed = format!("shmetrics_remote_write_samples_failed_total{{url=\"{url}\"}}");
    wait_for(
        "three refused pushes",
        ARRIVAL,
        std::time::Duration::from_millis(100),
        || {
            let body = serve.exporter_metrics();
            match find_metric(&body, &failed) {
                Some(v) if v >= 3.0 * SERIES => Ok(body),
                v => Err(format!("{v:?}")),
            }
        },
    );
    let body = serve.exporter_metrics();
    let m = |name: &str| {
        find_metric(
            &body,
            &format!("shmetrics_remote_write_{name}{{url=\"{url}\"}}"),
        )
        .unwrap_or_else(|| panic!("no {name}:\n{body}"))
    };
    assert_eq!(m("samples_failed_total") % SERIES, 0.0);
    assert_eq!(m("samples_sent_total"), 0.0);
    assert_eq!(m("retries_total"), 0.0, "a 404 is not retried");
    assert_eq!(m("last_success_timestamp_seconds"), 0.0);
    let log = serve.stderr();
    assert!(log.contains("404"), "{log}");
}

/// `--remote-write.native-histograms` sends histograms with native buckets
/// as native histograms, which a real Prometheus run with
/// `--enable-feature=native-histograms` stores: PromQL's histogram
/// functions read back the exact count and sum, and a quantile inside the
/// right bucket. A native-only histogram is sent only so; one with
/// classic buckets too keeps its classic series. (Without the flag, the
/// first of these queries finds nothing.)
#[test]
fn native_histograms_arrive_as_native_histograms() {
    use shmetrics_core::NativeOpts;

    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let rpc = store
        .register(
            &FamilyDesc::new("rpc_seconds", Kind::Histogram)
                .labels(&["method"])
                .native(NativeOpts::default()),
        )
        .unwrap();
    let both = store
        .register(
            &FamilyDesc::new("job_seconds", Kind::Histogram)
                .buckets(&[0.5, 1.0])
                .native(NativeOpts::default()),
        )
        .unwrap();
    // 7 observations of 0.25 (a bucket's upper bound at every schema:
    // a power of two) and 1 of 4, 0 and -2: count 10, sum 3.75.
    let get = store.series(&rpc, &["get"]).unwrap();
    for v in [0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 4.0, 0.0, -2.0] {
        store.observe(get, v).unwrap();
    }
    let job = store.series(&both, &[]).unwrap();
    for v in [0.25, 0.75, 2.0] {
        store.observe(job, v).unwrap();
    }

    let prom = Receiver::start_with(
        Peer::Prometheus { receiver: true },
        &dir.path().join("prom"),
        &["--enable-feature=native-histograms"],
    );
    let _serve = Serve::start(&[
        "--store",
        path.to_str().unwrap(),
        "--remote-write.url",
        &prom.write_url(),
        "--remote-write.interval",
        "0.5",
        "--remote-write.native-histograms",
    ]);

    let rpc_sel = "rpc_seconds{method=\"get\"}";
    prom.wait_value(&format!("histogram_count({rpc_sel})"), 10.0);
    prom.wait_value(&format!("histogram_sum({rpc_sel})"), 3.75);
    // The median is in the bucket (0.25 / 2^(1/8), 0.25] of schema 3.
    let median = prom
        .value(&format!("histogram_quantile(0.5, {rpc_sel})"))
        .unwrap();
    let lower = 0.25 / 2f64.powf(1.0 / 8.0);
    assert!(
        median > lower && median <= 0.25,
        "median {median} outside ({lower}, 0.25]"
    );
    // Only the native form of a native-only histogram.
    prom.wait_value("count({__name__=~\"rpc_seconds.*\"})", 1.0);
    // Both forms of the other.
    prom.wait_value("histogram_count(job_seconds)", 3.0);
    prom.wait_value("histogram_sum(job_seconds)", 3.0);
    prom.wait_value("job_seconds_bucket{le=\"1.0\"}", 2.0);
    prom.wait_value("job_seconds_count", 3.0);
}

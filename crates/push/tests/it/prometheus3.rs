//! The real `shmetrics serve` pushes to a real Prometheus 3 (built by
//! `scripts/build-peers.sh`), run with its OTLP and remote-write
//! receivers; the values are read back with PromQL, through Prometheus's
//! own translation of OTLP names (`UnderscoreEscapingWithSuffixes`, its
//! default: a monotonic sum gains `_total`, a unit its suffix).

use std::path::Path;

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::prometheus::{doc_snippet_args, set_flag};
use crate::util::*;

/// A counter with a label value that needs escaping, a gauge with a unit,
/// and a histogram with integer and fractional bounds.
fn write_store(path: &Path) -> Store {
    let store = Store::open(path, &Options::default()).unwrap();
    let jobs = store
        .register(
            &FamilyDesc::new("jobs", Kind::Counter)
                .help("Jobs done.")
                .labels(&["queue"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["email"]).unwrap(), 7.0)
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["say \"hi\" é"]).unwrap(), 2.5)
        .unwrap();
    let temp = store
        .register(
            &FamilyDesc::new("temperature_celsius", Kind::Gauge)
                .help("Temperature.")
                .unit("celsius"),
        )
        .unwrap();
    store
        .gauge_set(store.series(&temp, &[]).unwrap(), -4.25)
        .unwrap();
    let lat = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .buckets(&[0.5, 1.0, 10.0]),
        )
        .unwrap();
    let s = store.series(&lat, &[]).unwrap();
    for v in [0.25, 0.75, 0.75, 2.0, 20.0] {
        store.observe(s, v).unwrap();
    }
    store
}

fn serve(store: &Path, flags: &[&str]) -> Serve {
    let mut args = vec!["--store", store.to_str().unwrap()];
    args.extend_from_slice(flags);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    Serve::start(&args)
}

/// The histogram's classic series as Prometheus stores them: `les` are
/// its bounds as the protocol's path writes them (remote write carries
/// the exporter's `le`, `1.0`; Prometheus's OTLP translation writes
/// `1`).
fn assert_histogram(prom: &Receiver, name: &str, les: [&str; 3]) {
    let counts = [1.0, 3.0, 4.0, 5.0];
    for (le, count) in les.iter().chain(&["+Inf"]).zip(counts) {
        prom.wait_value(&format!("{name}_bucket{{le=\"{le}\"}}"), count);
    }
    prom.wait_value(&format!("{name}_count"), 5.0);
    prom.wait_value(&format!("{name}_sum"), 23.75);
}

#[test]
fn otlp_into_prometheus3_through_its_name_translation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = write_store(&path);
    let prom = Receiver::start(Peer::Prometheus3, &dir.path().join("prom"));
    let url = prom.otlp_url();
    let serve = serve(
        &path,
        &[
            "--otlp.url",
            &url,
            "--otlp.interval",
            "0.5",
            "--otlp.resource-attribute",
            "service.name=checkout",
        ],
    );

    // service.name becomes the job label; a monotonic sum gains _total.
    prom.wait_value("jobs_total{job=\"checkout\",queue=\"email\"}", 7.0);
    prom.wait_value("jobs_total{queue=\"say \\\"hi\\\" é\"}", 2.5);
    // The unit suffix once, though OTLP carries the unit apart.
    prom.wait_value("temperature_celsius", -4.25);
    assert_histogram(&prom, "latency_seconds", ["0.5", "1", "10"]);
    assert!(
        serve.metric(&format!(
            "shmetrics_otlp_data_points_sent_total{{url=\"{url}\"}}"
        )) > 0.0,
        "{}",
        serve.stderr()
    );
    assert_eq!(
        serve.metric(&format!(
            "shmetrics_otlp_data_points_failed_total{{url=\"{url}\"}}"
        )),
        0.0
    );
}

#[test]
fn remote_write_1_0_into_prometheus3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = write_store(&path);
    let prom = Receiver::start(Peer::Prometheus3, &dir.path().join("prom"));
    let _serve = serve(
        &path,
        &[
            "--remote-write.url",
            &prom.write_url(),
            "--remote-write.interval",
            "0.5",
        ],
    );
    prom.wait_value("jobs_total{queue=\"email\"}", 7.0);
    prom.wait_value("jobs_total{queue=\"say \\\"hi\\\" é\"}", 2.5);
    prom.wait_value("temperature_celsius", -4.25);
    assert_histogram(&prom, "latency_seconds", ["0.5", "1.0", "10.0"]);
}

#[test]
fn remote_write_2_0_into_prometheus3_with_metadata_created_times_and_exemplars() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = write_store(&path);
    let orders = store
        .register(
            &FamilyDesc::new("orders", Kind::Counter)
                .help("Orders.")
                .exemplars(true),
        )
        .unwrap();
    let unix = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let before = unix();
    let s = store.series(&orders, &[]).unwrap();
    let after = unix();
    store
        .counter_add_with_exemplar(s, 4.0, &[("trace_id", "abc123")])
        .unwrap();
    // A family with `jobs`' labels: 2.0 interleaves the two families'
    // series (grouped by their label values).
    let failed = store
        .register(
            &FamilyDesc::new("jobs_failed", Kind::Counter)
                .help("Jobs failed.")
                .labels(&["queue"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&failed, &["email"]).unwrap(), 1.0)
        .unwrap();
    let prom = Receiver::start_with(
        Peer::Prometheus3,
        &dir.path().join("prom"),
        &["--enable-feature=created-timestamp-zero-ingestion,exemplar-storage,type-and-unit-labels"],
    );
    let url = prom.write_url();
    // docs/exporter.md's example, with this test's store, URL and interval.
    let mut args = doc_snippet_args("remote-write-2");
    assert_eq!(args[..2], ["shmetrics", "serve"], "{args:?}");
    let mut args = args.split_off(2);
    set_flag(&mut args, "--store", path.to_str().unwrap());
    set_flag(&mut args, "--remote-write.url", &url);
    args.extend(["--remote-write.interval".to_string(), "0.5".to_string()]);
    let serve = Serve::start(&args);
    prom.wait_value("jobs_total{queue=\"email\"}", 7.0);
    prom.wait_value("jobs_total{queue=\"say \\\"hi\\\" é\"}", 2.5);
    prom.wait_value("temperature_celsius", -4.25);
    prom.wait_value("orders_total", 4.0);
    prom.wait_value("jobs_failed_total{queue=\"email\"}", 1.0);
    assert_histogram(&prom, "latency_seconds", ["0.5", "1.0", "10.0"]);

    // The metadata, as Prometheus's type-and-unit labels.
    let one = |q: &str| {
        let r = prom.query(q).unwrap();
        assert_eq!(r.len(), 1, "{q}: {r:?}");
        r[0]["metric"].clone()
    };
    assert_eq!(one("jobs_total{queue=\"email\"}")["__type__"], "counter");
    assert_eq!(one("jobs_failed_total")["__type__"], "counter");
    let t = one("temperature_celsius");
    assert_eq!(
        (&t["__type__"], &t["__unit__"]),
        (&"gauge".into(), &"celsius".into()),
        "{t}"
    );
    assert_eq!(one("latency_seconds_count")["__type__"], "histogram");

    // The created time, as the zero sample Prometheus puts there.
    let r = get(prom.addr, "/api/v1/query?query=orders_total%5B5m%5D", &[]);
    let r: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    let values = r["data"]["result"][0]["values"].as_array().unwrap();
    let (t0, v0) = (
        values[0][0].as_f64().unwrap(),
        values[0][1].as_str().unwrap(),
    );
    assert_eq!(v0, "0", "{values:?}");
    assert!(
        t0 >= before - 0.001 && t0 <= after + 0.001,
        "zero at {t0}, created between {before} and {after}"
    );

    // The exemplar.
    let now = unix();
    let r = get(
        prom.addr,
        &format!(
            "/api/v1/query_exemplars?query=orders_total&start={}&end={}",
            now - 600.0,
            now + 60.0
        ),
        &[],
    );
    let ex: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert_eq!(
        ex["data"][0]["exemplars"][0]["labels"]["trace_id"], "abc123",
        "{ex}"
    );
    assert_eq!(ex["data"][0]["exemplars"][0]["value"], "4", "{ex}");

    // The receiver wrote everything it was sent (its Written headers).
    assert!(
        serve.metric(&format!(
            "shmetrics_remote_write_samples_sent_total{{url=\"{url}\"}}"
        )) > 0.0
    );
    assert_eq!(
        serve.metric(&format!(
            "shmetrics_remote_write_samples_rejected_total{{url=\"{url}\"}}"
        )),
        0.0
    );
}

#[test]
fn remote_write_2_0_custom_bucket_histograms_into_prometheus3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = write_store(&path);
    let prom = Receiver::start(Peer::Prometheus3, &dir.path().join("prom"));
    let _serve = serve(
        &path,
        &[
            "--remote-write.url",
            &prom.write_url(),
            "--remote-write.interval",
            "0.5",
            "--remote-write.protocol",
            "2.0",
            "--remote-write.custom-buckets",
        ],
    );
    // The classic histogram arrives as one native histogram with custom
    // buckets: its count, sum and quantiles as from the classic series.
    prom.wait_value("histogram_count(latency_seconds)", 5.0);
    prom.wait_value("histogram_sum(latency_seconds)", 23.75);
    // Rank 2.5 of 5 falls in (0.5, 1], which holds 2 after 1: linear
    // within the bucket, as for classic buckets.
    prom.wait_value("histogram_quantile(0.5, latency_seconds)", 0.875);
    // Instead of the classic series, not beside them; the rest as before.
    assert!(prom.query("latency_seconds_bucket").unwrap().is_empty());
    assert!(prom.query("latency_seconds_count").unwrap().is_empty());
    prom.wait_value("jobs_total{queue=\"email\"}", 7.0);
}

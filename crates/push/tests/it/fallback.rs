//! remote write 2.0 to receivers that do not take it: `shmetrics serve
//! --remote-write.protocol 2.0` falls back to 1.0 for that URL, logs it
//! once, counts it, and the receiver stores the series. What each real
//! receiver answers to a 2.0 request:
//!
//! - Debian's Prometheus 2.42 and VictoriaMetrics 1.79 do not look at the
//!   content type: they read the request as an empty 1.0 one and answer
//!   204 without any `X-Prometheus-Remote-Write-*-Written` header, which
//!   the specification says a sender should take as 415;
//! - Prometheus 3 with
//!   `--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest`
//!   answers 415.

use std::path::Path;
use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use shmetrics_testkit::PATIENCE;

use crate::util::*;

/// A counter, a gauge and a histogram.
fn write_store(path: &Path) -> Store {
    let store = Store::open(path, &Options::default()).unwrap();
    let jobs = FamilyDesc::new("jobs", Kind::Counter)
        .help("Jobs done.")
        .labels(&["queue"]);
    let jobs = store.register(&jobs).unwrap();
    for (queue, v) in [("email", 7.0), ("sms", 2.5)] {
        store
            .counter_add(store.series(&jobs, &[queue]).unwrap(), v)
            .unwrap();
    }
    let temp = store
        .register(&FamilyDesc::new("temperature", Kind::Gauge))
        .unwrap();
    store
        .gauge_set(store.series(&temp, &[]).unwrap(), -4.25)
        .unwrap();
    let lat = FamilyDesc::new("latency_seconds", Kind::Histogram).buckets(&[0.5, 1.0]);
    let lat = store.register(&lat).unwrap();
    let s = store.series(&lat, &[]).unwrap();
    for v in [0.25, 0.75, 2.0] {
        store.observe(s, v).unwrap();
    }
    store
}

/// Pushes 2.0 to `receiver`; checks that it stores the series (sent as
/// 1.0), that the fallback is counted once and logged once, and that
/// nothing was dropped.
fn falls_back(receiver: Receiver, answer: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = write_store(&path);
    let url = receiver.write_url();
    let serve = Serve::on_store(
        &path,
        &[
            "--remote-write.url",
            &url,
            "--remote-write.protocol",
            "2.0",
            "--remote-write.interval",
            "0.5",
        ],
    );
    receiver.wait_value("jobs_total{queue=\"email\"}", 7.0);
    receiver.wait_value("jobs_total{queue=\"sms\"}", 2.5);
    receiver.wait_value("temperature", -4.25);
    receiver.wait_value("latency_seconds_bucket{le=\"1.0\"}", 2.0);
    receiver.wait_value("latency_seconds_count", 3.0);
    // Several pushes later, still one fallback.
    let sent = |s: &Serve| {
        s.metric(&format!(
            "shmetrics_remote_write_samples_sent_total{{url=\"{url}\"}}"
        ))
    };
    let first = sent(&serve);
    wait_for("more pushes", PATIENCE, Duration::from_millis(200), || {
        (sent(&serve) > first).then_some(())
    });
    let stderr = serve.stderr();
    assert_eq!(
        serve.metric(&format!(
            "shmetrics_remote_write_fallbacks_total{{url=\"{url}\"}}"
        )),
        1.0,
        "{stderr}"
    );
    assert_eq!(
        serve.metric(&format!(
            "shmetrics_remote_write_samples_failed_total{{url=\"{url}\"}}"
        )),
        0.0,
        "{stderr}"
    );
    let logged: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("gets 1.0 from now on"))
        .collect();
    assert_eq!(logged.len(), 1, "{stderr}");
    assert!(logged[0].contains(answer), "{}", logged[0]);
}

#[test]
fn remote_write_2_0_to_prometheus_2_falls_back_to_1_0() {
    let dir = tempfile::tempdir().unwrap();
    let prom = Receiver::start(Peer::Prometheus { receiver: true }, dir.path());
    falls_back(
        prom,
        "204 No Content without any X-Prometheus-Remote-Write-*-Written header",
    );
}

#[test]
fn remote_write_2_0_to_victoria_metrics_falls_back_to_1_0() {
    let dir = tempfile::tempdir().unwrap();
    let vm = Receiver::start(Peer::Victoria, dir.path());
    falls_back(
        vm,
        "204 No Content without any X-Prometheus-Remote-Write-*-Written header",
    );
}

#[test]
fn remote_write_2_0_to_a_prometheus_3_taking_only_1_0_falls_back_on_its_415() {
    let dir = tempfile::tempdir().unwrap();
    let prom = Receiver::start_with(
        Peer::Prometheus3,
        dir.path(),
        &["--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest"],
    );
    falls_back(prom, "415 Unsupported Media Type");
}

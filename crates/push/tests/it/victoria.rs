//! The real `shmetrics serve` pushes to a real VictoriaMetrics (Debian's
//! `victoria-metrics`) and, in the same run, to a real Prometheus: two
//! URLs, two queues. Values are read back through each one's query API.

use std::time::Duration;

use crate::prometheus::{write_store, SERIES};
use crate::util::*;

#[test]
fn pushes_to_victoria_metrics_and_prometheus_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = write_store(&path);
    let vm = Receiver::start(Peer::Victoria, &dir.path().join("vm"));
    let prom = Receiver::start(
        Peer::Prometheus { receiver: true },
        &dir.path().join("prom"),
    );
    let serve = Serve::start(&[
        "--store",
        path.to_str().unwrap(),
        "--remote-write.url",
        &vm.write_url(),
        "--remote-write.url",
        &prom.write_url(),
        "--remote-write.interval",
        "0.5",
        "--remote-write.external-label",
        "instance=host-a:9816",
        "--remote-write.external-label",
        "dc=eu-1",
    ]);

    for r in [&vm, &prom] {
        r.wait_value(
            r#"jobs_processed_total{queue="email",instance="host-a:9816",dc="eu-1"}"#,
            7.0,
        );
        r.wait_value(r#"job_duration_seconds_bucket{le="0.5",dc="eu-1"}"#, 4.0);
        r.wait_value(r#"job_duration_seconds_bucket{le="+Inf",dc="eu-1"}"#, 6.0);
        r.wait_value(r#"request_size_bytes_sum{dc="eu-1"}"#, 350.0);
        r.wait_value(r#"count({dc="eu-1",instance="host-a:9816"})"#, SERIES);
    }

    // A later value arrives too.
    let fam = store
        .register(
            &shmetrics_core::FamilyDesc::new("jobs_processed_total", shmetrics_core::Kind::Counter)
                .help("Jobs processed.")
                .labels(&["queue"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&fam, &["email"]).unwrap(), 100.0)
        .unwrap();
    for r in [&vm, &prom] {
        r.wait_value(r#"jobs_processed_total{queue="email"}"#, 107.0);
    }

    for r in [&vm, &prom] {
        let url = r.write_url();
        wait_for(
            "samples sent to both",
            ARRIVAL,
            Duration::from_millis(100),
            || {
                let body = serve.exporter_metrics();
                let sent = find_metric(
                    &body,
                    &format!("shmetrics_remote_write_samples_sent_total{{url=\"{url}\"}}"),
                );
                match sent {
                    Some(v) if v >= 2.0 * SERIES => Ok(()),
                    v => Err(format!("{v:?}")),
                }
            },
        );
        assert_eq!(
            serve.metric(&format!(
                "shmetrics_remote_write_samples_failed_total{{url=\"{url}\"}}"
            )),
            0.0,
            "{}",
            serve.stderr()
        );
    }
}

/// A VictoriaMetrics whose storage is read-only (its free-space threshold
/// set beyond any disk) answers every write with 503: retried with
/// backoff, never counted as failed, the queue bounded. Restarted with
/// writable storage on the same port and data directory, it gets the
/// latest value.
#[test]
fn a_5xx_is_retried_until_the_receiver_takes_it() {
    const QUEUE: f64 = 2.0;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = write_store(&path);
    let mut vm = Receiver::start_with(
        Peer::Victoria,
        &dir.path().join("vm"),
        &["-storage.minFreeDiskSpaceBytes=1000000000000000000"],
    );
    let url = vm.write_url();
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
    let m = |body: &str, name: &str, extra: &str| {
        let series = format!("shmetrics_remote_write_{name}{{url=\"{url}\"{extra}}}");
        find_metric(body, &series).unwrap_or_else(|| panic!("no {series}:\n{body}"))
    };
    wait_for(
        "retries, and drops from the full queue",
        ARRIVAL,
        Duration::from_millis(100),
        || {
            let body = serve.exporter_metrics();
            let queued = m(&body, "queue_batches", ",kind=\"used\"");
            assert!(queued <= QUEUE, "{queued} batches queued");
            let (retries, dropped) = (
                m(&body, "retries_total", ""),
                m(&body, "samples_dropped_total", ""),
            );
            if retries >= 3.0 && dropped >= SERIES {
                Ok(())
            } else {
                Err(format!("retries {retries} dropped {dropped}"))
            }
        },
    );
    let body = serve.exporter_metrics();
    assert_eq!(
        m(&body, "samples_failed_total", ""),
        0.0,
        "a 503 is no failure"
    );
    assert_eq!(m(&body, "samples_sent_total", ""), 0.0);
    let log = serve.stderr();
    assert!(log.contains("503"), "{log}");

    let fam = store
        .register(
            &shmetrics_core::FamilyDesc::new("jobs_processed_total", shmetrics_core::Kind::Counter)
                .help("Jobs processed.")
                .labels(&["queue"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&fam, &["email"]).unwrap(), 35.0)
        .unwrap();
    vm.stop();
    vm.extra_args.clear();
    vm.restart();
    vm.wait_value(r#"jobs_processed_total{queue="email"}"#, 42.0);
    let body = serve.exporter_metrics();
    assert!(m(&body, "samples_sent_total", "") >= SERIES);
    assert_eq!(m(&body, "samples_failed_total", ""), 0.0);
}

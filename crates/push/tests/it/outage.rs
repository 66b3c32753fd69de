//! A receiver outage: Prometheus is killed while the store keeps changing,
//! then started again on the same port and data directory. The queue
//! stays within its bound, drops are counted, and after recovery the
//! latest pushed value is the store's.

use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Options, Store, Value};

use crate::util::*;

const QUEUE: usize = 3;

fn counter_value(store: &Store) -> f64 {
    let snap = store.snapshot().unwrap();
    let s = snap
        .family("outage_events")
        .unwrap()
        .series()
        .next()
        .unwrap();
    match s.value() {
        Value::Counter(v) => v,
        other => panic!("{other:?}"),
    }
}

/// The serve process's remote-write metrics for `url`.
struct Own {
    sent: f64,
    dropped: f64,
    failed: f64,
    retries: f64,
    queued: f64,
    last_success: f64,
}

fn own(serve: &Serve, url: &str) -> Own {
    let body = serve.exporter_metrics();
    let m = |name: &str, extra: &str| {
        let series = format!("shmetrics_remote_write_{name}{{url=\"{url}\"{extra}}}");
        find_metric(&body, &series).unwrap_or_else(|| panic!("no {series}:\n{body}"))
    };
    let o = Own {
        sent: m("samples_sent_total", ""),
        dropped: m("samples_dropped_total", ""),
        failed: m("samples_failed_total", ""),
        retries: m("retries_total", ""),
        queued: m("queue_batches", ",kind=\"used\""),
        last_success: m("last_success_timestamp_seconds", ""),
    };
    assert_eq!(m("queue_batches", ",kind=\"capacity\""), QUEUE as f64);
    assert!(
        o.queued <= QUEUE as f64,
        "the queue holds {} batches, more than {QUEUE}",
        o.queued
    );
    o
}

#[test]
fn receiver_outage_is_bounded_and_recovers_to_the_latest_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let fam = store
        .register(&FamilyDesc::new("outage_events", Kind::Counter).help("Events."))
        .unwrap();
    let events = store.series(&fam, &[]).unwrap();
    store.counter_inc(events).unwrap();

    let mut prom = Receiver::start(
        Peer::Prometheus { receiver: true },
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
        &QUEUE.to_string(),
    ]);
    prom.wait_value("outage_events_total", 1.0);
    let before = own(&serve, &url);
    assert!(before.sent >= 1.0);
    assert_eq!(before.dropped, 0.0);

    // The outage: keep incrementing until the queue is full and batches
    // have been dropped (and retries made), checking the bound throughout.
    prom.stop();
    let during = wait_for(
        "the queue to fill and drop batches while the receiver is down",
        ARRIVAL,
        Duration::from_millis(50),
        || {
            store.counter_inc(events).unwrap();
            let o = own(&serve, &url);
            if o.queued == QUEUE as f64 && o.dropped >= 2.0 && o.retries >= 2.0 {
                Ok(o)
            } else {
                Err(format!(
                    "queued {} dropped {} retries {}",
                    o.queued, o.dropped, o.retries
                ))
            }
        },
    );
    // Keep going a while longer: the queue stays at its bound, and drops
    // keep being counted.
    wait_for(
        "more drops at the bound",
        ARRIVAL,
        Duration::from_millis(50),
        || {
            store.counter_inc(events).unwrap();
            let o = own(&serve, &url);
            if o.dropped >= during.dropped + 3.0 {
                Ok(())
            } else {
                Err(format!("dropped {}", o.dropped))
            }
        },
    );
    let log = serve.stderr();
    assert!(log.contains("cannot reach the receiver"), "{log}");
    let last_before_restart = own(&serve, &url).last_success;
    let final_value = counter_value(&store);
    assert!(final_value > 3.0, "{final_value}");

    // Recovery on the same port and data directory.
    prom.restart();
    prom.wait_value("outage_events_total", final_value);
    let after = wait_for(
        "the queue to drain after recovery",
        ARRIVAL,
        Duration::from_millis(100),
        || {
            let o = own(&serve, &url);
            if o.queued <= 1.0 && o.last_success > last_before_restart {
                Ok(o)
            } else {
                Err(format!(
                    "queued {} last success {}",
                    o.queued, o.last_success
                ))
            }
        },
    );
    assert!(after.sent > before.sent);
    assert_eq!(after.failed, 0.0, "nothing refused:\n{}", serve.stderr());
    wait_for(
        "the log to say it sends again",
        ARRIVAL,
        Duration::from_millis(100),
        || {
            let log = serve.stderr();
            if log.contains("sending again") {
                Ok(())
            } else {
                Err(log)
            }
        },
    );
    // Samples from before the outage are still there (same data directory).
    let r = prom
        .query("min_over_time(outage_events_total[10m])")
        .unwrap();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["value"][1], "1", "{r:?}");
}

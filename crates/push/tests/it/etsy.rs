//! The `statsd` flavor against the real Etsy StatsD (npm's `statsd`), read
//! through its management interface: exact totals across flushes, a
//! writer slot that is reused, a store reset and a wipe, and the last
//! flush on SIGTERM. The documented example is run here too.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::prometheus::set_flag;
use crate::statsd_util::*;
use crate::util::{wait_exit, wait_for, Serve, IO_TIMEOUT};

/// The families of these tests.
struct Fams {
    jobs: shmetrics_core::Family,
    temp: shmetrics_core::Family,
    latency: shmetrics_core::Family,
    size: shmetrics_core::Family,
}

fn register(store: &Store) -> Fams {
    Fams {
        jobs: store
            .register(
                &FamilyDesc::new("jobs_processed", Kind::Counter)
                    .help("Jobs.")
                    .labels(&["queue"]),
            )
            .unwrap(),
        temp: store
            .register(&FamilyDesc::new("temperature_celsius", Kind::Gauge).help("T."))
            .unwrap(),
        latency: store
            .register(
                &FamilyDesc::new("latency_seconds", Kind::Histogram)
                    .help("Latency.")
                    .labels(&["route"])
                    .buckets(&[0.1, 0.5, 1.0]),
            )
            .unwrap(),
        size: store
            .register(&FamilyDesc::new("size_bytes", Kind::Summary).help("Sizes."))
            .unwrap(),
    }
}

/// Our counters (StatsD's own `statsd.*` left out).
fn ours(all: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    all.into_iter()
        .filter(|(k, _)| !k.starts_with("statsd."))
        .collect()
}

fn expect(statsd: &EtsyStatsd, serve: &Serve, counters: &[(&str, f64)], gauges: &[(&str, f64)]) {
    let want_c: BTreeMap<String, f64> = counters.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let want_g: BTreeMap<String, f64> = gauges.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    wait_for(
        "StatsD's totals",
        FLUSH_WAIT,
        Duration::from_millis(50),
        || {
            let (c, g) = (ours(statsd.counters()), ours(statsd.gauges()));
            if c == want_c && g == want_g {
                Ok(())
            } else {
                Err(format!(
                    "counters {c:?}\ngauges {g:?}\nwanted {want_c:?}\n{want_g:?}\n--- exporter:\n{}\n--- statsd:\n{}",
                    serve.stderr(),
                    statsd.log()
                ))
            }
        },
    );
    // And it stays there: later flushes send nothing more (zero deltas
    // are not sent), and StatsD saw no line it could not parse.
    let f = flushes(serve);
    wait_flush_after(serve, f + 1);
    assert_eq!(ours(statsd.counters()), want_c);
    assert_eq!(ours(statsd.gauges()), want_g);
    assert_eq!(
        statsd.counters()["statsd.bad_lines_seen"],
        0.0,
        "{}",
        statsd.log()
    );
}

fn start_exporter(store: &Path, statsd: &EtsyStatsd, extra: &[&str]) -> Serve {
    let mut args = vec![
        "--store".to_string(),
        store.to_str().unwrap().to_string(),
        "--statsd.address".into(),
        statsd.addr.to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    Serve::start(&args)
}

/// Sends SIGTERM and waits for a clean exit.
fn terminate(serve: &mut Serve) {
    let pid = serve.process.0.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let status = wait_exit(&mut serve.process.0, IO_TIMEOUT, "shmetrics serve");
    assert!(status.success(), "{status}\n{}", serve.stderr());
}

#[test]
fn etsy_statsd_totals_are_exact_across_slot_reuse_reset_and_wipe() {
    let dir = tempfile::tempdir().unwrap();
    let statsd = EtsyStatsd::start(&dir.path().join("statsd"));
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let f = register(&store);
    let email = store.series(&f.jobs, &["email"]).unwrap();
    // Counted before the exporter starts: not sent (a restarted exporter
    // must not send it again).
    store.counter_add(email, 100.0).unwrap();

    let mut serve = start_exporter(&path, &statsd, &["--statsd.interval", "0.5"]);
    wait_flush_after(&serve, 0);
    // (Printed after the address, which `Serve::start` waits for.)
    assert!(
        serve.stderr().contains("statsd to udp://127.0.0.1:"),
        "{}",
        serve.stderr()
    );

    // Across several flushes: new series count from zero, a label value
    // with a dot and a space is folded into one part, an empty one is left
    // out, a negative gauge arrives as one.
    store.counter_add(email, 7.0).unwrap();
    store
        .counter_add(store.series(&f.jobs, &["sms"]).unwrap(), 2.5)
        .unwrap();
    store
        .counter_inc(store.series(&f.jobs, &["a.b c"]).unwrap())
        .unwrap();
    store
        .counter_add(store.series(&f.jobs, &[""]).unwrap(), 4.0)
        .unwrap();
    store
        .gauge_set(store.series(&f.temp, &[]).unwrap(), -3.5)
        .unwrap();
    let api = store.series(&f.latency, &["/api"]).unwrap();
    for v in [0.0625, 0.25, 0.75, 2.0] {
        store.observe(api, v).unwrap();
    }
    let size = store.series(&f.size, &[]).unwrap();
    store.observe(size, 100.0).unwrap();
    let mut counters = vec![
        ("jobs_processed.queue.email", 7.0),
        ("jobs_processed.queue.sms", 2.5),
        ("jobs_processed.queue.a_b_c", 1.0),
        ("jobs_processed", 4.0),
        ("latency_seconds_count.route._api", 4.0),
        ("latency_seconds_sum.route._api", 3.0625),
        ("size_bytes_count", 1.0),
        ("size_bytes_sum", 100.0),
    ];
    expect(&statsd, &serve, &counters, &[("temperature_celsius", -3.5)]);
    // More, over two flushes at least.
    store.observe(size, 250.0).unwrap();
    let n = flushes(&serve);
    wait_flush_after(&serve, n + 1);
    store.counter_add(email, 3.0).unwrap();
    counters[0].1 = 10.0;
    counters[6].1 = 2.0;
    counters[7].1 = 350.0;
    expect(&statsd, &serve, &counters, &[("temperature_celsius", -3.5)]);

    // A writer slot reused: this process's slot is released and claimed
    // again by a new handle, which continues from the counts in it.
    let reuses = store.snapshot().unwrap().stats().writer_reuses_total;
    drop(store);
    let store = Store::open(&path, &Options::default()).unwrap();
    let f = register(&store);
    let email = store.series(&f.jobs, &["email"]).unwrap();
    store.counter_add(email, 5.0).unwrap();
    store
        .gauge_set(store.series(&f.temp, &[]).unwrap(), 4.0)
        .unwrap();
    assert_eq!(
        store.snapshot().unwrap().stats().writer_reuses_total,
        reuses + 1,
        "the slot was not reused"
    );
    counters[0].1 = 15.0;
    expect(&statsd, &serve, &counters, &[("temperature_celsius", 4.0)]);

    // A reset: every value is zeroed; what is counted after it is sent,
    // and no negative delta is.
    store.reset().unwrap();
    store.counter_add(email, 3.0).unwrap();
    let api = store.series(&f.latency, &["/api"]).unwrap();
    store.observe(api, 0.375).unwrap();
    counters[0].1 = 18.0;
    counters[4].1 = 5.0;
    counters[5].1 = 3.4375;
    expect(&statsd, &serve, &counters, &[("temperature_celsius", 0.0)]);

    // A wipe: families and series are made again, and count from zero,
    // even past the old value (the creation time tells it apart).
    store.wipe().unwrap();
    let f = register(&store);
    let email = store.series(&f.jobs, &["email"]).unwrap();
    store.counter_add(email, 50.0).unwrap();
    counters[0].1 = 68.0;
    expect(&statsd, &serve, &counters, &[("temperature_celsius", 0.0)]);

    // The exporter's own metrics count what was sent.
    let m = serve.exporter_metrics();
    for name in [
        "shmetrics_statsd_datagrams_sent_total",
        "shmetrics_statsd_bytes_sent_total",
        "shmetrics_statsd_lines_sent_total",
    ] {
        let v = crate::util::find_metric(&m, name).unwrap_or(0.0);
        assert!(v > 0.0, "{name} = {v}\n{m}");
    }
    assert_eq!(
        crate::util::find_metric(&m, "shmetrics_statsd_send_errors_total"),
        Some(0.0),
        "{m}"
    );
    let packets = statsd.counters()["statsd.packets_received"];
    let lines = statsd.counters()["statsd.metrics_received"];
    assert_eq!(
        crate::util::find_metric(&m, "shmetrics_statsd_datagrams_sent_total"),
        Some(packets)
    );
    assert_eq!(
        crate::util::find_metric(&m, "shmetrics_statsd_lines_sent_total"),
        Some(lines)
    );

    // SIGTERM makes a last flush.
    store.counter_add(email, 1.0).unwrap();
    terminate(&mut serve);
    counters[0].1 = 69.0;
    wait_for(
        "the last flush",
        FLUSH_WAIT,
        Duration::from_millis(50),
        || {
            let v = ours(statsd.counters())
                .get("jobs_processed.queue.email")
                .copied();
            if v == Some(69.0) {
                Ok(())
            } else {
                Err(format!("{v:?}"))
            }
        },
    );
}

#[test]
fn the_documented_statsd_example_sends_exact_totals_to_etsy_statsd() {
    let dir = tempfile::tempdir().unwrap();
    let statsd = EtsyStatsd::start(&dir.path().join("statsd"));
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let f = register(&store);

    let mut args = crate::prometheus::doc_snippet_args("statsd");
    assert_eq!(args[..2], ["shmetrics", "serve"], "{args:?}");
    let mut args = args.split_off(2);
    set_flag(&mut args, "--store", path.to_str().unwrap());
    set_flag(&mut args, "--statsd.address", &statsd.addr.to_string());
    let prefix = set_flag(&mut args, "--statsd.prefix", "myapp");
    assert_eq!(prefix, "myapp");
    // The documented interval (10 s) is kept: the first flush is made at
    // start, the last on SIGTERM.
    let mut serve = Serve::start(&args);
    wait_flush_after(&serve, 0);
    let email = store.series(&f.jobs, &["email"]).unwrap();
    for _ in 0..7 {
        store.counter_inc(email).unwrap();
    }
    store
        .gauge_set(store.series(&f.temp, &[]).unwrap(), 21.5)
        .unwrap();
    let api = store.series(&f.latency, &["/api"]).unwrap();
    store.observe(api, 0.25).unwrap();
    store.observe(api, 0.5).unwrap();
    terminate(&mut serve);
    let want: BTreeMap<String, f64> = [
        ("myapp.jobs_processed.queue.email", 7.0),
        ("myapp.latency_seconds_count.route._api", 2.0),
        ("myapp.latency_seconds_sum.route._api", 0.75),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    wait_for("the totals", FLUSH_WAIT, Duration::from_millis(50), || {
        let c = ours(statsd.counters());
        if c == want {
            Ok(())
        } else {
            Err(format!("{c:?}\n{}", statsd.log()))
        }
    });
    assert_eq!(
        ours(statsd.gauges()),
        [("myapp.temperature_celsius".to_string(), 21.5)].into()
    );
    assert_eq!(statsd.counters()["statsd.bad_lines_seen"], 0.0);
}

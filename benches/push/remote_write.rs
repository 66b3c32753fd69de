//! remote write 2.0 against 1.0 (and 2.0 with custom-bucket histograms,
//! `--remote-write.custom-buckets`), and OTLP against remote write 2.0: for
//! the same 100,000-series store (as the exposition counts series: each
//! bucket, `_sum` and `_count` of a histogram is one), the bytes of one
//! push (snappy-compressed for remote write; OTLP/HTTP is sent
//! uncompressed, as the exporter sends it) and the CPU it takes to build
//! them (snapshot walk, protobuf, compression), in the same run. The HTTP
//! exchange is left out: it costs the same per byte.
//!
//! Run it with `cargo bench -p shmetrics-push --bench remote_write`. It
//! prints its figures; nothing passes or fails. `BENCH_PUSHES` (10)
//! pushes are encoded per version, alternately.

use std::time::{Duration, Instant};

use prost::Message;
use shmetrics_core::{FamilyDesc, Kind, Options, Store};
use shmetrics_push::otlp::{encode_snapshot, ResourceAttributes};
use shmetrics_push::proto2::Request;
use shmetrics_push::{encode, encode_v2, requests_v2, timeseries, ExternalLabels};

const MAX_SAMPLES: usize = 5000;

/// 40,000 counter series (4 families), 8,000 gauges, and 4,000 histograms
/// of 10 bounds (13 exposed series each: 52,000): 100,000 in all.
fn store(dir: &std::path::Path) -> Store {
    let store = Store::open(
        dir.join("store"),
        &Options {
            max_series: 60_000,
            max_families: 64,
            label_bytes: 64 << 20,
            ..Options::default()
        },
    )
    .unwrap();
    for f in 0..4 {
        let c = store
            .register(
                &FamilyDesc::new(format!("http_requests_{f}_total"), Kind::Counter)
                    .help("Requests handled, by route and status.")
                    .labels(&["route", "code", "instance"]),
            )
            .unwrap();
        for i in 0..10_000u32 {
            let route = format!("/api/v1/items/{}", i % 2500);
            let code = ["200", "404", "500", "302"][(i / 2500) as usize];
            let inst = format!("web-{}", i % 7);
            store
                .counter_add(
                    store.series(&c, &[&route, code, &inst]).unwrap(),
                    f64::from(i),
                )
                .unwrap();
        }
    }
    let g = store
        .register(
            &FamilyDesc::new("queue_depth", Kind::Gauge)
                .help("Depth.")
                .labels(&["queue", "instance"]),
        )
        .unwrap();
    for i in 0..8_000u32 {
        let (q, inst) = (format!("queue-{}", i % 1000), format!("web-{}", i / 1000));
        store
            .gauge_set(store.series(&g, &[&q, &inst]).unwrap(), f64::from(i))
            .unwrap();
    }
    let h = store
        .register(
            &FamilyDesc::new("request_duration_seconds", Kind::Histogram)
                .help("Request durations.")
                .labels(&["route", "instance"])
                .buckets(&[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0]),
        )
        .unwrap();
    for i in 0..4_000u32 {
        let (route, inst) = (
            format!("/api/v1/items/{}", i % 500),
            format!("web-{}", i / 500),
        );
        let s = store.series(&h, &[&route, &inst]).unwrap();
        for k in 0..20 {
            store.observe(s, f64::from(k) * 0.13).unwrap();
        }
    }
    store
}

fn main() {
    let pushes: usize = std::env::var("BENCH_PUSHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let ext = ExternalLabels::parse(&["cluster=eu-1"]).unwrap();
    let resource = ResourceAttributes::parse(&["service.name=bench"]).unwrap();
    if std::env::var("BENCH_BREAKDOWN").is_ok() {
        breakdown(&store.snapshot().unwrap(), &ext);
        return;
    }
    let (mut t1, mut t2, mut t3, mut t4) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let (mut b1, mut b2, mut b3, mut b4, mut series) = (0usize, 0usize, 0usize, 0usize, 0usize);
    for _ in 0..pushes {
        let snap = store.snapshot().unwrap();
        let start = Instant::now();
        let chunks = encode(
            timeseries(&snap, &ext, 1_700_000_000_000, false),
            MAX_SAMPLES,
        );
        t1 += start.elapsed();
        b1 = chunks.iter().map(|c| c.body.len()).sum();
        series = chunks.iter().map(|c| c.samples as usize).sum();
        let start = Instant::now();
        let chunks = encode_v2(&snap, &ext, 1_700_000_000_000, false, false, MAX_SAMPLES);
        t2 += start.elapsed();
        b2 = chunks.iter().map(|c| c.body.len()).sum();
        let start = Instant::now();
        let chunks = encode_v2(&snap, &ext, 1_700_000_000_000, false, true, MAX_SAMPLES);
        t4 += start.elapsed();
        b4 = chunks.iter().map(|c| c.body.len()).sum();
        let start = Instant::now();
        let bodies = encode_snapshot(&snap, &resource, false, MAX_SAMPLES);
        t3 += start.elapsed();
        b3 = bodies.iter().map(|b| b.len()).sum();
    }
    let ms = |t: Duration| t.as_secs_f64() * 1e3 / pushes as f64;
    println!("remote write, one push of {series} series ({MAX_SAMPLES} a request), {pushes} pushes per version, alternately\n");
    println!(
        "{:<10} {:>14} {:>16}",
        "protocol", "bytes/push", "CPU ms/push"
    );
    println!("{:<10} {:>14} {:>16.1}", "1.0", b1, ms(t1));
    println!("{:<10} {:>14} {:>16.1}", "2.0", b2, ms(t2));
    println!("{:<10} {:>14} {:>16.1}", "2.0 NHCB", b4, ms(t4));
    println!("{:<10} {:>14} {:>16.1}", "OTLP", b3, ms(t3));
    println!(
        "\n2.0 / 1.0: bytes {:.2}x, CPU {:.2}x (2.0 also carries each series' type, help, unit and start time)",
        b2 as f64 / b1 as f64,
        ms(t2) / ms(t1)
    );
    println!(
        "2.0 with --remote-write.custom-buckets / 1.0: bytes {:.2}x, CPU {:.2}x (a histogram is one sample, not 13 series)",
        b4 as f64 / b1 as f64,
        ms(t4) / ms(t1)
    );
    println!(
        "OTLP / 2.0: bytes {:.2}x, CPU {:.2}x (OTLP: a histogram is one data point, not a series per bucket; uncompressed)",
        b3 as f64 / b2 as f64,
        ms(t3) / ms(t2)
    );
}

fn sizes(requests: &[Request]) -> (usize, usize) {
    requests.iter().fold((0, 0), |(raw, packed), r| {
        let body = r.encode_to_vec();
        let compressed = snap::raw::Encoder::new().compress_vec(&body).unwrap();
        (raw + body.len(), packed + compressed.len())
    })
}

/// Where one 2.0 push's bytes go: each part's share, as what the push
/// would weigh less without it (uncompressed and snappy-compressed).
fn breakdown(snap: &shmetrics_core::Snapshot, ext: &ExternalLabels) {
    let requests: Vec<Request> =
        requests_v2(snap, ext, 1_700_000_000_000, false, false, MAX_SAMPLES)
            .into_iter()
            .map(|r| r.0)
            .collect();
    let (raw, packed) = sizes(&requests);
    let ts = timeseries(snap, ext, 1_700_000_000_000, false);
    let v1: usize = encode(ts, MAX_SAMPLES).iter().map(|c| c.body.len()).sum();
    type Strip = fn(&mut Request);
    let parts: [(&str, Strip); 7] = [
        ("symbols", |r| r.symbols.clear()),
        ("labels_refs", |r| {
            r.timeseries.iter_mut().for_each(|t| t.labels_refs.clear())
        }),
        ("sample values", |r| {
            r.timeseries
                .iter_mut()
                .flat_map(|t| &mut t.samples)
                .for_each(|s| s.value = 0.0)
        }),
        ("sample timestamps", |r| {
            r.timeseries
                .iter_mut()
                .flat_map(|t| &mut t.samples)
                .for_each(|s| s.timestamp = 0)
        }),
        ("start timestamps", |r| {
            r.timeseries
                .iter_mut()
                .flat_map(|t| &mut t.samples)
                .for_each(|s| s.start_timestamp = 0)
        }),
        ("metadata", |r| {
            r.timeseries.iter_mut().for_each(|t| t.metadata = None)
        }),
        ("metadata and start timestamps", |r| {
            r.timeseries.iter_mut().for_each(|t| {
                t.metadata = None;
                t.samples.iter_mut().for_each(|s| s.start_timestamp = 0)
            })
        }),
    ];
    println!(
        "where one 2.0 push's bytes go ({} requests, {} symbols each on average)\n",
        requests.len(),
        requests.iter().map(|r| r.symbols.len()).sum::<usize>() / requests.len().max(1)
    );
    println!("{:<32} {:>12} {:>12}", "", "raw bytes", "snappy bytes");
    println!("{:<32} {:>12} {:>12}", "whole push", raw, packed);
    for (name, strip) in parts {
        let mut without = requests.clone();
        without.iter_mut().for_each(strip);
        let (r, p) = sizes(&without);
        println!(
            "{:<32} {:>12} {:>12}",
            format!("  without {name}: saves"),
            raw - r,
            packed as i64 - p as i64
        );
    }
    println!(
        "\n2.0 / 1.0 ({v1} bytes): {:.3}x",
        packed as f64 / v1 as f64
    );
}

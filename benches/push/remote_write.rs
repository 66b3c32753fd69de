//! remote write 2.0 against 1.0 (and 2.0 with custom-bucket histograms,
//! `--remote-write.custom-buckets`), and OTLP against remote write 2.0: for
//! the same 100,000-series store (as the exposition counts series: each
//! bucket, `_sum` and `_count` of a histogram is one), the bytes of one
//! push (snappy-compressed for remote write; OTLP/HTTP gzip-compressed,
//! the exporter's default, and uncompressed) and the CPU it takes to
//! build them (snapshot walk, protobuf, compression), in the same run.
//! The HTTP exchange is left out: it costs the same per byte.
//!
//! Run it with `cargo bench -p shmetrics-push --bench remote_write`. It
//! prints its figures; nothing passes or fails. `BENCH_PUSHES` (10)
//! pushes are encoded per protocol, alternately. With `BENCH_BREAKDOWN=1`
//! it prints instead where one 2.0 push's bytes go.

use std::time::{Duration, Instant};

use prost::Message;
use shmetrics_core::{FamilyDesc, Kind, Options, Snapshot, Store};
use shmetrics_push::otlp::{encode_snapshot, Compression, ResourceAttributes};
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
    type Push<'s> = Box<dyn Fn(&Snapshot) -> Vec<usize> + 's>;
    let ts = 1_700_000_000_000;
    let lens = |chunks: Vec<shmetrics_push::Chunk>| chunks.iter().map(|c| c.body.len()).collect();
    let otlp = |compression| {
        let resource = &resource;
        Box::new(move |snap: &Snapshot| {
            let bodies = encode_snapshot(snap, resource, false, MAX_SAMPLES, compression);
            bodies.iter().map(|b| b.len()).collect()
        }) as Push<'_>
    };
    let kinds: [(&str, Push<'_>); 5] = [
        (
            "1.0",
            Box::new(|snap| lens(encode(timeseries(snap, &ext, ts, false), MAX_SAMPLES))),
        ),
        (
            "2.0",
            Box::new(|snap| lens(encode_v2(snap, &ext, ts, false, false, MAX_SAMPLES))),
        ),
        (
            "2.0 NHCB",
            Box::new(|snap| lens(encode_v2(snap, &ext, ts, false, true, MAX_SAMPLES))),
        ),
        ("OTLP", otlp(Compression::None)),
        ("OTLP gzip", otlp(Compression::Gzip)),
    ];
    let mut cpu = [Duration::ZERO; 5];
    let mut bytes = [0usize; 5];
    let mut requests = [0usize; 5];
    for _ in 0..pushes {
        let snap = store.snapshot().unwrap();
        for (i, (_, push)) in kinds.iter().enumerate() {
            let start = Instant::now();
            let lens = push(&snap);
            cpu[i] += start.elapsed();
            (bytes[i], requests[i]) = (lens.iter().sum(), lens.len());
        }
    }
    let series = snapshot_series(&store, &ext);
    let ms = |i: usize| cpu[i].as_secs_f64() * 1e3 / pushes as f64;
    println!("one push of {series} series ({MAX_SAMPLES} a request), {pushes} pushes per protocol, alternately\n");
    println!(
        "{:<10} {:>14} {:>10} {:>16}",
        "protocol", "bytes/push", "requests", "CPU ms/push"
    );
    for (i, (name, _)) in kinds.iter().enumerate() {
        println!(
            "{name:<10} {:>14} {:>10} {:>16.1}",
            bytes[i],
            requests[i],
            ms(i)
        );
    }
    let ratio = |a: usize, b: usize, what: &str| {
        println!(
            "{} / {}: bytes {:.2}x, CPU {:.2}x ({what})",
            kinds[a].0,
            kinds[b].0,
            bytes[a] as f64 / bytes[b] as f64,
            ms(a) / ms(b)
        );
    };
    println!();
    ratio(
        1,
        0,
        "2.0 also carries each series' type, help, unit and start time",
    );
    ratio(
        2,
        0,
        "with --remote-write.custom-buckets: a histogram is one sample, not 13 series",
    );
    ratio(
        3,
        1,
        "OTLP uncompressed (--otlp.compression none): a histogram is one data point",
    );
    ratio(4, 1, "OTLP gzip, the default");
}

/// The series of one push (as remote write counts them).
fn snapshot_series(store: &Store, ext: &ExternalLabels) -> usize {
    timeseries(&store.snapshot().unwrap(), ext, 0, false).len()
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

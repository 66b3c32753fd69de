//! The hot path: an update through a cached handle, a lookup plus an
//! update, and a histogram observation; alone and from two threads of one
//! process (which share the process's writer slot, and here one series:
//! the contended case).

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use shmetrics_core::{Family, FamilyDesc, Kind, Options, Series, Store};

mod common;

/// Runs `op(thread, i)` `iters` times on each of `n` threads at once and
/// returns the wall time: criterion then reports the time per operation
/// while `n` threads run.
fn on_threads(n: usize, iters: u64, op: &(dyn Fn(usize, u64) + Sync)) -> Duration {
    let barrier = Barrier::new(n + 1);
    std::thread::scope(|scope| {
        for t in 0..n {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                for i in 0..iters {
                    op(t, i);
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}

/// The labels of the series the benchmarks update.
const LABELS: [&str; 3] = ["GET", "/api/v1/users", "200"];

type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// The store's families and series that the benchmarks update.
struct Targets {
    requests: Family,
    native: Family,
    counter: Series,
    hist: Series,
}

/// A counter family with 1,000 neighbours of the counter updated (so that
/// lookups probe a populated index), a 12-bucket histogram family and a
/// native one.
fn targets(store: &Store) -> Targets {
    let requests = store
        .register(
            &FamilyDesc::new("http_requests", Kind::Counter).labels(&["method", "route", "status"]),
        )
        .unwrap();
    let latency = store
        .register(
            &FamilyDesc::new("http_latency_seconds", Kind::Histogram)
                .labels(&["route"])
                .buckets(&common::BOUNDS),
        )
        .unwrap();
    for i in 0..1000 {
        store
            .series(&requests, &["GET", &format!("/r/{i}"), "200"])
            .unwrap();
    }
    let native = store
        .register(
            &FamilyDesc::new("http_latency_native_seconds", Kind::Histogram)
                .labels(&["route"])
                .native(shmetrics_core::NativeOpts::default()),
        )
        .unwrap();
    Targets {
        counter: store.series(&requests, &LABELS).unwrap(),
        hist: store.series(&latency, &["/api/v1/users"]).unwrap(),
        requests,
        native,
    }
}

fn updates(c: &mut Criterion) {
    let dir = common::tempdir();
    let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
    let t = targets(&store);
    let values = common::spread_values();
    store.counter_inc(t.counter).unwrap(); // claim the slot outside the timing

    let mut g = c.benchmark_group("update");
    one_thread(&mut g, &store, &t, &values);
    with_ttl(&mut g, &store, &values);
    two_threads(&mut g, &store, &t, &values);
    g.finish();
}

fn one_thread(g: &mut Group<'_>, store: &Store, t: &Targets, values: &[f64]) {
    // The floor: one atomic add on a cell, which every counter_inc does.
    // Report the store's figures as a ratio to this one, from the same run.
    let cell = std::sync::atomic::AtomicU64::new(0);
    g.bench_function("baseline: AtomicU64::fetch_add", |b| {
        b.iter(|| black_box(&cell).fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    });
    g.bench_function("counter_inc", |b| {
        b.iter(|| store.counter_inc(black_box(t.counter)).unwrap())
    });
    let placed = shmetrics_core::PlacedSeries::new(t.counter);
    g.bench_function("counter_inc through a PlacedSeries", |b| {
        b.iter(|| store.counter_inc(black_box(&placed).get(store)).unwrap())
    });
    g.bench_function("get_or_create+inc (3 labels, existing)", |b| {
        b.iter(|| {
            let s = store.series(&t.requests, black_box(&LABELS)).unwrap();
            store.counter_inc(s).unwrap()
        })
    });
    let mut i = 0;
    g.bench_function("histogram_observe (12 buckets)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            store.observe(black_box(t.hist), values[i]).unwrap()
        })
    });

    let native_hist = store.series(&t.native, &["/api/v1/users"]).unwrap();
    let mut i = 0;
    g.bench_function("histogram_observe (native, schema 3)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            store.observe(black_box(native_hist), values[i]).unwrap()
        })
    });
}

/// The same updates on families with a series TTL: each also pins the
/// slot (two more atomic read-modify-writes), checks the series' state
/// word and reads the coarse clock.
fn with_ttl(g: &mut Group<'_>, store: &Store, values: &[f64]) {
    let ttl = std::time::Duration::from_secs(600);
    let requests_ttl = store
        .register(
            &FamilyDesc::new("http_requests_ttl", Kind::Counter)
                .labels(&["method", "route", "status"])
                .ttl(ttl),
        )
        .unwrap();
    let latency_ttl = store
        .register(
            &FamilyDesc::new("http_latency_ttl_seconds", Kind::Histogram)
                .labels(&["route"])
                .buckets(&common::BOUNDS)
                .ttl(ttl),
        )
        .unwrap();
    let counter_ttl = store.series(&requests_ttl, &LABELS).unwrap();
    let hist_ttl = store.series(&latency_ttl, &["/api/v1/users"]).unwrap();
    g.bench_function("counter_inc (ttl)", |b| {
        b.iter(|| store.counter_inc(black_box(counter_ttl)).unwrap())
    });
    let mut i = 0;
    g.bench_function("histogram_observe (12 buckets, ttl)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            store.observe(black_box(hist_ttl), values[i]).unwrap()
        })
    });
}

fn two_threads(g: &mut Group<'_>, store: &Store, t: &Targets, values: &[f64]) {
    g.bench_function("counter_inc, 2 threads (same series)", |b| {
        b.iter_custom(|iters| {
            on_threads(2, iters, &|_, _| {
                store.counter_inc(black_box(t.counter)).unwrap()
            })
        })
    });
    g.bench_function("get_or_create+inc, 2 threads", |b| {
        b.iter_custom(|iters| {
            on_threads(2, iters, &|_, _| {
                let s = store.series(&t.requests, black_box(&LABELS)).unwrap();
                store.counter_inc(s).unwrap()
            })
        })
    });
    g.bench_function("histogram_observe, 2 threads (same series)", |b| {
        b.iter_custom(|iters| {
            on_threads(2, iters, &|thread, i| {
                let v = values[(i as usize * 2 + thread) & 1023];
                store.observe(black_box(t.hist), v).unwrap()
            })
        })
    });
}

/// Registering a family that is already there, as PHP does for every
/// metric on every request, in a store of 2,500 families. The last one
/// registered is the one a scan of the family records reaches last.
fn registration(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
    let descs: Vec<FamilyDesc> = (0..2500)
        .map(|i| FamilyDesc::new(format!("app_metric_{i}"), Kind::Counter).labels(&["route"]))
        .collect();
    for d in &descs {
        store.register(d).unwrap();
    }
    let last = descs.last().unwrap();
    let mut g = c.benchmark_group("register");
    g.bench_function("existing family, 2,500 in the store", |b| {
        b.iter(|| store.register(black_box(last)).unwrap())
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    updates(&mut c);
    registration(&mut c);
    c.final_summary();
}

//! Instruction and CPU-time figures for the hottest updates, a
//! `counter_inc`, a 12-bucket `observe` and a summary `observe` (two
//! quantiles, so a sketch cell too), without criterion: each runs
//! in a loop of its own (not inlined), so that callgrind can count just
//! that loop, and the thread's CPU time (not wall time, which a loaded
//! machine inflates) is printed per update.
//!
//! Instructions per update, free of the loop's set-up: build the binary
//! (`cargo bench -p shmetrics-core --bench hotpath --no-run` prints its
//! path), run it under callgrind with N and with 10N updates, and divide
//! the difference of each loop's inclusive count by 9N:
//!
//! ```text
//! SHMETRICS_HOTPATH_N=100000 valgrind --tool=callgrind \
//!     --toggle-collect='*inc_loop*' --toggle-collect='*observe_loop*' \
//!     --toggle-collect='*summary_loop*' \
//!     target/release/deps/hotpath-<hash>
//! callgrind_annotate --inclusive=yes callgrind.out.<pid> | grep _loop
//! ```
//!
//! The loop itself (copying the handle through `black_box`, the call,
//! `unwrap`) is counted too, a dozen instructions or so, the same in every
//! version: compare versions, not the figure with zero.

use std::hint::black_box;

use shmetrics_core::{FamilyDesc, Kind, Options, Series, Store};

mod common;

/// Updates per loop; `SHMETRICS_HOTPATH_N` overrides.
const DEFAULT_N: u64 = 20_000_000;

#[inline(never)]
fn inc_loop(store: &Store, s: Series, n: u64) {
    for _ in 0..n {
        store.counter_inc(black_box(s)).unwrap();
    }
}

#[inline(never)]
fn observe_loop(store: &Store, s: Series, values: &[f64; 1024], n: u64) {
    for i in 0..n {
        store
            .observe(black_box(s), values[(i & 1023) as usize])
            .unwrap();
    }
}

#[inline(never)]
fn summary_loop(store: &Store, s: Series, values: &[f64; 1024], n: u64) {
    for i in 0..n {
        store
            .observe(black_box(s), values[(i & 1023) as usize])
            .unwrap();
    }
}

/// Nanoseconds of thread CPU time per call of `f(n)`'s `n` updates.
fn per_op(n: u64, f: impl Fn(u64)) -> f64 {
    let start = common::thread_cpu();
    f(n);
    (common::thread_cpu() - start).as_nanos() as f64 / n as f64
}

fn main() {
    let n = std::env::var("SHMETRICS_HOTPATH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_N);
    let dir = common::tempdir();
    let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
    let requests = store
        .register(&FamilyDesc::new("requests", Kind::Counter).labels(&["route"]))
        .unwrap();
    let latency = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .labels(&["route"])
                .buckets(&common::BOUNDS),
        )
        .unwrap();
    let quantiles = store
        .register(
            &FamilyDesc::new("duration_seconds", Kind::Summary)
                .labels(&["route"])
                .quantiles(&[0.5, 0.99]),
        )
        .unwrap();
    let counter = store.series(&requests, &["/"]).unwrap();
    let hist = store.series(&latency, &["/"]).unwrap();
    let summary = store.series(&quantiles, &["/"]).unwrap();
    let values = common::spread_values();
    store.counter_inc(counter).unwrap(); // claims the slot
    let inc = per_op(n, |n| inc_loop(&store, counter, n));
    let observe = per_op(n, |n| observe_loop(&store, hist, &values, n));
    let summary = per_op(n, |n| summary_loop(&store, summary, &values, n));
    println!("hotpath: {n} updates each, thread CPU time per update");
    println!("  counter_inc               {inc:6.2} ns");
    println!("  observe (12 buckets)      {observe:6.2} ns");
    println!("  observe (summary)         {summary:6.2} ns");
}

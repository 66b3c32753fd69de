//! What creating series costs, without criterion: thread CPU time (user
//! and system, so the file system's work to reserve pages counts; wall
//! time on a loaded machine does not mean much) per new series, and per
//! first update of each new series (which, without reserved pages, is
//! where the file system allocates them).
//!
//! Counters: `SHMETRICS_CREATE_N` (default 20,000) series of one family in
//! a fresh default store, written through one slot. Summaries (5 age
//! buckets, 4,229 sketch cells each a writer): a 250th as many, at
//! most 80.
//!
//! Prints one `name value` line per figure, for `benches/space.sh`, which
//! runs this bench built from two versions in turn and prints the ratios.

use shmetrics_core::{FamilyDesc, Kind, Options, Series, Store};

mod common;

/// Nanoseconds of thread CPU time per item of `f`'s `n`.
fn per_item<T>(n: usize, f: impl FnOnce() -> T) -> (f64, T) {
    let start = common::thread_cpu();
    let out = f();
    (
        (common::thread_cpu() - start).as_nanos() as f64 / n as f64,
        out,
    )
}

#[inline(never)]
fn create_loop(store: &Store, family: &shmetrics_core::Family, n: usize) -> Vec<Series> {
    (0..n)
        .map(|i| store.series(family, &[&format!("v{i}")]).unwrap())
        .collect()
}

/// Creates `n` series of `desc` in a fresh store (after one update has
/// claimed the writer slot, as in a worker), then updates each once with
/// `update`: the CPU time of each step per series.
fn measure(desc: &FamilyDesc, n: usize, update: impl Fn(&Store, Series)) -> (f64, f64) {
    let dir = common::tempdir();
    let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
    let warm = store
        .register(&FamilyDesc::new("warm", Kind::Counter))
        .unwrap();
    store
        .counter_inc(store.series(&warm, &[]).unwrap())
        .unwrap();
    let family = store.register(desc).unwrap();
    let (create, series) = per_item(n, || create_loop(&store, &family, n));
    let (first, ()) = per_item(n, || {
        for s in &series {
            update(&store, *s);
        }
    });
    (create, first)
}

fn main() {
    let n: usize = std::env::var("SHMETRICS_CREATE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let counter = FamilyDesc::new("jobs", Kind::Counter).labels(&["k"]);
    let (create, first) = measure(&counter, n, |st, s| st.counter_inc(s).unwrap());
    println!("counter_create_ns {create:.1}");
    println!("counter_first_inc_ns {first:.1}");
    let summary = FamilyDesc::new("lat", Kind::Summary)
        .labels(&["k"])
        .quantiles(&[0.5, 0.99]);
    // At most 80: a default store of the version before this bench held
    // 99 summary series.
    let m = (n / 250).clamp(10, 80);
    let (create, first) = measure(&summary, m, |st, s| st.observe(s, 0.25).unwrap());
    println!("summary_create_ns {create:.1}");
    println!("summary_first_observe_ns {first:.1}");
}

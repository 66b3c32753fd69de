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
//! And what summaries take of the file system: bytes allocated to the
//! store file (its blocks) per series and writer slot, after the first
//! observation of each, and after 1,024 more spread over six decades
//! (the 12-bucket bench's values, 0 to 10).
//!
//! Prints one `name value` line per figure, for `benches/space.sh`, which
//! runs this bench built from two versions in turn and prints the ratios.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

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

/// Bytes the file system allocated to the file at `path`.
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// What [`measure`] measured: CPU time per series of creation and of the
/// first update, and bytes allocated per series after the first update
/// and after `more` updates of each series.
struct Figures {
    create: f64,
    first: f64,
    first_bytes: f64,
    more_bytes: f64,
}

/// Creates `n` series of `desc` in a fresh store (after one update has
/// claimed the writer slot, as in a worker), then updates each once with
/// `update`, then `more` times: the CPU time of the first two steps per
/// series, and the file's growth per series after the first and the last.
fn measure(
    desc: &FamilyDesc,
    n: usize,
    update: impl Fn(&Store, Series, usize),
    more: usize,
) -> Figures {
    let dir = common::tempdir();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let warm = store
        .register(&FamilyDesc::new("warm", Kind::Counter))
        .unwrap();
    store
        .counter_inc(store.series(&warm, &[]).unwrap())
        .unwrap();
    let family = store.register(desc).unwrap();
    let before = allocated(&path);
    let (create, series) = per_item(n, || create_loop(&store, &family, n));
    let (first, ()) = per_item(n, || {
        for s in &series {
            update(&store, *s, 0);
        }
    });
    let first_bytes = allocated(&path).saturating_sub(before) as f64 / n as f64;
    for i in 1..=more {
        for s in &series {
            update(&store, *s, i);
        }
    }
    Figures {
        create,
        first,
        first_bytes,
        more_bytes: allocated(&path).saturating_sub(before) as f64 / n as f64,
    }
}

fn main() {
    let n: usize = std::env::var("SHMETRICS_CREATE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let counter = FamilyDesc::new("jobs", Kind::Counter).labels(&["k"]);
    let c = measure(&counter, n, |st, s, _| st.counter_inc(s).unwrap(), 0);
    println!("counter_create_ns {:.1}", c.create);
    println!("counter_first_inc_ns {:.1}", c.first);
    let summary = FamilyDesc::new("lat", Kind::Summary)
        .labels(&["k"])
        .quantiles(&[0.5, 0.99]);
    // At most 80: a default store of the version before this bench held
    // 99 summary series.
    let m = (n / 250).clamp(10, 80);
    let values = common::spread_values();
    let observe = |st: &Store, s, i: usize| {
        let v = if i == 0 { 0.25 } else { values[i - 1] };
        st.observe(s, v).unwrap()
    };
    let f = measure(&summary, m, observe, values.len());
    println!("summary_create_ns {:.1}", f.create);
    println!("summary_first_observe_ns {:.1}", f.first);
    println!("summary_first_observe_bytes {:.0}", f.first_bytes);
    println!("summary_spread_observe_bytes {:.0}", f.more_bytes);
}

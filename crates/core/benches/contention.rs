//! The registration lock under contention (issue 23): 1, 4 and 16
//! processes registering families and creating series in one store at
//! the same instant, as the workers of a server do at start-up. Without
//! criterion: each process times every call (wall clock, since waiting
//! for the lock is the point) and the bench prints, per workload and
//! number of processes, the calls per second over the run and the
//! latency percentiles of a call.
//!
//! Workloads, each in a fresh store:
//! - `register_same`: every process registers the same 40 families
//!   (counters, histograms, summaries), as every worker does: the first
//!   to get there creates each, the others find it.
//! - `register_own`: every process registers 40 families of its own.
//! - `series_new`: every process creates 500 series of one shared family,
//!   each with labels no other process uses.
//! - `series_found`: every process looks up the same 500 series, which
//!   exist already.
//!
//! `SHMETRICS_CONTENTION_PROCS` (default `1,4,16`) sets the numbers of
//! processes. On a machine with fewer cores than processes the figures
//! include waiting for a core, as they would in production.

use std::path::Path;
use std::time::{Duration, Instant};

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

mod common;

const FAMILIES: usize = 40;
const SERIES: usize = 500;

/// Family `j` of a set named `prefix`: counters, histograms and
/// summaries in turn.
fn family(prefix: &str, j: usize) -> FamilyDesc {
    let name = format!("{prefix}_{j}");
    match j % 3 {
        0 => FamilyDesc::new(name, Kind::Counter).labels(&["route", "status"]),
        1 => FamilyDesc::new(name, Kind::Histogram)
            .labels(&["route"])
            .buckets(&common::BOUNDS),
        _ => FamilyDesc::new(name, Kind::Summary)
            .labels(&["route"])
            .quantiles(&[0.5, 0.99]),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    RegisterSame,
    RegisterOwn,
    SeriesNew,
    SeriesFound,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::RegisterSame => "register_same",
            Workload::RegisterOwn => "register_own",
            Workload::SeriesNew => "series_new",
            Workload::SeriesFound => "series_found",
        }
    }
}

fn options() -> Options {
    Options {
        max_families: 1024,
        max_writers: 32,
        ..Options::default()
    }
}

/// The calls of one process `w`: each call's latency in ns, appended to
/// `out`.
fn run(store: &Store, work: Workload, w: usize, out: &mut Vec<u64>) {
    let mut timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        out.push(t.elapsed().as_nanos() as u64);
    };
    match work {
        Workload::RegisterSame | Workload::RegisterOwn => {
            let prefix = if work == Workload::RegisterSame {
                "shared".to_string()
            } else {
                format!("own{w}")
            };
            for j in 0..FAMILIES {
                let desc = family(&prefix, j);
                timed(&mut || {
                    store.register(&desc).unwrap();
                });
            }
        }
        Workload::SeriesNew | Workload::SeriesFound => {
            let f = store.register(&family("requests", 0)).unwrap();
            for i in 0..SERIES {
                let route = if work == Workload::SeriesNew {
                    format!("/w{w}/{i}")
                } else {
                    format!("/shared/{i}")
                };
                timed(&mut || {
                    store.series(&f, &[&route, "200"]).unwrap();
                });
            }
        }
    }
}

/// Runs `work` in `procs` forked processes that start at the same
/// instant; returns every call's latency and the run's wall time.
fn measure(work: Workload, procs: usize) -> (Vec<u64>, Duration) {
    let dir = common::tempdir();
    let path = dir.path().join("store");
    let store = Store::open(&path, &options()).unwrap();
    let f = store.register(&family("requests", 0)).unwrap();
    if work == Workload::SeriesFound {
        for i in 0..SERIES {
            store.series(&f, &[&format!("/shared/{i}"), "200"]).unwrap();
        }
    }
    // Every child opens the store (and claims its slot) first, then waits
    // for the common start.
    let start = Instant::now() + Duration::from_millis(200 + 20 * procs as u64);
    common::fork_children(procs, procs, |w| {
        let store = Store::open(&path, &options()).unwrap();
        let warm = store
            .register(&FamilyDesc::new("warm", Kind::Counter))
            .unwrap();
        store
            .counter_inc(store.series(&warm, &[]).unwrap())
            .unwrap();
        std::thread::sleep(start.saturating_duration_since(Instant::now()));
        let mut lat = Vec::with_capacity(SERIES);
        run(&store, work, w, &mut lat);
        let wall = start.elapsed().as_nanos() as u64;
        write_u64s(&dir.path().join(format!("lat-{w}")), &lat);
        write_u64s(&dir.path().join(format!("wall-{w}")), &[wall]);
    });
    let mut all = Vec::new();
    let mut wall = 0;
    for w in 0..procs {
        all.extend(read_u64s(&dir.path().join(format!("lat-{w}"))));
        wall = wall.max(read_u64s(&dir.path().join(format!("wall-{w}")))[0]);
    }
    (all, Duration::from_nanos(wall))
}

fn write_u64s(path: &Path, v: &[u64]) {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

fn read_u64s(path: &Path) -> Vec<u64> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The `q` quantile of sorted `v`, in µs.
fn pct(v: &[u64], q: f64) -> f64 {
    v[((v.len() - 1) as f64 * q).round() as usize] as f64 / 1e3
}

fn main() {
    let procs: Vec<usize> = std::env::var("SHMETRICS_CONTENTION_PROCS")
        .unwrap_or_else(|_| "1,4,16".into())
        .split(',')
        .map(|p| p.trim().parse().expect("a number of processes"))
        .collect();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "registration under contention: processes starting at once, wall-clock latency \
         per call ({cores} cores)"
    );
    println!(
        "  {:14} {:>5} {:>6} {:>9} {:>10} {:>8} {:>8} {:>9}",
        "workload", "procs", "calls", "wall ms", "calls/s", "p50 µs", "p99 µs", "max µs"
    );
    for work in [
        Workload::RegisterSame,
        Workload::RegisterOwn,
        Workload::SeriesNew,
        Workload::SeriesFound,
    ] {
        for &p in &procs {
            let (mut lat, wall) = measure(work, p);
            lat.sort_unstable();
            println!(
                "  {:14} {:>5} {:>6} {:>9.1} {:>10.0} {:>8.1} {:>8.1} {:>9.1}",
                work.name(),
                p,
                lat.len(),
                wall.as_secs_f64() * 1e3,
                lat.len() as f64 / wall.as_secs_f64(),
                pct(&lat, 0.5),
                pct(&lat, 0.99),
                pct(&lat, 1.0),
            );
        }
    }
}

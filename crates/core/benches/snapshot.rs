//! Snapshot cost: 100,000 series (counters and 12-bucket histograms)
//! written by 16 processes, each through its own writer slot; 1,000,000
//! series with `SHMETRICS_BENCH_1M=1`.
//!
//! The writer processes are forked at the very start, while this process
//! is single-threaded, before criterion runs.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use shmetrics_core::{Snapshot, Value};

mod common;

const SLOTS: usize = 16;
/// Kept refreshes timed in CPU time before criterion runs.
const CPU_ROUNDS: usize = 200;

fn main() {
    let n = if std::env::var("SHMETRICS_BENCH_1M").is_ok_and(|v| v == "1") {
        1_000_000
    } else {
        100_000
    };
    let fx = common::Fixture::create(n);
    fx.write_from_processes(SLOTS);

    // Not a timing: check that the fixture is what it claims to be.
    let snap = fx.reader.snapshot().unwrap();
    let stats = fx.reader.stats();
    assert_eq!(fx.reader.writers().len(), SLOTS);
    let mut counted = 0.0;
    for f in snap.families() {
        for s in f.series() {
            counted += match s.value() {
                Value::Counter(v) => v,
                Value::Histogram { cumulative, .. } => *cumulative.last().unwrap() as f64,
                _ => 0.0,
            };
        }
    }
    assert_eq!(snap.series_count(), n);
    assert_eq!(counted, (n * SLOTS) as f64);
    let label = format!("{}k series x {SLOTS} slots", n / 1000);
    println!(
        "fixture: {} series in {} families, {} cells per slot, {} writer slots",
        snap.series_count(),
        snap.families().len(),
        stats.cells_used,
        fx.reader.writers().len()
    );

    // The kept snapshot's CPU time, which other processes on a loaded
    // machine disturb less than criterion's wall-clock times.
    let mut kept = Snapshot::default();
    fx.reader.snapshot_into(&mut kept).unwrap();
    let mut cpu: Vec<Duration> = (0..CPU_ROUNDS)
        .map(|_| {
            let start = common::thread_cpu();
            fx.reader.snapshot_into(black_box(&mut kept)).unwrap();
            common::thread_cpu() - start
        })
        .collect();
    cpu.sort();
    println!(
        "snapshot_into ({label}), thread CPU over {CPU_ROUNDS} refreshes: min {:.2} ms, median {:.2} ms",
        cpu[0].as_secs_f64() * 1e3,
        cpu[CPU_ROUNDS / 2].as_secs_f64() * 1e3
    );

    let mut c = Criterion::default()
        .sample_size(if n > 100_000 { 10 } else { 20 })
        .measurement_time(Duration::from_secs(if n > 100_000 { 20 } else { 10 }))
        .configure_from_args();
    let mut g = c.benchmark_group("snapshot");
    g.bench_function(format!("snapshot ({label})"), |b| {
        b.iter(|| black_box(fx.reader.snapshot().unwrap()))
    });
    g.bench_function(format!("snapshot_into, kept snapshot ({label})"), |b| {
        b.iter(|| fx.reader.snapshot_into(black_box(&mut kept)).unwrap())
    });
    g.bench_function("stats", |b| b.iter(|| black_box(fx.reader.stats())));
    g.finish();
    c.final_summary();
}

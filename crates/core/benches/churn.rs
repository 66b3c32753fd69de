//! Snapshot cost before and after 1,000 short-lived writer processes.
//!
//! 100,000 series are written by 16 processes (forked, then gone), and a
//! snapshot is timed. Then 1,000 more processes are forked, 4 at a time;
//! each writes 1,000 series through the store inherited from this process
//! (a child claims a slot of its own) and exits without releasing its
//! slot, as a crashed worker would. Dead slots are reused, so the snapshot
//! should cost the same after as before: the ratio is printed.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;

mod common;

const SERIES: usize = 100_000;
const SLOTS: usize = 16;
const CHURN: usize = 1_000;
const PARALLEL: usize = 4;

fn main() {
    let fx = common::Fixture::create(SERIES);
    fx.write_from_processes(SLOTS);
    let slots_before = fx.reader.writers().len();

    let mut c = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    let before = common::median_secs(51, || {
        black_box(fx.reader.snapshot().unwrap());
    });
    c.bench_function("churn/snapshot before 1,000 writers", |b| {
        b.iter(|| black_box(fx.reader.snapshot().unwrap()))
    });

    // Criterion runs on this thread only, so fork() is still safe here
    // (fork_children checks). Each child ends with _exit: its slot is not
    // released.
    let stats_before = fx.reader.stats();
    let handles = &fx.handles;
    let writer = &fx.writer;
    common::fork_children(CHURN, PARALLEL, |i| {
        for k in 0..1000 {
            let s = handles[(i * 7919 + k * 101) % handles.len()];
            if s.kind() == shmetrics_core::Kind::Histogram {
                writer.observe(s, 0.05).unwrap();
            } else {
                writer.counter_inc(s).unwrap();
            }
        }
    });
    let stats_after = fx.reader.stats();
    let slots_after = fx.reader.writers().len();

    let after = common::median_secs(51, || {
        black_box(fx.reader.snapshot().unwrap());
    });
    c.bench_function("churn/snapshot after 1,000 writers", |b| {
        b.iter(|| black_box(fx.reader.snapshot().unwrap()))
    });
    c.final_summary();
    println!(
        "snapshot after churn: {SERIES} series; before: {:.3} ms with {slots_before} writer slots; \
         after {CHURN} short-lived writers ({} claims, {} slot reuses): {:.3} ms with \
         {slots_after} writer slots; ratio after/before = {:.3}",
        before * 1e3,
        stats_after.writer_claims_total - stats_before.writer_claims_total,
        stats_after.writer_reuses_total - stats_before.writer_reuses_total,
        after * 1e3,
        after / before
    );
}

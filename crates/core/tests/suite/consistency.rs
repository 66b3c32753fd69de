//! What one snapshot shows of observations in flight: a count never
//! includes an observation whose value is not yet in the sum (classic and
//! native histograms, summaries with and without quantiles).
//!
//! Writer threads observe 1.0 (so every sum is an exact integer) into
//! every series while a reader refreshes a kept snapshot in a loop and
//! checks `sum >= count` in each. When writers counted before they added
//! to the sum (and snapshots read native buckets after the sums), every
//! family failed here in every run: of about 8,600 refreshes, 270 to 580
//! for the classic histogram and for each summary, 900 to 3,600 for the
//! native ones, on 2 loaded cores.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shmetrics_core::{FamilyDesc, Kind, NativeOpts, Options, Snapshot, Store, Value};

use crate::common::tempdir;

/// How long the reader checks snapshots.
const RUN: Duration = Duration::from_secs(3);
/// Writer threads: more than the cores of a small CI machine, so that
/// some are descheduled in the middle of an observe.
const WRITERS: usize = 4;

fn families() -> Vec<FamilyDesc> {
    vec![
        FamilyDesc::new("classic_seconds", Kind::Histogram).buckets(&[0.5, 1.0, 2.0]),
        FamilyDesc::new("native_seconds", Kind::Histogram).native(NativeOpts::default()),
        FamilyDesc::new("both_seconds", Kind::Histogram)
            .buckets(&[0.5, 1.0, 2.0])
            .native(NativeOpts::default()),
        FamilyDesc::new("plain_summary_seconds", Kind::Summary),
        FamilyDesc::new("window_summary_seconds", Kind::Summary).quantiles(&[0.5, 0.9]),
    ]
}

/// Every histogram and summary series' `(name, count, sum)`.
fn counts_and_sums(snap: &Snapshot) -> Vec<(String, u64, f64)> {
    let mut out = Vec::new();
    for f in snap.families() {
        for s in f.series() {
            let (count, sum) = match s.value() {
                Value::Histogram {
                    cumulative, sum, ..
                } => (*cumulative.last().unwrap(), sum),
                Value::Summary { count, sum, .. } => (count, sum),
                v => panic!("{}: {v:?}", f.name()),
            };
            out.push((f.name().to_string(), count, sum));
        }
    }
    out
}

#[test]
fn no_snapshot_counts_an_observation_missing_from_the_sum() {
    let dir = tempdir();
    let opts = Options {
        max_families: 8,
        max_series: 16,
        max_writers: 2,
        ..Options::default()
    };
    let store = Arc::new(Store::open(dir.path().join("s"), &opts).unwrap());
    let series: Vec<_> = families()
        .iter()
        .map(|d| {
            let fam = store.register(d).unwrap();
            store.series(&fam, &[]).unwrap()
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (store, series, stop) = (store.clone(), series.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    for s in &series {
                        store.observe(*s, 1.0).unwrap();
                    }
                }
            })
        })
        .collect();

    let mut snap = Snapshot::default();
    // Per family, the snapshots whose count was ahead, and the first.
    let mut bad: BTreeMap<String, (u64, u64, f64)> = BTreeMap::new();
    let mut refreshes = 0u64;
    let start = Instant::now();
    while start.elapsed() < RUN {
        store.snapshot_into(&mut snap).unwrap();
        refreshes += 1;
        for (name, count, sum) in counts_and_sums(&snap) {
            if sum < count as f64 {
                bad.entry(name).or_insert((0, count, sum)).0 += 1;
            }
        }
    }
    stop.store(true, Relaxed);
    for w in writers {
        w.join().unwrap();
    }

    // The writers did run while the reader checked.
    let last = counts_and_sums(&store.snapshot().unwrap());
    assert!(last.iter().all(|(_, count, _)| *count > 1000), "{last:?}");
    // Quiescent, every count and sum agree exactly.
    for (name, count, sum) in &last {
        assert_eq!(*sum, *count as f64, "{name}");
    }
    assert!(
        bad.is_empty(),
        "of {refreshes} snapshots, these counted observations missing from the sum \
         (family: (snapshots, first count, its sum), each observation 1.0): {bad:?}"
    );
}

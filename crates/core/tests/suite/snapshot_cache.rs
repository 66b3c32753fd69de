//! A kept snapshot, refreshed with `Store::snapshot_into`, must end up
//! showing what a fresh snapshot shows, whatever the refreshes raced with.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

use shmetrics_core::{FamilyDesc, Kind, Options, Snapshot, Store};

use crate::common::tempdir;

fn labels(snap: &Snapshot, family: &str) -> Vec<String> {
    snap.family(family)
        .map(|f| {
            f.series()
                .map(|s| s.label_values().collect::<Vec<_>>().join(","))
                .collect()
        })
        .unwrap_or_default()
}

// A refresh once read the cell counts before it read each new record's
// state, so it could see a record LIVE with counts from before the record
// took its cells, and then dropped the series for good. Refreshes now read
// the counts after the records: a record is published LIVE (release) only
// after it took its cells, so counts read after seeing it LIVE (acquire)
// always cover it. That ordering cannot be replayed deterministically from
// a test; the test below runs the race for real.

/// The same race, for real: one thread creates series as fast as it can
/// while another refreshes a kept snapshot in a loop. The race is narrow,
/// so a few rounds are run (each on a fresh store).
#[test]
fn a_refreshed_snapshot_matches_a_fresh_one_after_concurrent_creation() {
    for round in 0..16 {
        concurrent_round(round);
    }
}

fn concurrent_round(round: u32) {
    let dir = tempdir();
    let path = dir.path().join("s");
    let opts = Options {
        max_series: 1 << 17,
        ..Options::default()
    };
    let store = Arc::new(Store::open(&path, &opts).unwrap());
    let f = store
        .register(&FamilyDesc::new("c", Kind::Counter).labels(&["k"]))
        .unwrap();
    let h = store
        .register(&FamilyDesc::new("h", Kind::Histogram).labels(&["k"]))
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..20_000 {
                let k = i.to_string();
                store.counter_inc(store.series(&f, &[&k]).unwrap()).unwrap();
                if i % 4 == 0 {
                    store
                        .observe(store.series(&h, &[&k]).unwrap(), 0.3)
                        .unwrap();
                }
            }
            done.store(true, SeqCst);
        })
    };
    let mut kept = Snapshot::default();
    let mut refreshes = 0u64;
    while !done.load(SeqCst) {
        store.snapshot_into(&mut kept).unwrap();
        refreshes += 1;
    }
    writer.join().unwrap();
    store.snapshot_into(&mut kept).unwrap();
    let fresh = store.snapshot().unwrap();
    for family in ["c", "h"] {
        let (k, f) = (labels(&kept, family), labels(&fresh, family));
        let have: std::collections::HashSet<&String> = k.iter().collect();
        let missing: Vec<&String> = f.iter().filter(|l| !have.contains(l)).take(5).collect();
        assert_eq!(
            k.len(),
            f.len(),
            "round {round}, family {family}: after {refreshes} refreshes the kept snapshot has \
             {} series, a fresh one {}; missing: {missing:?}",
            k.len(),
            f.len()
        );
    }
    assert_eq!(kept.series_count(), fresh.series_count());
}

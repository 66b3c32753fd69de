//! A kept snapshot, refreshed with `Store::snapshot_into`, must end up
//! showing what a fresh snapshot shows, whatever the refreshes raced with.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use shmetrics_core::{FamilyDesc, GaugeMode, Kind, Options, Snapshot, Store, Value};

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

/// Counter values of `family` in `snap`, by label values.
fn counters(snap: &Snapshot, family: &str) -> Vec<(String, f64)> {
    snap.family(family)
        .map(|f| {
            f.series()
                .map(|s| {
                    let v = match s.value() {
                        Value::Counter(v) => v,
                        v => panic!("{family}: {v:?}"),
                    };
                    (s.label_values().collect::<Vec<_>>().join(","), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A refresh reads a series' state only when the store counted a removal
/// since the last refresh: a deleted series must leave the kept snapshot
/// at the next refresh and stay out of every later one, in families with
/// and without a TTL, deleted one by one or cleared, through another
/// instance of the store than the reader's.
#[test]
fn a_kept_snapshot_drops_deleted_series_for_good() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let store = Store::open(&path, &Options::default()).unwrap();
    let plain = store
        .register(&FamilyDesc::new("plain", Kind::Counter).labels(&["k"]))
        .unwrap();
    let expiring = FamilyDesc::new("expiring", Kind::Counter)
        .labels(&["k"])
        .ttl(Duration::from_secs(3600));
    let expiring = store.register(&expiring).unwrap();
    for k in ["a", "b", "c"] {
        store
            .counter_inc(store.series(&plain, &[k]).unwrap())
            .unwrap();
        store
            .counter_inc(store.series(&expiring, &[k]).unwrap())
            .unwrap();
    }
    let reader = Store::open(&path, &Options::reader()).unwrap();
    let mut kept = Snapshot::default();
    let keys = |snap: &Snapshot, family| {
        let c = counters(snap, family);
        c.into_iter().map(|(k, _)| k).collect::<Vec<_>>()
    };
    reader.snapshot_into(&mut kept).unwrap();
    assert_eq!(keys(&kept, "plain"), ["a", "b", "c"]);

    assert!(store.delete(&plain, &["b"]).unwrap());
    assert!(store.delete(&expiring, &["a"]).unwrap());
    for refresh in 0..3 {
        reader.snapshot_into(&mut kept).unwrap();
        assert_eq!(keys(&kept, "plain"), ["a", "c"], "refresh {refresh}");
        assert_eq!(keys(&kept, "expiring"), ["b", "c"], "refresh {refresh}");
    }

    // Created again, the series starts from zero, after the others.
    store
        .counter_add(store.series(&plain, &["b"]).unwrap(), 5.0)
        .unwrap();
    for refresh in 0..2 {
        reader.snapshot_into(&mut kept).unwrap();
        let want = [("a", 1.0), ("c", 1.0), ("b", 5.0)].map(|(k, v)| (k.to_string(), v));
        assert_eq!(counters(&kept, "plain"), want, "refresh {refresh}");
    }

    assert_eq!(store.clear(&plain).unwrap(), 3);
    for refresh in 0..2 {
        reader.snapshot_into(&mut kept).unwrap();
        assert_eq!(
            keys(&kept, "plain"),
            Vec::<String>::new(),
            "refresh {refresh}"
        );
        assert_eq!(keys(&kept, "expiring"), ["b", "c"], "refresh {refresh}");
    }
    assert_eq!(
        kept.series_count(),
        reader.snapshot().unwrap().series_count()
    );
}

/// The merge skips the shared slot 0 until a process writes through it:
/// once every writer slot is taken, another writer's counts (through slot
/// 0) show in a kept snapshot and in a fresh one.
#[test]
fn counts_through_the_shared_slot_reach_a_kept_snapshot() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let opts = Options {
        max_writers: 1,
        ..Options::default()
    };
    let first = Store::open(&path, &opts).unwrap();
    let desc = FamilyDesc::new("c", Kind::Counter).labels(&["k"]);
    let f = first.register(&desc).unwrap();
    first
        .counter_add(first.series(&f, &["x"]).unwrap(), 2.0)
        .unwrap();
    let reader = Store::open(&path, &Options::reader()).unwrap();
    let mut kept = Snapshot::default();
    reader.snapshot_into(&mut kept).unwrap();
    assert_eq!(counters(&kept, "c"), [("x".to_string(), 2.0)]);

    // Another instance claims a slot of its own: none is left.
    let second = Store::open(&path, &opts).unwrap();
    let g = second.register(&desc).unwrap();
    second
        .counter_add(second.series(&g, &["x"]).unwrap(), 3.0)
        .unwrap();
    second
        .counter_add(second.series(&g, &["y"]).unwrap(), 0.5)
        .unwrap();
    assert_eq!(reader.stats().writers_exhausted_total, 1);
    reader.snapshot_into(&mut kept).unwrap();
    let want = [("x".to_string(), 5.0), ("y".to_string(), 0.5)];
    assert_eq!(counters(&kept, "c"), want);
    assert_eq!(counters(&reader.snapshot().unwrap(), "c"), want);
}

/// Every series of `snap`: family, label values (with any pid), value.
fn everything(snap: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for f in snap.families() {
        for s in f.series() {
            let labels: Vec<&str> = s.label_values().collect();
            out.push(format!("{} {labels:?} {:?}", f.name(), s.value()));
        }
    }
    out
}

/// When no series was created or removed since the last refresh, a refresh
/// rewrites the values in place. The kept snapshot must show what a fresh
/// one shows after every kind of change: values of counters, histograms and
/// gauges (combined over two writers), an overflow series coming into use,
/// a new series, a deletion, and a family that cannot be rewritten in
/// place (a per-process gauge).
#[test]
fn a_kept_snapshot_follows_values_as_a_fresh_one_does() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let a = Store::open(&path, &Options::default()).unwrap();
    let b = Store::open(&path, &Options::default()).unwrap();
    let descs = [
        FamilyDesc::new("c", Kind::Counter)
            .labels(&["k"])
            .max_series(2),
        FamilyDesc::new("h", Kind::Histogram)
            .labels(&["k"])
            .buckets(&[1.0, 2.0]),
        FamilyDesc::new("g", Kind::Gauge)
            .labels(&["k"])
            .gauge_mode(GaugeMode::Max),
    ];
    let fams: Vec<_> = descs.iter().map(|d| a.register(d).unwrap()).collect();
    let fams_b: Vec<_> = descs.iter().map(|d| b.register(d).unwrap()).collect();
    let reader = Store::open(&path, &Options::reader()).unwrap();
    let mut kept = Snapshot::default();
    let check = |kept: &mut Snapshot, step: &str| {
        reader.snapshot_into(kept).unwrap();
        assert_eq!(
            everything(kept),
            everything(&reader.snapshot().unwrap()),
            "{step}"
        );
    };
    for (s, f) in [(&a, &fams), (&b, &fams_b)] {
        s.counter_add(s.series(&f[0], &["x"]).unwrap(), 1.5)
            .unwrap();
        s.observe(s.series(&f[1], &["x"]).unwrap(), 1.5).unwrap();
        s.gauge_set(s.series(&f[2], &["x"]).unwrap(), 3.0).unwrap();
    }
    check(&mut kept, "first");
    for round in 0..3 {
        let v = f64::from(round);
        a.counter_add(a.series(&fams[0], &["x"]).unwrap(), v)
            .unwrap();
        b.observe(b.series(&fams_b[1], &["x"]).unwrap(), v).unwrap();
        a.gauge_set(a.series(&fams[2], &["x"]).unwrap(), 10.0 - v)
            .unwrap();
        b.gauge_set(b.series(&fams_b[2], &["x"]).unwrap(), 2.0 * v)
            .unwrap();
        check(&mut kept, &format!("values, round {round}"));
    }
    for k in ["y", "z"] {
        // "z" is past the family's limit: the overflow series comes into use.
        let s = a.series_or_overflow(&fams[0], &[k]).unwrap();
        a.counter_inc(s).unwrap();
        check(&mut kept, &format!("new series {k}"));
        a.counter_inc(s).unwrap();
        check(&mut kept, &format!("series {k} again"));
    }
    assert!(a.delete(&fams[1], &["x"]).unwrap());
    check(&mut kept, "deleted");
    b.counter_inc(b.series(&fams_b[0], &["x"]).unwrap())
        .unwrap();
    check(&mut kept, "after the deletion");
    // Registered last: until then, every family could be rewritten in place.
    let per_process = FamilyDesc::new("gp", Kind::Gauge).gauge_mode(GaugeMode::All);
    let (gp, gp_b) = (
        a.register(&per_process).unwrap(),
        b.register(&per_process).unwrap(),
    );
    a.gauge_set(a.series(&gp, &[]).unwrap(), 4.0).unwrap();
    check(&mut kept, "per-process gauge");
    b.gauge_set(b.series(&gp_b, &[]).unwrap(), 5.0).unwrap();
    a.counter_inc(a.series(&fams[0], &["x"]).unwrap()).unwrap();
    check(&mut kept, "per-process gauge, second writer");
}

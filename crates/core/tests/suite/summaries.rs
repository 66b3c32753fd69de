//! Summary quantiles in one process: estimates within the sketch's bound,
//! the sliding window, reset and wipe, threads, capacity, bad options,
//! and corrupt sketch headers. The multi-process accuracy test is in
//! crates/testkit (tests/summary_quantiles.rs).

use std::sync::Arc;
use std::time::Duration;

use shmetrics_core::{ErrorKind, FamilyDesc, Kind, Options, Quantile, Store, Value};

use crate::common::{expect_err, tempdir, RawStore, SERIES_INT_OFF};

fn open(opts: &Options) -> (tempfile::TempDir, Store) {
    let dir = tempdir();
    let s = Store::open(dir.path().join("s"), opts).unwrap();
    (dir, s)
}

fn summary(name: &str, qs: &[f64]) -> FamilyDesc {
    FamilyDesc::new(name, Kind::Summary).quantiles(qs)
}

/// The only series' count and quantiles.
fn read(store: &Store, name: &str) -> (u64, Vec<Quantile>) {
    let snap = store.snapshot().unwrap();
    let s = snap.family(name).unwrap().series().next().unwrap();
    match s.value() {
        Value::Summary {
            count, quantiles, ..
        } => (count, quantiles.to_vec()),
        v => panic!("{v:?}"),
    }
}

/// The count and quantiles of a family's overflow series (`true`) or
/// first other series.
fn read_series(store: &Store, name: &str, overflow: bool) -> (u64, Vec<Quantile>) {
    let snap = store.snapshot().unwrap();
    let mut all = snap.family(name).unwrap().series();
    let s = all.find(|s| s.is_overflow() == overflow).unwrap();
    match s.value() {
        Value::Summary {
            count, quantiles, ..
        } => (count, quantiles.to_vec()),
        v => panic!("{v:?}"),
    }
}

fn close(got: f64, want: f64) -> bool {
    ((got - want) / want).abs() <= 0.0099 + 1e-12
}

#[test]
fn quantiles_of_known_values_are_within_the_bound() {
    let (_d, store) = open(&Options::default());
    let f = store
        .register(&summary("rt_seconds", &[0.0, 0.5, 0.9, 0.99, 1.0]))
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    let (count, qs) = read(&store, "rt_seconds");
    assert_eq!(count, 0);
    assert!(qs.iter().all(|q| q.value.is_nan()), "empty window: NaN");
    for i in 1..=1000 {
        store.observe(s, i as f64 / 1000.0).unwrap();
    }
    let (count, qs) = read(&store, "rt_seconds");
    assert_eq!(count, 1000);
    let want = [0.001, 0.5, 0.9, 0.99, 1.0];
    for (q, w) in qs.iter().zip(want) {
        assert!(close(q.value, w), "{q:?} vs {w}");
    }
    assert_eq!(
        qs.iter().map(|q| q.quantile).collect::<Vec<_>>(),
        [0.0, 0.5, 0.9, 0.99, 1.0]
    );
}

#[test]
fn negative_zero_and_out_of_range_values() {
    let (_d, store) = open(&Options::default());
    let f = store.register(&summary("temp", &[0.0, 0.5, 1.0])).unwrap();
    let s = store.series(&f, &[]).unwrap();
    for v in [-40.0, -40.0, 0.0, 1e-12, 1e12] {
        store.observe(s, v).unwrap();
    }
    // Few observations: exact (nearest rank), whatever their range.
    let (_, qs) = read(&store, "temp");
    let exact: Vec<f64> = qs.iter().map(|q| q.value).collect();
    assert_eq!(exact, [-40.0, 0.0, 1e12]);
    // More than a set keeps exactly: the sketch's estimates.
    for _ in 0..3 {
        for v in [-40.0, -40.0, 0.0, 1e-12, 1e12] {
            store.observe(s, v).unwrap();
        }
    }
    let (_, qs) = read(&store, "temp");
    assert!(close(qs[0].value, -40.0), "{qs:?}");
    assert_eq!(qs[1].value, 0.0, "0 and 1e-12 share the zero cell");
    // Beyond the range: the last cell, within alpha of 1e9.
    assert!(close(qs[2].value, 1e9), "{qs:?}");
    expect_err(store.observe(s, f64::NAN), ErrorKind::InvalidValue);
}

#[test]
fn observations_leave_the_window_but_count_and_sum_stay() {
    let (_d, store) = open(&Options::default());
    let f = store
        .register(&summary("w", &[0.5]).max_age(Duration::from_millis(300), 3))
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    store.observe(s, 2.0).unwrap();
    let (_, qs) = read(&store, "w");
    assert!(close(qs[0].value, 2.0));
    // Well past the window (300 ms, in periods of 100 ms).
    std::thread::sleep(Duration::from_millis(700));
    let (count, qs) = read(&store, "w");
    assert_eq!(count, 1);
    assert!(qs[0].value.is_nan(), "{qs:?}");
    // A new observation reuses a set: the old one does not come back.
    store.observe(s, 8.0).unwrap();
    let (count, qs) = read(&store, "w");
    assert_eq!(count, 2);
    assert!(close(qs[0].value, 8.0), "{qs:?}");
}

#[test]
fn reset_and_wipe_clear_the_sketches() {
    let (_d, store) = open(&Options::default());
    let desc = summary("r", &[0.5]);
    let f = store.register(&desc).unwrap();
    let s = store.series(&f, &[]).unwrap();
    store.observe(s, 3.0).unwrap();
    store.reset().unwrap();
    let (count, qs) = read(&store, "r");
    assert_eq!(count, 0);
    assert!(qs[0].value.is_nan());
    store.observe(s, 5.0).unwrap();
    assert!(close(read(&store, "r").1[0].value, 5.0));
    store.wipe().unwrap();
    let f = store.register(&desc).unwrap();
    let s = store.series(&f, &[]).unwrap();
    let (count, qs) = read(&store, "r");
    assert_eq!(count, 0);
    assert!(qs[0].value.is_nan(), "a wipe leaves no old sketch behind");
    store.observe(s, 7.0).unwrap();
    assert!(close(read(&store, "r").1[0].value, 7.0));
    // The series' sketch; the overflow series takes one only when used.
    // (each set's counts and its 16 exact values)
    assert_eq!(store.stats().sketch_cells_used, 5 * (4229 + 16));
}

#[test]
fn threads_of_one_process_lose_no_observation() {
    let (_d, store) = open(&Options::default());
    let store = Arc::new(store);
    let f = store.register(&summary("t", &[0.0, 1.0])).unwrap();
    let s = store.series(&f, &[]).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..20_000 {
                    store.observe(s, 1.0 + ((i + t) % 100) as f64).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let (count, qs) = read(&store, "t");
    assert_eq!(count, 80_000);
    assert!(
        close(qs[0].value, 1.0) && close(qs[1].value, 100.0),
        "{qs:?}"
    );
}

#[test]
fn sketch_capacity_gives_overflow_with_quantiles_then_without() {
    let per_series = 5 * (4229 + 16);
    let opts = Options {
        sketch_cells_per_writer: 2 * per_series,
        ..Options::default()
    };
    let (_d, store) = open(&opts);
    // One series fits, leaving room for its family's overflow series.
    let f = store
        .register(&summary("c", &[0.5]).labels(&["k"]))
        .unwrap();
    let a = store.series(&f, &["a"]).unwrap();
    assert_eq!(store.stats().sketch_cells_used, per_series);
    let e = expect_err(store.series(&f, &["b"]), ErrorKind::Overflow);
    assert!(e.message().contains("sketch cells"), "{e}");
    let ov = e.overflow_series().unwrap();
    assert_eq!(store.stats().sketch_cells_used, 2 * per_series);
    store.observe(a, 1.0).unwrap();
    store.observe(ov, 2.0).unwrap();
    let (count, qs) = read_series(&store, "c", true);
    assert_eq!(count, 1);
    assert!(close(qs[0].value, 2.0), "{qs:?}");
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .family("c")
            .unwrap()
            .series()
            .len(),
        2
    );
    // Registering takes no sketch cells, so another summary registers;
    // its series and its overflow series find none left: the overflow
    // series counts, without quantiles. A summary without quantiles needs
    // no sketch cells.
    let d = store.register(&summary("d", &[0.5])).unwrap();
    let e = expect_err(store.series(&d, &[]), ErrorKind::Overflow);
    let ov = e.overflow_series().unwrap();
    store.observe(ov, 3.0).unwrap();
    store.observe(ov, 5.0).unwrap();
    let (count, qs) = read_series(&store, "d", true);
    assert_eq!(count, 2);
    assert!(qs[0].value.is_nan(), "{qs:?}");
    let e = store.register(&summary("e", &[])).unwrap();
    store.observe(store.series(&e, &[]).unwrap(), 1.0).unwrap();
}

#[test]
fn a_default_store_holds_500_summary_families() {
    let (_d, store) = open(&Options::default());
    for i in 0..500 {
        let f = store
            .register(&summary(&format!("s{i}"), &[0.5, 0.99]))
            .unwrap();
        store
            .observe(store.series(&f, &[]).unwrap(), i as f64)
            .unwrap();
    }
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.families().count(), 500);
    assert!(snap
        .families()
        .all(|f| f.overflows() == 0 && f.series().len() == 1));
}

#[test]
fn bad_summary_options_are_refused() {
    let (_d, store) = open(&Options::default());
    for (desc, what) in [
        (summary("a", &[0.5, 1.5]), "in [0, 1]"),
        (summary("a", &[0.9, 0.5]), "increasing"),
        (summary("a", &[f64::NAN]), "NaN"),
        (
            summary("a", &[0.5]).max_age(Duration::from_secs(60), 0),
            "positive",
        ),
        (
            summary("a", &[0.5]).max_age(Duration::from_secs(60), 61),
            "at most 60",
        ),
        (
            summary("a", &[0.5]).max_age(Duration::from_micros(10), 5),
            "between 1 ms",
        ),
        (
            summary("a", &(0..65).map(|i| i as f64 / 100.0).collect::<Vec<_>>()),
            "at most 64",
        ),
        (
            FamilyDesc::new("a", Kind::Histogram).quantiles(&[0.5]),
            "only for summaries",
        ),
    ] {
        let e = expect_err(store.register(&desc), ErrorKind::InvalidOptions);
        assert!(e.message().contains(what), "{what}: {e}");
    }
    // Registering the same name with other quantiles is a conflict.
    store.register(&summary("q", &[0.5])).unwrap();
    expect_err(store.register(&summary("q", &[0.9])), ErrorKind::Conflict);
}

#[test]
fn corrupt_sketch_headers_never_panic() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let opts = Options {
        max_writers: 2,
        max_series: 16,
        ..Options::default()
    };
    let store = Store::open(&path, &opts).unwrap();
    let f = store.register(&summary("x", &[0.5, 0.99])).unwrap();
    let s = store.series(&f, &[]).unwrap();
    for v in [0.1, 0.2, 0.3] {
        store.observe(s, v).unwrap();
    }
    let raw = RawStore::open(&path);
    // Series 1 (0 is the overflow series); its header cells follow the
    // count (the current-set cell, then 5 set headers), in slot 1's cells.
    let int_off = raw.u64(raw.series(1) + SERIES_INT_OFF);
    let slot1 = raw.cells_start(1);
    for word in 1..=16 {
        let at = slot1 + (int_off + word) * 8;
        let saved = raw.u64(at);
        for v in [0, 1, 4229, 4230, u64::MAX, u64::MAX - 1, 1 << 40] {
            raw.set_u64(at, v);
            let snap = store.snapshot().unwrap();
            let q = snap.family("x").unwrap().series().next().unwrap().value();
            assert!(matches!(q, Value::Summary { .. }));
            store.observe(s, 0.5).unwrap();
        }
        raw.set_u64(at, saved);
    }
}

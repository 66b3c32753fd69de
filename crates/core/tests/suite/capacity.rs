//! Test 7: filling a store past its capacities. New label sets overflow
//! into the family's overflow series, which keeps counting; registration
//! past the capacity is a StoreFull error. Nothing panics.

use shmetrics_core::{ErrorKind, FamilyDesc, Kind, Options, Store, Value, OVERFLOW_LABEL};

use crate::common::{expect_err, tempdir};

fn labels_of(s: &shmetrics_core::SeriesView<'_>) -> Vec<(String, String)> {
    s.labels()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn store_series_capacity_overflows_into_the_overflow_series() {
    let dir = tempdir();
    let opts = Options {
        max_families: 4,
        max_series: 8,
        ..Options::default()
    };
    let store = Store::open(dir.path().join("s"), &opts).unwrap();
    let f = store
        .register(&FamilyDesc::new("reqs", Kind::Counter).labels(&["route", "code"]))
        .unwrap();
    // The family's overflow series takes one of the 8: 7 label sets fit.
    for i in 0..7 {
        let s = store.series(&f, &[&format!("/r{i}"), "200"]).unwrap();
        store.counter_inc(s).unwrap();
    }
    let e = expect_err(store.series(&f, &["/r7", "200"]), ErrorKind::Overflow);
    assert!(e.message().contains("series"), "{e}");
    let ov = e
        .overflow_series()
        .expect("an overflow error carries the overflow series");
    store.counter_inc(ov).unwrap();
    store.counter_add(ov, 2.5).unwrap();
    // Each new label set that does not fit is counted, again and again.
    let e2 = expect_err(store.series(&f, &["/r8", "500"]), ErrorKind::Overflow);
    assert_eq!(e2.overflow_series(), Some(ov));
    let ov3 = store.series_or_overflow(&f, &["/r9", "500"]).unwrap();
    assert_eq!(ov3, ov);
    store.counter_inc(ov3).unwrap();
    // Existing label sets are still found.
    let r0 = store.series(&f, &["/r0", "200"]).unwrap();
    store.counter_inc(r0).unwrap();
    // No room for another family: it needs an overflow series, too.
    let e = expect_err(
        store.register(&FamilyDesc::new("other", Kind::Gauge)),
        ErrorKind::StoreFull,
    );
    assert!(
        e.to_string().contains(&*dir.path().to_string_lossy()),
        "{e}"
    );

    let snap = store.snapshot().unwrap();
    let fam = snap.family("reqs").unwrap();
    assert_eq!(fam.overflows(), 3);
    assert_eq!(snap.stats().overflows_total, 3);
    assert_eq!(store.stats().overflows_total, 3);
    let series: Vec<_> = fam.series().collect();
    assert_eq!(series.len(), 8, "7 label sets and the overflow series");
    let overflow: Vec<_> = series.iter().filter(|s| s.is_overflow()).collect();
    assert_eq!(overflow.len(), 1);
    assert_eq!(
        labels_of(overflow[0]),
        [
            ("route".to_string(), String::new()),
            ("code".to_string(), String::new()),
            (OVERFLOW_LABEL.to_string(), "true".to_string()),
        ]
    );
    assert_eq!(OVERFLOW_LABEL, "shmetrics_overflow");
    assert_eq!(overflow[0].value(), Value::Counter(4.5));
    let r0 = series
        .iter()
        .find(|s| s.label_values().next() == Some("/r0"))
        .unwrap();
    assert_eq!(r0.value(), Value::Counter(2.0));
}

#[test]
fn an_unused_overflow_series_is_not_exported() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
    let f = store
        .register(&FamilyDesc::new("c", Kind::Counter).labels(&["a"]))
        .unwrap();
    store
        .counter_inc(store.series(&f, &["x"]).unwrap())
        .unwrap();
    let snap = store.snapshot().unwrap();
    let fam = snap.family("c").unwrap();
    assert_eq!(fam.series().len(), 1);
    assert_eq!(fam.overflows(), 0);
}

#[test]
fn family_max_series_overflows() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
    let limited = store
        .register(
            &FamilyDesc::new("limited", Kind::Counter)
                .labels(&["k"])
                .max_series(3),
        )
        .unwrap();
    let free = store
        .register(&FamilyDesc::new("free", Kind::Counter).labels(&["k"]))
        .unwrap();
    for i in 0..3 {
        store
            .counter_inc(store.series(&limited, &[&i.to_string()]).unwrap())
            .unwrap();
    }
    let e = expect_err(store.series(&limited, &["3"]), ErrorKind::Overflow);
    assert!(e.message().contains("limit of 3"), "{e}");
    store.counter_inc(e.overflow_series().unwrap()).unwrap();
    // Other families are not limited.
    for i in 0..10 {
        store.series(&free, &[&i.to_string()]).unwrap();
    }
    // Deleting a series makes room for one more.
    assert!(store.delete(&limited, &["0"]).unwrap());
    store
        .counter_inc(store.series(&limited, &["3"]).unwrap())
        .unwrap();
    expect_err(store.series(&limited, &["4"]), ErrorKind::Overflow);

    let snap = store.snapshot().unwrap();
    let fam = snap.family("limited").unwrap();
    assert_eq!(fam.overflows(), 2);
    let mut values: Vec<(Vec<&str>, bool)> = fam
        .series()
        .map(|s| (s.label_values().collect(), s.is_overflow()))
        .collect();
    values.sort();
    assert_eq!(
        values,
        [
            (vec![""], true),
            (vec!["1"], false),
            (vec!["2"], false),
            (vec!["3"], false)
        ]
    );
    assert_eq!(snap.family("free").unwrap().overflows(), 0);
}

#[test]
fn label_bytes_overflow() {
    let dir = tempdir();
    let opts = Options {
        label_bytes: 1024,
        ..Options::default()
    };
    let store = Store::open(dir.path().join("s"), &opts).unwrap();
    let f = store
        .register(&FamilyDesc::new("c", Kind::Counter).labels(&["k"]))
        .unwrap();
    let long = |i: usize| format!("{i:03}{}", "x".repeat(200));
    let mut created = 0;
    let e = loop {
        match store.series(&f, &[&long(created)]) {
            Ok(s) => {
                store.counter_inc(s).unwrap();
                created += 1;
            }
            Err(e) => break e,
        }
        assert!(
            created < 100,
            "1 KiB of label bytes cannot hold 100 long values"
        );
    };
    assert_eq!(e.kind(), ErrorKind::Overflow, "{e}");
    assert!(e.message().contains("label bytes"), "{e}");
    assert!(created >= 3, "only {created} series fit");
    store.counter_inc(e.overflow_series().unwrap()).unwrap();
    // Short values still fit.
    store.series(&f, &["a"]).unwrap();
    // A family whose name does not fit any more: StoreFull.
    let big = FamilyDesc::new("g", Kind::Gauge).help("h".repeat(2000));
    expect_err(store.register(&big), ErrorKind::StoreFull);

    let snap = store.snapshot().unwrap();
    let fam = snap.family("c").unwrap();
    assert_eq!(fam.series().len(), created + 2);
    assert_eq!(fam.overflows(), 1);
    for (i, s) in fam
        .series()
        .filter(|s| !s.is_overflow())
        .take(created)
        .enumerate()
    {
        assert_eq!(s.label_values().next().unwrap(), long(i));
    }
}

#[test]
fn value_cells_overflow() {
    let dir = tempdir();
    // A histogram with 11 bounds takes 12 integer cells and 1 float cell
    // per series: 64 cells hold 4 series, the overflow series included.
    let opts = Options {
        cells_per_writer: 64,
        ..Options::default()
    };
    let store = Store::open(dir.path().join("s"), &opts).unwrap();
    let f = store
        .register(&FamilyDesc::new("h", Kind::Histogram).labels(&["k"]))
        .unwrap();
    for i in 0..3 {
        store
            .observe(store.series(&f, &[&i.to_string()]).unwrap(), 0.2)
            .unwrap();
    }
    let e = expect_err(store.series(&f, &["3"]), ErrorKind::Overflow);
    assert!(e.message().contains("value cells"), "{e}");
    let ov = e.overflow_series().unwrap();
    for v in [0.001, 0.3, 7.0, 1e9] {
        store.observe(ov, v).unwrap();
    }
    // No cells for another family's overflow series: StoreFull.
    expect_err(
        store.register(&FamilyDesc::new("h2", Kind::Histogram)),
        ErrorKind::StoreFull,
    );
    let snap = store.snapshot().unwrap();
    let fam = snap.family("h").unwrap();
    assert_eq!(fam.series().len(), 4);
    let ov = fam.series().find(|s| s.is_overflow()).unwrap();
    let Value::Histogram {
        cumulative, sum, ..
    } = ov.value()
    else {
        panic!("not a histogram")
    };
    assert_eq!(*cumulative.last().unwrap(), 4);
    assert_eq!(cumulative[0], 1); // 0.001 <= 0.005
    assert_eq!(sum, 0.001 + 0.3 + 7.0 + 1e9);
}

#[test]
fn family_capacity_gives_store_full() {
    let dir = tempdir();
    let opts = Options {
        max_families: 2,
        ..Options::default()
    };
    let store = Store::open(dir.path().join("s"), &opts).unwrap();
    store
        .register(&FamilyDesc::new("a", Kind::Counter))
        .unwrap();
    store.register(&FamilyDesc::new("b", Kind::Gauge)).unwrap();
    let e = expect_err(
        store.register(&FamilyDesc::new("c", Kind::Counter)),
        ErrorKind::StoreFull,
    );
    assert!(e.message().contains("family capacity"), "{e}");
    // Registered families are still found when the store is full.
    let a = store
        .register(&FamilyDesc::new("a", Kind::Counter))
        .unwrap();
    store.counter_inc(store.series(&a, &[]).unwrap()).unwrap();
    assert_eq!(store.snapshot().unwrap().families().len(), 2);
}

#[test]
fn capacities_of_zero_are_invalid_options() {
    let dir = tempdir();
    for opts in [
        Options {
            max_families: 0,
            ..Options::default()
        },
        Options {
            max_series: 0,
            ..Options::default()
        },
        Options {
            label_bytes: 0,
            ..Options::default()
        },
        Options {
            max_writers: 0,
            ..Options::default()
        },
    ] {
        expect_err(
            Store::open(dir.path().join("s"), &opts),
            ErrorKind::InvalidOptions,
        );
    }
    assert!(!dir.path().join("s").exists());
}

//! Native histograms in one process: exact bucket counts against an
//! independent computation of client_golang's boundaries, native-only
//! and classic-plus-native families, resolution reduction at read time,
//! threads with a concurrent reader (count == zero + buckets in every
//! snapshot), reset and wipe, definitions and conflicts, capacity, and
//! corrupt records. Across processes: crates/testkit
//! (tests/native_histograms.rs).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use shmetrics_core::{
    BucketRun, ErrorKind, FamilyDesc, Kind, NativeBuckets, NativeOpts, Options, Store, Value,
};

use crate::common::{
    expect_err, small_options, tempdir, RawStore, FAMILY_NATIVE_BINS, FAMILY_NATIVE_SCHEMA,
    FAMILY_NATIVE_ZERO_THRESHOLD, FAMILY_SKETCH_CELLS,
};

fn open(opts: &Options) -> (tempfile::TempDir, Store) {
    let dir = tempdir();
    let s = Store::open(dir.path().join("s"), opts).unwrap();
    (dir, s)
}

fn native(name: &str) -> FamilyDesc {
    FamilyDesc::new(name, Kind::Histogram).native(NativeOpts::default())
}

/// The only series' histogram value, owned.
#[derive(Debug, Clone, PartialEq)]
struct Hist {
    bounds: Vec<f64>,
    cumulative: Vec<u64>,
    sum: f64,
    schema: i32,
    zero_threshold: f64,
    zero_count: u64,
    /// Non-empty buckets by index.
    positive: BTreeMap<i32, u64>,
    negative: BTreeMap<i32, u64>,
    /// The runs as given (first and last count non-zero).
    runs: [(i32, Vec<u64>); 2],
}

fn buckets(run: &BucketRun<'_>) -> BTreeMap<i32, u64> {
    run.counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != 0)
        .map(|(k, c)| (run.offset + k as i32, *c))
        .collect()
}

fn hist_of(v: Value<'_>) -> Hist {
    let Value::Histogram {
        bounds,
        cumulative,
        sum,
        native: Some(n),
    } = v
    else {
        panic!("not a native histogram: {v:?}")
    };
    let NativeBuckets {
        schema,
        zero_threshold,
        zero_count,
        positive,
        negative,
    } = n;
    Hist {
        bounds: bounds.to_vec(),
        cumulative: cumulative.to_vec(),
        sum,
        schema,
        zero_threshold,
        zero_count,
        positive: buckets(&positive),
        negative: buckets(&negative),
        runs: [
            (negative.offset, negative.counts.to_vec()),
            (positive.offset, positive.counts.to_vec()),
        ],
    }
}

fn read(store: &Store, name: &str) -> Hist {
    let snap = store.snapshot().unwrap();
    let s = snap.family(name).unwrap().series().next().unwrap();
    hist_of(s.value())
}

/// The bucket of `v` at `schema`, from the definition (bucket `i` holds
/// `(base^(i-1), base^i]`), by a different route than the store's:
/// `ceil(log2(v) * 2^schema)`, corrected at the boundaries against
/// `2^(i / 2^schema)` computed with `powf`. Good away from the few
/// boundaries where client_golang's table differs from `powf` in the
/// last bit (the values used below are not on boundaries).
fn expected_index(v: f64, schema: i32) -> i32 {
    let scale = 2f64.powi(schema);
    let mut i = (v.abs().log2() * scale).ceil() as i32;
    let upper = |i: i32| 2f64.powf(f64::from(i) / scale);
    while v.abs() > upper(i) {
        i += 1;
    }
    while v.abs() <= upper(i - 1) {
        i -= 1;
    }
    i
}

fn check_invariants(h: &Hist) {
    let total: u64 =
        h.zero_count + h.positive.values().sum::<u64>() + h.negative.values().sum::<u64>();
    assert_eq!(
        *h.cumulative.last().unwrap(),
        total,
        "count == zero + buckets: {h:?}"
    );
    assert_eq!(h.cumulative.len(), h.bounds.len() + 1);
    assert!(h.cumulative.windows(2).all(|w| w[0] <= w[1]), "{h:?}");
    for (offset, counts) in &h.runs {
        if !counts.is_empty() {
            assert!(
                counts[0] != 0 && *counts.last().unwrap() != 0,
                "{offset} {counts:?}"
            );
        }
    }
}

#[test]
fn native_only_counts_every_value_in_its_bucket() {
    let (_d, store) = open(&Options::default());
    let f = store.register(&native("rpc_seconds")).unwrap();
    let s = store.series(&f, &[]).unwrap();
    let empty = read(&store, "rpc_seconds");
    assert_eq!(empty.cumulative, [0]);
    assert_eq!((empty.schema, empty.zero_count), (3, 0));
    assert!(empty.positive.is_empty() && empty.negative.is_empty());
    assert_eq!(
        empty.zero_threshold,
        2f64.powi(-64),
        "the effective threshold"
    );

    let values = [
        0.001, 0.0123, 0.05, 0.05, 0.3, 1.0, 1.5, 2.0, 17.0, 100.0, 1234.5, -0.25, -7.0, -7.0, 0.0,
        -0.0, 1e-25,
    ];
    for v in values {
        store.observe(s, v).unwrap();
    }
    let h = read(&store, "rpc_seconds");
    check_invariants(&h);
    assert!(h.bounds.is_empty());
    assert_eq!(h.cumulative, [values.len() as u64]);
    assert_eq!(h.zero_count, 3, "0, -0 and 1e-25 are within 2^-64");
    let mut want_pos = BTreeMap::new();
    let mut want_neg = BTreeMap::new();
    for v in values.iter().filter(|v| v.abs() > 1e-19) {
        let side = if *v > 0.0 {
            &mut want_pos
        } else {
            &mut want_neg
        };
        *side.entry(expected_index(*v, 3)).or_insert(0u64) += 1;
    }
    assert_eq!(h.positive, want_pos);
    assert_eq!(h.negative, want_neg);
    // Worked by hand: 1.0 is the upper bound of bucket 0, 2.0 of bucket 8;
    // 100 is in (2^(53/8), 2^(54/8)].
    assert_eq!(h.positive[&0], 1);
    assert_eq!(h.positive[&8], 1);
    assert_eq!(h.positive[&54], 1);
    assert_eq!(h.negative[&expected_index(7.0, 3)], 2);
    let sum: f64 = values.iter().sum();
    assert!((h.sum - sum).abs() < 1e-9);
}

#[test]
fn out_of_range_and_infinite_values_go_to_the_top_bucket() {
    let (_d, store) = open(&Options::default());
    let f = store
        .register(&FamilyDesc::new("big", Kind::Histogram).native(NativeOpts {
            bucket_factor: 2.0, // schema 0
            ..NativeOpts::default()
        }))
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    for v in [
        2f64.powi(64),
        2f64.powi(70),
        f64::INFINITY,
        f64::MAX,
        -f64::INFINITY,
    ] {
        store.observe(s, v).unwrap();
    }
    expect_err(store.observe(s, f64::NAN), ErrorKind::InvalidValue);
    let h = read(&store, "big");
    check_invariants(&h);
    assert_eq!(h.schema, 0);
    assert_eq!(
        h.positive,
        BTreeMap::from([(64, 4)]),
        "2^64 is the top bound"
    );
    assert_eq!(h.negative, BTreeMap::from([(64, 1)]));
    assert_eq!(h.cumulative, [5]);
}

#[test]
fn classic_and_native_in_one_family() {
    let (_d, store) = open(&Options::default());
    let desc = FamilyDesc::new("both_seconds", Kind::Histogram)
        .labels(&["route"])
        .buckets(&[0.1, 1.0, 10.0])
        .native(NativeOpts::default());
    let f = store.register(&desc).unwrap();
    let s = store.series(&f, &["/"]).unwrap();
    let values = [0.05, 0.1, 0.5, 1.0, 5.0, 50.0, 500.0, 0.0];
    for v in values {
        store.observe(s, v).unwrap();
    }
    let snap = store.snapshot().unwrap();
    let fam = snap.family("both_seconds").unwrap();
    assert_eq!(fam.buckets(), [0.1, 1.0, 10.0]);
    let h = hist_of(fam.series().next().unwrap().value());
    check_invariants(&h);
    assert_eq!(h.cumulative, [3, 5, 6, 8]);
    assert_eq!(h.zero_count, 1);
    assert_eq!(h.positive.values().sum::<u64>(), 7);
    assert_eq!(h.positive[&expected_index(500.0, 3)], 1);
}

#[test]
fn a_bucket_limit_lowers_the_resolution_at_read_time_only() {
    let (_d, store) = open(&Options::default());
    let f = store
        .register(
            &FamilyDesc::new("wide", Kind::Histogram).native(NativeOpts {
                max_buckets: 10,
                ..NativeOpts::default()
            }),
        )
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    // Three values, three buckets: full resolution.
    for v in [1.5, 3.0, 6.0] {
        store.observe(s, v).unwrap();
    }
    let h = read(&store, "wide");
    assert_eq!(h.schema, 3);
    // Values over six decades, both signs: far more than 10 buckets at
    // schema 3.
    let values: Vec<f64> = (0..200)
        .map(|i| 1e-3 * 1.07f64.powi(i) * if i % 3 == 0 { -1.0 } else { 1.0 })
        .collect();
    for v in &values {
        store.observe(s, *v).unwrap();
    }
    let h = read(&store, "wide");
    check_invariants(&h);
    assert!(h.schema < 3, "schema {}", h.schema);
    assert!(h.positive.len() + h.negative.len() <= 10, "{h:?}");
    // One schema up would have been over the limit (or this is -4).
    let finer: std::collections::BTreeSet<(bool, i32)> = values
        .iter()
        .chain(&[1.5, 3.0, 6.0])
        .map(|v| (*v > 0.0, expected_index(*v, h.schema + 1)))
        .collect();
    assert!(h.schema == -4 || finer.len() > 10);
    // Every value is where its index at the reduced schema says.
    let mut want_pos = BTreeMap::new();
    let mut want_neg = BTreeMap::new();
    for v in values.iter().chain(&[1.5, 3.0, 6.0]) {
        let side = if *v > 0.0 {
            &mut want_pos
        } else {
            &mut want_neg
        };
        *side.entry(expected_index(*v, h.schema)).or_insert(0u64) += 1;
    }
    assert_eq!(h.positive, want_pos);
    assert_eq!(h.negative, want_neg);
    assert_eq!(h.cumulative, [203]);

    // The store kept full resolution: after a reset and few values, the
    // configured schema is back (client_golang would stay reduced).
    store.reset().unwrap();
    store.observe(s, 2.5).unwrap();
    let h = read(&store, "wide");
    assert_eq!(h.schema, 3);
    assert_eq!(h.positive, BTreeMap::from([(expected_index(2.5, 3), 1)]));
}

#[test]
fn threads_and_a_reader_see_count_equal_to_the_buckets_in_every_snapshot() {
    let (_d, store) = open(&Options::default());
    let store = Arc::new(store);
    let desc = FamilyDesc::new("t_seconds", Kind::Histogram)
        .buckets(&[0.5, 2.0])
        .native(NativeOpts {
            max_buckets: 20,
            ..NativeOpts::default()
        });
    let f = store.register(&desc).unwrap();
    let s = store.series(&f, &[]).unwrap();
    const PER_THREAD: usize = 20_000;
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || {
            let mut snap = shmetrics_core::Snapshot::default();
            let mut n = 0;
            while !done.load(Relaxed) {
                store.snapshot_into(&mut snap).unwrap();
                let h = hist_of(
                    snap.family("t_seconds")
                        .unwrap()
                        .series()
                        .next()
                        .unwrap()
                        .value(),
                );
                check_invariants(&h);
                n += 1;
            }
            n
        })
    };
    let writers: Vec<_> = (0..3)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    let v = ((i * 7 + t) % 1000) as f64 / 100.0 - 1.0;
                    store.observe(s, v).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Relaxed);
    let reads = reader.join().unwrap();
    let h = read(&store, "t_seconds");
    check_invariants(&h);
    assert_eq!(*h.cumulative.last().unwrap(), 3 * PER_THREAD as u64);
    eprintln!("{reads} concurrent snapshots");
}

#[test]
fn reset_and_wipe_clear_native_buckets() {
    let (_d, store) = open(&Options::default());
    let desc = native("r_seconds").labels(&["k"]);
    let f = store.register(&desc).unwrap();
    let s = store.series(&f, &["a"]).unwrap();
    for v in [0.5, -2.0, 0.0, 1e6] {
        store.observe(s, v).unwrap();
    }
    store.reset().unwrap();
    let h = read(&store, "r_seconds");
    assert_eq!(h.cumulative, [0]);
    assert_eq!(h.zero_count, 0);
    assert!(h.positive.is_empty() && h.negative.is_empty());
    store.observe(s, 4.0).unwrap();
    assert_eq!(
        read(&store, "r_seconds").positive,
        BTreeMap::from([(16, 1)])
    );

    store.wipe().unwrap();
    // A different kind of family now takes the same cells.
    let g = store
        .register(
            &FamilyDesc::new("r_seconds", Kind::Histogram).native(NativeOpts {
                bucket_factor: 2.0,
                ..NativeOpts::default()
            }),
        )
        .unwrap();
    let s = store.series(&g, &[]).unwrap();
    let h = read(&store, "r_seconds");
    assert_eq!(h.cumulative, [0]);
    assert!(h.positive.is_empty(), "a wipe leaves no old bucket behind");
    store.observe(s, 4.0).unwrap();
    assert_eq!(read(&store, "r_seconds").positive, BTreeMap::from([(2, 1)]));
}

#[test]
fn definitions_and_conflicts() {
    let (_d, store) = open(&Options::default());
    let a = store.register(&native("d_seconds")).unwrap();
    // The same schema, threshold and limit: the same definition.
    let same = FamilyDesc::new("d_seconds", Kind::Histogram).native(NativeOpts {
        bucket_factor: 1.095, // still schema 3
        zero_threshold: 0.0,  // effective 2^-64, as 2^-128 is
        max_buckets: 160,
    });
    assert_eq!(store.register(&same).unwrap(), a);
    for other in [
        FamilyDesc::new("d_seconds", Kind::Histogram).native(NativeOpts {
            bucket_factor: 1.2,
            ..NativeOpts::default()
        }),
        FamilyDesc::new("d_seconds", Kind::Histogram).native(NativeOpts {
            max_buckets: 10,
            ..NativeOpts::default()
        }),
        FamilyDesc::new("d_seconds", Kind::Histogram).native(NativeOpts {
            zero_threshold: 1e-9,
            ..NativeOpts::default()
        }),
        native("d_seconds").buckets(&[1.0]),
        FamilyDesc::new("d_seconds", Kind::Histogram),
    ] {
        expect_err(store.register(&other), ErrorKind::Conflict);
    }
    // Bad options.
    for bad in [
        NativeOpts {
            bucket_factor: 1.0,
            ..NativeOpts::default()
        },
        NativeOpts {
            bucket_factor: f64::NAN,
            ..NativeOpts::default()
        },
        NativeOpts {
            bucket_factor: f64::INFINITY,
            ..NativeOpts::default()
        },
        NativeOpts {
            zero_threshold: -1.0,
            ..NativeOpts::default()
        },
        NativeOpts {
            zero_threshold: f64::NAN,
            ..NativeOpts::default()
        },
    ] {
        let d = FamilyDesc::new("bad", Kind::Histogram).native(bad);
        expect_err(store.register(&d), ErrorKind::InvalidOptions);
    }
    for kind in [Kind::Counter, Kind::Gauge, Kind::Summary] {
        let d = FamilyDesc::new("bad", kind).native(NativeOpts::default());
        expect_err(store.register(&d), ErrorKind::InvalidOptions);
    }
    // `le` stays reserved, and a +Inf-only bucket list is native only.
    expect_err(
        store.register(&native("bad").labels(&["le"])),
        ErrorKind::InvalidName,
    );
    let inf = store
        .register(&native("inf_only").buckets(&[f64::INFINITY]))
        .unwrap();
    let s = store.series(&inf, &[]).unwrap();
    store.observe(s, 1.0).unwrap();
    let h = read(&store, "inf_only");
    assert!(h.bounds.is_empty());
    assert_eq!(h.cumulative, [1]);
    // A large zero threshold takes everything up to it.
    let z = store
        .register(&FamilyDesc::new("z", Kind::Histogram).native(NativeOpts {
            zero_threshold: 0.5,
            ..NativeOpts::default()
        }))
        .unwrap();
    let s = store.series(&z, &[]).unwrap();
    for v in [0.5, -0.5, 0.25, 0.51] {
        store.observe(s, v).unwrap();
    }
    let h = read(&store, "z");
    assert_eq!((h.zero_threshold, h.zero_count), (0.5, 3));
    assert_eq!(h.positive.values().sum::<u64>(), 1);
}

#[test]
fn handles_round_trip_through_raw() {
    let (_d, store) = open(&Options::default());
    let f = store
        .register(&native("raw_seconds").buckets(&[1.0]).labels(&["k"]))
        .unwrap();
    let back = shmetrics_core::Family::from_raw(f.to_raw()).unwrap();
    assert_eq!(back, f);
    let s = store.series(&back, &["x"]).unwrap();
    let s2 = shmetrics_core::Series::from_raw(s.to_raw()).unwrap();
    assert_eq!(s2, s);
    store.observe(s2, 3.0).unwrap();
    let h = read(&store, "raw_seconds");
    assert_eq!(h.cumulative, [0, 1]);
    assert_eq!(h.positive.values().sum::<u64>(), 1);
}

#[test]
fn the_sketch_region_full_is_store_full_or_overflow() {
    let (_d, store) = open(&Options {
        // Two schema-3 series (2,048 cells each) and a bit: a series and
        // its family's overflow series.
        sketch_cells_per_writer: 5000,
        ..Options::default()
    });
    let f = store
        .register(&native("cap_seconds").labels(&["k"]))
        .unwrap();
    store.series(&f, &["a"]).unwrap();
    let e = store.series(&f, &["b"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overflow);
    assert!(e.to_string().contains("sketch cells per writer"), "{e}");
    let ov = e.overflow_series().unwrap();
    store.observe(ov, 1.0).unwrap();
    // Registering takes no sketch cells (an overflow series takes them
    // when first used); this family's series then finds none.
    let f2 = store.register(&native("cap2_seconds")).unwrap();
    let e = store.series(&f2, &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overflow);
    assert!(e.to_string().contains("sketch cells per writer"), "{e}");
    // The overflow series counts what it got, natively too.
    let snap = store.snapshot().unwrap();
    let fam = snap.family("cap_seconds").unwrap();
    let ov = fam.series().find(|s| s.is_overflow()).unwrap();
    assert_eq!(hist_of(ov.value()).positive, BTreeMap::from([(0, 1)]));
}

#[test]
fn corrupt_native_records_are_rejected_not_followed() {
    let dir = tempdir();
    let path = dir.path().join("s");
    {
        let store = Store::open(&path, &small_options()).unwrap();
        let f = store
            .register(&FamilyDesc::new("n", Kind::Histogram).native(NativeOpts {
                bucket_factor: 16.0, // schema -2: 64 cells a series
                ..NativeOpts::default()
            }))
            .unwrap();
        store.observe(store.series(&f, &[]).unwrap(), 2.0).unwrap();
    }
    let raw = RawStore::open(&path);
    let fam = raw.family(0);
    assert_eq!(raw.u32(fam + FAMILY_NATIVE_SCHEMA), 14);
    assert_eq!(raw.u64(fam + FAMILY_NATIVE_BINS), 32);
    assert_eq!(raw.u32(fam + FAMILY_SKETCH_CELLS), 64);
    let cases: [(u64, u64, bool); 8] = [
        (FAMILY_NATIVE_SCHEMA, 0, true),  // no longer native: shape mismatch
        (FAMILY_NATIVE_SCHEMA, 30, true), // schema 14
        (FAMILY_NATIVE_SCHEMA, 15, true), // schema -1: bins mismatch
        (FAMILY_NATIVE_BINS, 1 << 40, false), // bins mismatch
        (FAMILY_NATIVE_ZERO_THRESHOLD, f64::NAN.to_bits(), false),
        (FAMILY_NATIVE_ZERO_THRESHOLD, 0, false), // below 2^-64
        (FAMILY_NATIVE_ZERO_THRESHOLD, f64::INFINITY.to_bits(), false),
        (FAMILY_SKETCH_CELLS, 1 << 20, true),
    ];
    for (off, v, is_u32) in cases {
        let before = raw.u64(fam + off);
        if is_u32 {
            raw.set_u32(fam + off, v as u32);
        } else {
            raw.set_u64(fam + off, v);
        }
        let store = Store::open(&path, &crate::common::existing()).unwrap();
        let snap = store.snapshot().unwrap();
        assert!(
            snap.family("n").is_none(),
            "corrupt at +{off} = {v:#x}: still read"
        );
        let e = store
            .register(&FamilyDesc::new("n", Kind::Histogram).native(NativeOpts {
                bucket_factor: 16.0,
                ..NativeOpts::default()
            }))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "+{off}");
        drop(store);
        raw.set_u64(fam + off, before);
    }
    // Intact again.
    let store = Store::open(&path, &crate::common::existing()).unwrap();
    assert_eq!(read(&store, "n").positive, BTreeMap::from([(1, 1)]));
}

//! What updates add up to, in one process: bucket bounds are inclusive,
//! integral and fractional counter increments merge exactly, threads of one
//! process lose nothing, and a kept snapshot follows deletes, resets and
//! wipes.

use std::sync::Arc;

use shmetrics_core::{FamilyDesc, GaugeMode, Kind, Options, Snapshot, Store, Value};

use crate::common::tempdir;

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempdir();
    let s = Store::open(dir.path().join("s"), &Options::default()).unwrap();
    (dir, s)
}

/// A series' value, owned.
#[derive(Clone, Debug, PartialEq)]
enum V {
    C(f64),
    G(f64),
    H(Vec<u64>, f64),
    S(u64, f64),
}

fn only_value(snap: &Snapshot, family: &str) -> V {
    let f = snap.family(family).unwrap();
    let mut it = f.series();
    let v = it.next().unwrap().value();
    assert!(it.next().is_none(), "{family} has more than one series");
    match v {
        Value::Counter(c) => V::C(c),
        Value::Gauge(g) => V::G(g),
        Value::Summary { count, sum, .. } => V::S(count, sum),
        Value::Histogram {
            cumulative, sum, ..
        } => V::H(cumulative.to_vec(), sum),
    }
}

#[test]
fn histogram_bounds_are_inclusive_and_buckets_cumulative() {
    let (_d, store) = open();
    let f = store
        .register(&FamilyDesc::new("h", Kind::Histogram).buckets(&[1.0, 2.0, 5.0]))
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    for v in [
        -1e300,
        -3.0,
        0.0,
        1.0,
        1.0000001,
        2.0,
        4.9,
        5.0,
        5.0000001,
        f64::INFINITY,
    ] {
        store.observe(s, v).unwrap();
    }
    let snap = store.snapshot().unwrap();
    let fam = snap.family("h").unwrap();
    assert_eq!(fam.buckets(), [1.0, 2.0, 5.0]);
    let Value::Histogram {
        bounds,
        cumulative,
        sum,
        ..
    } = fam.series().next().unwrap().value()
    else {
        panic!()
    };
    assert_eq!(bounds, [1.0, 2.0, 5.0]);
    // le=1: -1e300, -3, 0, 1; le=2: + 1.0000001, 2; le=5: + 4.9, 5;
    // +Inf: + 5.0000001, inf.
    assert_eq!(cumulative, [4, 6, 8, 10]);
    assert_eq!(sum, f64::INFINITY);
}

#[test]
fn counter_increments_merge_exactly() {
    let (_d, store) = open();
    let f = store
        .register(&FamilyDesc::new("c", Kind::Counter))
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    for _ in 0..1000 {
        store.counter_inc(s).unwrap();
        store.counter_add(s, 2.0).unwrap();
        store.counter_add(s, 0.25).unwrap();
    }
    store.counter_add(s, 0.0).unwrap();
    assert_eq!(
        only_value(&store.snapshot().unwrap(), "c"),
        V::C(3000.0 + 250.0)
    );
    // Integers past 2^53 are still added (as floats).
    store.counter_add(s, 1e300).unwrap();
    assert_eq!(
        only_value(&store.snapshot().unwrap(), "c"),
        V::C(1e300 + 3250.0)
    );
}

#[test]
fn gauges_and_summaries_in_one_process() {
    let (_d, store) = open();
    for mode in GaugeMode::ALL {
        let f = store
            .register(
                &FamilyDesc::new(format!("g_{}", mode.as_str()), Kind::Gauge).gauge_mode(mode),
            )
            .unwrap();
        let s = store.series(&f, &[]).unwrap();
        store.gauge_set(s, 10.0).unwrap();
        store.gauge_add(s, -2.5).unwrap();
        store.gauge_add(s, 0.5).unwrap();
        let snap = store.snapshot().unwrap();
        let fam = snap.family(&format!("g_{}", mode.as_str())).unwrap();
        let series: Vec<_> = fam.series().collect();
        assert_eq!(series.len(), 1, "{mode:?}");
        assert_eq!(series[0].value(), Value::Gauge(8.0), "{mode:?}");
        let pid = series[0]
            .labels()
            .find(|(n, _)| *n == "pid")
            .map(|(_, v)| v.to_string());
        if mode.per_process() {
            assert_eq!(pid, Some(std::process::id().to_string()), "{mode:?}");
        } else {
            assert_eq!(pid, None, "{mode:?}");
        }
    }
    let t = store.register(&FamilyDesc::new("t", Kind::Gauge)).unwrap();
    let ts = store.series(&t, &[]).unwrap();
    store.gauge_set_to_current_time(ts).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let V::G(v) = only_value(&store.snapshot().unwrap(), "t") else {
        panic!()
    };
    assert!((now - 3600.0..=now + 1.0).contains(&v), "{v} vs now {now}");

    let f = store
        .register(&FamilyDesc::new("s", Kind::Summary))
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    for v in [1.0, 2.0, 3.5] {
        store.observe(s, v).unwrap();
    }
    assert_eq!(only_value(&store.snapshot().unwrap(), "s"), V::S(3, 6.5));
}

#[test]
fn threads_of_one_process_lose_no_update() {
    let (_d, store) = open();
    let store = Arc::new(store);
    let c = store
        .register(&FamilyDesc::new("c", Kind::Counter))
        .unwrap();
    let h = store
        .register(&FamilyDesc::new("h", Kind::Histogram).buckets(&[1.0]))
        .unwrap();
    let g = store
        .register(&FamilyDesc::new("g", Kind::Gauge).gauge_mode(GaugeMode::Sum))
        .unwrap();
    let (cs, hs, gs) = (
        store.series(&c, &[]).unwrap(),
        store.series(&h, &[]).unwrap(),
        store.series(&g, &[]).unwrap(),
    );
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..20_000 {
                    store.counter_inc(cs).unwrap();
                    store.counter_add(cs, 0.5).unwrap();
                    store.observe(hs, (i % 2) as f64 * 2.0).unwrap();
                    store
                        .gauge_add(gs, if t % 2 == 0 { 1.0 } else { -1.0 })
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let snap = store.snapshot().unwrap();
    assert_eq!(only_value(&snap, "c"), V::C(80_000.0 * 1.5));
    assert_eq!(only_value(&snap, "h"), V::H(vec![40_000, 80_000], 80_000.0));
    assert_eq!(only_value(&snap, "g"), V::G(0.0));
    assert_eq!(store.writers().len(), 1, "threads share the process's slot");
}

/// Threads that look up more series than the lock-free index of a
/// process's blocks holds (`store/own_index.rs`: 4,096), each making some
/// and finding the others', and update through what they found: every
/// update lands on its own series.
#[test]
fn threads_looking_up_many_series_update_each_its_own() {
    const SERIES: u32 = 10_000;
    const THREADS: u32 = 4;
    let (_d, store) = open();
    let store = Arc::new(store);
    let c = store
        .register(&FamilyDesc::new("c", Kind::Counter).labels(&["k"]))
        .unwrap();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for round in 0..3 {
                    for i in 0..SERIES {
                        // Each thread in its own order, so that threads
                        // make series and find them in turn.
                        let k = (i * 7919 + t * 2503 + round * 101) % SERIES;
                        let s = store.series(&c, &[&k.to_string()]).unwrap();
                        store.counter_add(s, f64::from(k % 5 + 1)).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let snap = store.snapshot().unwrap();
    let fam = snap.family("c").unwrap();
    let mut seen = 0;
    for s in fam.series() {
        let k: u32 = s.label_values().next().unwrap().parse().unwrap();
        let want = f64::from(3 * THREADS * (k % 5 + 1));
        assert_eq!(s.value(), Value::Counter(want), "series {k}");
        seen += 1;
    }
    assert_eq!(seen, SERIES);
}

#[test]
fn a_kept_snapshot_follows_deletes_resets_overflows_and_wipes() {
    let (_d, store) = open();
    let f = store
        .register(
            &FamilyDesc::new("c", Kind::Counter)
                .labels(&["k"])
                .max_series(2),
        )
        .unwrap();
    for k in ["a", "b"] {
        store.counter_inc(store.series(&f, &[k]).unwrap()).unwrap();
    }
    let mut kept = store.snapshot().unwrap();
    let view = |snap: &Snapshot| -> Vec<(String, bool, f64)> {
        snap.families()
            .flat_map(|f| {
                let name = f.name().to_string();
                f.series().map(move |s| {
                    let Value::Counter(v) = s.value() else {
                        panic!()
                    };
                    (
                        format!("{name}{:?}", s.label_values().collect::<Vec<_>>()),
                        s.is_overflow(),
                        v,
                    )
                })
            })
            .collect()
    };
    let check = |kept: &mut Snapshot, step: &str| {
        store.snapshot_into(kept).unwrap();
        let fresh = store.snapshot().unwrap();
        assert_eq!(view(kept), view(&fresh), "after {step}");
    };
    check(&mut kept, "nothing");
    // Delete, and re-create from zero.
    assert!(store.delete(&f, &["a"]).unwrap());
    check(&mut kept, "delete");
    store
        .counter_add(store.series(&f, &["a"]).unwrap(), 5.0)
        .unwrap();
    check(&mut kept, "re-create");
    // The overflow series appears once it is used.
    let ov = store.series_or_overflow(&f, &["c"]).unwrap();
    store.counter_inc(ov).unwrap();
    check(&mut kept, "overflow");
    assert!(view(&kept).iter().any(|(_, o, v)| *o && *v == 1.0));
    // Clear deletes every labelled series, keeps the overflow series and
    // the family; new series start from zero and count against the limit
    // again.
    let other = store
        .register(&FamilyDesc::new("other", Kind::Counter).labels(&["k"]))
        .unwrap();
    store
        .counter_inc(store.series(&other, &["x"]).unwrap())
        .unwrap();
    assert_eq!(store.clear(&f).unwrap(), 2);
    check(&mut kept, "clear");
    let names: Vec<String> = view(&kept).into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(names, ["c[\"\"]", "other[\"x\"]"], "{names:?}");
    assert_eq!(store.clear(&f).unwrap(), 0);
    for k in ["p", "q"] {
        let s = store.series(&f, &[k]).unwrap();
        store.counter_inc(s).unwrap();
    }
    check(&mut kept, "after clear");
    store.reset().unwrap();
    check(&mut kept, "reset");
    assert!(view(&kept).iter().all(|(_, _, v)| *v == 0.0));
    store.wipe().unwrap();
    check(&mut kept, "wipe");
    assert!(view(&kept).is_empty());
    let f = store
        .register(&FamilyDesc::new("d", Kind::Counter))
        .unwrap();
    store.counter_inc(store.series(&f, &[]).unwrap()).unwrap();
    check(&mut kept, "register after the wipe");
    assert_eq!(view(&kept), [("d[]".to_string(), false, 1.0)]);
}

#[test]
fn a_series_made_with_a_given_creation_time_keeps_it() {
    let (_d, s) = open();
    let f = s
        .register(&FamilyDesc::new("jobs", Kind::Counter).labels(&["q"]))
        .unwrap();
    s.series_created(&f, &["a"], Some(123_456_000_000)).unwrap();
    // Found, not made: the time given is not taken.
    s.series_created(&f, &["a"], Some(999)).unwrap();
    s.series_or_overflow_created(&f, &["b"], Some(7_000_000_000))
        .unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    s.series(&f, &["c"]).unwrap();
    let snap = s.snapshot().unwrap();
    let created: Vec<(String, u64)> = snap
        .family("jobs")
        .unwrap()
        .series()
        .map(|x| {
            (
                x.label_values().next().unwrap().to_string(),
                x.created_unix_ns(),
            )
        })
        .collect();
    assert_eq!(created[0], ("a".to_string(), 123_456_000_000));
    assert_eq!(created[1], ("b".to_string(), 7_000_000_000));
    assert_eq!(created[2].0, "c");
    assert!(created[2].1 >= before, "the store's clock by default");
}

/// Writer slots with so many block cells that the merge splits them
/// between two threads (more than a million cells, and more than eight a
/// sum: `snapshot/merge.rs`) sum to what each slot wrote, integer cells,
/// float cells and per-slot gauges alike. Each store handle of a process
/// writes through a slot of its own.
#[test]
fn writer_slots_merged_on_two_threads_sum_exactly() {
    const WRITERS: usize = 8;
    const SERIES: usize = 10_000;
    let dir = tempdir();
    let options = Options {
        max_families: 8,
        max_series: 3 * SERIES as u32 + 64,
        label_bytes: 1 << 20,
        max_writers: WRITERS as u32,
        ..Options::default()
    };
    let bounds: Vec<f64> = (1..=10).map(f64::from).collect();
    let descs = [
        FamilyDesc::new("h", Kind::Histogram)
            .labels(&["k"])
            .buckets(&bounds),
        FamilyDesc::new("c", Kind::Counter).labels(&["k"]),
        FamilyDesc::new("g", Kind::Gauge)
            .labels(&["k"])
            .gauge_mode(GaugeMode::Sum),
    ];
    let stores: Vec<Store> = (0..WRITERS)
        .map(|_| Store::open(dir.path().join("s"), &options).unwrap())
        .collect();
    for (j, store) in stores.iter().enumerate() {
        let [h, c, g] = descs.clone().map(|d| store.register(&d).unwrap());
        let times = j + 1;
        for k in 0..SERIES {
            let key = k.to_string();
            let s = store.series(&h, &[&key]).unwrap();
            for _ in 0..times {
                store.observe(s, (k % 12) as f64 + 0.5).unwrap();
            }
            store
                .counter_add(store.series(&c, &[&key]).unwrap(), 0.25 * times as f64)
                .unwrap();
            if k % 100 == 0 {
                store
                    .gauge_set(store.series(&g, &[&key]).unwrap(), times as f64)
                    .unwrap();
            }
        }
    }
    let all: u64 = (1..=WRITERS as u64).sum();
    let snap = stores[0].snapshot().unwrap();
    let values = |name: &str| -> Vec<(usize, Value<'_>)> {
        let f = snap.family(name).unwrap();
        f.series()
            .map(|s| (s.label_values().next().unwrap().parse().unwrap(), s.value()))
            .collect()
    };
    let hist = values("h");
    assert_eq!(hist.len(), SERIES);
    for (k, v) in hist {
        let Value::Histogram {
            cumulative, sum, ..
        } = v
        else {
            panic!("h{k}: {v:?}")
        };
        let bucket = (k % 12).min(10);
        let want: Vec<u64> = (0..=10).map(|b| if b < bucket { 0 } else { all }).collect();
        assert_eq!(cumulative, &want[..], "h{k}");
        assert_eq!(sum, all as f64 * ((k % 12) as f64 + 0.5), "h{k}");
    }
    for (k, v) in values("c") {
        assert_eq!(v, Value::Counter(0.25 * all as f64), "c{k}");
    }
    let gauges = values("g");
    assert_eq!(gauges.len(), SERIES / 100);
    for (k, v) in gauges {
        assert_eq!(v, Value::Gauge(all as f64), "g{k}");
    }
}

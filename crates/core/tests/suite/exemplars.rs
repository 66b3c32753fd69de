//! Exemplars: recorded with counter increments and histogram
//! observations, the latest per place, refused when invalid, cleared by
//! reset and wipe, never torn by racing threads.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use shmetrics_core::{ErrorKind, FamilyDesc, Kind, NativeOpts, Store, Value, MAX_EXEMPLAR_CHARS};

use crate::common::{small_options, tempdir};

fn labels_of(e: &shmetrics_core::Exemplar<'_>) -> Vec<(String, String)> {
    e.labels()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn pair(n: &str, v: &str) -> Vec<(String, String)> {
    vec![(n.to_string(), v.to_string())]
}

#[test]
fn counter_and_histogram_exemplars_read_back() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small_options()).unwrap();
    let c = store
        .register(&FamilyDesc::new("reqs_total", Kind::Counter).exemplars(true))
        .unwrap();
    let h = store
        .register(
            &FamilyDesc::new("lat", Kind::Histogram)
                .buckets(&[0.1, 1.0])
                .exemplars(true),
        )
        .unwrap();
    let cs = store.series(&c, &[]).unwrap();
    let hs = store.series(&h, &[]).unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    store.counter_inc(cs).unwrap();
    store
        .counter_add_with_exemplar(cs, 2.0, &[("trace_id", "t1")])
        .unwrap();
    store
        .counter_inc_with_exemplar(cs, &[("trace_id", "t2")])
        .unwrap();
    store
        .observe_with_exemplar(hs, 0.5, &[("trace_id", "h1")])
        .unwrap();
    store
        .observe_with_exemplar(hs, 1.0, &[("trace_id", "h2")])
        .unwrap(); // le is inclusive: bucket 1.0
    store
        .observe_with_exemplar(hs, 7.0, &[("trace_id", "h3"), ("user", "é")])
        .unwrap();
    store.observe(hs, 0.05).unwrap(); // no exemplar for bucket 0.1

    let snap = store.snapshot().unwrap();
    let f = snap.family("reqs").unwrap();
    let s = f.series().next().unwrap();
    assert_eq!(s.value(), Value::Counter(4.0));
    assert_eq!(s.exemplars().len(), 1);
    let e = s.exemplar(0).unwrap();
    assert_eq!(labels_of(&e), pair("trace_id", "t2"));
    assert_eq!(e.value(), 1.0);
    assert!(e.timestamp_unix_ns() >= before);

    let f = snap.family("lat").unwrap();
    let s = f.series().next().unwrap();
    let Value::Histogram { cumulative, .. } = s.value() else {
        panic!()
    };
    assert_eq!(cumulative, [1, 3, 4]);
    let ex: Vec<_> = s.exemplars().collect();
    assert_eq!(ex.len(), 3);
    assert!(ex[0].is_none());
    assert_eq!(labels_of(ex[1].as_ref().unwrap()), pair("trace_id", "h2"));
    assert_eq!(ex[1].unwrap().value(), 1.0);
    let last = ex[2].unwrap();
    assert_eq!(
        labels_of(&last),
        vec![
            ("trace_id".to_string(), "h3".to_string()),
            ("user".to_string(), "é".to_string())
        ]
    );
    assert_eq!(last.value(), 7.0);
    assert!(ex[2].unwrap().timestamp_unix_ns() >= ex[1].unwrap().timestamp_unix_ns());
}

#[test]
fn families_without_exemplars_are_unchanged_and_refuse_them() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small_options()).unwrap();
    let plain = store
        .register(&FamilyDesc::new("plain", Kind::Counter))
        .unwrap();
    let s = store.series(&plain, &[]).unwrap();
    let e = store
        .counter_add_with_exemplar(s, 1.0, &[("trace_id", "x")])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOptions);
    assert!(e.message().contains("exemplars(true)"), "{e}");
    let snap = store.snapshot().unwrap();
    let series = snap.family("plain").unwrap().series().next().unwrap();
    assert_eq!(series.value(), Value::Counter(0.0), "refused: no update");
    assert_eq!(series.exemplars().len(), 0);
    // Only counters and classic histograms keep exemplars.
    for d in [
        FamilyDesc::new("g", Kind::Gauge).exemplars(true),
        FamilyDesc::new("s", Kind::Summary).exemplars(true),
        FamilyDesc::new("n", Kind::Histogram)
            .native(NativeOpts::default())
            .exemplars(true),
    ] {
        assert_eq!(
            store.register(&d).unwrap_err().kind(),
            ErrorKind::InvalidOptions
        );
    }
    // A different exemplars setting is a different definition.
    let e = store
        .register(&FamilyDesc::new("plain", Kind::Counter).exemplars(true))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    // A gauge handle: wrong type.
    let g = store.register(&FamilyDesc::new("g", Kind::Gauge)).unwrap();
    let gs = store.series(&g, &[]).unwrap();
    assert_eq!(
        store
            .counter_add_with_exemplar(gs, 1.0, &[])
            .unwrap_err()
            .kind(),
        ErrorKind::WrongType
    );
}

#[test]
fn native_and_classic_histogram_keeps_exemplars_in_classic_buckets() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small_options()).unwrap();
    let h = store
        .register(
            &FamilyDesc::new("both", Kind::Histogram)
                .buckets(&[1.0])
                .native(NativeOpts {
                    bucket_factor: 16.0,
                    ..NativeOpts::default()
                })
                .exemplars(true),
        )
        .unwrap();
    let s = store.series(&h, &[]).unwrap();
    for v in [0.5, 3.0, 0.25] {
        store
            .observe_with_exemplar(s, v, &[("v", &v.to_string())])
            .unwrap();
    }
    let snap = store.snapshot().unwrap();
    let s = snap.family("both").unwrap().series().next().unwrap();
    let Value::Histogram {
        cumulative, native, ..
    } = s.value()
    else {
        panic!()
    };
    assert_eq!(cumulative, [2, 3]);
    let n = native.unwrap();
    assert_eq!(n.positive.counts.iter().sum::<u64>(), 3);
    let ex: Vec<_> = s.exemplars().map(|e| e.unwrap().value()).collect();
    assert_eq!(ex, [0.25, 3.0]);
}

#[test]
fn label_limits_and_names() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small_options()).unwrap();
    let c = store
        .register(&FamilyDesc::new("c", Kind::Counter).exemplars(true))
        .unwrap();
    let s = store.series(&c, &[]).unwrap();
    // "trace_id" is 8 characters: values of 120 fit exactly.
    let ok = "a".repeat(MAX_EXEMPLAR_CHARS - 8);
    store
        .counter_add_with_exemplar(s, 1.0, &[("trace_id", &ok)])
        .unwrap();
    let long = "a".repeat(MAX_EXEMPLAR_CHARS - 7);
    let e = store
        .counter_add_with_exemplar(s, 1.0, &[("trace_id", &long)])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidValue);
    assert!(e.message().contains("128"), "{e}");
    // Characters, not bytes: 120 four-byte characters fit (480 bytes).
    let wide = "😀".repeat(MAX_EXEMPLAR_CHARS - 8);
    store
        .counter_add_with_exemplar(s, 1.0, &[("trace_id", &wide)])
        .unwrap();
    let wider = "😀".repeat(MAX_EXEMPLAR_CHARS - 7);
    assert_eq!(
        store
            .counter_add_with_exemplar(s, 1.0, &[("trace_id", &wider)])
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidValue
    );
    // Spread over several labels, the names count too.
    let e = store
        .counter_add_with_exemplar(s, 1.0, &[("a", &"x".repeat(63)), ("b", &"y".repeat(64))])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidValue);
    // Exemplar label names are UTF-8, as Prometheus 3 and
    // prometheus_client 0.26 take them (see `utf8_exemplar_label_names`).
    for bad in ["", "__reserved", "a\0"] {
        let e = store
            .counter_add_with_exemplar(s, 1.0, &[(bad, "v")])
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidName, "{bad:?}");
    }
    let e = store
        .counter_add_with_exemplar(s, 1.0, &[("a", "1"), ("a", "2")])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidName);
    // A refused value records nothing either.
    assert!(store
        .counter_add_with_exemplar(s, -1.0, &[("trace_id", "neg")])
        .is_err());
    let snap = store.snapshot().unwrap();
    let series = snap.family("c").unwrap().series().next().unwrap();
    assert_eq!(series.value(), Value::Counter(2.0));
    let e = series.exemplar(0).unwrap();
    assert_eq!(labels_of(&e), pair("trace_id", &wide));
}

#[test]
fn utf8_exemplar_label_names() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small_options()).unwrap();
    let c = store
        .register(&FamilyDesc::new("c", Kind::Counter).exemplars(true))
        .unwrap();
    let s = store.series(&c, &[]).unwrap();
    for name in [":o)", "1", "trace.id", "花火"] {
        store
            .counter_add_with_exemplar(s, 1.0, &[(name, "v")])
            .unwrap();
        let snap = store.snapshot().unwrap();
        let series = snap.family("c").unwrap().series().next().unwrap();
        assert_eq!(labels_of(&series.exemplar(0).unwrap()), pair(name, "v"));
    }
    // Within 128 characters, but more than a record's 512 bytes.
    let names: Vec<String> = (0..100u32)
        .map(|i| char::from_u32(0x1F600 + i).unwrap().to_string())
        .collect();
    let labels: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
    let e = store
        .counter_add_with_exemplar(s, 1.0, &labels)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidValue);
    assert!(e.message().contains("512"), "{e}");
}

#[test]
fn reset_and_wipe_clear_exemplars() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let store = Store::open(&path, &small_options()).unwrap();
    let desc = FamilyDesc::new("c", Kind::Counter).exemplars(true);
    let c = store.register(&desc).unwrap();
    let s = store.series(&c, &[]).unwrap();
    store
        .counter_add_with_exemplar(s, 1.0, &[("trace_id", "before")])
        .unwrap();
    store.reset().unwrap();
    let snap = store.snapshot().unwrap();
    let series = snap.family("c").unwrap().series().next().unwrap();
    assert!(series.exemplar(0).is_none());
    // Recording works again after a reset.
    store
        .counter_add_with_exemplar(s, 1.0, &[("trace_id", "after")])
        .unwrap();
    let snap = store.snapshot().unwrap();
    let e = snap.family("c").unwrap().series().next().unwrap();
    assert_eq!(
        labels_of(&e.exemplar(0).unwrap()),
        pair("trace_id", "after")
    );

    store.wipe().unwrap();
    // After a wipe the cells serve other series: a summary-free store
    // reuses the sketch cells; the new series starts without exemplars.
    let c = store.register(&desc).unwrap();
    let s = store.series(&c, &[]).unwrap();
    let snap = store.snapshot().unwrap();
    assert!(snap
        .family("c")
        .unwrap()
        .series()
        .next()
        .unwrap()
        .exemplar(0)
        .is_none());
    store
        .counter_add_with_exemplar(s, 3.0, &[("trace_id", "wiped")])
        .unwrap();
    let snap = store.snapshot().unwrap();
    let e = snap.family("c").unwrap().series().next().unwrap();
    assert_eq!(e.exemplar(0).unwrap().value(), 3.0);
    // A reader that opened the store read-only sees the same.
    let ro = Store::open(&path, &crate::common::read_only()).unwrap();
    let snap = ro.snapshot().unwrap();
    let e = snap.family("c").unwrap().series().next().unwrap();
    assert_eq!(
        labels_of(&e.exemplar(0).unwrap()),
        pair("trace_id", "wiped")
    );
}

/// Threads of one process racing on one place: every exemplar read has
/// the labels of its own value (the value is encoded in the trace id).
#[test]
fn racing_threads_never_tear_an_exemplar() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small_options()).unwrap();
    let h = store
        .register(
            &FamilyDesc::new("h", Kind::Histogram)
                .buckets(&[1e12])
                .exemplars(true),
        )
        .unwrap();
    let s = store.series(&h, &[]).unwrap();
    let stop = AtomicBool::new(false);
    let mut checked = 0u64;
    std::thread::scope(|scope| {
        for t in 0..3u64 {
            let (store, stop) = (&store, &stop);
            scope.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Relaxed) {
                    let v = (t * 1_000_000_000 + i) as f64;
                    // Labels of varying length, so a torn copy shows.
                    let pad = "p".repeat((i % 50) as usize);
                    store
                        .observe_with_exemplar(
                            s,
                            v,
                            &[("trace_id", &format!("{v}")), ("pad", &pad)],
                        )
                        .unwrap();
                    i += 1;
                }
            });
        }
        // Until 1,000 exemplars were checked: a reader skips a record that
        // a writer holds, which with three threads hammering one place is
        // most of the time, and more so on a loaded machine. The deadline
        // only guards against a hang.
        let mut snap = shmetrics_core::Snapshot::default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while checked < 1000 && std::time::Instant::now() < deadline {
            store.snapshot_into(&mut snap).unwrap();
            let series = snap.family("h").unwrap().series().next().unwrap();
            if let Some(e) = series.exemplar(0) {
                let l: Vec<_> = e.labels().collect();
                assert_eq!(l.len(), 2);
                assert_eq!(l[0].1, format!("{}", e.value()), "torn: {l:?}");
                let i = e.value() as u64 % 1_000_000_000;
                assert_eq!(l[1].1.len() as u64, i % 50, "torn: {l:?}");
                checked += 1;
            }
        }
        stop.store(true, Relaxed);
    });
    assert!(checked >= 1000, "only {checked} exemplars read in 60 s");
}

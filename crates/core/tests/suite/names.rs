//! Test 9: names, labels, values, re-registration, stale handles,
//! read-only stores, and label values that round-trip exactly.

use shmetrics_core::{
    ErrorKind, FamilyDesc, GaugeMode, Kind, Options, Series, Store, Value, OVERFLOW_LABEL,
    PID_LABEL,
};

use crate::common::{existing, expect_err, read_only, tempdir};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempdir();
    let s = Store::open(dir.path().join("s"), &Options::default()).unwrap();
    (dir, s)
}

#[test]
fn bad_metric_names_are_refused() {
    let (_d, store) = store();
    for name in ["", "a\0b"] {
        for kind in [Kind::Counter, Kind::Gauge, Kind::Histogram, Kind::Summary] {
            let e = expect_err(
                store.register(&FamilyDesc::new(name, kind)),
                ErrorKind::InvalidName,
            );
            assert!(
                e.message().contains(&format!("{name:?}")) || name.is_empty(),
                "{e}"
            );
        }
    }
    // A counter's `_total` suffix is stripped, leaving an empty name.
    expect_err(
        store.register(&FamilyDesc::new("_total", Kind::Counter)),
        ErrorKind::InvalidName,
    );
    store
        .register(&FamilyDesc::new("_total", Kind::Gauge))
        .unwrap();
    for ok in ["a", "_a", "a:b", ":a", "A9_:"] {
        store.register(&FamilyDesc::new(ok, Kind::Counter)).unwrap();
    }
    assert_eq!(store.snapshot().unwrap().families().len(), 1 + 5);
}

/// Prometheus 3 takes any UTF-8 name; the store keeps it as given.
#[test]
fn utf8_names_are_kept_as_given() {
    let (_d, store) = store();
    // Told apart by scrapers without UTF-8 too (`_a`, `a_b`, `c_d`, ...).
    let names = [
        "9a", "a-b", "c d", "é", "x.y", "e{f}", "g\"h", "i\nj", "花火",
    ];
    for (i, name) in names.iter().enumerate() {
        let label = format!("l.{i}");
        let f = store
            .register(&FamilyDesc::new(*name, Kind::Gauge).labels(&[label.as_str()]))
            .unwrap();
        store
            .gauge_set(store.series(&f, &["v"]).unwrap(), i as f64)
            .unwrap();
        // Registered again by the same name: the same family.
        store
            .register(&FamilyDesc::new(*name, Kind::Gauge).labels(&[label.as_str()]))
            .unwrap();
    }
    let snap = store.snapshot().unwrap();
    let got: Vec<(String, Vec<String>)> = snap
        .families()
        .map(|f| {
            (
                f.name().to_string(),
                f.label_names().map(String::from).collect(),
            )
        })
        .collect();
    let want: Vec<(String, Vec<String>)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), vec![format!("l.{i}")]))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn bad_and_reserved_label_names_are_refused() {
    let (_d, store) = store();
    let bad = [
        "",
        "a\0",
        "__name__",
        "__x",
        "__",
        OVERFLOW_LABEL,
        // What a scraper without UTF-8 sees as the overflow label.
        "shmetrics.overflow",
    ];
    for l in bad {
        for kind in [Kind::Counter, Kind::Gauge, Kind::Histogram, Kind::Summary] {
            expect_err(
                store.register(&FamilyDesc::new("m", kind).labels(&["ok", l])),
                ErrorKind::InvalidName,
            );
        }
    }
    let reserved = [
        FamilyDesc::new("h", Kind::Histogram).labels(&["le"]),
        FamilyDesc::new("s", Kind::Summary).labels(&["quantile"]),
        FamilyDesc::new("g", Kind::Gauge)
            .labels(&[PID_LABEL])
            .gauge_mode(GaugeMode::All),
        FamilyDesc::new("g", Kind::Gauge)
            .labels(&[PID_LABEL])
            .gauge_mode(GaugeMode::LiveAll),
        FamilyDesc::new("c", Kind::Counter).labels(&["a", "a"]),
        // One label name to scrapers without UTF-8 (`a_b`).
        FamilyDesc::new("c", Kind::Counter).labels(&["a.b", "a_b"]),
        FamilyDesc::new("c", Kind::Counter).labels(&["a.b", "a-b"]),
    ];
    for d in reserved {
        expect_err(store.register(&d), ErrorKind::InvalidName);
    }
    // Reserved only where they clash.
    store
        .register(&FamilyDesc::new("c_le", Kind::Counter).labels(&["le", "quantile"]))
        .unwrap();
    store
        .register(&FamilyDesc::new("g_pid", Kind::Gauge).labels(&[PID_LABEL]))
        .unwrap();
    // Nothing was registered by the failures.
    assert_eq!(store.snapshot().unwrap().families().len(), 2);
}

#[test]
fn wrong_label_counts_are_refused() {
    let (_d, store) = store();
    let f = store
        .register(&FamilyDesc::new("c", Kind::Counter).labels(&["a", "b"]))
        .unwrap();
    for values in [&[][..], &["x"], &["x", "y", "z"]] {
        let e = expect_err(store.series(&f, values), ErrorKind::LabelCount);
        assert!(e.message().contains('2'), "{e}");
        expect_err(store.series_or_overflow(&f, values), ErrorKind::LabelCount);
        expect_err(store.delete(&f, values), ErrorKind::LabelCount);
    }
    let none = store.register(&FamilyDesc::new("n", Kind::Gauge)).unwrap();
    expect_err(store.series(&none, &["x"]), ErrorKind::LabelCount);
    assert_eq!(
        store.stats().series_allocated,
        2,
        "only the overflow series"
    );
}

#[test]
fn nan_and_negative_values_are_refused_and_record_nothing() {
    let (_d, store) = store();
    let c = store
        .register(&FamilyDesc::new("c", Kind::Counter))
        .unwrap();
    let g = store.register(&FamilyDesc::new("g", Kind::Gauge)).unwrap();
    let h = store
        .register(&FamilyDesc::new("h", Kind::Histogram))
        .unwrap();
    let s = store
        .register(&FamilyDesc::new("s", Kind::Summary))
        .unwrap();
    let (c, g, h, s) = (
        store.series(&c, &[]).unwrap(),
        store.series(&g, &[]).unwrap(),
        store.series(&h, &[]).unwrap(),
        store.series(&s, &[]).unwrap(),
    );
    let nan = f64::NAN;
    let nans = [-f64::NAN, f64::from_bits(0x7ff0_0000_0000_0001), nan];
    for v in nans {
        expect_err(store.counter_add(c, v), ErrorKind::InvalidValue);
        expect_err(store.gauge_set(g, v), ErrorKind::InvalidValue);
        expect_err(store.gauge_add(g, v), ErrorKind::InvalidValue);
        expect_err(store.observe(h, v), ErrorKind::InvalidValue);
        expect_err(store.observe(s, v), ErrorKind::InvalidValue);
    }
    for v in [-1.0, -1e-300, f64::NEG_INFINITY, -f64::MAX, f64::INFINITY] {
        let e = expect_err(store.counter_add(c, v), ErrorKind::InvalidValue);
        assert!(!e.message().is_empty());
    }
    let e = expect_err(store.counter_add(c, f64::INFINITY), ErrorKind::InvalidValue);
    assert!(e.message().contains("infinite"), "{}", e.message());
    // Wrong types are refused too.
    expect_err(store.gauge_set(c, 1.0), ErrorKind::WrongType);
    expect_err(store.observe(c, 1.0), ErrorKind::WrongType);
    expect_err(store.counter_inc(g), ErrorKind::WrongType);
    expect_err(store.counter_add(h, 1.0), ErrorKind::WrongType);
    expect_err(store.gauge_add(s, 1.0), ErrorKind::WrongType);

    let snap = store.snapshot().unwrap();
    let value = |name: &str| {
        snap.family(name)
            .unwrap()
            .series()
            .next()
            .map(|s| s.value())
    };
    assert_eq!(value("c"), Some(Value::Counter(0.0)));
    assert_eq!(value("g"), Some(Value::Gauge(0.0)));
    match value("h") {
        Some(Value::Histogram {
            cumulative, sum, ..
        }) => {
            assert!(cumulative.iter().all(|c| *c == 0), "{cumulative:?}");
            assert_eq!(sum, 0.0);
        }
        v => panic!("{v:?}"),
    }
    assert_eq!(
        value("s"),
        Some(Value::Summary {
            count: 0,
            sum: 0.0,
            quantiles: &[]
        })
    );
    // -0.0 is not negative.
    store.counter_add(c, -0.0).unwrap();
}

#[test]
fn conflicting_re_registration_is_a_conflict() {
    let (_d, store) = store();
    let base = [
        FamilyDesc::new("c", Kind::Counter).labels(&["a", "b"]),
        FamilyDesc::new("h", Kind::Histogram)
            .labels(&["a"])
            .buckets(&[1.0, 2.0]),
        FamilyDesc::new("g", Kind::Gauge)
            .labels(&["a"])
            .gauge_mode(GaugeMode::Max),
        FamilyDesc::new("u_bytes", Kind::Gauge).unit("bytes"),
    ];
    for d in &base {
        store.register(d).unwrap();
    }
    let conflicts = [
        FamilyDesc::new("c", Kind::Counter).labels(&["a"]),
        FamilyDesc::new("c", Kind::Counter).labels(&["b", "a"]),
        FamilyDesc::new("c", Kind::Counter).labels(&["a", "b", "c"]),
        FamilyDesc::new("c", Kind::Gauge).labels(&["a", "b"]),
        FamilyDesc::new("c_total", Kind::Counter).labels(&["x", "y"]),
        FamilyDesc::new("h", Kind::Histogram)
            .labels(&["a"])
            .buckets(&[1.0, 3.0]),
        FamilyDesc::new("h", Kind::Histogram).labels(&["a"]),
        FamilyDesc::new("h", Kind::Summary).labels(&["a"]),
        FamilyDesc::new("g", Kind::Gauge)
            .labels(&["a"])
            .gauge_mode(GaugeMode::Min),
        FamilyDesc::new("u_bytes", Kind::Gauge),
    ];
    for d in &conflicts {
        let e = expect_err(store.register(d), ErrorKind::Conflict);
        assert!(
            e.to_string().contains(&format!("{:?}", base_name(&d.name))),
            "{e}"
        );
    }
    // Identical definitions, a changed help text, or the counter's
    // `_total` spelling are the same family.
    let again = [
        FamilyDesc::new("c", Kind::Counter)
            .labels(&["a", "b"])
            .help("new help"),
        FamilyDesc::new("c_total", Kind::Counter).labels(&["a", "b"]),
        FamilyDesc::new("h", Kind::Histogram)
            .labels(&["a"])
            .buckets(&[1.0, 2.0, f64::INFINITY]),
    ];
    for d in &again {
        store.register(d).unwrap();
    }
    assert_eq!(store.snapshot().unwrap().families().len(), base.len());
}

fn base_name(name: &str) -> &str {
    name.strip_suffix("_total").unwrap_or(name)
}

#[test]
fn a_second_store_instance_shares_families_and_series() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let a = Store::open(&path, &Options::default()).unwrap();
    let b = Store::open(&path, &existing()).unwrap();
    let desc = FamilyDesc::new("reqs", Kind::Counter)
        .labels(&["route"])
        .help("first help");
    let fa = a.register(&desc).unwrap();
    a.counter_inc(a.series(&fa, &["/"]).unwrap()).unwrap();
    // The second instance registers the same definition (with another
    // help text, which does not count) and gets a usable family.
    let fb = b.register(&desc.clone().help("second help")).unwrap();
    let sb = b.series(&fb, &["/"]).unwrap();
    b.counter_add(sb, 2.0).unwrap();
    b.counter_inc(b.series(&fb, &["/new"]).unwrap()).unwrap();
    for store in [&a, &b] {
        let snap = store.snapshot().unwrap();
        let fam = snap.family("reqs").unwrap();
        assert_eq!(fam.help(), "first help");
        let got: Vec<(Vec<&str>, Value)> = fam
            .series()
            .map(|s| (s.label_values().collect(), s.value()))
            .collect();
        assert_eq!(
            got,
            [
                (vec!["/"], Value::Counter(3.0)),
                (vec!["/new"], Value::Counter(1.0))
            ]
        );
    }
    // Each instance writes through a slot of its own.
    assert_eq!(a.writers().len(), 2);
    // A handle only works with the instance that made it.
    expect_err(a.counter_inc(sb), ErrorKind::StaleHandle);
    expect_err(a.series(&fb, &["/"]), ErrorKind::StaleHandle);
}

#[test]
fn handles_from_before_a_wipe_are_stale() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let a = Store::open(&path, &Options::default()).unwrap();
    let b = Store::open(&path, &existing()).unwrap();
    let desc = FamilyDesc::new("c", Kind::Counter).labels(&["k"]);
    let (fa, fb) = (a.register(&desc).unwrap(), b.register(&desc).unwrap());
    let (sa, sb) = (
        a.series(&fa, &["x"]).unwrap(),
        b.series(&fb, &["x"]).unwrap(),
    );
    a.counter_inc(sa).unwrap();
    b.counter_inc(sb).unwrap();
    // A wipe by one instance makes every instance's handles stale.
    a.wipe().unwrap();
    for (store, f, s) in [(&a, fa, sa), (&b, fb, sb)] {
        expect_err(store.counter_inc(s), ErrorKind::StaleHandle);
        expect_err(store.counter_add(s, 1.0), ErrorKind::StaleHandle);
        expect_err(store.series(&f, &["x"]), ErrorKind::StaleHandle);
        expect_err(store.delete(&f, &["x"]), ErrorKind::StaleHandle);
        expect_err(store.clear(&f), ErrorKind::StaleHandle);
    }
    assert_eq!(a.snapshot().unwrap().families().len(), 0);
    // Registering again gives fresh, working handles, starting from zero.
    let f = b.register(&desc).unwrap();
    let s = b.series(&f, &["x"]).unwrap();
    b.counter_inc(s).unwrap();
    let snap = a.snapshot().unwrap();
    let v = snap.family("c").unwrap().series().next().unwrap().value();
    assert_eq!(v, Value::Counter(1.0));
}

#[test]
fn a_read_only_store_refuses_every_write() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let rw = Store::open(&path, &Options::default()).unwrap();
    let desc = FamilyDesc::new("c", Kind::Counter).labels(&["k"]);
    let f = rw.register(&desc).unwrap();
    let s = rw.series(&f, &["x"]).unwrap();
    rw.counter_inc(s).unwrap();

    let ro = Store::open(&path, &read_only()).unwrap();
    assert!(ro.is_read_only());
    expect_err(
        ro.register(&FamilyDesc::new("new", Kind::Gauge)),
        ErrorKind::ReadOnly,
    );
    // An existing family is found (a reader may look families up), but
    // no series handle is handed out.
    let fro = ro.register(&desc).unwrap();
    expect_err(ro.series(&fro, &["x"]), ErrorKind::ReadOnly);
    expect_err(ro.series(&fro, &["new"]), ErrorKind::ReadOnly);
    expect_err(ro.series_or_overflow(&fro, &["new"]), ErrorKind::ReadOnly);
    expect_err(ro.delete(&fro, &["x"]), ErrorKind::ReadOnly);
    expect_err(ro.clear(&fro), ErrorKind::ReadOnly);
    expect_err(ro.reset(), ErrorKind::ReadOnly);
    expect_err(ro.wipe(), ErrorKind::ReadOnly);
    expect_err(ro.release_slot(), ErrorKind::ReadOnly);
    // Another instance's handle is refused without touching the mapping.
    expect_err(ro.counter_inc(s), ErrorKind::StaleHandle);

    let snap = ro.snapshot().unwrap();
    let v = snap.family("c").unwrap().series().next().unwrap().value();
    assert_eq!(v, Value::Counter(1.0));
    assert_eq!(ro.writers().len(), 1);
}

/// A handle that passes the read-only store's tag and epoch checks: what
/// a C caller could hand it through the raw handle conversion.
fn handle_for(ro_family: &shmetrics_core::Family, s: Series) -> Series {
    let mut raw = s.to_raw();
    raw[0] = ro_family.to_raw()[0]; // the store tag and epoch
    Series::from_raw(raw).unwrap()
}

#[test]
fn updates_through_a_read_only_store_are_refused() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let rw = Store::open(&path, &Options::default()).unwrap();
    let ro = Store::open(&path, &read_only()).unwrap();
    let descs = [
        FamilyDesc::new("c", Kind::Counter),
        FamilyDesc::new("g", Kind::Gauge),
        FamilyDesc::new("gs", Kind::Gauge).gauge_mode(GaugeMode::Shared),
        FamilyDesc::new("h", Kind::Histogram),
        FamilyDesc::new("s", Kind::Summary),
    ];
    for d in &descs {
        let s = rw.series(&rw.register(d).unwrap(), &[]).unwrap();
        let forged = handle_for(&ro.register(d).unwrap(), s);
        let r = match d.kind {
            Kind::Counter => vec![ro.counter_inc(forged), ro.counter_add(forged, 1.0)],
            Kind::Gauge => vec![
                ro.gauge_set(forged, 1.0),
                ro.gauge_add(forged, 1.0),
                ro.gauge_set_to_current_time(forged),
            ],
            Kind::Histogram | Kind::Summary => vec![ro.observe(forged, 1.0)],
        };
        for r in r {
            expect_err(r, ErrorKind::ReadOnly);
        }
    }
    // The read-write store's slot, claimed when it made its handles: the
    // read-only one claimed none.
    assert_eq!(ro.writers().len(), 1);
    assert_eq!(rw.writers().len(), 1);
}

#[test]
fn any_utf8_label_value_round_trips() {
    let (_d, store) = store();
    let values = [
        "",
        " ",
        "😀",
        "👩‍👩‍👧‍👦 family",
        "\"quoted\"",
        "'single'",
        "line1\nline2\r\n",
        "back\\slash\\",
        "tab\there",
        "nul\0byte",
        "ünïcödé Ωμέγα 中文 العربية",
        "{a=\"b\"},",
        "\u{feff}bom",
        "\u{10ffff}",
    ];
    let long = "x".repeat(10_000);
    let help = "Help with \"quotes\", \\backslashes\\,\nnewlines and 😀.";
    let f = store
        .register(
            &FamilyDesc::new("utf8", Kind::Counter)
                .labels(&["a", "b", "c"])
                .help(help),
        )
        .unwrap();
    let mut sets: Vec<[&str; 3]> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        sets.push([v, values[(i + 1) % values.len()], ""]);
        sets.push(["", "", v]);
    }
    sets.push([&long, "", &long]);
    sets.push(["a", "b", "c"]);
    sets.push(["a", "bc", ""]); // not confused with "a","b","c"
    sets.push(["ab", "c", ""]);
    sets.dedup();
    for (i, set) in sets.iter().enumerate() {
        let s = store.series(&f, set).unwrap();
        store.counter_add(s, (i + 1) as f64).unwrap();
        // Looking up again finds the same series.
        assert_eq!(store.series(&f, set).unwrap(), s);
    }
    let snap = store.snapshot().unwrap();
    let fam = snap.family("utf8").unwrap();
    assert_eq!(fam.help(), help);
    let got: Vec<(Vec<String>, Value)> = fam
        .series()
        .map(|s| (s.label_values().map(String::from).collect(), s.value()))
        .collect();
    let want: Vec<(Vec<String>, Value)> = sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            (
                set.iter().map(|v| v.to_string()).collect(),
                Value::Counter((i + 1) as f64),
            )
        })
        .collect();
    assert_eq!(got, want);
    // And through a second, read-only instance.
    let ro = Store::open(store.path(), &read_only()).unwrap();
    let snap = ro.snapshot().unwrap();
    let n = snap.family("utf8").unwrap().series().len();
    assert_eq!(n, sets.len());
}

#[test]
fn registering_again_finds_the_family_among_many_and_after_a_wipe() {
    let (_d, store) = store();
    let desc = |i: usize| FamilyDesc::new(format!("m_{i}"), Kind::Counter).labels(&["k"]);
    let first: Vec<_> = (0..300)
        .map(|i| store.register(&desc(i)).unwrap())
        .collect();
    for (i, f) in first.iter().enumerate() {
        assert_eq!(store.register(&desc(i)).unwrap(), *f, "family {i}");
    }
    // A conflict is found through the remembered position too.
    expect_err(
        store.register(&FamilyDesc::new("m_7", Kind::Gauge)),
        ErrorKind::Conflict,
    );
    // After a wipe the remembered positions are stale: m_299 now sits
    // where m_0 was, and m_0 is gone until registered again.
    store.wipe().unwrap();
    let moved = store.register(&desc(299)).unwrap();
    store
        .counter_inc(store.series(&moved, &["x"]).unwrap())
        .unwrap();
    let again = store.register(&desc(299)).unwrap();
    assert_eq!(again, moved);
    let zero = store.register(&desc(0)).unwrap();
    assert_ne!(zero, moved);
    let snap = store.snapshot().unwrap();
    let names: Vec<&str> = snap.families().map(|f| f.name()).collect();
    assert_eq!(names, ["m_299", "m_0"]);
}

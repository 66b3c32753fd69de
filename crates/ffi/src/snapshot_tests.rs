//! Tests of the snapshot walk: families are set up and updated through
//! the store's Rust API, then read back only through the C functions.

use std::ptr::{null, null_mut};

use shmetrics_core::{FamilyDesc, GaugeMode, Kind, Store};

use super::*;
use crate::error::last_error_string;
use crate::error::shmetrics_result::*;
use crate::{shmetrics_store_close, shmetrics_store_open};

/// An open store in a temporary directory, closed on drop.
struct Open {
    _dir: tempfile::TempDir,
    ptr: *mut shmetrics_store,
}

impl Drop for Open {
    fn drop(&mut self) {
        shmetrics_store_close(self.ptr);
    }
}

impl Open {
    fn new() -> Open {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let p = path.to_str().unwrap();
        let mut ptr = null_mut();
        let r = shmetrics_store_open(p.as_ptr().cast(), p.len(), null(), &mut ptr);
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        Open { _dir: dir, ptr }
    }

    fn store(&self) -> &Store {
        &ptr::object(self.ptr, "store").unwrap().store
    }

    fn take(&self) -> Walk {
        let mut snap = null_mut();
        let r = shmetrics_snapshot_take(self.ptr, &mut snap);
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        assert!(!snap.is_null());
        Walk(snap)
    }
}

/// A taken snapshot, freed on drop.
struct Walk(*mut shmetrics_snapshot);

impl Drop for Walk {
    fn drop(&mut self) {
        shmetrics_snapshot_free(self.0);
    }
}

impl Walk {
    fn family(&self, i: usize) -> shmetrics_family_info {
        let mut out = std::mem::MaybeUninit::uninit();
        let r = shmetrics_snapshot_family(self.0, i, out.as_mut_ptr());
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        ptr::read(out.as_ptr(), "out").unwrap()
    }

    fn series(&self, f: usize, i: usize) -> shmetrics_series_info {
        let mut out = std::mem::MaybeUninit::uninit();
        let r = shmetrics_snapshot_series(self.0, f, i, out.as_mut_ptr());
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        ptr::read(out.as_ptr(), "out").unwrap()
    }
}

fn text(s: shmetrics_str) -> String {
    s.to_str("s").unwrap().to_owned()
}

fn texts(p: *const shmetrics_str, n: usize) -> Vec<String> {
    ptr::slice(p, n, "strs")
        .unwrap()
        .iter()
        .map(|s| text(*s))
        .collect()
}

#[test]
fn walks_every_type_with_labels_and_values() {
    let st = Open::new();
    let store = st.store();
    let reqs = FamilyDesc::new("reqs_total", Kind::Counter)
        .help("Requests.")
        .labels(&["route", "code"]);
    let reqs = store.register(&reqs).unwrap();
    store
        .counter_add(store.series(&reqs, &["/a", "200"]).unwrap(), 3.0)
        .unwrap();
    store
        .counter_inc(store.series(&reqs, &["/b", "500"]).unwrap())
        .unwrap();
    let temp = store
        .register(&FamilyDesc::new("temp", Kind::Gauge).gauge_mode(GaugeMode::All))
        .unwrap();
    store
        .gauge_set(store.series(&temp, &[]).unwrap(), -2.5)
        .unwrap();
    let lat = FamilyDesc::new("lat", Kind::Histogram).buckets(&[0.1, 1.0]);
    let lat = store.register(&lat).unwrap();
    for v in [0.05, 0.5, 7.0] {
        store.observe(store.series(&lat, &[]).unwrap(), v).unwrap();
    }
    let sizes = FamilyDesc::new("sizes", Kind::Summary).quantiles(&[0.5, 0.9]);
    let sizes = store.register(&sizes).unwrap();
    for v in 1..=100 {
        store
            .observe(store.series(&sizes, &[]).unwrap(), f64::from(v))
            .unwrap();
    }

    let w = st.take();
    assert_eq!(shmetrics_snapshot_family_count(w.0), 4);

    let f = w.family(0);
    assert_eq!(text(f.name), "reqs");
    assert_eq!(text(f.help), "Requests.");
    assert_eq!((f.kind, f.name_as_given), (Kind::Counter as u32, 0));
    assert_eq!(texts(f.label_names, f.label_count), ["route", "code"]);
    assert_eq!((f.bucket_count, f.series_count), (0, 2));
    let s = w.series(0, 0);
    assert_eq!(texts(s.label_values, 2), ["/a", "200"]);
    assert_eq!(
        (s.value, s.count, text(s.extra_label_name)),
        (3.0, 0, String::new())
    );
    assert_eq!(w.series(0, 1).value, 1.0);

    let f = w.family(1);
    assert_eq!(
        (f.kind, f.gauge_mode),
        (Kind::Gauge as u32, GaugeMode::All as u32)
    );
    let s = w.series(1, 0);
    assert_eq!(s.value, -2.5);
    assert_eq!(text(s.extra_label_name), "pid");
    assert_eq!(text(s.extra_label_value), std::process::id().to_string());

    let f = w.family(2);
    assert_eq!(
        ptr::slice(f.buckets, f.bucket_count, "b").unwrap(),
        [0.1, 1.0]
    );
    let s = w.series(2, 0);
    assert_eq!(ptr::slice(s.cumulative, 3, "c").unwrap(), [1, 2, 3]);
    assert_eq!((s.count, s.value), (3, 7.55));

    let s = w.series(3, 0);
    assert_eq!((s.count, s.value), (100, 5050.0));
    let q = ptr::slice(s.quantiles, s.quantile_count, "q").unwrap();
    assert_eq!(q.len(), 2);
    for (got, want) in q.iter().zip([(0.5, 50.0), (0.9, 90.0)]) {
        assert_eq!(got.quantile, want.0);
        assert!((got.value / want.1 - 1.0).abs() <= 0.0099, "{got:?}");
    }
}

#[test]
fn counters_say_whether_they_are_named_as_given() {
    let st = Open::new();
    let store = st.store();
    for name in ["jobs", "requests_total", "hits"] {
        let d = FamilyDesc::new(name, Kind::Counter);
        let d = if name == "hits" { d } else { d.name_as_given() };
        let c = store.register(&d).unwrap();
        store.counter_inc(store.series(&c, &[]).unwrap()).unwrap();
    }
    let w = st.take();
    let got: Vec<_> = (0..3)
        .map(|i| (text(w.family(i).name), w.family(i).name_as_given))
        .collect();
    // `requests_total` keeps its `_total` through the name, not the flag.
    assert_eq!(
        got,
        [
            ("jobs".to_owned(), 1),
            ("requests".to_owned(), 0),
            ("hits".to_owned(), 0)
        ]
    );
}

#[test]
fn a_snapshot_does_not_change_with_the_store() {
    let st = Open::new();
    let store = st.store();
    let c = store
        .register(&FamilyDesc::new("jobs", Kind::Counter).labels(&["queue"]))
        .unwrap();
    let s = store.series(&c, &["mail"]).unwrap();
    store.counter_inc(s).unwrap();
    let w = st.take();
    store.counter_add(s, 10.0).unwrap();
    store.wipe().unwrap();
    assert_eq!(w.series(0, 0).value, 1.0);
    assert_eq!(texts(w.series(0, 0).label_values, 1), ["mail"]);
    assert_eq!(shmetrics_snapshot_family_count(st.take().0), 0);
}

#[test]
fn overflow_series_carry_their_label() {
    let st = Open::new();
    let store = st.store();
    let c = FamilyDesc::new("logins", Kind::Counter)
        .labels(&["user"])
        .max_series(1);
    let c = store.register(&c).unwrap();
    store
        .counter_inc(store.series(&c, &["alice"]).unwrap())
        .unwrap();
    let e = store.series(&c, &["bob"]).unwrap_err();
    store.counter_inc(e.overflow_series().unwrap()).unwrap();
    let w = st.take();
    assert_eq!(w.family(0).series_count, 2);
    let overflow = (0..2)
        .map(|i| w.series(0, i))
        .find(|s| s.extra_label_name.len > 0)
        .unwrap();
    assert_eq!(text(overflow.extra_label_name), "shmetrics_overflow");
    assert_eq!(text(overflow.extra_label_value), "true");
    assert_eq!(texts(overflow.label_values, 1), [""]);
}

#[test]
fn bad_arguments_are_refused() {
    let st = Open::new();
    let w = st.take();
    let mut f = std::mem::MaybeUninit::uninit();
    let mut s = std::mem::MaybeUninit::uninit();
    assert_eq!(
        shmetrics_snapshot_family(w.0, 0, f.as_mut_ptr()),
        SHMETRICS_INVALID_ARGUMENT
    );
    assert!(last_error_string().contains("family 0 is out of range: the snapshot has 0"));
    assert_eq!(
        shmetrics_snapshot_series(w.0, 0, 0, s.as_mut_ptr()),
        SHMETRICS_INVALID_ARGUMENT
    );
    assert_eq!(
        shmetrics_snapshot_family(null(), 0, f.as_mut_ptr()),
        SHMETRICS_NULL_PARAMETER
    );
    assert_eq!(
        shmetrics_snapshot_family(w.0, 0, null_mut()),
        SHMETRICS_NULL_PARAMETER
    );
    assert_eq!(
        shmetrics_snapshot_take(null(), &mut null_mut()),
        SHMETRICS_NULL_PARAMETER
    );
    assert_eq!(shmetrics_snapshot_family_count(null()), 0);
    shmetrics_snapshot_free(null_mut());
}

//! Deletion is seen by every process: a handle made before a delete, a
//! clear or a wipe, by another `Store` value (each has its own writer
//! slot and its own tag, as another process would), fails as stale at its
//! next update; looking the series up again gives a new series from zero,
//! so an update retried that way is never lost.

use std::sync::{Arc, Barrier};

use shmetrics_core::{ErrorKind, Family, FamilyDesc, Kind, Options, Series, Store, Value};

use crate::common::tempdir;

/// Two opens of one store file: the writer's and the deleter's.
fn two_opens() -> (tempfile::TempDir, Store, Store) {
    let dir = tempdir();
    let path = dir.path().join("s");
    let a = Store::open(&path, &Options::default()).unwrap();
    let b = Store::open(&path, &Options::default()).unwrap();
    (dir, a, b)
}

/// The value of the series of `family` with `labels`, if it is exported.
fn value(store: &Store, family: &str, labels: &[&str]) -> Option<f64> {
    let snap = store.snapshot().unwrap();
    let f = snap.family(family)?;
    let s = f
        .series()
        .find(|s| s.labels().map(|(_, v)| v).eq(labels.iter().copied()))?;
    match s.value() {
        Value::Counter(v) | Value::Gauge(v) => Some(v),
        Value::Histogram { cumulative, .. } => cumulative.last().map(|c| *c as f64),
        other => panic!("unexpected value {other:?}"),
    }
}

/// Increments through `handle` as the bindings do: on a stale handle, looks
/// the series up again (registering the family again after a wipe) and
/// retries once.
fn inc_retrying(
    store: &Store,
    desc: &FamilyDesc,
    fam: &mut Family,
    h: &mut Series,
    labels: &[&str],
) {
    match store.counter_inc(*h) {
        Ok(()) => return,
        Err(e) => assert_eq!(e.kind(), ErrorKind::StaleHandle, "{e}"),
    }
    *h = match store.series(fam, labels) {
        Ok(s) => s,
        Err(e) if e.kind() == ErrorKind::StaleHandle => {
            *fam = store.register(desc).unwrap();
            store.series(fam, labels).unwrap()
        }
        Err(e) => panic!("{e}"),
    };
    store.counter_inc(*h).unwrap();
}

/// A counter `name` with label `k` in a new store, the deleter's open of
/// it, and a barrier for the deleter and one writer.
fn race(
    name: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    FamilyDesc,
    Store,
    Family,
    Arc<Barrier>,
) {
    let dir = tempdir();
    let path = dir.path().join("s");
    let desc = FamilyDesc::new(name, Kind::Counter).labels(&["k"]);
    let deleter = Store::open(&path, &Options::default()).unwrap();
    let fd = deleter.register(&desc).unwrap();
    (dir, path, desc, deleter, fd, Arc::new(Barrier::new(2)))
}

/// A writer thread with its own open of the store at `path`: registers
/// `desc`, gets series `a`, and runs `body` with them.
fn writer(
    path: &std::path::Path,
    desc: &FamilyDesc,
    body: impl FnOnce(&Store, &mut Family, &mut Series) + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let (path, desc) = (path.to_path_buf(), desc.clone());
    std::thread::spawn(move || {
        let store = Store::open(&path, &Options::default()).unwrap();
        let mut fam = store.register(&desc).unwrap();
        let mut h = store.series(&fam, &["a"]).unwrap();
        body(&store, &mut fam, &mut h);
    })
}

#[test]
fn a_handle_from_before_a_delete_in_another_store_is_stale() {
    let (_d, a, b) = two_opens();
    let desc = FamilyDesc::new("requests", Kind::Counter).labels(&["route"]);
    let fa = a.register(&desc).unwrap();
    let ha = a.series(&fa, &["/x"]).unwrap();
    a.counter_add(ha, 5.0).unwrap();
    let fb = b.register(&desc).unwrap();
    assert!(b.delete(&fb, &["/x"]).unwrap());
    assert_eq!(value(&b, "requests", &["/x"]), None);

    let e = a.counter_inc(ha).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StaleHandle, "{e}");
    // The refused update went nowhere, and a lookup gives a new series
    // from zero.
    assert_eq!(value(&a, "requests", &["/x"]), None);
    let again = a.series(&fa, &["/x"]).unwrap();
    assert_ne!(again, ha);
    a.counter_inc(again).unwrap();
    assert_eq!(value(&b, "requests", &["/x"]), Some(1.0));
    // Every update kind refuses a deleted series' handle.
    let gauge = FamilyDesc::new("temp", Kind::Gauge).labels(&["room"]);
    let hist = FamilyDesc::new("latency", Kind::Histogram).labels(&["route"]);
    let hg = a.series(&a.register(&gauge).unwrap(), &["attic"]).unwrap();
    let hh = a.series(&a.register(&hist).unwrap(), &["/x"]).unwrap();
    assert!(b.delete(&b.register(&gauge).unwrap(), &["attic"]).unwrap());
    assert!(b.delete(&b.register(&hist).unwrap(), &["/x"]).unwrap());
    for e in [
        a.gauge_set(hg, 1.0),
        a.gauge_add(hg, 1.0),
        a.observe(hh, 0.1),
    ] {
        assert_eq!(e.unwrap_err().kind(), ErrorKind::StaleHandle);
    }
}

#[test]
fn a_handle_from_before_a_clear_or_a_wipe_in_another_store_is_stale() {
    let (_d, a, b) = two_opens();
    let desc = FamilyDesc::new("jobs", Kind::Counter).labels(&["queue"]);
    let mut fa = a.register(&desc).unwrap();
    let mut h1 = a.series(&fa, &["q1"]).unwrap();
    let mut h2 = a.series(&fa, &["q2"]).unwrap();
    a.counter_add(h1, 3.0).unwrap();
    a.counter_add(h2, 4.0).unwrap();
    let fb = b.register(&desc).unwrap();
    assert_eq!(b.clear(&fb).unwrap(), 2);
    for h in [h1, h2] {
        assert_eq!(a.counter_inc(h).unwrap_err().kind(), ErrorKind::StaleHandle);
    }
    inc_retrying(&a, &desc, &mut fa, &mut h1, &["q1"]);
    inc_retrying(&a, &desc, &mut fa, &mut h2, &["q2"]);
    assert_eq!(value(&b, "jobs", &["q1"]), Some(1.0));
    assert_eq!(value(&b, "jobs", &["q2"]), Some(1.0));

    b.wipe().unwrap();
    assert_eq!(
        a.counter_inc(h1).unwrap_err().kind(),
        ErrorKind::StaleHandle
    );
    inc_retrying(&a, &desc, &mut fa, &mut h1, &["q1"]);
    assert_eq!(value(&b, "jobs", &["q1"]), Some(1.0));
    assert_eq!(value(&b, "jobs", &["q2"]), None);
}

/// A writer thread with its own `Store` keeps incrementing through cached
/// handles (retrying on a stale one) while another deletes, clears and
/// wipes between its rounds: each round's increments are all in the
/// series the round ends with.
#[test]
fn a_writer_with_cached_handles_loses_nothing_across_deletions() {
    const ROUNDS: usize = 12;
    const PER_ROUND: u64 = 2_000;
    let (_dir, path, desc, deleter, fd, barrier) = race("hits");
    let writer = {
        let (desc, barrier) = (desc.clone(), barrier.clone());
        writer(&path, &desc.clone(), move |store, fam, h| {
            for _ in 0..ROUNDS {
                for _ in 0..PER_ROUND {
                    inc_retrying(store, &desc, fam, h, &["a"]);
                }
                barrier.wait(); // round done
                barrier.wait(); // deleted
            }
        })
    };
    let mut fd = fd;
    for round in 0..ROUNDS {
        barrier.wait();
        assert_eq!(
            value(&deleter, "hits", &["a"]),
            Some(PER_ROUND as f64),
            "round {round}"
        );
        match round % 3 {
            0 => assert!(deleter.delete(&fd, &["a"]).unwrap()),
            1 => assert_eq!(deleter.clear(&fd).unwrap(), 1),
            _ => {
                deleter.wipe().unwrap();
                fd = deleter.register(&desc).unwrap();
            }
        }
        barrier.wait();
    }
    writer.join().unwrap();
}

/// Deletions racing a writer: an update racing a delete may be deleted
/// with the series, but once the deleter is done, every update the writer
/// makes through its cached (stale) handle lands in the live series.
#[test]
fn updates_after_racing_deletions_all_land() {
    let (_dir, path, desc, deleter, fd, barrier) = race("racing");
    let writer = {
        let (desc, barrier) = (desc.clone(), barrier.clone());
        writer(&path, &desc.clone(), move |store, fam, h| {
            barrier.wait(); // start racing
            for _ in 0..200_000 {
                inc_retrying(store, &desc, fam, h, &["a"]);
            }
            barrier.wait(); // racing over
            barrier.wait(); // deletions over
            for _ in 0..1_000 {
                inc_retrying(store, &desc, fam, h, &["a"]);
            }
        })
    };
    barrier.wait();
    let mut deletions = 0;
    for _ in 0..200 {
        if deleter.delete(&fd, &["a"]).unwrap() {
            deletions += 1;
        }
        std::thread::yield_now();
    }
    barrier.wait();
    // The last deletion comes after the writer's last racing update.
    deleter.clear(&fd).unwrap();
    barrier.wait();
    writer.join().unwrap();
    assert!(deletions > 0);
    assert_eq!(value(&deleter, "racing", &["a"]), Some(1_000.0));
}

/// The state word check reads one record by the handle's id, with bounds
/// proved at open and one comparison with the record count: a handle
/// forged (as through the C ABI) with an id at or past the last record
/// fails as stale, and the real series is untouched.
#[test]
fn a_forged_id_past_the_records_is_stale() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &crate::common::small_options()).unwrap();
    let family = store
        .register(&FamilyDesc::new("forged", Kind::Counter).labels(&["k"]))
        .unwrap();
    let real = store.series(&family, &["v"]).unwrap();
    store.counter_inc(real).unwrap();
    let max_series = crate::common::small_options().max_series as u64;
    for id in [max_series, max_series + 1, u32::MAX as u64] {
        let mut raw = real.to_raw();
        raw[1] = (raw[1] & !0xffff_ffff) | id;
        let forged = Series::from_raw(raw).unwrap();
        assert_ne!(forged, real, "the id is in raw[1]'s low half");
        let e = store.counter_inc(forged).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::StaleHandle, "id {id}: {e}");
    }
    assert_eq!(value(&store, "forged", &["v"]), Some(1.0));
}

//! Series TTL: idle series disappear, their space is reused, and no update
//! through an old handle ever lands in the series that reused it.
//!
//! These tests let real time pass (the TTL is a duration), but assert
//! only on what the store shows, never on how long anything took.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread::sleep;
use std::time::Duration;

use shmetrics_core::{
    ErrorKind, FamilyDesc, Kind, NativeOpts, Options, Snapshot, Store, Value, MIN_TTL,
};

use crate::common::{fixed, tempdir, RawStore, SLOT_PID, SLOT_PINS, SLOT_REC};

const TTL: Duration = Duration::from_millis(150);
/// Comfortably more than the TTL (the coarse clock ticks every few ms).
const IDLE: Duration = Duration::from_millis(320);

fn small() -> Options {
    Options {
        max_families: 8,
        max_series: 24,
        label_bytes: 16384,
        max_writers: 4,
        ..Options::default()
    }
}

fn values(snap: &Snapshot, family: &str) -> Vec<(String, f64)> {
    let Some(f) = snap.family(family) else {
        return Vec::new();
    };
    let mut v: Vec<(String, f64)> = f
        .series()
        .filter(|s| !s.is_overflow())
        .map(|s| {
            let n = match s.value() {
                Value::Counter(v) | Value::Gauge(v) => v,
                Value::Histogram { cumulative, .. } => *cumulative.last().unwrap() as f64,
                Value::Summary { count, .. } => count as f64,
            };
            (s.label_values().collect::<Vec<_>>().join(","), n)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn counter(store: &Store, name: &str) -> shmetrics_core::Family {
    store
        .register(&FamilyDesc::new(name, Kind::Counter).labels(&["k"]).ttl(TTL))
        .unwrap()
}

#[test]
fn ttl_options_are_checked_and_part_of_the_definition() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small()).unwrap();
    let short = FamilyDesc::new("a", Kind::Counter).ttl(Duration::from_millis(10));
    assert_eq!(
        store.register(&short).unwrap_err().kind(),
        ErrorKind::InvalidOptions
    );
    let long = FamilyDesc::new("a", Kind::Counter).ttl(Duration::from_secs(365 * 86400));
    assert_eq!(
        store.register(&long).unwrap_err().kind(),
        ErrorKind::InvalidOptions
    );
    store
        .register(&FamilyDesc::new("a", Kind::Counter).ttl(MIN_TTL))
        .unwrap();
    // The same name with another TTL, or none, is another definition.
    for other in [
        FamilyDesc::new("a", Kind::Counter).ttl(Duration::from_secs(1)),
        FamilyDesc::new("a", Kind::Counter),
    ] {
        assert_eq!(
            store.register(&other).unwrap_err().kind(),
            ErrorKind::Conflict
        );
    }
}

#[test]
fn an_idle_series_disappears_and_an_updated_one_stays() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small()).unwrap();
    let f = counter(&store, "requests");
    let busy = store.series(&f, &["busy"]).unwrap();
    let idle = store.series(&f, &["idle"]).unwrap();
    store.counter_add(busy, 2.0).unwrap();
    store.counter_add(idle, 5.0).unwrap();
    assert_eq!(
        values(&store.snapshot().unwrap(), "requests"),
        [("busy".into(), 2.0), ("idle".into(), 5.0)]
    );
    // `busy` is updated more often than the TTL; `idle` never again.
    for _ in 0..8 {
        sleep(TTL / 3);
        store.counter_inc(busy).unwrap();
    }
    // No writer swept: a reader leaves the idle series out by itself.
    assert_eq!(store.stats().series_expired_total, 0);
    assert_eq!(
        values(&store.snapshot().unwrap(), "requests"),
        [("busy".into(), 10.0)]
    );
    // The handle of the idle series works until a writer retires it...
    assert_eq!(store.expire_idle().unwrap(), 1);
    assert_eq!(store.stats().series_expired_total, 1);
    // ...and then says so: the series must be looked up again, and
    // starts from zero, as after a delete.
    let err = store.counter_inc(idle).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StaleHandle);
    let again = store.series(&f, &["idle"]).unwrap();
    store.counter_inc(again).unwrap();
    assert_eq!(
        values(&store.snapshot().unwrap(), "requests"),
        [("busy".into(), 10.0), ("idle".into(), 1.0)]
    );
}

/// An update of a series idle for the TTL, before any writer swept its
/// family, expires it (and the family's other idle series) rather than
/// continue it: the update fails as stale, and the series looked up
/// again starts from zero. Families without labels, or that get no new
/// label set, are no exception.
#[test]
fn updating_an_idle_series_expires_it_first() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small()).unwrap();
    let plain = store
        .register(&FamilyDesc::new("plain", Kind::Counter).ttl(TTL))
        .unwrap();
    let gauge = store
        .register(
            &FamilyDesc::new("temp", Kind::Gauge)
                .labels(&["room"])
                .ttl(TTL),
        )
        .unwrap();
    let p = store.series(&plain, &[]).unwrap();
    let kitchen = store.series(&gauge, &["kitchen"]).unwrap();
    let hall = store.series(&gauge, &["hall"]).unwrap();
    store.counter_add(p, 5.0).unwrap();
    store.gauge_set(kitchen, 21.5).unwrap();
    store.gauge_set(hall, 19.0).unwrap();
    sleep(IDLE);
    assert_eq!(store.stats().series_expired_total, 0);
    for (what, r) in [
        ("counter", store.counter_inc(p)),
        ("gauge", store.gauge_add(kitchen, 1.0)),
    ] {
        assert_eq!(r.unwrap_err().kind(), ErrorKind::StaleHandle, "{what}");
    }
    // The gauge's update swept its family: hall expired with kitchen.
    assert_eq!(store.stats().series_expired_total, 3);
    assert_eq!(
        store.gauge_set(hall, 1.0).unwrap_err().kind(),
        ErrorKind::StaleHandle
    );
    let p = store.series(&plain, &[]).unwrap();
    store.counter_inc(p).unwrap();
    let kitchen = store.series(&gauge, &["kitchen"]).unwrap();
    store.gauge_add(kitchen, 1.0).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(values(&snap, "plain"), [(String::new(), 1.0)]);
    assert_eq!(values(&snap, "temp"), [("kitchen".into(), 1.0)]);
    // Updated within the TTL, a series stays.
    sleep(TTL / 3);
    store.counter_inc(p).unwrap();
    assert_eq!(
        values(&store.snapshot().unwrap(), "plain"),
        [(String::new(), 2.0)]
    );
}

#[test]
fn creating_a_series_counts_as_an_update() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small()).unwrap();
    let f = counter(&store, "c");
    store.series(&f, &["new"]).unwrap();
    assert_eq!(
        values(&store.snapshot().unwrap(), "c"),
        [("new".into(), 0.0)]
    );
    sleep(IDLE);
    assert_eq!(values(&store.snapshot().unwrap(), "c"), []);
}

/// Label sets that come and go never fill the store: the series of the
/// past TTL fit, and each new one takes an expired one's place.
#[test]
fn churning_label_sets_reuse_the_space_of_expired_ones() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small()).unwrap();
    let f = counter(&store, "users");
    let h = store
        .register(
            &FamilyDesc::new("latency", Kind::Histogram)
                .labels(&["k"])
                .buckets(&[0.1, 1.0])
                .exemplars(true)
                .ttl(TTL),
        )
        .unwrap();
    let s = store
        .register(
            &FamilyDesc::new("rpc", Kind::Summary)
                .labels(&["k"])
                .quantiles(&[0.5, 0.9])
                .ttl(TTL),
        )
        .unwrap();
    let n = store
        .register(
            &FamilyDesc::new("native", Kind::Histogram)
                .labels(&["k"])
                .native(NativeOpts::default())
                .ttl(TTL),
        )
        .unwrap();
    let mut kept = Snapshot::default();
    let mut rounds_allocated = Vec::new();
    // 10 rounds of 4 new label sets per family: 160 series over the run,
    // in a store with room for 24 records (4 of them overflow series).
    for round in 0..10 {
        for i in 0..4 {
            // Labels of varying length: some fit in a reused record's
            // bytes, some need new ones.
            let k = format!("user-{round}-{}", "x".repeat(i * 7));
            let c = store.series(&f, &[&k]).unwrap();
            store.counter_add(c, (round * 10 + i) as f64).unwrap();
            let hs = store.series(&h, &[&k]).unwrap();
            store
                .observe_with_exemplar(hs, 0.5, &[("trace_id", &k)])
                .unwrap();
            let ss = store.series(&s, &[&k]).unwrap();
            store.observe(ss, (round + 1) as f64).unwrap();
            let ns = store.series(&n, &[&k]).unwrap();
            store.observe(ns, -((round + 1) as f64)).unwrap();
        }
        // What this round wrote, and only that, is visible: every reused
        // record starts from zero.
        store.snapshot_into(&mut kept).unwrap();
        let fresh = store.snapshot().unwrap();
        let want: Vec<(String, f64)> = (0..4)
            .map(|i| {
                (
                    format!("user-{round}-{}", "x".repeat(i * 7)),
                    (round * 10 + i) as f64,
                )
            })
            .collect();
        assert_eq!(values(&fresh, "users"), want, "round {round}");
        assert_eq!(values(&kept, "users"), want, "round {round}, kept snapshot");
        for name in ["latency", "rpc", "native"] {
            let got = values(&fresh, name);
            assert_eq!(got.len(), 4, "round {round} {name}: {got:?}");
            assert!(
                got.iter().all(|(_, count)| *count == 1.0),
                "{name}: {got:?}"
            );
            assert_eq!(values(&kept, name), got, "round {round} {name}, kept");
        }
        for series in fresh.family("latency").unwrap().series() {
            let k: Vec<&str> = series.label_values().collect();
            let ex: Vec<_> = series.exemplars().flatten().collect();
            assert_eq!(ex.len(), 1, "one exemplar per series: {ex:?}");
            assert_eq!(ex[0].labels().collect::<Vec<_>>(), [("trace_id", k[0])]);
        }
        for series in fresh.family("rpc").unwrap().series() {
            let Value::Summary { quantiles, sum, .. } = series.value() else {
                panic!("not a summary")
            };
            assert_eq!(sum, (round + 1) as f64);
            for q in quantiles {
                assert!((q.value - (round + 1) as f64).abs() <= 0.01 * (round + 1) as f64);
            }
        }
        for series in fresh.family("native").unwrap().series() {
            let Value::Histogram { native, .. } = series.value() else {
                panic!("not a histogram")
            };
            let native = native.unwrap();
            assert_eq!(native.zero_count, 0);
            let counts: u64 = native.negative.counts.iter().sum::<u64>()
                + native.positive.counts.iter().sum::<u64>();
            assert_eq!(counts, 1, "one negative observation, no leftovers");
        }
        rounds_allocated.push(store.stats().series_allocated);
        sleep(IDLE);
    }
    assert_eq!(store.stats().overflows_total, 0);
    // After the first round's 16 series and 4 overflow series, every new
    // series took an expired one's record.
    assert!(
        rounds_allocated.iter().all(|&n| n == rounds_allocated[0]),
        "records allocated per round: {rounds_allocated:?}"
    );
    assert!(store.stats().series_expired_total >= 9 * 16);
}

/// A full family looks for idle series at once rather than overflow.
#[test]
fn a_full_family_expires_at_once_instead_of_overflowing() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small()).unwrap();
    let f = store
        .register(
            &FamilyDesc::new("c", Kind::Counter)
                .labels(&["k"])
                .max_series(3)
                .ttl(TTL),
        )
        .unwrap();
    for k in ["a", "b", "c"] {
        store.counter_inc(store.series(&f, &[k]).unwrap()).unwrap();
    }
    // Full, and nothing idle: the fourth overflows.
    let err = store.series(&f, &["d"]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Overflow);
    // a is kept busy; b and c go idle.
    let keep = store.series(&f, &["a"]).unwrap();
    for _ in 0..5 {
        sleep(TTL / 3);
        store.counter_inc(keep).unwrap();
    }
    // d and e take b's and c's places.
    for k in ["d", "e"] {
        store.counter_inc(store.series(&f, &[k]).unwrap()).unwrap();
    }
    assert_eq!(
        values(&store.snapshot().unwrap(), "c"),
        [("a".into(), 6.0), ("d".into(), 1.0), ("e".into(), 1.0)]
    );
    assert_eq!(store.stats().overflows_total, 1);
}

#[test]
fn a_deleted_series_of_a_ttl_family_gives_its_space_back() {
    let dir = tempdir();
    let store = Store::open(dir.path().join("s"), &small()).unwrap();
    let f = counter(&store, "c");
    let a = store.series(&f, &["a"]).unwrap();
    store.counter_add(a, 7.0).unwrap();
    let before = store.stats().series_allocated;
    assert!(store.delete(&f, &["a"]).unwrap());
    assert_eq!(
        store.counter_inc(a).unwrap_err().kind(),
        ErrorKind::StaleHandle
    );
    assert_eq!(values(&store.snapshot().unwrap(), "c"), []);
    // A sweep (due at once: forced by expire_idle) zeroes it for reuse.
    store.expire_idle().unwrap();
    let b = store.series(&f, &["b"]).unwrap();
    store.counter_inc(b).unwrap();
    assert_eq!(store.stats().series_allocated, before);
    assert_eq!(values(&store.snapshot().unwrap(), "c"), [("b".into(), 1.0)]);
}

/// Processes see the expiry too: a handle made in another `Store` (as
/// in another process) fails once its series expired, and its update
/// never lands in the series that took the record.
#[test]
fn another_stores_handle_never_writes_into_a_reused_record() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let one = Store::open(&path, &small()).unwrap();
    let two = Store::open(&path, &small()).unwrap();
    let f1 = counter(&one, "c");
    let f2 = counter(&two, "c");
    let old = two.series(&f2, &["old"]).unwrap();
    two.counter_inc(old).unwrap();
    sleep(IDLE);
    one.expire_idle().unwrap();
    let new = one.series(&f1, &["new"]).unwrap();
    one.counter_add(new, 5.0).unwrap();
    assert_eq!(
        two.counter_inc(old).unwrap_err().kind(),
        ErrorKind::StaleHandle
    );
    assert_eq!(values(&one.snapshot().unwrap(), "c"), [("new".into(), 5.0)]);
    // The raw form (the C ABI's) keeps the generation too.
    let raw = shmetrics_core::Series::from_raw(old.to_raw()).unwrap();
    assert_eq!(
        two.counter_inc(raw).unwrap_err().kind(),
        ErrorKind::StaleHandle
    );
    let raw_new = shmetrics_core::Series::from_raw(new.to_raw()).unwrap();
    one.counter_inc(raw_new).unwrap();
    assert_eq!(values(&one.snapshot().unwrap(), "c"), [("new".into(), 6.0)]);
}

/// A thread starts firing updates through the handle of an idle series
/// just as another thread expires it and gives its record to a new
/// series. Every update either fails (stale) or lands in the old series
/// before its cells are zeroed; the new series holds exactly its own
/// updates. (Since an update of an idle series expires it first, the
/// racer's first update usually expires the series itself; the pins'
/// narrow race, an update that passed its check as the sweep retires
/// the series, is covered by the hand-set pin test below.)
#[test]
fn updates_racing_expiry_never_land_in_the_new_series() {
    let (mut raced, mut overflowed) = (0, 0);
    for round in 0..24 {
        let dir = tempdir();
        let store = Arc::new(Store::open(dir.path().join("s"), &small()).unwrap());
        let f = store
            .register(
                &FamilyDesc::new("c", Kind::Counter)
                    .labels(&["k"])
                    .max_series(1)
                    .ttl(MIN_TTL),
            )
            .unwrap();
        let old = store.series(&f, &["old"]).unwrap();
        sleep(Duration::from_millis(230));
        let go = Arc::new(Barrier::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        let landed = Arc::new(AtomicU64::new(0));
        let racer = {
            let (store, go, stop, landed) =
                (store.clone(), go.clone(), stop.clone(), landed.clone());
            std::thread::spawn(move || {
                go.wait();
                // Start a little later each round, so that some rounds
                // start in the middle of the expiry.
                let start = std::time::Instant::now();
                while start.elapsed() < Duration::from_micros(round * 3) {
                    std::hint::spin_loop();
                }
                while !stop.load(SeqCst) {
                    match store.counter_inc(old) {
                        Ok(()) => landed.fetch_add(1, SeqCst),
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::StaleHandle);
                            return true;
                        }
                    };
                }
                false
            })
        };
        go.wait();
        if round % 2 == 1 {
            std::thread::yield_now();
        }
        // The family holds one series: "new" fits only if "old" expired
        // (and takes its record). If the racer's first update came before
        // the sweep read the time, "old" is not idle and "new" overflows:
        // that round raced nothing.
        let new = store.series(&f, &["new"]);
        stop.store(true, SeqCst);
        let went_stale = racer.join().unwrap();
        let new = match new {
            Ok(new) => new,
            Err(e) if e.kind() == ErrorKind::Overflow => {
                overflowed += 1;
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        raced += usize::from(landed.load(SeqCst) > 0 && went_stale);
        store.counter_add(new, 3.0).unwrap();
        assert_eq!(
            values(&store.snapshot().unwrap(), "c"),
            [("new".into(), 3.0)],
            "round {round}: {} updates of the old series landed",
            landed.load(SeqCst)
        );
    }
    eprintln!(
        "rounds where updates landed just before expiry: {raced}; where the racer came first: \
         {overflowed}"
    );
}

/// A writer stopped in the middle of an update holds its slot's pin: a
/// retired series' cells are not reused until the pin is released, or its
/// owner is gone. (The pin is set by hand here; a real one lasts as long
/// as one update.)
#[test]
fn a_held_pin_holds_reuse_back_until_released_or_its_owner_dies() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let store = Store::open(&path, &small()).unwrap();
    let f = counter(&store, "c");
    store
        .counter_inc(store.series(&f, &["a"]).unwrap())
        .unwrap(); // claims slot 1
    let raw = RawStore::open(&path);
    let slot1 = raw.u64(fixed::OFF_SLOTS) + SLOT_REC;
    raw.set_u64(slot1 + SLOT_PINS, 1);
    sleep(IDLE);
    assert_eq!(store.expire_idle().unwrap(), 1); // retired, not reusable
    let allocated = store.stats().series_allocated;
    store
        .counter_inc(store.series(&f, &["b"]).unwrap())
        .unwrap();
    assert_eq!(
        store.stats().series_allocated,
        allocated + 1,
        "b took a new record"
    );
    // Released: the next sweep recycles "a", and "c" takes its record.
    raw.set_u64(slot1 + SLOT_PINS, 0);
    store.expire_idle().unwrap();
    store
        .counter_inc(store.series(&f, &["c"]).unwrap())
        .unwrap();
    assert_eq!(
        store.stats().series_allocated,
        allocated + 1,
        "c reused a's record"
    );
    // Held again, by an owner that is gone (a pid that does not run): void.
    raw.set_u64(slot1 + SLOT_PINS, 1);
    raw.set_u32(slot1 + SLOT_PID, i32::MAX as u32 - 7);
    sleep(IDLE);
    assert_eq!(store.expire_idle().unwrap(), 2);
    store.series(&f, &["d"]).unwrap();
    store.series(&f, &["e"]).unwrap();
    assert_eq!(
        store.stats().series_allocated,
        allocated + 1,
        "d and e reused records"
    );
    assert_eq!(
        values(&store.snapshot().unwrap(), "c"),
        [("d".into(), 0.0), ("e".into(), 0.0)]
    );
}

/// A kept snapshot refreshed while a writer churns series (each round's
/// records reused by the next round's series) never shows a series with
/// another's labels or values, and ends up equal to a fresh snapshot.
#[test]
fn a_kept_snapshot_follows_reuse_while_it_happens() {
    let dir = tempdir();
    let store = Arc::new(Store::open(dir.path().join("s"), &small()).unwrap());
    let f = store
        .register(
            &FamilyDesc::new("c", Kind::Counter)
                .labels(&["k"])
                .ttl(MIN_TTL),
        )
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || {
            let mut kept = Snapshot::default();
            let mut refreshes = 0u64;
            while !done.load(SeqCst) {
                store.snapshot_into(&mut kept).unwrap();
                let got = values(&kept, "c");
                for (k, v) in &got {
                    // Every series gets one increment of 1 + its index.
                    let i: f64 = k.rsplit('-').next().unwrap().parse().unwrap();
                    assert!(*v == 0.0 || *v == i + 1.0, "{k} = {v}");
                }
                let mut labels: Vec<&String> = got.iter().map(|(k, _)| k).collect();
                labels.dedup();
                assert_eq!(labels.len(), got.len(), "a label set twice: {got:?}");
                refreshes += 1;
            }
            (kept, refreshes)
        })
    };
    for round in 0..8 {
        for i in 0..6 {
            let s = store.series(&f, &[&format!("{round}-{i}")]).unwrap();
            store.counter_add(s, (i + 1) as f64).unwrap();
        }
        sleep(Duration::from_millis(130));
    }
    done.store(true, SeqCst);
    let (mut kept, refreshes) = reader.join().unwrap();
    store.snapshot_into(&mut kept).unwrap();
    assert_eq!(values(&kept, "c"), values(&store.snapshot().unwrap(), "c"));
    assert!(refreshes > 0);
    assert!(store.stats().series_expired_total >= 6 * 6);
}

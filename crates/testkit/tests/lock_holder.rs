//! Test 5: the store lock survives the SIGKILL of its holder. Workers
//! create series (and a family) in a tight loop, each creation under the
//! lock, and are killed again and again. Afterwards another process can
//! still create series, every acknowledged series exists exactly once, and
//! looking it up finds it rather than creating a duplicate.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use shmetrics_core::{Options, Value};
use shmetrics_testkit::check::check_snapshot;
use shmetrics_testkit::proto::{self, word};
use shmetrics_testkit::rng::Rng;
use shmetrics_testkit::AckFile;

use crate::common::{create_store, long_mode, tempdir, Worker, PATIENCE};

const LANES: usize = 2;

#[test]
fn store_lock_survives_sigkill_of_its_holder() {
    let dir = tempdir();
    let path = dir.path().join("store");
    // Series each incarnation creates at most (fewer in the long mode, to
    // stay within the store's capacity over 10,000 incarnations).
    let max_per_incarnation: u64 = if long_mode() { 120 } else { 400 };
    let opts = Options {
        max_series: if long_mode() { 1 << 21 } else { 1 << 19 },
        max_families: 1 << 14,
        label_bytes: 64 << 20,
        ..Options::default()
    };
    let store = create_store(&path, &opts);
    let (min_kills, max_kills): (u64, u64) = if long_mode() {
        (10_000, 12_000)
    } else {
        (200, 3_000)
    };
    let ack_path = |id: u64| dir.path().join(format!("ack-{id}"));
    let mut next_id = 0u64;
    let mut spawn = || {
        let id = next_id;
        next_id += 1;
        let args = [format!("id={id}"), format!("max={max_per_incarnation}")];
        (
            id,
            Worker::spawn("create", &path, &ack_path(id), false, &args),
        )
    };
    let mut lanes: Vec<(u64, Worker)> = (0..LANES).map(|_| spawn()).collect();
    let mut rng = Rng::from_entropy();
    let mut kills = 0u64;
    loop {
        let recovered = store.stats().lock_recoveries_total;
        if kills >= max_kills || (kills >= min_kills && recovered > 0) {
            break;
        }
        let lane = (kills as usize) % LANES;
        let w = &mut lanes[lane].1;
        if rng.below(10) == 0 {
            // Now and then, kill early: while opening, registering or
            // claiming a slot.
            std::thread::sleep(Duration::from_micros(rng.below(2000)));
        } else {
            // Mostly, kill in the middle of the creation loop.
            let target = rng.range(1, max_per_incarnation - 50);
            let deadline = Instant::now() + PATIENCE;
            while w.ack.get(word::CREATED) < target && w.ack.get(word::DONE) == 0 {
                w.assert_running();
                assert!(
                    Instant::now() < deadline,
                    "worker {} made no progress for {PATIENCE:?} (stuck on the lock?); stderr:\n{}",
                    w.pid(),
                    w.log_text()
                );
                std::hint::spin_loop();
            }
        }
        w.kill_expecting_running();
        kills += 1;
        lanes[lane] = spawn();
    }
    for (_, w) in &mut lanes {
        w.kill_expecting_running();
        kills += 1;
    }
    let incarnations = next_id;

    // Another process can still take the lock and create.
    let mut last = Worker::spawn(
        "create_once",
        &path,
        &dir.path().join("ack-final"),
        false,
        &[],
    );
    last.wait_success();

    let stats = store.stats();
    eprintln!(
        "lock holder: {kills} kills over {incarnations} incarnations, {} lock recoveries, \
         {} series allocated",
        stats.lock_recoveries_total, stats.series_allocated
    );
    assert!(
        stats.lock_recoveries_total > 0,
        "no kill landed while the lock was held in {kills} kills; the test proved nothing"
    );

    // What was acknowledged.
    let mut acked: Vec<String> = Vec::new();
    let mut families: Vec<String> = Vec::new();
    for id in 0..incarnations {
        let ack = AckFile::open(ack_path(id)).unwrap();
        acked.extend((0..ack.get(word::CREATED)).map(|n| proto::create_label(id, n)));
        if ack.get(word::FAMILY_DONE) != 0 {
            families.push(proto::create_family(id).name);
        }
    }
    assert!(
        acked.len() as u64 > kills,
        "too little progress: {} series acked",
        acked.len()
    );

    let counts = |snap: &shmetrics_core::Snapshot| -> HashMap<String, f64> {
        let fam = snap.family(proto::CREATE_COUNTER).expect("counter family");
        let mut m = HashMap::new();
        for s in fam.series() {
            let v = s.label_values().next().unwrap().to_string();
            let Value::Counter(c) = s.value() else {
                panic!("not a counter")
            };
            assert!(
                m.insert(v.clone(), c).is_none(),
                "label set {v:?} appears twice"
            );
        }
        m
    };
    let snap = store.snapshot().unwrap();
    check_snapshot(&snap).unwrap(); // no family or label set twice
    let before = counts(&snap);
    for l in &acked {
        assert_eq!(
            before.get(l),
            Some(&1.0),
            "acknowledged series {l:?} (incremented once)"
        );
    }
    assert_eq!(
        before.get("final"),
        Some(&1.0),
        "the series created after the storm"
    );
    let names: HashSet<&str> = snap.families().map(|f| f.name()).collect();
    for f in &families {
        assert!(
            names.contains(f.as_str()),
            "acknowledged family {f} is missing"
        );
    }
    assert!(names.contains(proto::create_family(u64::MAX).name.as_str()));

    // Lookups find the existing series: nothing new is allocated, and an
    // increment through the handle lands on the same series.
    let f = store.register(&proto::create_counter()).unwrap();
    let allocated = store.stats().series_allocated;
    let handles: Vec<_> = acked
        .iter()
        .map(|l| store.series(&f, &[l]).unwrap())
        .collect();
    assert_eq!(
        store.stats().series_allocated,
        allocated,
        "looking up existing label sets allocated new series"
    );
    for h in handles {
        store.counter_inc(h).unwrap();
    }
    let snap = store.snapshot().unwrap();
    check_snapshot(&snap).unwrap();
    let after = counts(&snap);
    for l in &acked {
        assert_eq!(
            after.get(l),
            Some(&2.0),
            "series {l:?} after one more increment"
        );
    }
    assert_eq!(after.len(), before.len());
}

//! No SIGBUS (issue 23, item 2): a store truncated while mapped, and a
//! store created on a full tmpfs. Each gives a clear error, and the
//! process (this test process) lives on.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use shmetrics_core::{faults_absorbed, ErrorKind, FamilyDesc, Kind, Options, Store, Value};
use shmetrics_testkit::Tmpfs;

use crate::common::{expect_err, small_options, tempdir};

/// Tests that count absorbed faults (a process-wide count) run one at a
/// time.
static FAULT_COUNT: Mutex<()> = Mutex::new(());

fn count_faults() -> MutexGuard<'static, ()> {
    FAULT_COUNT.lock().unwrap_or_else(|e| e.into_inner())
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn creating_a_store_on_a_full_tmpfs_fails_cleanly() {
    let fs = Tmpfs::mount("1m");
    fs.fill();
    let path = fs.path().join("store");
    let e = expect_err(Store::open(&path, &small_options()), ErrorKind::Io);
    assert!(e.message().contains("file system full"), "{e}");
    assert_eq!(names_in(fs.path()), ["filler"], "a temporary file was left");
}

#[test]
fn a_store_whose_tables_exceed_the_tmpfs_fails_cleanly_and_a_default_one_fits() {
    let fs = Tmpfs::mount("1m");
    let path = fs.path().join("store");
    // 2^20 series: a series index of 8 MiB, reserved at creation.
    let big = Options {
        max_series: 1 << 20,
        ..Options::default()
    };
    let e = expect_err(Store::open(&path, &big), ErrorKind::Io);
    assert!(e.message().contains("file system full"), "{e}");
    assert!(names_in(fs.path()).is_empty(), "a temporary file was left");
    // A default store (a 512 KiB index; 20 GB of address space) fits, and
    // takes space as it is used.
    let store = Store::open(&path, &Options::default()).unwrap();
    let f = store
        .register(&FamilyDesc::new("jobs", Kind::Counter).labels(&["k"]))
        .unwrap();
    for i in 0..100 {
        store
            .counter_inc(store.series(&f, &[&i.to_string()]).unwrap())
            .unwrap();
    }
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .family("jobs")
            .unwrap()
            .series()
            .len(),
        100
    );
}

fn counter_values(store: &Store, name: &str) -> Vec<(String, f64)> {
    let snap = store.snapshot().unwrap();
    let mut v: Vec<(String, f64)> = snap
        .family(name)
        .unwrap()
        .series()
        .map(|s| {
            let label = s.label_values().next().unwrap_or_default().to_string();
            match s.value() {
                Value::Counter(x) => (label, x),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn a_tmpfs_that_fills_while_writing_refuses_what_does_not_fit_and_keeps_the_rest() {
    let _one = count_faults();
    let faults = faults_absorbed();
    let fs = Tmpfs::mount("1m");
    let path = fs.path().join("store");
    let opts = Options {
        max_families: 4096,
        max_series: 8192,
        label_bytes: 1 << 20,
        max_writers: 8,
        sketch_cells_per_writer: 1 << 20,
        ..Options::default()
    };
    let store = Store::open(&path, &opts).unwrap();
    let jobs = store
        .register(&FamilyDesc::new("jobs", Kind::Counter).labels(&["k"]))
        .unwrap();
    let lat = store
        .register(
            &FamilyDesc::new("lat", Kind::Summary)
                .labels(&["k"])
                .quantiles(&[0.5]),
        )
        .unwrap();
    let mut want: Vec<(String, f64)> = Vec::new();
    for i in 0..20 {
        let k = format!("{i:05}");
        store
            .counter_add(store.series(&jobs, &[&k]).unwrap(), i as f64 + 1.0)
            .unwrap();
        want.push((k, i as f64 + 1.0));
    }
    store
        .observe(store.series(&lat, &["a"]).unwrap(), 2.0)
        .unwrap();
    let filler = fs.fill();

    // New series take what is reserved already, then go to the overflow
    // series with an error that names the file system.
    let mut i = 20;
    let overflow = loop {
        let k = format!("{i:05}");
        match store.series(&jobs, &[&k]) {
            Ok(s) => {
                store.counter_add(s, 1.0).unwrap();
                want.push((k, 1.0));
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Overflow, "{e}");
                assert!(e.message().contains("file system"), "{e}");
                assert!(e.message().contains("No space left"), "{e}");
                break e.overflow_series().unwrap();
            }
        }
        i += 1;
        assert!(i < 8000, "the file system never ran out");
    };
    store.counter_add(overflow, 5.0).unwrap();
    want.insert(0, (String::new(), 5.0));
    // A summary series' sketch takes its pages as observations first
    // land in them (33 KiB a set, 512 cells a page): a new series (or
    // the overflow series, if its record found no room) takes the pages
    // already granted, and an observation that needs a page the file
    // system refuses gets an error and is recorded nowhere.
    let b = match store.series(&lat, &["b"]) {
        Ok(s) => s,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Overflow, "{e}");
            e.overflow_series().unwrap()
        }
    };
    let (mut recorded, mut refused) = (0u64, Vec::new());
    for d in -9..9 {
        match store.observe(b, 10f64.powi(d)) {
            Ok(()) => recorded += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::StoreFull, "{e}");
                assert!(e.message().contains("quantile sketch"), "{e}");
                assert!(e.message().contains("No space left"), "{e}");
                refused.push(d);
            }
        }
    }
    assert!(!refused.is_empty(), "every page of the sketch was granted");
    // Registering: refused once its records or bytes need more space.
    let e = (0..4096)
        .find_map(|n| {
            store
                .register(&FamilyDesc::new(format!("more_{n}"), Kind::Gauge))
                .err()
        })
        .expect("the file system never ran out");
    assert_eq!(e.kind(), ErrorKind::StoreFull, "{e}");
    assert!(e.message().contains("file system"), "{e}");
    // Another writer (a new slot, whose cells cannot be reserved) writes
    // through the shared slot.
    let other = Store::open(&path, &Options::default()).unwrap();
    let f = other
        .register(&FamilyDesc::new("jobs", Kind::Counter).labels(&["k"]))
        .unwrap();
    other
        .counter_add(other.series(&f, &["00000"]).unwrap(), 10.0)
        .unwrap();
    want[1].1 += 10.0;

    // Nothing stored was lost; a reader reads it all.
    assert_eq!(counter_values(&store, "jobs"), want);
    let reader = Store::open(&path, &crate::common::read_only()).unwrap();
    assert_eq!(counter_values(&reader, "jobs"), want);
    let snap = reader.snapshot().unwrap();
    let counts: Vec<u64> = snap
        .family("lat")
        .unwrap()
        .series()
        .map(|s| match s.value() {
            Value::Summary { count, .. } => count,
            v => panic!("{v:?}"),
        })
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), 1 + recorded, "{counts:?}");
    // No page was touched that the file system had not granted.
    assert_eq!(faults_absorbed(), faults);

    // Space freed: new series fit again, and the refused observations
    // find their pages.
    std::fs::remove_file(filler).unwrap();
    let s = store.series(&jobs, &["later"]).unwrap();
    store.counter_inc(s).unwrap();
    for d in &refused {
        store.observe(b, 10f64.powi(*d)).unwrap();
    }
    let snap = reader.snapshot().unwrap();
    let count: u64 = snap
        .family("lat")
        .unwrap()
        .series()
        .map(|s| match s.value() {
            Value::Summary { count, .. } => count,
            v => panic!("{v:?}"),
        })
        .sum();
    assert_eq!(count, 1 + 18);
    assert_eq!(faults_absorbed(), faults);
}

#[test]
fn summary_sketches_take_only_the_pages_their_observations_touch() {
    // 100 summary series with quantiles, each observed in 4 writers: with
    // their sketches reserved whole (165 KiB a series a writer) they
    // would need 64 MiB; touched page by page they fit in 4 MiB.
    let _one = count_faults();
    let faults = faults_absorbed();
    let fs = Tmpfs::mount("4m");
    let path = fs.path().join("store");
    let opts = Options {
        max_families: 8,
        max_series: 256,
        label_bytes: 1 << 16,
        max_writers: 8,
        cells_per_writer: 1 << 14,
        sketch_cells_per_writer: 1 << 22,
        ..Options::default()
    };
    let desc = FamilyDesc::new("lat", Kind::Summary)
        .labels(&["k"])
        .quantiles(&[0.5, 0.99]);
    let store = Store::open(&path, &opts).unwrap();
    store.register(&desc).unwrap();
    let writers: Vec<Store> = (0..4).map(|_| Store::open(&path, &opts).unwrap()).collect();
    for w in &writers {
        let f = w.register(&desc).unwrap();
        for i in 0..100 {
            let s = w.series(&f, &[&i.to_string()]).unwrap();
            w.observe(s, 0.25 + f64::from(i) / 1000.0).unwrap();
            w.observe(s, 0.5).unwrap();
        }
    }
    let snap = store.snapshot().unwrap();
    let mut n = 0;
    for s in snap.family("lat").unwrap().series() {
        match s.value() {
            Value::Summary {
                count, quantiles, ..
            } => {
                assert_eq!(count, 8);
                assert!(
                    quantiles.iter().all(|q| q.value > 0.2 && q.value < 0.6),
                    "{quantiles:?}"
                );
            }
            v => panic!("{v:?}"),
        }
        n += 1;
    }
    assert_eq!(n, 100);
    assert_eq!(faults_absorbed(), faults);
}

#[test]
fn a_store_truncated_while_mapped_gives_errors_not_sigbus() {
    let _one = count_faults();
    let dir = tempdir();
    let path = dir.path().join("s");
    let store = Store::open(&path, &small_options()).unwrap();
    let f = store
        .register(&FamilyDesc::new("jobs", Kind::Counter))
        .unwrap();
    let s = store.series(&f, &[]).unwrap();
    store.counter_inc(s).unwrap();
    let reader = Store::open(&path, &crate::common::read_only()).unwrap();
    assert_eq!(reader.snapshot().unwrap().families().count(), 1);

    // Another process cuts the file to its header page.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(4096).unwrap();

    for st in [&store, &reader] {
        let e = expect_err(st.snapshot(), ErrorKind::Truncated);
        assert!(e.message().contains("cut to 4096 bytes"), "{e}");
        expect_err(st.check_file(), ErrorKind::Truncated);
    }
    expect_err(
        store.register(&FamilyDesc::new("more", Kind::Counter)),
        ErrorKind::Truncated,
    );
    // The update path makes no system call: its access to the lost page
    // faults, and the fault is absorbed instead of killing the process.
    // The page reads as zeros, so the series record's state word is not
    // the handle's: the update fails as stale, as after a deletion.
    let before = faults_absorbed();
    expect_err(store.counter_inc(s), ErrorKind::StaleHandle);
    assert!(faults_absorbed() > before);
    drop(store);
    drop(reader);
    // A new opener is told at once.
    expect_err(
        Store::open(&path, &Options::default()),
        ErrorKind::Truncated,
    );
}

/// Sets a file's modification time `secs` seconds back.
fn age(path: &Path, secs: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn creation_removes_temporaries_that_dead_creators_left() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let stale = dir.path().join(".store.4242.1795000000000000000.tmp");
    let fresh = dir.path().join(".store.4243.1795000000000000001.tmp");
    // Another store's, whose name starts with this one's.
    let other = dir.path().join(".store.x.4244.1795000000000000002.tmp");
    for f in [&stale, &fresh, &other] {
        std::fs::write(f, b"half-built").unwrap();
    }
    age(&stale, 11 * 60);
    age(&other, 11 * 60);
    age(&fresh, 60);
    drop(Store::open(&path, &small_options()).unwrap());
    let left = names_in(dir.path());
    assert_eq!(
        left,
        [
            ".store.4243.1795000000000000001.tmp",
            ".store.x.4244.1795000000000000002.tmp",
            "store"
        ]
    );
}

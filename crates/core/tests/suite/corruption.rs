//! Test 8 (deterministic part): files that are not valid stores are
//! refused with the right error, naming the file, and are left untouched;
//! and a valid store with any one word of its mutable regions overwritten
//! with an extreme value never makes a reader or a writer panic.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

use shmetrics_core::{ErrorKind, Options, Snapshot, Store, LAYOUT_VERSION};

use crate::common::{
    self, existing, fixed, populated_families, populated_labels, populated_store, read_only,
    tempdir, RawStore,
};

/// Opens `path` in every way (create, existing, read-only) and checks that
/// each fails with `kind`, names the file, and leaves it byte for byte as
/// it was.
#[track_caller]
fn refused(path: &Path, kind: ErrorKind) {
    let before = std::fs::read(path).unwrap();
    let meta_before = std::fs::metadata(path).unwrap();
    for (how, opts) in [
        ("create", Options::default()),
        ("existing", existing()),
        ("read-only", read_only()),
    ] {
        let e = match Store::open(path, &opts) {
            Ok(_) => panic!(
                "{}: opening ({how}) succeeded, expected {kind:?}",
                path.display()
            ),
            Err(e) => e,
        };
        assert_eq!(e.kind(), kind, "{how}: {e}");
        assert_eq!(e.path(), Some(path), "{how}: {e:?}");
        let shown = e.to_string();
        assert!(
            shown.contains(&*path.to_string_lossy()),
            "{how}: the message does not name the file: {shown}"
        );
        assert!(!e.message().is_empty());
    }
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "the file was modified"
    );
    let meta_after = std::fs::metadata(path).unwrap();
    assert_eq!(meta_after.len(), meta_before.len());
    assert_eq!(
        meta_after.modified().unwrap(),
        meta_before.modified().unwrap(),
        "the file was written to"
    );
    // No temporary file left behind either.
    let dir = path.parent().unwrap();
    let names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
}

#[test]
fn flipped_header_bytes_are_corrupt() {
    let dir = tempdir();
    let path = dir.path().join("store");
    populated_store(&path);
    let raw = RawStore::open(&path);
    // Every byte of the checksummed part after the magic and the version,
    // checksum included: a flipped bit is caught by the checksum.
    for off in (fixed::FILE_SIZE..fixed::SIZE).step_by(7) {
        let b = raw.bytes(off, 1)[0];
        raw.write(off, &[b ^ 0x10]);
        refused(&path, ErrorKind::Corrupt);
        raw.write(off, &[b]);
    }
    Store::open(&path, &read_only()).expect("restored");
}

#[test]
fn a_consistent_checksum_over_inconsistent_fields_is_corrupt() {
    let dir = tempdir();
    let path = dir.path().join("store");
    populated_store(&path);
    let raw = RawStore::open(&path);
    let pristine = raw.bytes(0, fixed::SIZE as usize);
    let patch = |off: u64, v: &[u8]| {
        raw.write(0, &pristine);
        raw.write(off, v);
        let head = raw.bytes(0, fixed::CHECKSUM as usize);
        let sum = xxhash_rust::xxh3::xxh3_64(&head);
        raw.set_u64(fixed::CHECKSUM, sum);
    };
    let cases: Vec<(u64, Vec<u8>)> = vec![
        (fixed::MAX_SERIES, 65u32.to_ne_bytes().to_vec()),
        (fixed::MAX_SERIES, 0u32.to_ne_bytes().to_vec()),
        (fixed::MAX_SLOTS, u32::MAX.to_ne_bytes().to_vec()),
        (fixed::INDEX_SIZE, 3u32.to_ne_bytes().to_vec()),
        (fixed::ARENA_BYTES, u64::MAX.to_ne_bytes().to_vec()),
        (fixed::CELLS_PER_SLOT, (1u64 << 40).to_ne_bytes().to_vec()),
        (fixed::OFF_ARENA, 8u64.to_ne_bytes().to_vec()),
        (fixed::OFF_CELLS, u64::MAX.to_ne_bytes().to_vec()),
        (fixed::FILE_SIZE, 4096u64.to_ne_bytes().to_vec()),
        (fixed::SLOT_STRIDE, 8u64.to_ne_bytes().to_vec()),
    ];
    for (off, v) in cases {
        patch(off, &v);
        refused(&path, ErrorKind::Corrupt);
    }
    raw.write(0, &pristine);
    Store::open(&path, &read_only()).expect("restored");
}

#[test]
fn truncated_files_are_truncated() {
    let dir = tempdir();
    let path = dir.path().join("store");
    populated_store(&path);
    let full = std::fs::metadata(&path).unwrap().len();
    for len in [
        full - 1,
        full / 2,
        4096,
        fixed::SIZE,
        fixed::SIZE - 1,
        100,
        9,
    ] {
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len).unwrap();
        drop(f);
        refused(&path, ErrorKind::Truncated);
    }
}

#[test]
fn foreign_files_are_foreign() {
    let dir = tempdir();
    let cases: [(&str, &[u8]); 6] = [
        ("empty", b""),
        ("text", b"hello, this is not a metrics store\n"),
        ("short", b"SHME"),
        ("almost", b"SHMETRIY and more bytes after the almost-magic"),
        (
            "elf",
            b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00",
        ),
        ("zeros", &[0u8; 8192]),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        refused(&path, ErrorKind::ForeignFile);
    }
    // Random text of every length up to two pages.
    let mut x = 0x1234_5678_9abc_def0u64;
    for len in (1..8192).step_by(331) {
        let text: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b' ' + (x % 95) as u8
            })
            .collect();
        let path = dir.path().join(format!("random-{len}"));
        std::fs::write(&path, text).unwrap();
        refused(&path, ErrorKind::ForeignFile);
    }
}

#[test]
fn another_layout_version_is_a_version_mismatch() {
    let dir = tempdir();
    let path = dir.path().join("store");
    populated_store(&path);
    let raw = RawStore::open(&path);
    // The version is checked before the checksum: the stale checksum does
    // not matter.
    for v in [0, LAYOUT_VERSION + 1, u32::MAX] {
        raw.set_u32(fixed::LAYOUT_VERSION, v);
        refused(&path, ErrorKind::VersionMismatch);
        let e = Store::open(&path, &read_only()).unwrap_err();
        assert!(
            e.message().contains(&v.to_string())
                && e.message().contains(&LAYOUT_VERSION.to_string()),
            "the message should name both versions: {e}"
        );
    }
    raw.set_u32(fixed::LAYOUT_VERSION, LAYOUT_VERSION);
    Store::open(&path, &read_only()).expect("restored");
}

#[test]
fn a_directory_or_missing_file_is_an_io_error() {
    let dir = tempdir();
    let e = Store::open(dir.path(), &existing()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let missing = dir.path().join("missing");
    for opts in [existing(), read_only()] {
        let e = Store::open(&missing, &opts).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(e.to_string().contains("missing"), "{e}");
    }
    assert!(
        !missing.exists(),
        "a read-only or create=false open created the file"
    );
}

// ----- one word at a time -------------------------------------------------

thread_local! {
    /// Set while a poke is being tried: panics are recorded, not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that records the message and location of
/// panics on threads that set QUIET, and defers to the default hook
/// otherwise.
pub fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
            } else {
                default(info);
            }
        }));
    });
}

/// Runs `f`, returning the panic (message and location) if it panicked.
pub fn panic_of(f: impl FnOnce()) -> Option<String> {
    install_quiet_hook();
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.err().map(|payload| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(unknown panic)".into())
    })
}

/// Everything a reader does: open read-only, snapshot (fresh and
/// refreshed), stats, writers. Errors are fine.
pub fn read_everything(path: &Path) {
    let Ok(store) = Store::open(path, &read_only()) else {
        return;
    };
    let _ = store.stats();
    let _ = store.writers();
    if let Ok(snap) = store.snapshot() {
        walk(&snap);
    }
    let mut kept = Snapshot::default();
    for _ in 0..2 {
        if store.snapshot_into(&mut kept).is_ok() {
            walk(&kept);
        }
    }
}

/// Reads every part of a snapshot.
pub fn walk(snap: &Snapshot) {
    let _ = snap.stats();
    for f in snap.families() {
        let _ = (
            f.name(),
            f.help(),
            f.unit(),
            f.kind(),
            f.buckets(),
            f.overflows(),
        );
        let _ = f.label_names().count();
        for s in f.series() {
            let _ = s.labels().count();
            let _ = s.value();
            for e in s.exemplars().flatten() {
                let _ = (e.labels().count(), e.value(), e.timestamp_unix_ns());
            }
        }
    }
}

/// What a writer does: register the known families, look up known and new
/// label sets, and update through the handles. Errors are fine.
pub fn write_everything(path: &Path) {
    let Ok(store) = Store::open(path, &existing()) else {
        return;
    };
    for desc in populated_families() {
        let Ok(f) = store.register(&desc) else {
            continue;
        };
        let mut labels = populated_labels(desc.label_names.len());
        labels.push(vec!["new".to_string(); desc.label_names.len()]);
        for l in labels {
            let l: Vec<&str> = l.iter().map(String::as_str).collect();
            let s = match store.series(&f, &l) {
                Ok(s) => s,
                Err(e) => match e.overflow_series() {
                    Some(s) => s,
                    None => continue,
                },
            };
            let _ = store.counter_inc(s);
            let _ = store.counter_add(s, 0.5);
            let _ = store.gauge_set(s, 1.0);
            let _ = store.gauge_add(s, 1.0);
            let _ = store.observe(s, 0.7);
            let _ = store.counter_add_with_exemplar(s, 1.0, &[("trace_id", "t")]);
            let _ = store.observe_with_exemplar(s, 0.7, &[("trace_id", "t")]);
        }
    }
    if let Ok(snap) = store.snapshot() {
        walk(&snap);
    }
}

/// Values each word is set to.
const EXTREMES: [u64; 7] = [
    0,
    1,
    0xFFFF_FFFF,
    0x8000_0000,
    u64::MAX,
    1 << 63,
    0x7FFF_FFFF_FFFF_FFFF,
];

#[test]
fn any_word_set_to_an_extreme_never_panics() {
    let dir = tempdir();
    let pristine_path = dir.path().join("pristine");
    populated_store(&pristine_path);
    let pristine = std::fs::read(&pristine_path).unwrap();
    let regions = RawStore::open(&pristine_path).mutable_regions();
    let path = dir.path().join("store");
    let mut failures: Vec<String> = Vec::new();
    let mut tried = 0;
    for r in &regions {
        for off in (r.start..r.start + r.len).step_by(8) {
            for v in EXTREMES {
                std::fs::write(&path, &pristine).unwrap();
                let raw = common::RawStore {
                    file: std::fs::OpenOptions::new()
                        .write(true)
                        .read(true)
                        .open(&path)
                        .unwrap(),
                    path: path.clone(),
                };
                raw.set_u64(off, v);
                tried += 1;
                for (what, f) in [
                    ("read", read_everything as fn(&Path)),
                    ("write", write_everything),
                ] {
                    if let Some(p) = panic_of(|| f(&path)) {
                        failures.push(format!(
                            "{what} after setting the word at {off} ({} + {}) to {v:#x}: {p}",
                            r.name,
                            off - r.start
                        ));
                    }
                }
            }
        }
    }
    assert!(tried > 1000, "only {tried} pokes");
    // Group by panic location, which is what the fix needs.
    let mut by_site: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for f in &failures {
        let (case, site) = f.split_once(": panicked at ").unwrap_or((f, "?"));
        by_site
            .entry(site.replace('\n', " "))
            .or_default()
            .push(case);
    }
    let report: Vec<String> = by_site
        .iter()
        .map(|(site, cases)| format!("- {site}\n  {} case(s), e.g. {}", cases.len(), cases[0]))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {tried} single-word corruptions made the store panic:\n{}",
        failures.len(),
        report.join("\n")
    );
}

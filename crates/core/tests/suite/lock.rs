//! No wait on the store lock is without end (issue 23, item 4). One
//! flipped bit in the lock word (byte 512 of the file, the first byte of
//! the mutex: its futex word, which holds the holder's thread id) once
//! made every writer hang at registration. A word naming a thread that is
//! not a live process of the store is repaired; a lock held by a live one
//! gives `Busy` after a bounded time.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use shmetrics_core::{ErrorKind, FamilyDesc, Kind, LockState, Options, Store};

use crate::common::{expect_err, tempdir};

/// The lock word's offset in the file (see `src/shm/layout.rs`).
const LOCK_WORD: u64 = 512;

/// Writes the futex word and glibc's `__owner` (8 bytes further), as a
/// thread that took the lock leaves them.
fn poke_word(path: &Path, word: u32) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&word.to_ne_bytes(), LOCK_WORD).unwrap();
    f.write_all_at(&word.to_ne_bytes(), LOCK_WORD + 8).unwrap();
}

fn flip_bit(path: &Path, bit: u32) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, LOCK_WORD).unwrap();
    b[0] ^= 1 << bit;
    f.write_all_at(&b, LOCK_WORD).unwrap();
}

#[test]
fn a_flipped_bit_in_the_lock_word_is_repaired_in_bounded_time() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let store = Store::open(&path, &Options::default()).unwrap();
    for bit in 0..8 {
        assert_eq!(store.lock_state(), LockState::Free);
        flip_bit(&path, bit);
        let stale = store.lock_state();
        assert!(
            matches!(stale, LockState::Stale { tid } if tid == 1 << bit),
            "bit {bit}: {stale:?}"
        );
        assert!(stale.to_string().contains("STALE"), "{stale}");
        let start = Instant::now();
        let name = format!("after_flip_{bit}_total");
        let f = store
            .register(&FamilyDesc::new(&name, Kind::Counter))
            .unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        store.counter_inc(store.series(&f, &[]).unwrap()).unwrap();
        assert_eq!(store.stats().lock_recoveries_total, bit as u64 + 1);
    }
    // A second process's view (another Store value) sees what the first
    // registered, and the lock is usable.
    let other = Store::open(&path, &Options::default()).unwrap();
    assert_eq!(other.snapshot().unwrap().families().count(), 8);
    other
        .register(&FamilyDesc::new("later_total", Kind::Counter))
        .unwrap();
}

#[test]
fn a_lock_held_by_a_live_process_of_the_store_is_busy_after_a_bound() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let store = Store::open(&path, &Options::default()).unwrap();
    // A live thread of this process (which maps the store) as the holder:
    // as if a writer were stopped while it held the lock.
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        // SAFETY: gettid(2) cannot fail.
        tx.send(unsafe { libc::gettid() } as u32).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().unwrap();
    poke_word(&path, tid);
    let pid = std::process::id();
    assert_eq!(store.lock_state(), LockState::Held { pid, tid });
    let start = Instant::now();
    let e = expect_err(
        store.register(&FamilyDesc::new("never_total", Kind::Counter)),
        ErrorKind::Busy,
    );
    let waited = start.elapsed();
    assert!(waited >= Duration::from_secs(4), "{waited:?}");
    assert!(waited < Duration::from_secs(8), "{waited:?}");
    assert!(e.message().contains(&format!("by pid {pid}")), "{e}");
    // Once the word is free again, the store works.
    poke_word(&path, 0);
    store
        .register(&FamilyDesc::new("now_total", Kind::Counter))
        .unwrap();
    stop_tx.send(()).unwrap();
    holder.join().unwrap();
}

/// A kind word (glibc's `__kind`, 16 bytes into the mutex) that is not a
/// robust, process-shared mutex's is refused before any pthread call:
/// one with lock elision (256) made glibc run a hardware transaction,
/// which killed the process on a processor without one (found by the
/// `open_store` fuzzer).
#[test]
fn a_foreign_mutex_kind_is_refused_not_followed() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let store = Store::open(&path, &Options::default()).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut kind = [0u8; 4];
    f.read_exact_at(&mut kind, LOCK_WORD + 16).unwrap();
    let good = u32::from_ne_bytes(kind);
    for bad in [good | 256, 0, u32::MAX] {
        f.write_all_at(&bad.to_ne_bytes(), LOCK_WORD + 16).unwrap();
        let err = expect_err(
            store.register(&FamilyDesc::new("jobs_total", Kind::Counter)),
            ErrorKind::Corrupt,
        );
        assert!(err.to_string().contains("kind word"), "{err}");
    }
    // Put back, the lock works again.
    f.write_all_at(&good.to_ne_bytes(), LOCK_WORD + 16).unwrap();
    store
        .register(&FamilyDesc::new("jobs_total", Kind::Counter))
        .unwrap();
}

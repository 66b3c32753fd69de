//! A damaged wipe flag under a running exporter (issue 36, fault 2). One
//! flipped bit in the store header's wipe flag once made every scrape
//! answer "store is busy" for good while `/healthz` said 200. Now the
//! damaged flag is read past, and `/healthz` fails whenever scrapes fail.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind};

use crate::util::*;

/// The wipe flag's offset in the file (`src/shm/layout.rs`; the core's
/// unit test `the_flag_is_at_byte_584` keeps it there).
const WIPE_FLAG: u64 = 584;
/// The lock word (the futex word; glibc's `__owner` is 8 bytes further).
const LOCK_WORD: u64 = 512;

fn poke(path: &Path, off: u64, v: u32) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&v.to_ne_bytes(), off).unwrap();
}

/// Waits out the age of a read `/healthz` may judge by (1 s).
fn after_health_read_age() {
    std::thread::sleep(Duration::from_millis(1100));
}

#[test]
fn a_flipped_wipe_flag_bit_is_read_past_and_healthz_follows_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("kept_total", Kind::Counter),
        &[],
        42.0,
    );
    let server = TestServer::start(&path, |_| {});
    let scrape = || get(server.addr, "/metrics", &[]);
    let health = || get(server.addr, "/healthz", &[]);
    assert_eq!(scrape().status, 200);
    assert_eq!(health().status, 200);

    // A flipped bit with the lock free: not a wipe. Scrapes go on, with
    // the data, and so does health.
    for bit in [0, 5, 31] {
        poke(&path, WIPE_FLAG, 1 << bit);
        let r = scrape();
        assert_eq!(r.status, 200, "bit {bit}: {}", r.text());
        assert!(r.text().contains("\nkept_total 42\n"), "{}", r.text());
        after_health_read_age();
        let h = health();
        assert_eq!(h.status, 200, "bit {bit}: {}", h.text());
    }

    // The flag with the lock held by a live thread of a process that maps
    // the store (this one): a wipe in progress, as far as anyone can
    // tell. Scrapes fail, and /healthz must say so.
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        // SAFETY: gettid(2) cannot fail.
        tx.send(unsafe { libc::gettid() } as u32).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().unwrap();
    poke(&path, LOCK_WORD, tid);
    poke(&path, LOCK_WORD + 8, tid);
    poke(&path, WIPE_FLAG, 1);
    let r = scrape();
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("busy"), "{}", r.text());
    let h = health();
    assert_eq!(h.status, 503, "/healthz while scrapes fail: {}", h.text());
    assert!(h.text().contains("busy"), "{}", h.text());
    // Also when no scrape came first: /healthz reads the store itself.
    after_health_read_age();
    let h = health();
    assert_eq!(h.status, 503, "/healthz on its own: {}", h.text());

    // The lock released (and the flag left set, damaged): both recover.
    poke(&path, LOCK_WORD, 0);
    poke(&path, LOCK_WORD + 8, 0);
    stop_tx.send(()).unwrap();
    holder.join().unwrap();
    after_health_read_age();
    let h = health();
    assert_eq!(h.status, 200, "{}", h.text());
    assert_eq!(scrape().status, 200);
    server.stop();
}

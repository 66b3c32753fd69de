//! Test 10: the store file's mode. 0600 by default and 0660 when asked,
//! whatever the umask; anything wider is refused before a file exists.

use std::os::unix::fs::PermissionsExt;
use std::sync::Mutex;

use shmetrics_core::{ErrorKind, Options, Store};

use crate::common::{expect_err, tempdir};

/// The umask is per process; tests that set it take this lock.
static UMASK: Mutex<()> = Mutex::new(());

fn with_umask<T>(mask: libc::mode_t, f: impl FnOnce() -> T) -> T {
    let _g = UMASK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: umask(2) only swaps the process's file creation mask.
    let old = unsafe { libc::umask(mask) };
    let r = f();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    r
}

fn mode_of(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn created_files_are_0600_by_default_and_0660_when_asked() {
    for umask in [0o022, 0o077, 0o000, 0o027] {
        with_umask(umask, || {
            let dir = tempdir();
            let default = dir.path().join("default");
            Store::open(&default, &Options::default()).unwrap();
            assert_eq!(mode_of(&default), 0o600, "default mode, umask {umask:o}");
            let group = dir.path().join("group");
            let opts = Options {
                mode: 0o660,
                ..Options::default()
            };
            Store::open(&group, &opts).unwrap();
            assert_eq!(mode_of(&group), 0o660, "mode 0660, umask {umask:o}");
            // Opening an existing store does not change its mode.
            Store::open(&default, &opts).unwrap();
            assert_eq!(mode_of(&default), 0o600);
        });
    }
}

#[test]
fn wider_modes_are_invalid_options() {
    let dir = tempdir();
    let path = dir.path().join("s");
    for mode in [
        0o644, 0o666, 0o664, 0o606, 0o700, 0o770, 0o777, 0o400, 0o200, 0o000, 0o1600, 0o2660,
        0o4600, 0o601, 0o610,
    ] {
        let opts = Options {
            mode,
            ..Options::default()
        };
        let e = expect_err(Store::open(&path, &opts), ErrorKind::InvalidOptions);
        assert!(e.message().contains(&format!("{mode:#o}")), "{e}");
        assert!(!path.exists(), "a file was created with mode {mode:o}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "files left behind: {leftovers:?}");
}

/// Processes (threads here) that open a store that does not exist yet, all
/// at once, all get it: one creates it, the others open that one. A
/// process that saw no file, then found the creator's file already linked
/// when it went to create its own, once got "No such file or directory"
/// (seen with two nginx workers starting together).
#[test]
fn openers_racing_to_create_the_store_all_open_it() {
    for round in 0..300 {
        let dir = tempdir();
        let path = dir.path().join("s");
        let go = std::sync::Arc::new(std::sync::Barrier::new(6));
        let openers: Vec<_> = (0..6)
            .map(|_| {
                let (path, go) = (path.clone(), go.clone());
                std::thread::spawn(move || {
                    go.wait();
                    Store::open(&path, &Options::default()).map(|s| s.stats().file_size)
                })
            })
            .collect();
        let sizes: Vec<u64> = openers
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap()
                    .unwrap_or_else(|e| panic!("round {round}: {e}"))
            })
            .collect();
        assert!(sizes.iter().all(|&s| s == sizes[0] && s > 0), "{sizes:?}");
    }
}

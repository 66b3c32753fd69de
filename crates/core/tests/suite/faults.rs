//! No SIGBUS (issue 23, item 2): a store truncated while mapped, and a
//! store created on a full tmpfs. Each gives a clear error, and the
//! process (this test process) lives on.

use std::path::{Path, PathBuf};

use shmetrics_core::{faults_absorbed, ErrorKind, FamilyDesc, Kind, Options, Store};

use crate::common::{expect_err, small_options, tempdir};

/// A 1 MiB tmpfs mounted for one test, unmounted when dropped (also when
/// the test fails). The tests run as root.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount() -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount -t tmpfs failed");
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system with one file, up to its last byte.
    fn fill(&self) -> PathBuf {
        let filler = self.path().join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![1u8; 64 << 10];
        while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
        while std::io::Write::write_all(&mut f, &chunk[..1]).is_ok() {}
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
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
    let fs = Tmpfs::mount();
    fs.fill();
    let path = fs.path().join("store");
    let e = expect_err(Store::open(&path, &small_options()), ErrorKind::Io);
    assert!(e.message().contains("file system full"), "{e}");
    assert_eq!(names_in(fs.path()), ["filler"], "a temporary file was left");
}

#[test]
fn a_store_truncated_while_mapped_gives_errors_not_sigbus() {
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

//! Temporary directories and stores.

use std::path::{Path, PathBuf};

use shmetrics_core::{FamilyDesc, Options, Store};

/// A temporary directory for a test's store and other files, removed when
/// dropped. Under /dev/shm when it exists (as in production), else the
/// system default.
pub fn tempdir() -> tempfile::TempDir {
    let builder = || {
        let mut b = tempfile::Builder::new();
        b.prefix("shmetrics-test-");
        b
    };
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = builder().tempdir_in(shm) {
            return d;
        }
    }
    builder().tempdir().unwrap()
}

/// Creates a store at `path` with `opts`.
pub fn create_store(path: &Path, opts: &Options) -> Store {
    Store::open(path, opts).unwrap_or_else(|e| panic!("create store {}: {e}", path.display()))
}

/// Creates a small store at `path` (64 series, 4 writers) and adds `value`
/// to the series of counter `family` with label values `labels`.
pub fn store_with_counter(path: &Path, family: &FamilyDesc, labels: &[&str], value: f64) -> Store {
    let store = create_store(
        path,
        &Options {
            max_series: 64,
            max_writers: 4,
            ..Options::default()
        },
    );
    let f = store.register(family).unwrap();
    store
        .counter_add(store.series(&f, labels).unwrap(), value)
        .unwrap();
    store
}

/// A tmpfs of a given size mounted for one test on a temporary directory,
/// unmounted when dropped (also when the test fails). Mounting needs root,
/// which the tests run as: a failed mount fails the test.
#[derive(Debug)]
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it: `1m`).
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount -t tmpfs -o size={size} failed");
        Tmpfs { dir }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system with one file, up to its last byte; returns
    /// the file's path (remove it to free the space).
    pub fn fill(&self) -> PathBuf {
        let filler = self.path().join("filler");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&filler)
            .unwrap();
        let chunk = vec![1u8; 64 << 10];
        while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
        while std::io::Write::write_all(&mut f, &chunk[..1]).is_ok() {}
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a process of the test (an exporter) may still hold a
        // file open there.
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

//! Temporary directories and stores.

use std::path::Path;

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

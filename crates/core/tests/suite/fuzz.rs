//! Test 8 (property part): random files, forged headers and valid stores
//! with random bytes written over their mutable regions. Opening,
//! snapshotting (and, for the last kind, writing) must never panic or
//! crash; errors are fine.

use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::collection::vec;
use proptest::prelude::*;
use shmetrics_core::{Options, Store};

use crate::common::{fixed, populated_store, tempdir, RawStore, Region};
use crate::corruption::{read_everything, write_everything};

/// A populated store's bytes and its mutable regions, made once.
fn pristine() -> &'static (Vec<u8>, Vec<Region>) {
    static P: OnceLock<(Vec<u8>, Vec<Region>)> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tempdir();
        let path = dir.path().join("pristine");
        populated_store(&path);
        let regions = RawStore::open(&path).mutable_regions();
        (std::fs::read(&path).unwrap(), regions)
    })
}

/// A fresh file path for one case.
fn case_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("store")
}

#[derive(Clone, Debug)]
enum Fill {
    Zeros(usize),
    Ones(usize),
    Bytes(Vec<u8>),
}

impl Fill {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Fill::Zeros(n) => vec![0; *n],
            Fill::Ones(n) => vec![0xFF; *n],
            Fill::Bytes(b) => b.clone(),
        }
    }
}

fn fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        (1usize..64).prop_map(Fill::Zeros),
        (1usize..64).prop_map(Fill::Ones),
        vec(any::<u8>(), 1..64).prop_map(Fill::Bytes),
    ]
}

/// Offsets of the fixed header's numeric fields and their widths.
const FIELDS: [(u64, usize); 17] = [
    (fixed::LAYOUT_VERSION, 4),
    (12, 4), // header size
    (fixed::FILE_SIZE, 8),
    (fixed::MAX_FAMILIES, 4),
    (fixed::MAX_SLOTS, 4),
    (fixed::MAX_SERIES, 4),
    (fixed::INDEX_SIZE, 4),
    (fixed::ARENA_BYTES, 8),
    (fixed::CELLS_PER_SLOT, 8),
    (fixed::OFF_SLOTS, 8),
    (fixed::OFF_FAMILIES, 8),
    (fixed::OFF_SERIES, 8),
    (fixed::OFF_INDEX, 8),
    (fixed::OFF_ARENA, 8),
    (fixed::OFF_CELLS, 8),
    (fixed::SLOT_STRIDE, 8),
    (120, 8), // reserved
];

fn interesting_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        0u64..70_000,
        Just(u64::MAX),
        Just(u32::MAX as u64),
        Just(1 << 63),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    })]

    /// Arbitrary bytes, possibly after the magic number, the magic and the
    /// right version, or a whole valid fixed header.
    #[test]
    fn random_files_never_panic(prefix in 0usize..4, body in vec(any::<u8>(), 0..3000)) {
        let dir = tempdir();
        let path = case_path(&dir);
        let (store_bytes, _) = pristine();
        let mut bytes = match prefix {
            0 => Vec::new(),
            1 => store_bytes[..8].to_vec(),
            2 => store_bytes[..12].to_vec(),
            _ => store_bytes[..fixed::SIZE as usize].to_vec(),
        };
        bytes.extend_from_slice(&body);
        std::fs::write(&path, &bytes).unwrap();
        read_everything(&path);
        write_everything(&path);
        // Opening with create must not reinitialise the file.
        if Store::open(&path, &Options::default()).is_err() {
            prop_assert_eq!(std::fs::read(&path).unwrap(), bytes);
        }
    }

    /// A valid store whose header has one field changed and a correct
    /// checksum, and whose length is changed.
    #[test]
    fn forged_headers_never_panic(
        field in 0..FIELDS.len(),
        value in interesting_u64(),
        len_delta in -9000i64..9000,
    ) {
        let dir = tempdir();
        let path = case_path(&dir);
        let (store_bytes, _) = pristine();
        let mut bytes = store_bytes.clone();
        let (off, width) = FIELDS[field];
        let (off, width) = (off as usize, width);
        bytes[off..off + width].copy_from_slice(&value.to_ne_bytes()[..width]);
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..fixed::CHECKSUM as usize]);
        bytes[fixed::CHECKSUM as usize..fixed::SIZE as usize].copy_from_slice(&sum.to_ne_bytes());
        let len = (bytes.len() as i64 + len_delta).max(0) as usize;
        bytes.resize(len, 0);
        std::fs::write(&path, &bytes).unwrap();
        read_everything(&path);
        write_everything(&path);
    }

    /// A valid store with up to eight runs of random bytes, zeros or ones
    /// written over its mutable regions: read it.
    #[test]
    fn mutated_stores_never_panic_readers(
        muts in vec((any::<prop::sample::Index>(), any::<u64>(), fill()), 1..8)
    ) {
        let dir = tempdir();
        let path = case_path(&dir);
        std::fs::write(&path, mutate(&muts)).unwrap();
        read_everything(&path);
    }

    /// The same, then write to it.
    #[test]
    fn mutated_stores_never_panic_writers(
        muts in vec((any::<prop::sample::Index>(), any::<u64>(), fill()), 1..8)
    ) {
        let dir = tempdir();
        let path = case_path(&dir);
        std::fs::write(&path, mutate(&muts)).unwrap();
        write_everything(&path);
        read_everything(&path);
    }
}

/// The pristine store with `muts` applied: each picks a region, an offset
/// in it and bytes to write there (clipped to the region).
fn mutate(muts: &[(prop::sample::Index, u64, Fill)]) -> Vec<u8> {
    let (store_bytes, regions) = pristine();
    let mut bytes = store_bytes.clone();
    for (region, at, fill) in muts {
        let r = regions[region.index(regions.len())];
        if r.len == 0 {
            continue;
        }
        let start = r.start + at % r.len;
        let end = r.start + r.len;
        let b = fill.bytes();
        let n = (b.len() as u64).min(end - start) as usize;
        bytes[start as usize..start as usize + n].copy_from_slice(&b[..n]);
    }
    bytes
}

/// Kind and mode words of a raw series handle: mostly valid.
fn kind_mode() -> impl Strategy<Value = u64> {
    prop_oneof![
        (1u64..=4, 1u64..=11).prop_map(|(k, m)| k | m << 32),
        // A histogram with a native schema code (valid or not).
        (1u64..=11, 0u64..=30).prop_map(|(m, n)| 3 | (m | n << 16) << 32),
        // A counter or histogram with the exemplars flag.
        (prop_oneof![Just(1u64), Just(3)], 1u64..=11).prop_map(|(k, m)| k | (m | 1 << 15) << 32),
        any::<u64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        ..ProptestConfig::default()
    })]

    /// A handle forged through `Series::from_raw` (what the C ABI gets
    /// back from its callers) with this store's tag and epoch, and any
    /// other fields: updates through it return errors or write somewhere
    /// in the store, and never panic.
    #[test]
    fn forged_series_handles_never_panic(
        id_family in interesting_u64(),
        offsets in interesting_u64(),
        kind_mode in kind_mode(),
        n_bounds in prop_oneof![0u64..20, interesting_u64()],
        bounds_off in prop_oneof![0u64..4096, interesting_u64()],
        v in prop_oneof![any::<f64>(), -10.0f64..10.0],
    ) {
        let dir = tempdir();
        let store = Store::open(dir.path().join("s"), &crate::common::small_options()).unwrap();
        crate::common::populate(&store);
        let f = store.register(&crate::common::populated_families()[1]).unwrap();
        let real = store.series(&f, &["v00"]).unwrap();
        let mut raw = real.to_raw();
        raw[1] = id_family;
        raw[2] = offsets;
        raw[3] = kind_mode;
        raw[4] = n_bounds;
        raw[5] = bounds_off;
        if let Some(s) = shmetrics_core::Series::from_raw(raw) {
            let _ = store.counter_inc(s);
            let _ = store.counter_add(s, v.abs());
            let _ = store.gauge_set(s, v);
            let _ = store.gauge_add(s, v);
            let _ = store.observe(s, v);
            let _ = store.gauge_set_to_current_time(s);
            let _ = store.counter_add_with_exemplar(s, v.abs(), &[("trace_id", "x")]);
            let _ = store.observe_with_exemplar(s, v, &[("trace_id", "x")]);
        }
        if let Ok(snap) = store.snapshot() {
            crate::corruption::walk(&snap);
        }
    }
}

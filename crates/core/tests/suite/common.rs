//! Helpers: small and populated stores (in the test kit's temporary
//! directories), and raw access to a store file's bytes for
//! the corruption tests.
//!
//! The offsets below mirror `src/shm/layout.rs` (the source of truth).
//! [`RawStore::open`] checks them against the store's own statistics, so a
//! layout change makes the tests fail loudly rather than poke the wrong
//! bytes.

#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use shmetrics_core::{ErrorKind, FamilyDesc, GaugeMode, Kind, NativeOpts, Options, Store};
pub use shmetrics_testkit::tempdir;

/// Options for a small store.
pub fn small_options() -> Options {
    Options {
        max_families: 8,
        max_series: 64,
        label_bytes: 8192,
        max_writers: 4,
        cells_per_writer: 1024,
        // Two pages: the populated summary has no quantiles. (The
        // corruption tests copy the whole file for every word they poke.)
        sketch_cells_per_writer: 1024,
        ..Options::default()
    }
}

/// Options to open an existing store read-only.
pub fn read_only() -> Options {
    Options::reader()
}

/// Options to open an existing store without creating one.
pub fn existing() -> Options {
    Options {
        create: false,
        ..Options::default()
    }
}

/// The families of [`populate`].
pub fn populated_families() -> Vec<FamilyDesc> {
    vec![
        FamilyDesc::new("http_requests_total", Kind::Counter)
            .help("Requests.")
            .labels(&["route", "status"])
            .exemplars(true),
        FamilyDesc::new("latency_seconds", Kind::Histogram)
            .labels(&["route"])
            .buckets(&[0.1, 0.5, 1.0, 5.0]),
        FamilyDesc::new("in_flight", Kind::Gauge)
            .labels(&["pool"])
            .gauge_mode(GaugeMode::LiveSum),
        FamilyDesc::new("per_pid", Kind::Gauge)
            .labels(&["pool"])
            .gauge_mode(GaugeMode::All),
        FamilyDesc::new("size_bytes", Kind::Summary)
            .unit("bytes")
            .labels(&["kind"]),
        // Classic and native buckets, at schema -2 (64 sketch cells a
        // series) and a limit that the observations below exceed.
        FamilyDesc::new("native_seconds", Kind::Histogram)
            .labels(&["route"])
            .buckets(&[1.0])
            .native(NativeOpts {
                bucket_factor: 16.0,
                max_buckets: 3,
                ..NativeOpts::default()
            }),
    ]
}

/// Label values used by [`populate`] for a family with `n` labels.
pub fn populated_labels(n: usize) -> Vec<Vec<String>> {
    (0..3)
        .map(|i| (0..n).map(|j| format!("v{i}{j}")).collect())
        .collect()
}

/// Registers [`populated_families`] with three series each and updates
/// every series, through the given store.
pub fn populate(store: &Store) {
    for desc in populated_families() {
        let f = store.register(&desc).unwrap();
        for labels in populated_labels(desc.label_names.len()) {
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            let s = store.series(&f, &labels).unwrap();
            match desc.kind {
                Kind::Counter => {
                    store.counter_inc(s).unwrap();
                    store.counter_add(s, 1.5).unwrap();
                    store
                        .counter_add_with_exemplar(s, 2.0, &[("trace_id", "abc")])
                        .unwrap();
                }
                Kind::Gauge => store.gauge_set(s, 3.0).unwrap(),
                Kind::Histogram | Kind::Summary => {
                    for v in [0.05, 0.7, -3.0, 100.0] {
                        store.observe(s, v).unwrap();
                    }
                }
            }
        }
    }
}

/// Creates a small, populated store at `path`.
pub fn populated_store(path: &Path) {
    let store = Store::open(path, &small_options()).unwrap();
    populate(&store);
}

/// Byte offsets of the fixed header's fields.
pub mod fixed {
    pub const MAGIC: u64 = 0;
    pub const LAYOUT_VERSION: u64 = 8;
    pub const FILE_SIZE: u64 = 16;
    pub const MAX_FAMILIES: u64 = 24;
    pub const MAX_SLOTS: u64 = 28;
    pub const MAX_SERIES: u64 = 32;
    pub const INDEX_SIZE: u64 = 36;
    pub const ARENA_BYTES: u64 = 40;
    pub const CELLS_PER_SLOT: u64 = 48;
    pub const OFF_SLOTS: u64 = 56;
    pub const OFF_FAMILIES: u64 = 64;
    pub const OFF_SERIES: u64 = 72;
    pub const OFF_INDEX: u64 = 80;
    pub const OFF_ARENA: u64 = 88;
    pub const OFF_CELLS: u64 = 96;
    pub const SLOT_STRIDE: u64 = 104;
    /// The checksum covers the bytes before it.
    pub const CHECKSUM: u64 = 184;
    pub const SIZE: u64 = 192;
}

/// Byte offsets in the header page after the fixed part.
pub mod hot {
    /// The lock area starts at 512 and holds a pthread mutex (at most 64
    /// bytes on Linux), then the hot line at 576, the alloc line at 640.
    pub const LOCK: u64 = 512;
    pub const EPOCH: u64 = 576;
    pub const WIPE_PENDING: u64 = 584;
    pub const ALLOC: u64 = 640;
    pub const FAMILIES_USED: u64 = 640;
    pub const SERIES_USED: u64 = 644;
    pub const ARENA_USED: u64 = 648;
    pub const INT_CELLS_USED: u64 = 656;
    pub const FLOAT_CELLS_USED: u64 = 664;
    pub const SLOTS_HWM: u64 = 672;
    /// End of the alloc line's fields (telemetry counters and reserved
    /// words included).
    pub const ALLOC_END: u64 = 760;
}

/// Record sizes.
pub const SLOT_REC: u64 = 64;
/// In a slot record: the owner's pid (u32).
pub const SLOT_PID: u64 = 4;
/// In a slot record: the count of updates of TTL series in progress.
pub const SLOT_PINS: u64 = 32;
pub const FAMILY_REC: u64 = 256;
pub const SERIES_REC: u64 = 64;
/// In a series record: the first integer and float cell offsets.
pub const SERIES_INT_OFF: u64 = 32;
pub const SERIES_FLOAT_OFF: u64 = 40;
/// In a family record: the bucket bounds span's length (bounds count).
pub const FAMILY_BUCKETS_LEN: u64 = 88;
/// In a family record: the sketch cells per series.
pub const FAMILY_SKETCH_CELLS: u64 = 156;
/// In a family record: the native schema code (schema + 16).
pub const FAMILY_NATIVE_SCHEMA: u64 = 176;
/// In a family record: the native zero threshold (f64 bits).
pub const FAMILY_NATIVE_ZERO_THRESHOLD: u64 = 184;
/// In a family record: the native buckets per side.
pub const FAMILY_NATIVE_BINS: u64 = 192;

/// A store file opened for raw reads and writes beside the mapping.
pub struct RawStore {
    pub file: File,
    pub path: PathBuf,
}

/// A region of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: &'static str,
    pub start: u64,
    pub len: u64,
}

impl RawStore {
    /// Opens the store file at `path` and checks that the offsets above
    /// match it (using a store opened read-only for its statistics).
    pub fn open(path: &Path) -> RawStore {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let raw = RawStore {
            file,
            path: path.to_path_buf(),
        };
        let store = Store::open(path, &read_only()).expect("RawStore::open needs a valid store");
        let st = store.stats();
        assert_eq!(
            (
                raw.u32(hot::FAMILIES_USED),
                raw.u32(hot::SERIES_USED),
                raw.u64(hot::ARENA_USED),
                raw.u64(fixed::FILE_SIZE),
                raw.u32(fixed::MAX_SERIES),
            ),
            (
                st.families,
                st.series_allocated,
                st.label_bytes_used,
                st.file_size,
                st.series_capacity
            ),
            "the test's copy of the layout offsets is out of date (src/shm/layout.rs)"
        );
        raw
    }

    pub fn bytes(&self, off: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0; len];
        self.file.read_exact_at(&mut b, off).unwrap();
        b
    }

    pub fn write(&self, off: u64, b: &[u8]) {
        self.file.write_all_at(b, off).unwrap();
    }

    pub fn u32(&self, off: u64) -> u32 {
        u32::from_ne_bytes(self.bytes(off, 4).try_into().unwrap())
    }

    pub fn u64(&self, off: u64) -> u64 {
        u64::from_ne_bytes(self.bytes(off, 8).try_into().unwrap())
    }

    pub fn set_u32(&self, off: u64, v: u32) {
        self.write(off, &v.to_ne_bytes());
    }

    pub fn set_u64(&self, off: u64, v: u64) {
        self.write(off, &v.to_ne_bytes());
    }

    /// The regions that change after creation, each limited to its used
    /// part: the alloc line, slot records, family and series records, the
    /// index, the arena and the value cells of every slot.
    pub fn mutable_regions(&self) -> Vec<Region> {
        let max_slots = self.u32(fixed::MAX_SLOTS) as u64;
        let index_size = self.u32(fixed::INDEX_SIZE) as u64;
        let cells = self.u64(fixed::CELLS_PER_SLOT);
        let stride = self.u64(fixed::SLOT_STRIDE);
        let mut r = vec![
            Region {
                name: "alloc line",
                start: hot::ALLOC,
                len: hot::ALLOC_END - hot::ALLOC,
            },
            Region {
                name: "hot line",
                start: hot::EPOCH,
                len: 16,
            },
            Region {
                name: "slots",
                start: self.u64(fixed::OFF_SLOTS),
                len: (max_slots + 1) * SLOT_REC,
            },
            Region {
                name: "families",
                start: self.u64(fixed::OFF_FAMILIES),
                len: self.u32(hot::FAMILIES_USED) as u64 * FAMILY_REC,
            },
            Region {
                name: "series",
                start: self.u64(fixed::OFF_SERIES),
                len: self.u32(hot::SERIES_USED) as u64 * SERIES_REC,
            },
            Region {
                name: "index",
                start: self.u64(fixed::OFF_INDEX),
                len: index_size * 4,
            },
            Region {
                name: "arena",
                start: self.u64(fixed::OFF_ARENA),
                len: self.u64(hot::ARENA_USED).div_ceil(8) * 8,
            },
        ];
        // The shared slot and the first writer slot; the first and last
        // cells of each (integer cells grow up, float cells down).
        for slot in 0..=max_slots.min(1) {
            let start = self.u64(fixed::OFF_CELLS) + slot * stride;
            r.push(Region {
                name: "cells (low: integers)",
                start,
                len: 16 * 8,
            });
            r.push(Region {
                name: "cells (high: floats)",
                start: start + cells * 8 - 16 * 8,
                len: 16 * 8,
            });
        }
        r
    }

    /// The offset of slot `slot`'s first value cell.
    pub fn cells_start(&self, slot: u64) -> u64 {
        self.u64(fixed::OFF_CELLS) + slot * self.u64(fixed::SLOT_STRIDE)
    }

    /// The offset of family record `i`.
    pub fn family(&self, i: u64) -> u64 {
        self.u64(fixed::OFF_FAMILIES) + i * FAMILY_REC
    }

    /// The offset of series record `i`.
    pub fn series(&self, i: u64) -> u64 {
        self.u64(fixed::OFF_SERIES) + i * SERIES_REC
    }
}

/// Asserts that `r` is an error of `kind`, and returns it.
#[track_caller]
pub fn expect_err<T: std::fmt::Debug>(
    r: shmetrics_core::Result<T>,
    kind: ErrorKind,
) -> shmetrics_core::Error {
    match r {
        Ok(v) => panic!("expected a {kind:?} error, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "wrong error kind: {e}");
            e
        }
    }
}

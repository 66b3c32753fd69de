//! A shared-memory metric store for multi-process servers.
//!
//! All metrics of a host live in one memory-mapped file (by default under
//! `/dev/shm`). Any number of processes open it at once; each writes
//! through a writer slot of its own, so an update is one atomic operation
//! on memory no other process writes: no lock, no system call, no
//! allocation. A reader (the exporter) merges the slots into a
//! [`Snapshot`] without ever blocking a writer.
//!
//! ```
//! use shmetrics_core::{FamilyDesc, Kind, Options, Store, Value};
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("store");
//! let store = Store::open(&path, &Options::default())?;
//! let requests = store.register(
//!     &FamilyDesc::new("http_requests", Kind::Counter)
//!         .help("Requests served.")
//!         .labels(&["route", "status"]),
//! )?;
//! let ok = store.series(&requests, &["/", "200"])?; // keep this handle
//! store.counter_inc(ok)?;
//! store.counter_add(ok, 2.0)?;
//!
//! let snap = store.snapshot()?;
//! let family = snap.family("http_requests").unwrap();
//! let series = family.series().next().unwrap();
//! assert_eq!(series.labels().collect::<Vec<_>>(), [("route", "/"), ("status", "200")]);
//! assert_eq!(series.value(), Value::Counter(3.0));
//! # Ok::<(), shmetrics_core::Error>(())
//! ```
//!
//! See `docs/ARCHITECTURE.md` for the file layout and why no update is
//! lost, even when a process is killed at any instant.

#![deny(unsafe_code)]

mod error;
mod exemplar;
mod family;
mod handle;
mod health;
mod marks;
mod model;
mod names;
mod native;
mod proc;
#[allow(unsafe_code)]
mod shm;
pub mod sketch;
mod snapshot;
mod store;
mod update;
mod window;

pub use error::{Error, ErrorKind, Result};
pub use exemplar::MAX_EXEMPLAR_CHARS;
pub use family::{
    check_label_name, check_metric_name, Created, FamilyDesc, Hints, NativeOpts, OpenMetricsType,
    SummaryOpts, DEFAULT_BUCKETS, DEFAULT_NATIVE_ZERO_THRESHOLD, MAX_AGE_BUCKETS, MAX_BUCKETS,
    MAX_LABELS, MAX_QUANTILES, MAX_TTL, MIN_TTL, OVERFLOW_LABEL, PID_LABEL,
};
pub use health::faults_absorbed;
pub use model::{GaugeMode, Kind};
pub use names::{
    escape_label_name, escape_metric_name, escape_name_into, is_legacy_label_name,
    is_legacy_metric_name, rewrite_name_into, Escaping, NameRules,
};
pub use shm::sched::{cpu_share, share_cpu};
pub use shm::trust::{group_id, user_id};
pub use shm::{trim_heap, unmap_large_frees, LockState};
pub use snapshot::{
    BucketRun, Exemplar, FamilyCardinality, FamilyView, LabelCardinality, NativeBuckets, Quantile,
    SeriesView, Snapshot, StoreStats, Value, WriterInfo,
};
pub use store::{Family, Options, PathNow, PlacedSeries, Series, Store, DEFAULT_DIR};

/// The store file layout version this build reads and writes.
pub const LAYOUT_VERSION: u32 = shm::layout::LAYOUT_VERSION;

//! The plain-data types of the ABI and their conversions to and from the
//! store's types.

#![allow(non_camel_case_types)]

use std::ffi::c_char;
use std::sync::Mutex;
use std::time::Duration;

use shmetrics_core::{
    Created, Family, FamilyDesc, GaugeMode, Hints, Kind, NameRules, NativeOpts, Options, Series,
    Snapshot, Store, StoreStats,
};

use crate::error::{shmetrics_result, FfiError};
use crate::ptr;

/// An open store. Made by `shmetrics_store_open`, freed by
/// `shmetrics_store_close`. Every other function may be called on it from
/// any number of threads at once.
#[derive(Debug)]
pub struct shmetrics_store {
    pub(crate) store: Store,
    /// What rendering reuses between calls.
    pub(crate) render: Mutex<RenderCache>,
    /// Made by `shmetrics_store_open_persistent`: freed only by
    /// `shmetrics_store_close_persistent`, once every reference is closed.
    pub(crate) persistent: bool,
    /// For a persistent handle: how many open calls returned it and were
    /// not yet matched by `shmetrics_store_close_persistent` (each Lua VM
    /// of a process holds one). Changed under the persistent list's lock.
    pub(crate) refs: std::sync::atomic::AtomicUsize,
    /// The families and series the cached calls found (`cache.rs`).
    pub(crate) cache: Mutex<crate::cached::Cache>,
}

/// A snapshot and an output buffer that `shmetrics_render` refreshes in
/// place instead of building anew each time.
#[derive(Debug, Default)]
pub(crate) struct RenderCache {
    pub(crate) snap: Snapshot,
    pub(crate) out: Vec<u8>,
}

/// An exposition made by `shmetrics_render_alloc`: read it with
/// `shmetrics_buf_data` and `shmetrics_buf_len`, free it with
/// `shmetrics_buf_free`.
#[derive(Debug)]
pub struct shmetrics_buf {
    /// The exposition and a NUL after it; never empty.
    pub(crate) data: Vec<u8>,
}

/// A string as a pointer and a length in bytes, without a terminating NUL
/// (one may follow; it is not read). `ptr` may be NULL when `len` is 0.
/// Names, help texts and label values must be UTF-8.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmetrics_str {
    /// The first byte.
    pub ptr: *const c_char,
    /// The length in bytes.
    pub len: usize,
}

impl shmetrics_str {
    /// The string as UTF-8.
    pub(crate) fn to_str<'a>(self, param: &'static str) -> Result<&'a str, FfiError> {
        let b = ptr::bytes(self.ptr, self.len, param)?;
        std::str::from_utf8(b).map_err(|_| FfiError::Utf8(param))
    }
}

/// Metric types: the values of `shmetrics_family_desc.kind`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmetrics_kind {
    /// A monotonic counter.
    SHMETRICS_KIND_COUNTER = 1,
    /// A value that goes up and down.
    SHMETRICS_KIND_GAUGE = 2,
    /// A classic histogram with fixed bucket bounds.
    SHMETRICS_KIND_HISTOGRAM = 3,
    /// A summary (`_count` and `_sum`).
    SHMETRICS_KIND_SUMMARY = 4,
}

/// How a gauge's per-process values combine: the values of
/// `shmetrics_family_desc.gauge_mode`, as in prometheus_client's
/// multiprocess mode. Modes named `LIVE` count only live processes.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmetrics_gauge_mode {
    /// The default: `SHMETRICS_GAUGE_LIVESUM`. The only value allowed for
    /// families that are not gauges.
    SHMETRICS_GAUGE_DEFAULT = 0,
    /// One series per process, labelled `pid`.
    SHMETRICS_GAUGE_ALL = 1,
    /// One series per live process, labelled `pid`.
    SHMETRICS_GAUGE_LIVEALL = 2,
    /// The sum over all processes.
    SHMETRICS_GAUGE_SUM = 3,
    /// The sum over live processes.
    SHMETRICS_GAUGE_LIVESUM = 4,
    /// The maximum over all processes.
    SHMETRICS_GAUGE_MAX = 5,
    /// The maximum over live processes.
    SHMETRICS_GAUGE_LIVEMAX = 6,
    /// The minimum over all processes.
    SHMETRICS_GAUGE_MIN = 7,
    /// The minimum over live processes.
    SHMETRICS_GAUGE_LIVEMIN = 8,
    /// The value most recently set by any process.
    SHMETRICS_GAUGE_MOSTRECENT = 9,
    /// The value most recently set by a live process.
    SHMETRICS_GAUGE_LIVEMOSTRECENT = 10,
    /// One value shared by all processes (PromPHP APCu semantics).
    SHMETRICS_GAUGE_SHARED = 11,
    /// The mean over live processes (prom-client's `average`).
    SHMETRICS_GAUGE_LIVEAVERAGE = 12,
}

/// Which metric and label names a registration takes: the values of
/// `shmetrics_family_desc.name_rules`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmetrics_name_rules {
    /// Any UTF-8 name, as Prometheus 3 and prometheus_client 0.26 take;
    /// scrapers that do not take UTF-8 get them escaped.
    SHMETRICS_NAMES_UTF8 = 0,
    /// Legacy names only (`[a-zA-Z_:][a-zA-Z0-9_:]*` for metrics,
    /// `[a-zA-Z_][a-zA-Z0-9_]*` for labels).
    SHMETRICS_NAMES_LEGACY = 1,
}

/// Exposition hints: bits of `shmetrics_family_desc.hints`, which say how
/// the expositions write the family so that the page is what the client
/// library a binding stands in for served. Not part of the definition:
/// the first registration's hints stay (see docs/ARCHITECTURE.md).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmetrics_hint {
    /// Bucket bounds and quantiles in their shortest form (`le="1"`), as
    /// PromPHP, nginx-lua-prometheus and client_ruby's Integer bounds;
    /// without it, the canonical OpenMetrics form (`le="1.0"`).
    SHMETRICS_HINT_SHORT_BOUNDS = 1,
    /// No `_created` series in any format (PromPHP, nginx-lua-prometheus,
    /// client_ruby, prometheus_client in multiprocess mode).
    SHMETRICS_HINT_NO_CREATED = 2,
    /// `_created` in every format: OpenMetrics samples, and in the text
    /// and protobuf formats a `name_created` gauge family
    /// (prometheus_client in a single process). Without this or
    /// `NO_CREATED`: OpenMetrics only (and protobuf's `created_timestamp`).
    SHMETRICS_HINT_CREATED_IN_TEXT = 4,
    /// The library served the text format 0.0.4 only: a page holding the
    /// family is served in that format to a scraper that accepts it.
    SHMETRICS_HINT_TEXT_ONLY = 8,
}

/// Exposition formats: the `format` argument of `shmetrics_render`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmetrics_format {
    /// The Prometheus text format 0.0.4.
    SHMETRICS_FORMAT_PROMETHEUS_TEXT = 0,
    /// OpenMetrics 1.0 text.
    SHMETRICS_FORMAT_OPENMETRICS = 1,
    /// The text format 0.0.4 as prometheus-client (Ruby) 4.x's
    /// `Formats::Text.marshal` writes the same metrics (`# TYPE` before
    /// `# HELP`, values as Ruby writes floats, no overflow series): the
    /// Ruby binding's in-app page. Its `Content-Type` is the text
    /// format's.
    SHMETRICS_FORMAT_CLIENT_RUBY_TEXT = 2,
    /// Not an exposition: the store's families with their series in
    /// columns, in PHP's `serialize()` format, series in creation order,
    /// for the PHP binding's `ShmetricsAdapter::collect()` to build
    /// PromPHP's `MetricFamilySamples` from one call and one
    /// `unserialize()` (see `shmetrics_expo::promphp`). Its
    /// `Content-Type` is `application/vnd.php.serialized`.
    SHMETRICS_FORMAT_PROMPHP_SERIES = 3,
    /// As `SHMETRICS_FORMAT_PROMPHP_SERIES`, each family's series sorted
    /// by their label values as PromPHP's adapters sort them.
    SHMETRICS_FORMAT_PROMPHP_SERIES_SORTED = 4,
}

/// What a store's path names now (`shmetrics_store_path_now`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmetrics_path_now {
    /// The file this handle mapped.
    SHMETRICS_PATH_SAME = 0,
    /// Nothing: the file was removed and not created again yet.
    SHMETRICS_PATH_GONE = 1,
    /// Another file, or the path cannot be examined: open it again.
    SHMETRICS_PATH_OTHER = 2,
}

// The C values are the store's own.
const _: () = {
    use shmetrics_gauge_mode::*;
    use shmetrics_kind::*;
    assert!(SHMETRICS_KIND_COUNTER as u32 == Kind::Counter as u32);
    assert!(SHMETRICS_KIND_GAUGE as u32 == Kind::Gauge as u32);
    assert!(SHMETRICS_KIND_HISTOGRAM as u32 == Kind::Histogram as u32);
    assert!(SHMETRICS_KIND_SUMMARY as u32 == Kind::Summary as u32);
    assert!(SHMETRICS_GAUGE_ALL as u32 == GaugeMode::All as u32);
    assert!(SHMETRICS_GAUGE_LIVEALL as u32 == GaugeMode::LiveAll as u32);
    assert!(SHMETRICS_GAUGE_SUM as u32 == GaugeMode::Sum as u32);
    assert!(SHMETRICS_GAUGE_LIVESUM as u32 == GaugeMode::LiveSum as u32);
    assert!(SHMETRICS_GAUGE_MAX as u32 == GaugeMode::Max as u32);
    assert!(SHMETRICS_GAUGE_LIVEMAX as u32 == GaugeMode::LiveMax as u32);
    assert!(SHMETRICS_GAUGE_MIN as u32 == GaugeMode::Min as u32);
    assert!(SHMETRICS_GAUGE_LIVEMIN as u32 == GaugeMode::LiveMin as u32);
    assert!(SHMETRICS_GAUGE_MOSTRECENT as u32 == GaugeMode::MostRecent as u32);
    assert!(SHMETRICS_GAUGE_LIVEMOSTRECENT as u32 == GaugeMode::LiveMostRecent as u32);
    assert!(SHMETRICS_GAUGE_SHARED as u32 == GaugeMode::Shared as u32);
    assert!(SHMETRICS_GAUGE_LIVEAVERAGE as u32 == GaugeMode::LiveAverage as u32);
};

pub(crate) fn kind_from_u32(v: u32) -> Result<Kind, FfiError> {
    [Kind::Counter, Kind::Gauge, Kind::Histogram, Kind::Summary]
        .into_iter()
        .find(|k| *k as u32 == v)
        .ok_or_else(|| {
            FfiError::Other(
                shmetrics_result::SHMETRICS_INVALID_OPTIONS,
                format!("kind {v} is not a metric type; use a SHMETRICS_KIND_* value (1 to 4)"),
            )
        })
}

pub(crate) fn gauge_mode_from_u32(v: u32) -> Result<GaugeMode, FfiError> {
    if v == shmetrics_gauge_mode::SHMETRICS_GAUGE_DEFAULT as u32 {
        return Ok(GaugeMode::default());
    }
    GaugeMode::ALL
        .into_iter()
        .find(|m| *m as u32 == v)
        .ok_or_else(|| {
            FfiError::Other(
                shmetrics_result::SHMETRICS_INVALID_OPTIONS,
                format!(
                    "gauge_mode {v} is not a gauge mode; use a SHMETRICS_GAUGE_* value (0 to 12)"
                ),
            )
        })
}

/// How to open a store: a mirror of the store's options. Get the defaults
/// with `shmetrics_options_default`, then change what you need. Capacities
/// apply only when the file is created; an existing store keeps its own.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmetrics_options {
    /// Create the file if it does not exist (default 1). Every flag of the
    /// C ABI's input structs is a byte read as true when non-zero (never
    /// a C `bool`, whose bytes other than 0 and 1 Rust may not read).
    pub create: u8,
    /// Non-zero: map the file read-only; every write then fails with
    /// `SHMETRICS_READ_ONLY`. An exporter needs only this.
    pub read_only: u8,
    /// The file mode on creation: 0600 (default) or 0660.
    pub mode: u32,
    /// Most families (default 4096).
    pub max_families: u32,
    /// Most series over all families, overflow series included (default
    /// 65536).
    pub max_series: u32,
    /// Bytes for names, help texts, label names and values (default 16 MiB).
    pub label_bytes: u64,
    /// Most processes writing at once (default 128); more still work,
    /// sharing one spare slot.
    pub max_writers: u32,
    /// 8-byte value cells per writer; 0 (default) picks 16 per series.
    pub cells_per_writer: u64,
    /// 8-byte sketch cells per writer, for summary quantiles, native
    /// histogram buckets and exemplars: a summary series with quantiles
    /// takes age_buckets x 4245. 0 (default) picks 16777216 (sparse:
    /// address space, not memory).
    pub sketch_cells_per_writer: u64,
    /// A user id, besides this process's user and root, that may own an
    /// existing store; -1 (default) for none. Another owner is refused
    /// with `SHMETRICS_UNTRUSTED`.
    pub owner: i64,
    /// A group id whose members may write an existing store; -1 (default)
    /// for none. A writer refuses a group-writable store unless its group
    /// is this one (or this process's own group, when `mode` is 0660); a
    /// reader accepts a store of any owner whose group is this one.
    pub group: i64,
}

/// The `SHMETRICS_HINT_*` bits of a family description.
fn hints_from_u32(bits: u32) -> Result<Hints, FfiError> {
    use shmetrics_hint::*;
    let known = SHMETRICS_HINT_SHORT_BOUNDS as u32
        | SHMETRICS_HINT_NO_CREATED as u32
        | SHMETRICS_HINT_CREATED_IN_TEXT as u32
        | SHMETRICS_HINT_TEXT_ONLY as u32;
    let no_created = bits & SHMETRICS_HINT_NO_CREATED as u32 != 0;
    let in_text = bits & SHMETRICS_HINT_CREATED_IN_TEXT as u32 != 0;
    if bits & !known != 0 || (no_created && in_text) {
        return Err(FfiError::Other(
            shmetrics_result::SHMETRICS_INVALID_OPTIONS,
            format!(
                "hints {bits:#x}: SHMETRICS_HINT_* bits, NO_CREATED and CREATED_IN_TEXT not both"
            ),
        ));
    }
    Ok(Hints {
        short_bounds: bits & SHMETRICS_HINT_SHORT_BOUNDS as u32 != 0,
        created: match (no_created, in_text) {
            (true, _) => Created::Never,
            (_, true) => Created::EveryFormat,
            _ => Created::OpenMetrics,
        },
        text_only: bits & SHMETRICS_HINT_TEXT_ONLY as u32 != 0,
        // The C ABI's peers have no info or state set types.
        openmetrics_type: None,
    })
}

/// An id option as the C struct carries it: -1 (any negative) for none.
fn id_to_c(id: Option<u32>) -> i64 {
    id.map_or(-1, i64::from)
}

fn id_from_c(id: i64) -> Option<u32> {
    u32::try_from(id).ok()
}

impl From<&Options> for shmetrics_options {
    fn from(o: &Options) -> shmetrics_options {
        shmetrics_options {
            create: u8::from(o.create),
            read_only: u8::from(o.read_only),
            mode: o.mode,
            max_families: o.max_families,
            max_series: o.max_series,
            label_bytes: o.label_bytes,
            max_writers: o.max_writers,
            cells_per_writer: o.cells_per_writer,
            sketch_cells_per_writer: o.sketch_cells_per_writer,
            owner: id_to_c(o.owner),
            group: id_to_c(o.group),
        }
    }
}

impl From<&shmetrics_options> for Options {
    fn from(o: &shmetrics_options) -> Options {
        Options {
            create: o.create != 0,
            read_only: o.read_only != 0,
            mode: o.mode,
            max_families: o.max_families,
            max_series: o.max_series,
            label_bytes: o.label_bytes,
            max_writers: o.max_writers,
            cells_per_writer: o.cells_per_writer,
            sketch_cells_per_writer: o.sketch_cells_per_writer,
            owner: id_from_c(o.owner),
            group: id_from_c(o.group),
        }
    }
}

/// A family definition for `shmetrics_register`. A zeroed struct is a valid
/// start: every field left 0 (or NULL with a count of 0) means its default,
/// except `name` and `kind`, which must be set.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmetrics_family_desc {
    /// The metric name: any UTF-8 string, not empty and without NUL, as
    /// Prometheus 3 takes (`http.requests`); only `[a-zA-Z_:][a-zA-Z0-9_:]*`
    /// under `SHMETRICS_NAMES_LEGACY` (see `name_rules`). A counter's
    /// trailing `_total` is removed (the exposition adds it back).
    pub name: shmetrics_str,
    /// The help text (any UTF-8; may be empty).
    pub help: shmetrics_str,
    /// The unit (OpenMetrics `# UNIT`), or empty. When set, the name must
    /// end in `_<unit>`.
    pub unit: shmetrics_str,
    /// The label names, in the order label values are given: an array of
    /// `label_count` strings (NULL when 0).
    pub label_names: *const shmetrics_str,
    /// How many label names.
    pub label_count: usize,
    /// The metric type: a `SHMETRICS_KIND_*` value.
    pub kind: u32,
    /// For gauges: a `SHMETRICS_GAUGE_*` value (0 = default, live sum).
    /// Must be 0 for other types.
    pub gauge_mode: u32,
    /// Histogram bucket upper bounds, strictly increasing, without +Inf:
    /// an array of `bucket_count` doubles. 0 buckets = the Prometheus
    /// client defaults (0.005 to 10). Must be 0 for other types.
    pub buckets: *const f64,
    /// How many bucket bounds.
    pub bucket_count: usize,
    /// Summary quantiles to report, each in [0, 1], strictly increasing;
    /// estimated over the window below within 0.99% relative error. None
    /// (the default) means count and sum only.
    pub quantiles: *const f64,
    /// How many quantiles.
    pub quantile_count: usize,
    /// Summary window in milliseconds; 0 = default (10 minutes).
    pub max_age_ms: u64,
    /// Summary window buckets; 0 = default (5).
    pub age_buckets: u32,
    /// The most series this family may hold besides its overflow series;
    /// 0 = only the store's capacity limits it.
    pub max_series: u32,
    /// Histograms: native (exponential) buckets, as client_golang's native
    /// histograms. Also turned on by any of the `native_*` fields below
    /// being non-zero; each of them left 0 takes its default. A native
    /// histogram with `bucket_count` 0 has no classic buckets. Must be
    /// 0 (and the fields 0) for other types. (A byte, non-zero for true.)
    pub native: u8,
    /// Native histograms: the bucket factor (client_golang's
    /// `NativeHistogramBucketFactor`, greater than 1); 0 = default (1.1,
    /// which gives schema 3).
    pub native_bucket_factor: f64,
    /// Native histograms: the zero bucket's threshold; 0 = default
    /// (2^-128). The store raises it to at least 2^-64.
    pub native_zero_threshold: f64,
    /// Native histograms: the most populated buckets a scrape shows
    /// before the resolution is lowered; 0 = default (160), `UINT32_MAX`
    /// = no limit.
    pub native_max_buckets: u32,
    /// Counters and histograms with classic buckets: keep OpenMetrics
    /// exemplars, the latest of each counter series and of each classic
    /// bucket over all processes, recorded by
    /// `shmetrics_counter_add_exemplar`, `shmetrics_counter_inc_exemplar`
    /// and `shmetrics_observe_exemplar` and shown in the OpenMetrics
    /// exposition. Part of the definition: the same name with and without
    /// exemplars conflicts. Must be false for other types and for
    /// native-only histograms. (A byte, non-zero for true.)
    pub exemplars: u8,
    /// Series TTL in milliseconds; 0 = none (series stay until deleted).
    /// A series of the family that no process updated for this long is
    /// no longer exported, and a writer adding a series to the family
    /// later reuses its space. Updates through a handle of such a series
    /// then fail with `SHMETRICS_STALE_HANDLE`: get the series again with
    /// `shmetrics_series_get` (it starts from zero) and retry. Between
    /// 100 and 4294967295 (about 49 days); other values fail with
    /// `SHMETRICS_INVALID_OPTIONS`. Part of the definition.
    pub ttl_ms: u64,
    /// Counters: expose the name as given in the Prometheus text and
    /// protobuf formats, with `_total` only if the name has it (as
    /// nginx-lua-prometheus does), instead of always adding `_total`
    /// (false, as client_python does). OpenMetrics samples are named
    /// `name_total` either way. Part of the definition. (A byte, non-zero
    /// for true.)
    pub name_as_given: u8,
    /// Which names to take: a `SHMETRICS_NAMES_*` value. 0
    /// (`SHMETRICS_NAMES_UTF8`) takes any UTF-8 metric and label name
    /// (label names not starting with `__`); `SHMETRICS_NAMES_LEGACY`
    /// refuses names outside `[a-zA-Z_:][a-zA-Z0-9_:]*` (metric) and
    /// `[a-zA-Z_][a-zA-Z0-9_]*` (label) with `SHMETRICS_INVALID_NAME`, as
    /// PromPHP, nginx-lua-prometheus and Ruby's prometheus-client do. A
    /// check only, not part of the definition.
    pub name_rules: u32,
    /// Exposition hints: `SHMETRICS_HINT_*` bits (0: the defaults, as
    /// client_python and client_golang write). Unknown bits are refused
    /// with `SHMETRICS_INVALID_OPTIONS`. Not part of the definition.
    pub hints: u32,
}

impl shmetrics_family_desc {
    pub(crate) fn to_core(self) -> Result<FamilyDesc, FfiError> {
        let kind = kind_from_u32(self.kind)?;
        let mut d = FamilyDesc::new(self.name.to_str("desc.name")?, kind);
        d.help = self.help.to_str("desc.help")?.to_owned();
        d.unit = self.unit.to_str("desc.unit")?.to_owned();
        d.label_names = ptr::slice(self.label_names, self.label_count, "desc.label_names")?
            .iter()
            .map(|s| s.to_str("desc.label_names").map(str::to_owned))
            .collect::<Result<_, _>>()?;
        d.gauge_mode = gauge_mode_from_u32(self.gauge_mode)?;
        d.buckets = ptr::slice(self.buckets, self.bucket_count, "desc.buckets")?.to_vec();
        d.summary.quantiles =
            ptr::slice(self.quantiles, self.quantile_count, "desc.quantiles")?.to_vec();
        if self.max_age_ms != 0 {
            d.summary.max_age = Duration::from_millis(self.max_age_ms);
        }
        if self.age_buckets != 0 {
            d.summary.age_buckets = self.age_buckets;
        }
        d.max_series = self.max_series;
        d.exemplars = self.exemplars != 0;
        d.name_as_given = self.name_as_given != 0;
        d.name_rules = match self.name_rules {
            0 => NameRules::Utf8,
            1 => NameRules::Legacy,
            n => {
                return Err(FfiError::Other(
                    shmetrics_result::SHMETRICS_INVALID_OPTIONS,
                    format!("unknown name_rules {n}: SHMETRICS_NAMES_UTF8 (0) or SHMETRICS_NAMES_LEGACY (1)"),
                ))
            }
        };
        d.hints = hints_from_u32(self.hints)?;
        if self.ttl_ms != 0 {
            d = d.ttl(Duration::from_millis(self.ttl_ms));
        }
        let native_set = self.native != 0
            || self.native_bucket_factor != 0.0
            || self.native_zero_threshold != 0.0
            || self.native_max_buckets != 0;
        if native_set {
            let default = NativeOpts::default();
            d.native = Some(NativeOpts {
                bucket_factor: if self.native_bucket_factor == 0.0 {
                    default.bucket_factor
                } else {
                    self.native_bucket_factor
                },
                zero_threshold: if self.native_zero_threshold == 0.0 {
                    default.zero_threshold
                } else {
                    self.native_zero_threshold
                },
                max_buckets: match self.native_max_buckets {
                    0 => default.max_buckets,
                    u32::MAX => 0,
                    n => n,
                },
            });
        }
        Ok(d)
    }
}

/// A registered family: a small value to copy and keep. Valid for the
/// store handle that made it until the store is wiped.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct shmetrics_family {
    /// The metric type (a `SHMETRICS_KIND_*` value), for information.
    pub kind: u32,
    /// How many label values a series of this family takes, for
    /// information.
    pub label_count: u32,
    /// The handle itself; its contents are private to the library.
    pub opaque: [u64; 6],
}

impl From<Family> for shmetrics_family {
    fn from(f: Family) -> shmetrics_family {
        shmetrics_family {
            kind: f.kind() as u32,
            label_count: f.label_count() as u32,
            opaque: f.to_raw(),
        }
    }
}

impl shmetrics_family {
    pub(crate) fn to_core(self) -> Result<Family, FfiError> {
        Family::from_raw(self.opaque).ok_or_else(|| {
            FfiError::Other(
                shmetrics_result::SHMETRICS_STALE_HANDLE,
                "the family handle was not made by shmetrics_register (it is zeroed or \
                 damaged); register the family again"
                    .to_owned(),
            )
        })
    }
}

/// A series handle for updates: a small value to copy and keep. Valid for
/// the store handle that made it until the store is wiped.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct shmetrics_series {
    /// The handle itself; its contents are private to the library.
    pub opaque: [u64; 7],
}

impl From<Series> for shmetrics_series {
    #[inline]
    fn from(s: Series) -> shmetrics_series {
        shmetrics_series { opaque: s.to_raw() }
    }
}

impl shmetrics_series {
    /// The core's handle. Most handles (no TTL, no native buckets, not a
    /// summary) take `from_raw_plain`, a few instructions inline; the
    /// rest are decoded out of line.
    #[inline(always)]
    pub(crate) fn to_core(self) -> Result<Series, FfiError> {
        match Series::from_raw_plain(&self.opaque) {
            Some(s) => Ok(s),
            None => decode(self.opaque),
        }
    }
}

/// [`Series::from_raw`] of a handle that `from_raw_plain` does not take.
#[inline(never)]
fn decode(raw: [u64; 7]) -> Result<Series, FfiError> {
    match Series::from_raw(raw) {
        Some(s) => Ok(s),
        None => Err(bad_series()),
    }
}

#[cold]
#[inline(never)]
fn bad_series() -> FfiError {
    FfiError::Other(
        shmetrics_result::SHMETRICS_STALE_HANDLE,
        "the series handle was not made by shmetrics_series_get (it is zeroed or damaged); \
         get the series again"
            .to_owned(),
    )
}

/// Counts and capacities of a store: a mirror of the store's statistics.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct shmetrics_stats {
    /// The file's layout version.
    pub layout_version: u32,
    /// Families registered.
    pub families: u32,
    /// Most families.
    pub families_capacity: u32,
    /// Series allocated, overflow and deleted series included.
    pub series_allocated: u32,
    /// Most series.
    pub series_capacity: u32,
    /// Writer slots (not counting the shared slot).
    pub writers_capacity: u32,
    /// Slots owned by a live process.
    pub writers_live: u32,
    /// Slots whose process died or released them, awaiting reuse.
    pub writers_dead: u32,
    /// The file's size in bytes (mostly sparse).
    pub file_size: u64,
    /// Label bytes used.
    pub label_bytes_used: u64,
    /// Label bytes available.
    pub label_bytes_capacity: u64,
    /// Value cells used per writer.
    pub cells_used: u64,
    /// Value cells per writer.
    pub cells_capacity: u64,
    /// Slot claims since creation.
    pub writer_claims_total: u64,
    /// Claims that reused a dead process's slot.
    pub writer_reuses_total: u64,
    /// Processes that found no free slot and shared the spare one.
    pub writers_exhausted_total: u64,
    /// New label sets sent to an overflow series.
    pub overflows_total: u64,
    /// Times a process died holding the store lock and the store was
    /// repaired.
    pub lock_recoveries_total: u64,
    /// Sketch cells (summary quantiles, native buckets) used per writer.
    pub sketch_cells_used: u64,
    /// Sketch cells per writer.
    pub sketch_cells_capacity: u64,
    /// Series of families with a TTL that expired.
    pub series_expired_total: u64,
}

impl From<&StoreStats> for shmetrics_stats {
    fn from(s: &StoreStats) -> shmetrics_stats {
        shmetrics_stats {
            layout_version: s.layout_version,
            families: s.families,
            families_capacity: s.families_capacity,
            series_allocated: s.series_allocated,
            series_capacity: s.series_capacity,
            writers_capacity: s.writers_capacity,
            writers_live: s.writers_live,
            writers_dead: s.writers_dead,
            file_size: s.file_size,
            label_bytes_used: s.label_bytes_used,
            label_bytes_capacity: s.label_bytes_capacity,
            cells_used: s.cells_used,
            cells_capacity: s.cells_capacity,
            writer_claims_total: s.writer_claims_total,
            writer_reuses_total: s.writer_reuses_total,
            writers_exhausted_total: s.writers_exhausted_total,
            overflows_total: s.overflows_total,
            lock_recoveries_total: s.lock_recoveries_total,
            sketch_cells_used: s.sketch_cells_used,
            sketch_cells_capacity: s.sketch_cells_capacity,
            series_expired_total: s.series_expired_total,
        }
    }
}

//! The store: opening a file, registering families, finding series, and
//! the per-process writer slot. Updates live in [`crate::update`], reading
//! in [`crate::snapshot`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Mutex, TryLockError};

use crate::error::{Error, ErrorKind, Result};
use crate::exemplar;
use crate::family::{FamilyDesc, GaugeMode, Kind};
use crate::native::{self, Native};
use crate::proc;
use crate::shm::layout::{
    self, slot_state, state, Capacities, FamilyRec, Fixed, SeriesRec, TOMBSTONE,
};
use crate::shm::trust::Trust;
use crate::shm::{self, LockGuard, Mapping, FORK_GENERATION};
use crate::sketch::SketchMapping;
use crate::window::{self, Window, SET_HEADER};

/// The default directory for store files.
pub const DEFAULT_DIR: &str = "/dev/shm";

/// How to open a store. Capacities apply only when the file is created; an
/// existing store keeps the capacities its creator chose.
#[derive(Clone, Debug)]
pub struct Options {
    /// Create the file if it does not exist (default `true`).
    pub create: bool,
    /// Map the file read-only; every write is then a [`ErrorKind::ReadOnly`]
    /// error. An exporter needs only this.
    pub read_only: bool,
    /// The file mode on creation: `0o600` (default) or `0o660`.
    pub mode: u32,
    /// Most families.
    pub max_families: u32,
    /// Most series, over all families (each family's overflow series
    /// included).
    pub max_series: u32,
    /// Bytes for names, help texts, label names and label values.
    pub label_bytes: u64,
    /// Most processes writing at once. More processes still work: they
    /// share one extra slot, and gauges lose their per-process meaning.
    pub max_writers: u32,
    /// 8-byte value cells per writer; `0` picks 16 per series.
    pub cells_per_writer: u64,
    /// 8-byte sketch cells per writer, for summary quantiles and native
    /// histogram buckets. A summary series with quantiles takes
    /// `age_buckets` × 4,229 of them (about 165 KiB a writer with the
    /// default 5 age buckets); a native histogram series `2 × 128 ×
    /// 2^schema` (2,048 at the default schema 3: 16 KiB a writer). The
    /// file is sparse and a writer touches only the cells its values fall
    /// in (a latency spread over three decades touches about 350 a
    /// summary set, or 80 native buckets at schema 3), so this costs
    /// address space, not memory. `0` picks 2,097,152 (16 MiB of address
    /// space a writer: 100 such summary series, or 1,024 native ones at
    /// schema 3). Exemplars take 68 cells (544 bytes) per place: per
    /// counter series, and per classic bucket of a histogram series, of a
    /// family that keeps them; a writer touches only the records of the
    /// places it records exemplars in.
    pub sketch_cells_per_writer: u64,
    /// A user, besides this process's user and root, that may own an
    /// existing store (a user id; see [`crate::user_id`] for names).
    /// Another owner is refused ([`ErrorKind::Untrusted`]).
    pub owner: Option<u32>,
    /// A group that may write an existing store (a group id; see
    /// [`crate::group_id`]): a writer refuses a group-writable store
    /// unless its group is this one, or is this process's own group and
    /// `mode` is `0o660`. A reader (`read_only`) accepts a store of any
    /// owner whose group is this one.
    pub group: Option<u32>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            create: true,
            read_only: false,
            mode: 0o600,
            max_families: 4096,
            max_series: 65_536,
            label_bytes: 16 << 20,
            max_writers: 128,
            cells_per_writer: 0,
            sketch_cells_per_writer: 0,
            owner: None,
            group: None,
        }
    }
}

impl Options {
    fn capacities(&self) -> Result<Capacities> {
        let opt = |msg: String| Error::new(ErrorKind::InvalidOptions, msg);
        let check = |what: &str, v: u64, max: u64| {
            if v == 0 || v > max {
                Err(opt(format!("{what} must be between 1 and {max}, got {v}")))
            } else {
                Ok(())
            }
        };
        check(
            "max_families",
            self.max_families as u64,
            layout::MAX_FAMILIES as u64,
        )?;
        check(
            "max_series",
            self.max_series as u64,
            layout::MAX_SERIES as u64,
        )?;
        check("label_bytes", self.label_bytes, layout::MAX_ARENA)?;
        check(
            "max_writers",
            self.max_writers as u64,
            layout::MAX_SLOTS as u64,
        )?;
        let cells = if self.cells_per_writer == 0 {
            (self.max_series as u64 * 16).min(layout::MAX_CELLS)
        } else {
            self.cells_per_writer
        };
        check("cells_per_writer", cells, layout::MAX_CELLS)?;
        let sketch_cells = match self.sketch_cells_per_writer {
            0 => DEFAULT_SKETCH_CELLS,
            n => n,
        };
        check("sketch_cells_per_writer", sketch_cells, layout::MAX_CELLS)?;
        if self.mode != 0o600 && self.mode != 0o660 {
            return Err(opt(format!(
                "mode must be 0o600 or 0o660, got {:#o}; stores are never world-accessible",
                self.mode
            )));
        }
        Ok(Capacities {
            max_families: self.max_families,
            max_slots: self.max_writers,
            max_series: self.max_series,
            arena_bytes: self.label_bytes,
            cells_per_slot: cells,
            sketch_cells_per_slot: sketch_cells,
        })
    }
}

/// Sketch cells per writer when the options leave it at 0.
const DEFAULT_SKETCH_CELLS: u64 = 1 << 21;

/// No slot claimed yet (low half of [`Store::local`]).
const NO_SLOT: u32 = u32::MAX;

/// Hands out a distinct tag to every `Store` value in this process, so a
/// handle cannot be used with a store other than the one that made it.
static NEXT_TAG: AtomicU32 = AtomicU32::new(1);

/// A store of metrics shared by all processes that open the same file.
///
/// `Store` is `Send + Sync`: share one per process (for example in an
/// `Arc` or a `static`). Each `Store` value writes through its own writer
/// slot, claimed on its first update and again after a `fork()`.
#[derive(Debug)]
pub struct Store {
    pub(crate) map: Mapping,
    pub(crate) tag: u32,
    /// The fork generation (high 32 bits) and slot (low 32 bits) this
    /// process writes through.
    local: AtomicU64,
    /// This process's index of the family records by name, so that
    /// registering (which PHP does for every metric on every request) does
    /// not scan every record: see [`FamilyIndex`].
    family_index: Mutex<FamilyIndex>,
    /// The summary sketch's mapping, the same in every process.
    pub(crate) sketch: SketchMapping,
    /// The native histograms' bucket bounds, computed once per process.
    pub(crate) native_tables: &'static native::Tables,
}

/// Family record positions by name, as read from the records by this
/// process. Records are only ever appended between wipes and a live
/// record's name never changes, so the index reads each record once: it
/// catches up on the records appended since, and starts over after a wipe.
#[derive(Debug, Default)]
struct FamilyIndex {
    epoch: u32,
    /// Records before this one are indexed. It stops at a record still
    /// being inserted, so that record is read again once it is done.
    read_up_to: usize,
    by_name: HashMap<Box<[u8]>, u32>,
}

impl FamilyIndex {
    /// The position of the live family that `is_it` recognises by its
    /// name, if there is one. Every answer is checked against the record.
    fn find(
        &mut self,
        store: &Store,
        families: &[FamilyRec],
        epoch: u32,
        name: &str,
        is_it: impl Fn(&FamilyRec) -> bool,
    ) -> Option<usize> {
        let check = |i: u32| Some(i as usize).filter(|&i| families.get(i).is_some_and(&is_it));
        if self.epoch == epoch {
            if let Some(i) = self.by_name.get(name.as_bytes()).and_then(|&i| check(i)) {
                return Some(i);
            }
        } else {
            *self = FamilyIndex {
                epoch,
                ..FamilyIndex::default()
            };
        }
        while let Some(f) = families.get(self.read_up_to) {
            match f.state.load(Acquire) {
                state::INIT => break,
                state::LIVE => {
                    if let Some(n) = store.arena_str(&f.name) {
                        self.by_name.insert(n.into(), self.read_up_to as u32);
                    }
                }
                _ => {}
            }
            self.read_up_to += 1;
        }
        match self.by_name.get(name.as_bytes()).and_then(|&i| check(i)) {
            Some(i) => Some(i),
            // Not indexed, or indexed under a stale position (a record
            // still being inserted when last read): the full scan decides.
            None if self.read_up_to < families.len() => families.iter().position(is_it),
            None => None,
        }
    }
}

/// A registered family. Cheap to copy; valid for the [`Store`] that made it
/// until the store is wiped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    pub(crate) tag: u32,
    pub(crate) epoch: u32,
    pub(crate) index: u32,
    pub(crate) kind: Kind,
    pub(crate) mode: GaugeMode,
    pub(crate) n_labels: u32,
    pub(crate) shape: Shape,
    pub(crate) n_bounds: u32,
    pub(crate) bounds_off: u64,
    pub(crate) overflow: u32,
    /// A summary's quantile window; `age_buckets` 0 for none.
    pub(crate) window: Window,
    /// A histogram's native schema code ([`native::code`]); 0 for none.
    pub(crate) native: u32,
    /// Whether the family keeps exemplars.
    pub(crate) exemplars: bool,
    /// Whether the family's series expire (see `ttl.rs`).
    pub(crate) ttl: bool,
}

impl Family {
    /// The metric type.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// How many label values a series of this family takes.
    pub fn label_count(&self) -> usize {
        self.n_labels as usize
    }

    /// The gauge mode (meaningful for gauges only).
    pub fn gauge_mode(&self) -> GaugeMode {
        self.mode
    }

    /// The integer cell (after the series' first) that holds each
    /// slot's time of its last update, for a family with a TTL; 0 for
    /// none.
    pub(crate) fn ttl_cell(&self) -> u32 {
        if !self.ttl {
            return 0;
        }
        let places = exemplar_places(
            self.kind,
            self.n_bounds as usize,
            self.native != 0,
            self.exemplars,
        ) as u32;
        self.shape.ints.saturating_sub(places + 1)
    }

    fn series_handle(
        &self,
        id: u32,
        word: u32,
        int_off: u64,
        float_off: u64,
        sketch_off: u64,
    ) -> Series {
        Series {
            tag: self.tag,
            epoch: self.epoch,
            id,
            family: self.index,
            int_off: int_off as u32,
            float_off: float_off as u32,
            kind: self.kind,
            mode: self.mode,
            n_bounds: self.n_bounds,
            bounds_off: self.bounds_off,
            window: self.window,
            sketch_off,
            native: self.native,
            exemplars: self.exemplars,
            ttl_cell: self.ttl_cell(),
            live: word,
        }
    }
}

/// A handle to one series, for the hot path: updating through it takes no
/// lock, makes no system call and allocates nothing. Cheap to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Series {
    pub(crate) tag: u32,
    pub(crate) epoch: u32,
    pub(crate) id: u32,
    pub(crate) family: u32,
    /// First integer cell in each slot region.
    pub(crate) int_off: u32,
    /// First float cell in each slot region.
    pub(crate) float_off: u32,
    pub(crate) kind: Kind,
    pub(crate) mode: GaugeMode,
    pub(crate) n_bounds: u32,
    pub(crate) bounds_off: u64,
    /// A summary's quantile window; `age_buckets` 0 for none.
    pub(crate) window: Window,
    /// First sketch cell in each slot's sketch region.
    pub(crate) sketch_off: u64,
    /// A histogram's native schema code ([`native::code`]); 0 for none.
    /// The zero threshold is read from the family record when needed.
    pub(crate) native: u32,
    /// Whether the family keeps exemplars.
    pub(crate) exemplars: bool,
    /// For a family with a TTL, the integer cell (from `int_off`) of the
    /// time of the last update; 0 for a family without.
    pub(crate) ttl_cell: u32,
    /// For a family with a TTL, the series record's state word when the
    /// handle was made: an update checks it is still that (see `ttl.rs`).
    pub(crate) live: u32,
}

impl Series {
    /// The metric type of the series' family.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Exemplar places of the series (none if its family keeps no
    /// exemplars): one for a counter, one per classic bucket (`+Inf`
    /// included) for a histogram.
    pub(crate) fn exemplar_places(&self) -> usize {
        exemplar_places(
            self.kind,
            self.n_bounds as usize,
            self.native != 0,
            self.exemplars,
        )
    }
}

/// Exemplar places of a series: one for a counter, one per classic bucket
/// (`+Inf` included) for a histogram, none without exemplars.
pub(crate) fn exemplar_places(kind: Kind, n_bounds: usize, native: bool, on: bool) -> usize {
    match kind {
        _ if !on => 0,
        Kind::Counter => 1,
        Kind::Histogram => classic_cells(n_bounds, native),
        _ => 0,
    }
}

/// The cells a series takes in each slot region: integer cells (counts,
/// allocated upwards from the region's start) and float cells (sums and
/// values, allocated downwards from its end). Keeping the two kinds apart
/// lets a reader merge each with one tight, vectorisable loop, and lets
/// integer counts use `fetch_add`, which is cheaper than a float
/// compare-and-swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub ints: u32,
    pub floats: u32,
}

/// What a family record says of its type: see [`Store::family_type`].
pub(crate) struct FamilyType {
    pub kind: Kind,
    pub mode: GaugeMode,
    pub n_bounds: u64,
    pub bounds_off: u64,
    pub shape: Shape,
    /// A summary's quantile window (`age_buckets` 0 for none).
    pub window: Window,
    /// A histogram's native buckets, if it has them.
    pub native: Option<Native>,
    /// Exemplar places per series (0: the family keeps no exemplars).
    pub exemplars: usize,
    /// Series TTL in milliseconds (0: none).
    pub ttl_ms: u64,
}

/// Where a family's series keep their exemplars, from the series' first
/// cells: the first timestamp cell (after the other integer cells), the
/// first record cell (after any native buckets), and the places.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExemplarPlaces {
    ts: usize,
    first: usize,
    places: usize,
}

impl ExemplarPlaces {
    /// Calls `f` with the timestamp cell and the record of each exemplar
    /// place of series `rec` in one slot's cells and sketch cells
    /// (skipping any a corrupt record puts outside them).
    pub fn each(
        self,
        rec: &SeriesRec,
        cells: &[AtomicU64],
        sketch: &[AtomicU64],
        f: impl Fn(&AtomicU64, &[AtomicU64]),
    ) {
        let ts = (rec.int_off.load(Relaxed) as usize).saturating_add(self.ts);
        let first = (rec.sketch_off.load(Relaxed) as usize).saturating_add(self.first);
        for p in 0..self.places {
            let cell = cells.get(ts.saturating_add(p));
            let at = first.saturating_add(p * exemplar::RECORD);
            let r = sketch.get(at..at.saturating_add(exemplar::RECORD));
            if let (Some(cell), Some(r)) = (cell, r) {
                f(cell, r);
            }
        }
    }
}

impl FamilyType {
    /// Where series `rec` of this family keeps its quantile sketches or
    /// native buckets, if it has any.
    pub fn sketch_use(&self, rec: &SeriesRec) -> Option<SketchUse> {
        let (header, kind) = if let Some(n) = self.native {
            (
                classic_cells(self.n_bounds as usize, true),
                SketchKind::Native(n.bins()),
            )
        } else if self.window.age_buckets > 0 {
            (1, SketchKind::Summary(self.window.age_buckets))
        } else {
            return None;
        };
        Some(SketchUse {
            header: (rec.int_off.load(Relaxed) as usize).checked_add(header)?,
            sketch: rec.sketch_off.load(Relaxed) as usize,
            kind,
        })
    }

    /// Where the family's series keep exemplars, if it keeps them.
    pub fn exemplar_places(&self) -> Option<ExemplarPlaces> {
        (self.exemplars > 0).then(|| ExemplarPlaces {
            ts: (self.shape.ints as usize).saturating_sub(self.exemplars),
            first: self.native.map_or(0, |n| n.cells()),
            places: self.exemplars,
        })
    }

    /// The integer cell (from a series' first) of each slot's time of its
    /// last update, for a family with a TTL.
    pub fn ttl_cell(&self) -> Option<usize> {
        (self.ttl_ms > 0).then(|| (self.shape.ints as usize).saturating_sub(self.exemplars + 1))
    }
}

/// Classic integer cells of a histogram: a count per bucket including
/// `+Inf`, or none for a native-only histogram (whose count is the sum
/// of its native buckets).
pub(crate) fn classic_cells(n_bounds: usize, native: bool) -> usize {
    if native && n_bounds == 0 {
        0
    } else {
        n_bounds.saturating_add(1)
    }
}

/// The cell shape of a series of a family; `sets` is a summary's number
/// of quantile sets (its age buckets, or 0 without quantiles), `native`
/// whether a histogram has native buckets, `exemplars` its exemplar
/// places (each takes a timestamp cell, after the others), `ttl` whether
/// the family's series expire (one more cell, before the exemplars'
/// ones: each slot's time of its last update).
pub(crate) fn cells_for(
    kind: Kind,
    n_bounds: usize,
    sets: u32,
    native: bool,
    exemplars: usize,
    ttl: bool,
) -> Shape {
    let (ints, floats) = match kind {
        // Integral increments, then fractional ones.
        Kind::Counter => (1, 1),
        // A "written" marker (or the time of the last set, for the
        // most-recent modes), then the value.
        Kind::Gauge => (1, 1),
        // One count per classic bucket including +Inf, then the native
        // header (see `native`), then the sum. (Saturating: the values
        // come from the file, which may be corrupt; a saturated shape
        // never matches, so the record is rejected.)
        Kind::Histogram => (
            u32::try_from(classic_cells(n_bounds, native))
                .unwrap_or(u32::MAX)
                .saturating_add(if native { native::HEADER as u32 } else { 0 }),
            1,
        ),
        // The count and a header per quantile set (see `window`), then
        // the sum.
        Kind::Summary => (
            sets.saturating_mul(SET_HEADER as u32)
                .saturating_add(1 + u32::from(sets > 0)),
            1,
        ),
    };
    Shape {
        ints: ints
            .saturating_add(u32::from(ttl))
            .saturating_add(u32::try_from(exemplars).unwrap_or(u32::MAX)),
        floats,
    }
}

/// Encodes strings as a u32 little-endian length followed by the bytes.
fn encode_strs<S: AsRef<str>>(out: &mut Vec<u8>, items: &[S]) {
    for s in items {
        let s = s.as_ref().as_bytes();
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s);
    }
}

/// Iterates strings encoded by [`encode_strs`]; yields `None` for a
/// malformed encoding (a corrupt store).
pub(crate) fn decode_strs(mut b: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        if b.len() < 4 {
            b = &[];
            return Some(None);
        }
        let n = u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) as usize;
        if b.len() - 4 < n {
            b = &[];
            return Some(None);
        }
        let (s, rest) = b[4..].split_at(n);
        b = rest;
        Some(Some(s))
    })
}

fn labels_equal(encoded: &[u8], values: &[&str]) -> bool {
    let mut it = decode_strs(encoded);
    for v in values {
        match it.next() {
            Some(Some(s)) if s == v.as_bytes() => {}
            _ => return false,
        }
    }
    it.next().is_none()
}

/// The hash of a series key, stable across builds and processes.
pub(crate) fn series_hash(family: u32, values: &[&str]) -> u64 {
    use xxhash_rust::xxh3::xxh3_64_with_seed;
    let mut h = xxh3_64_with_seed(&family.to_le_bytes(), 0x5348_4d45_5452_4958);
    for v in values {
        h = xxh3_64_with_seed(v.as_bytes(), h);
    }
    h
}

/// Hash of a family's defining parts (not its help text: a changed help
/// text during a rolling deploy is no conflict; the first one stays).
fn def_hash(d: &FamilyDesc) -> u64 {
    let mut b = Vec::new();
    b.extend_from_slice(&(d.kind as u32).to_le_bytes());
    b.extend_from_slice(&(d.gauge_mode as u32).to_le_bytes());
    encode_strs(&mut b, &d.label_names);
    encode_strs(&mut b, &[&d.unit]);
    for x in d.buckets.iter().chain(&d.summary.quantiles) {
        b.extend_from_slice(&x.to_bits().to_le_bytes());
    }
    b.extend_from_slice(&(d.summary.max_age.as_millis() as u64).to_le_bytes());
    b.extend_from_slice(&d.summary.age_buckets.to_le_bytes());
    // Native options as they act: the schema, the effective zero
    // threshold and the bucket limit. (Absent for other families, whose
    // hashes are then what they were before native buckets existed.)
    if let Some(n) = native_of(d) {
        b.extend_from_slice(b"native");
        b.extend_from_slice(&n.schema.to_le_bytes());
        b.extend_from_slice(&n.zero_threshold.to_bits().to_le_bytes());
        b.extend_from_slice(&n.max_buckets.to_le_bytes());
    }
    // Likewise absent without exemplars.
    if d.exemplars {
        b.extend_from_slice(b"exemplars");
    }
    if let Some(ttl) = d.ttl {
        b.extend_from_slice(b"ttl");
        b.extend_from_slice(&(ttl.as_millis() as u64).to_le_bytes());
    }
    xxhash_rust::xxh3::xxh3_64(&b)
}

/// The native parameters of a normalized definition.
fn native_of(d: &FamilyDesc) -> Option<Native> {
    let n = d.native.as_ref()?;
    Some(Native {
        // `normalized` checked the factor.
        schema: native::schema_for(n.bucket_factor).unwrap_or(native::MIN_SCHEMA),
        zero_threshold: n.zero_threshold.max(native::MIN_ZERO_THRESHOLD),
        max_buckets: n.max_buckets,
    })
}

/// A series that uses sketch cells: where its header (in the integer
/// cells) and its sketch cells start, and what they hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SketchUse {
    header: usize,
    sketch: usize,
    kind: SketchKind,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum SketchKind {
    /// A summary's quantile sets (its age buckets).
    Summary(u32),
    /// A native histogram's buckets per side.
    Native(usize),
}

enum Found {
    Live(u32),
    /// An entry whose insert has not finished (or whose writer died).
    Pending,
    Absent,
}

impl Store {
    /// Opens the store at `path`, creating it if `options.create` is set
    /// and it does not exist.
    ///
    /// A file that is not a store, was cut short, is corrupt or comes from
    /// another layout version gives an error naming the file and the
    /// problem; it is never reinitialised.
    pub fn open(path: impl AsRef<Path>, options: &Options) -> Result<Store> {
        let path = path.as_ref();
        shm::install_fork_hook();
        let caps = options.capacities()?;
        let trust = Trust {
            owner: options.owner,
            group: options.group,
            own_group_writes: options.mode == 0o660,
        };
        let map = match Mapping::open(path, !options.read_only, &trust) {
            Ok(m) => m,
            Err(e) if options.create && !options.read_only && e.kind() == ErrorKind::Io => {
                if path.exists() {
                    // Another process created it since this one looked
                    // (or it exists and could not be opened: the same
                    // error again).
                    Mapping::open(path, true, &trust)?
                } else {
                    Mapping::create_or_open(
                        path,
                        Fixed::plan(caps, proc::unix_nanos()),
                        options.mode,
                        &trust,
                    )?
                }
            }
            Err(e) => return Err(e),
        };
        Ok(Store {
            map,
            tag: NEXT_TAG.fetch_add(1, Relaxed),
            local: AtomicU64::new(u64::MAX),
            family_index: Mutex::new(FamilyIndex::default()),
            sketch: SketchMapping::summary(),
            native_tables: native::Tables::get(),
        })
    }

    /// The default store path: `$SHMETRICS_STORE` if set, else
    /// `/dev/shm/shmetrics`.
    pub fn default_path() -> PathBuf {
        std::env::var_os("SHMETRICS_STORE")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(DEFAULT_DIR).join("shmetrics"))
    }

    /// The store file's path.
    pub fn path(&self) -> &Path {
        self.map.path()
    }

    /// Whether the store was opened read-only.
    pub fn is_read_only(&self) -> bool {
        !self.map.writable()
    }

    pub(crate) fn epoch(&self) -> u32 {
        self.map.header().hot.epoch.load(Acquire) as u32
    }

    fn check_writable(&self) -> Result<()> {
        if self.map.writable() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::ReadOnly,
                "open the store without read_only to write",
            )
            .with_path(self.path()))
        }
    }

    pub(crate) fn lock(&self) -> Result<LockGuard<'_>> {
        let guard = self.map.lock()?;
        if guard.recovered {
            self.map
                .header()
                .alloc
                .lock_recoveries_total
                .fetch_add(1, Relaxed);
            self.recover();
        }
        Ok(guard)
    }

    /// Repairs what a lock holder that died was doing. Every step is
    /// idempotent, so a repair that is itself interrupted is simply redone
    /// by the next lock holder.
    fn recover(&self) {
        let h = self.map.header();
        if h.hot.wipe_pending.load(Acquire) != 0 {
            self.wipe_locked();
            return;
        }
        for f in self.live_range_families() {
            if f.state.load(Acquire) == state::INIT {
                f.state.store(state::DEAD, Release);
            }
        }
        let series_used = (h.alloc.series_used.load(Acquire)).min(self.map.fixed().max_series);
        let recs = &self.map.series()[..series_used as usize];
        let fams = self.live_range_families();
        let has_ttl = |fam: u32| {
            fams.get(fam as usize)
                .is_some_and(|f| f.ttl_ms.load(Relaxed) > 0)
        };
        for (id, rec) in recs.iter().enumerate() {
            let word = rec.state.load(Acquire);
            if state::of(word) != state::INIT {
                continue;
            }
            // Publish it if the dead writer got as far as the index, else
            // abandon it: its bytes and cells leak until the next wipe,
            // unless its family has a TTL, whose records are reused (its
            // cells are zero: a new record's are fresh, a reused one's were
            // zeroed before it went on the free list, and no handle to it
            // was ever made).
            let indexed = self
                .index_position(id as u32, rec.hash.load(Relaxed))
                .is_some();
            let to = if indexed {
                state::LIVE
            } else if has_ttl(rec.family.load(Relaxed)) {
                state::REUSABLE
            } else {
                state::DEAD
            };
            rec.state.store(state::with(word, to), Release);
        }
        // The free lists, from the records: the dead lock holder may have
        // been taking a record off one, or putting one on.
        self.rebuild_free_lists();
        // Recount each family's series from the records.
        let mut counts = vec![0u32; fams.len()];
        for rec in recs {
            let fam = rec.family.load(Relaxed) as usize;
            if state::of(rec.state.load(Acquire)) == state::LIVE && fam < counts.len() {
                counts[fam] += 1;
            }
        }
        for (f, n) in fams.iter().zip(counts) {
            let overflow_alloc = u32::from(f.overflow_series.load(Relaxed) != 0);
            f.series_count
                .store(n.saturating_sub(overflow_alloc), Relaxed);
        }
    }

    fn live_range_families(&self) -> &[FamilyRec] {
        let used = self
            .map
            .header()
            .alloc
            .families_used
            .load(Acquire)
            .min(self.map.fixed().max_families);
        &self.map.families()[..used as usize]
    }

    // ----- families ------------------------------------------------------

    /// Registers a family, or returns the existing family of the same name
    /// if its definition is the same (from this or any other process).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidName`] or [`ErrorKind::InvalidOptions`] for a bad
    /// definition, [`ErrorKind::Conflict`] if the name is taken by a
    /// different definition, [`ErrorKind::StoreFull`] if there is no room.
    pub fn register(&self, desc: &FamilyDesc) -> Result<Family> {
        let d = desc.normalized()?;
        let hash = def_hash(&d);
        let epoch = self.epoch();
        if let Some(f) = self.find_family(&d, hash, epoch)? {
            return Ok(f);
        }
        self.check_writable()?;
        let _guard = self.lock()?;
        let epoch = self.epoch();
        if let Some(f) = self.find_family(&d, hash, epoch)? {
            return Ok(f);
        }
        self.insert_family(&d, hash, epoch)
    }

    /// Looks a family up by name without the lock.
    fn find_family(&self, d: &FamilyDesc, hash: u64, epoch: u32) -> Result<Option<Family>> {
        let families = self.live_range_families();
        let is_it = |f: &FamilyRec| {
            f.state.load(Acquire) == state::LIVE
                && self.arena_str(&f.name) == Some(d.name.as_bytes())
        };
        let found = match self.family_index.try_lock() {
            Ok(mut index) => index.find(self, families, epoch, &d.name, is_it),
            Err(TryLockError::Poisoned(p)) => {
                let mut index = p.into_inner();
                *index = FamilyIndex::default();
                index.find(self, families, epoch, &d.name, is_it)
            }
            // Only after a fork() from a process where another thread held
            // the lock: it stays locked for good in the child, which then
            // scans.
            Err(TryLockError::WouldBlock) => families.iter().position(is_it),
        };
        let Some(i) = found else {
            return Ok(None);
        };
        let f = &families[i];
        if f.def_hash.load(Relaxed) != hash {
            return Err(self.conflict(d, f));
        }
        Ok(Some(self.family_handle(i as u32, f, epoch)?))
    }

    fn conflict(&self, d: &FamilyDesc, f: &FamilyRec) -> Error {
        let kind = Kind::from_u32(f.kind.load(Relaxed))
            .map(Kind::as_str)
            .unwrap_or("unknown");
        let labels: Vec<String> = self
            .arena_str(&f.label_names)
            .map(|b| {
                decode_strs(b)
                    .map(|s| String::from_utf8_lossy(s.unwrap_or(b"?")).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let mode = GaugeMode::from_u32(f.gauge_mode.load(Relaxed))
            .map(GaugeMode::as_str)
            .unwrap_or("?");
        Error::new(
            ErrorKind::Conflict,
            format!(
                "{:?} is already registered as a {kind} with labels {labels:?} (gauge mode {mode}), \
                 which differs from this {} with labels {:?} in its type, labels, buckets, native \
                 bucket options, exemplars, unit, mode or summary options",
                d.name,
                d.kind.as_str(),
                d.label_names
            ),
        )
        .with_path(self.path())
    }

    /// A family record's type, checked for consistency: the record comes
    /// from a file that may be corrupt.
    pub(crate) fn family_type(&self, f: &FamilyRec) -> Option<FamilyType> {
        let kind = Kind::from_u32(f.kind.load(Relaxed))?;
        let mode = GaugeMode::from_u32(f.gauge_mode.load(Relaxed))?;
        let n_bounds = f.buckets.len.load(Relaxed);
        let bounds_off = f.buckets.off.load(Relaxed);
        if kind == Kind::Histogram && self.map.arena_f64s(bounds_off, n_bounds).is_none() {
            return None;
        }
        let shape = Shape {
            ints: f.int_cells.load(Relaxed),
            floats: f.float_cells.load(Relaxed),
        };
        let exemplars = match f.exemplars.load(Relaxed) {
            0 => false,
            1 => true,
            _ => return None,
        };
        let native_code = f.native_schema.load(Relaxed);
        let places = exemplar_places(kind, n_bounds as usize, native_code != 0, exemplars);
        if exemplars && places == 0 {
            return None; // only counters and classic histograms keep them
        }
        // The exemplar records follow any native buckets.
        let sketch_cells = u64::from(f.sketch_cells.load(Relaxed))
            .checked_sub((places * exemplar::RECORD) as u64)?;
        let native = if native_code == 0 {
            None
        } else {
            // Native buckets: a histogram with a known schema, the bins
            // of that schema, a zero threshold no lower than the store's
            // and the sketch cells of two sides.
            let schema = native::schema_of(native_code)?;
            let n = Native {
                schema,
                zero_threshold: f64::from_bits(f.native_zero_threshold.load(Relaxed)),
                max_buckets: f.native_max_buckets.load(Relaxed),
            };
            let ok = kind == Kind::Histogram
                && f.native_bins.load(Relaxed) == n.bins() as u64
                && n.zero_threshold >= native::MIN_ZERO_THRESHOLD
                && n.zero_threshold.is_finite()
                && sketch_cells == n.cells() as u64;
            if !ok {
                return None;
            }
            Some(n)
        };
        if kind == Kind::Histogram && native.is_none() && n_bounds == 0 {
            return None; // a classic histogram has at least one bound
        }
        let window = if kind == Kind::Summary && f.quantiles.len.load(Relaxed) > 0 {
            let age_buckets = f.summary_age_buckets.load(Relaxed);
            let period_ms = f.summary_max_age_ms.load(Relaxed) / u64::from(age_buckets.max(1));
            let window = Window {
                age_buckets,
                period_ms: u32::try_from(period_ms).ok()?,
            };
            let expect = u64::from(age_buckets) * self.sketch.cells() as u64;
            if age_buckets == 0 || period_ms == 0 || sketch_cells != expect {
                return None;
            }
            self.map
                .arena_f64s(f.quantiles.off.load(Relaxed), f.quantiles.len.load(Relaxed))?;
            window
        } else if sketch_cells != 0 && native.is_none() {
            return None;
        } else {
            Window {
                age_buckets: 0,
                period_ms: 0,
            }
        };
        let ttl_ms = f.ttl_ms.load(Relaxed);
        if ttl_ms > crate::family::MAX_TTL.as_millis() as u64 {
            return None;
        }
        let expect = cells_for(
            kind,
            n_bounds as usize,
            window.age_buckets,
            native.is_some(),
            places,
            ttl_ms > 0,
        );
        (shape == expect).then_some(FamilyType {
            kind,
            mode,
            n_bounds,
            bounds_off,
            shape,
            window,
            native,
            exemplars: places,
            ttl_ms,
        })
    }

    fn family_handle(&self, index: u32, f: &FamilyRec, epoch: u32) -> Result<Family> {
        let corrupt = || {
            Error::new(
                ErrorKind::Corrupt,
                format!("family record {index} is invalid"),
            )
            .with_path(self.path())
        };
        let FamilyType {
            kind,
            mode,
            n_bounds,
            bounds_off,
            shape,
            window,
            native,
            exemplars,
            ttl_ms,
        } = self.family_type(f).ok_or_else(corrupt)?;
        Ok(Family {
            tag: self.tag,
            epoch,
            index,
            kind,
            mode,
            n_labels: f.n_labels.load(Relaxed),
            shape,
            n_bounds: n_bounds as u32,
            bounds_off,
            overflow: f.overflow_series.load(Relaxed).wrapping_sub(1),
            window,
            native: native.map_or(0, |n| native::code(n.schema)),
            exemplars: exemplars > 0,
            ttl: ttl_ms > 0,
        })
    }

    pub(crate) fn arena_str(&self, r: &layout::ArenaRef) -> Option<&[u8]> {
        self.map.arena(r.off.load(Relaxed), r.len.load(Relaxed))
    }

    fn insert_family(&self, d: &FamilyDesc, hash: u64, epoch: u32) -> Result<Family> {
        let h = self.map.header();
        let fixed = self.map.fixed();
        let full = |what: &str| {
            Error::new(
                ErrorKind::StoreFull,
                format!("no room to register {:?}: the store's {what} is used up; create it with a larger capacity", d.name),
            )
            .with_path(self.path())
        };
        let index = h.alloc.families_used.load(Relaxed);
        if index >= fixed.max_families {
            return Err(full("family capacity"));
        }
        let sets = if d.kind == Kind::Summary && !d.summary.quantiles.is_empty() {
            d.summary.age_buckets
        } else {
            0
        };
        let native = native_of(d);
        let places = exemplar_places(d.kind, d.buckets.len(), native.is_some(), d.exemplars);
        let sketch_cells = match native {
            Some(n) => n.cells() as u64,
            None => u64::from(sets) * self.sketch.cells() as u64,
        } + (places * exemplar::RECORD) as u64;
        let shape = cells_for(
            d.kind,
            d.buckets.len(),
            sets,
            native.is_some(),
            places,
            d.ttl.is_some(),
        );
        let mut label_names = Vec::new();
        encode_strs(&mut label_names, &d.label_names);
        let empty: Vec<&str> = vec![""; d.label_names.len()];
        let mut overflow_labels = Vec::new();
        encode_strs(&mut overflow_labels, &empty);

        // Reserve every byte and cell before writing anything.
        let mut arena = ArenaAlloc::new(self)?;
        let name = arena
            .push(d.name.as_bytes())
            .ok_or_else(|| full("label bytes"))?;
        let help = arena
            .push(d.help.as_bytes())
            .ok_or_else(|| full("label bytes"))?;
        let unit = arena
            .push(d.unit.as_bytes())
            .ok_or_else(|| full("label bytes"))?;
        let labels = arena
            .push(&label_names)
            .ok_or_else(|| full("label bytes"))?;
        let bounds = arena
            .push_f64s(&d.buckets)
            .ok_or_else(|| full("label bytes"))?;
        let quantiles = arena
            .push_f64s(&d.summary.quantiles)
            .ok_or_else(|| full("label bytes"))?;
        let ov_labels = arena
            .push(&overflow_labels)
            .ok_or_else(|| full("label bytes"))?;
        let series_id = h.alloc.series_used.load(Relaxed);
        if series_id >= fixed.max_series {
            return Err(full("series capacity"));
        }
        let Some((int_off, float_off)) = self.cells_room(shape) else {
            return Err(full("value cells"));
        };
        let Some(sketch_off) = self.sketch_room(sketch_cells) else {
            return Err(full("sketch cells (sketch_cells_per_writer)"));
        };

        let f = &self.map.families()[index as usize];
        f.state.store(state::INIT, Release);
        h.alloc.families_used.store(index + 1, Release);
        arena.commit();
        f.kind.store(d.kind as u32, Relaxed);
        f.gauge_mode.store(d.gauge_mode as u32, Relaxed);
        f.n_labels.store(d.label_names.len() as u32, Relaxed);
        set_ref(&f.name, name, d.name.len());
        set_ref(&f.help, help, d.help.len());
        set_ref(&f.unit, unit, d.unit.len());
        set_ref(&f.label_names, labels, label_names.len());
        set_ref(&f.buckets, bounds, d.buckets.len());
        set_ref(&f.quantiles, quantiles, d.summary.quantiles.len());
        f.int_cells.store(shape.ints, Relaxed);
        f.float_cells.store(shape.floats, Relaxed);
        f.exemplars.store(u32::from(d.exemplars), Relaxed);
        f.max_series.store(d.max_series, Relaxed);
        f.series_count.store(0, Relaxed);
        f.overflows.store(0, Relaxed);
        f.def_hash.store(hash, Relaxed);
        f.summary_max_age_ms
            .store(d.summary.max_age.as_millis() as u64, Relaxed);
        f.summary_age_buckets.store(d.summary.age_buckets, Relaxed);
        f.sketch_cells.store(sketch_cells as u32, Relaxed);
        f.native_schema
            .store(native.map_or(0, |n| native::code(n.schema)), Relaxed);
        f.native_max_buckets
            .store(native.map_or(0, |n| n.max_buckets), Relaxed);
        f.native_zero_threshold
            .store(native.map_or(0, |n| n.zero_threshold.to_bits()), Relaxed);
        f.native_bins
            .store(native.map_or(0, |n| n.bins() as u64), Relaxed);
        f.created_unix_ns.store(proc::unix_nanos(), Relaxed);
        f.ttl_ms
            .store(d.ttl.map_or(0, |t| t.as_millis() as u64), Relaxed);
        f.swept_ms.store(shm::coarse_monotonic_ms(), Relaxed);
        f.free_head.store(0, Relaxed);

        // The overflow series: allocated now so that it exists when the
        // store is full. It is not in the index, so no label set finds it.
        let s = &self.map.series()[series_id as usize];
        s.state.store(state::INIT, Release);
        s.family.store(index, Relaxed);
        s.hash.store(0, Relaxed);
        set_ref(&s.labels, ov_labels, overflow_labels.len());
        s.int_off.store(int_off, Relaxed);
        s.float_off.store(float_off, Relaxed);
        s.sketch_off.store(sketch_off, Relaxed);
        s.created_unix_ns.store(proc::unix_nanos(), Relaxed);
        self.take_cells(shape, sketch_cells);
        h.alloc.series_used.store(series_id + 1, Release);
        f.overflow_series.store(series_id + 1, Release);
        s.state.store(state::LIVE, Release);
        f.state.store(state::LIVE, Release);
        self.family_handle(index, f, epoch)
    }

    // ----- series --------------------------------------------------------

    /// Gets or creates the series with these label values, and returns a
    /// handle for updates. Label values are any UTF-8 and stored exactly.
    ///
    /// Finding an existing series takes no lock. Creating one takes the
    /// store lock briefly.
    ///
    /// # Errors
    /// [`ErrorKind::LabelCount`] if the number of values is wrong;
    /// [`ErrorKind::Overflow`] if the series does not fit, carrying the
    /// family's overflow series ([`Error::overflow_series`]);
    /// [`ErrorKind::StaleHandle`] if the store was wiped since the family
    /// was registered.
    pub fn series(&self, family: &Family, values: &[&str]) -> Result<Series> {
        // A handle is for writing; a read-only store hands out none.
        self.check_writable()?;
        self.check_family(family)?;
        if values.len() != family.n_labels as usize {
            return Err(Error::new(
                ErrorKind::LabelCount,
                format!(
                    "expected {} label values, got {}",
                    family.n_labels,
                    values.len()
                ),
            ));
        }
        let hash = series_hash(family.index, values);
        if let Found::Live(id) = self.find_series(family.index, hash, values) {
            return self.series_handle(family, id);
        }
        let _guard = self.lock()?;
        self.check_family(family)?;
        match self.find_series(family.index, hash, values) {
            Found::Live(id) => self.series_handle(family, id),
            // Recovery (run when the lock was taken) settles every pending
            // insert, so this is only reachable on a corrupt store.
            Found::Pending => Err(
                Error::new(ErrorKind::Corrupt, "a series insert never finished")
                    .with_path(self.path()),
            ),
            Found::Absent => self.insert_series(family, hash, values),
        }
    }

    /// Like [`Store::series`], but a series that does not fit resolves to
    /// the family's overflow series instead of an error.
    pub fn series_or_overflow(&self, family: &Family, values: &[&str]) -> Result<Series> {
        match self.series(family, values) {
            Err(e) if e.kind() == ErrorKind::Overflow => e.overflow_series().ok_or(e),
            r => r,
        }
    }

    fn check_family(&self, family: &Family) -> Result<()> {
        if family.tag != self.tag || family.epoch != self.epoch() {
            return Err(Error::new(
                ErrorKind::StaleHandle,
                "the family handle is from before a wipe or from another Store; register it again",
            ));
        }
        // Only a forged handle (through the C ABI's raw form) fails this.
        if family.index >= self.map.header().alloc.families_used.load(Acquire) {
            return Err(Error::new(
                ErrorKind::StaleHandle,
                "the family handle names no registered family",
            ));
        }
        Ok(())
    }

    pub(crate) fn series_handle(&self, family: &Family, id: u32) -> Result<Series> {
        let offs = self.map.series().get(id as usize).map(|rec| {
            (
                rec.state.load(Acquire),
                rec.int_off.load(Relaxed),
                rec.float_off.load(Relaxed),
                rec.sketch_off.load(Relaxed),
            )
        });
        let cap = self.map.fixed().cells_per_slot;
        let sketch_cap = self.map.fixed().sketch_cells_per_slot;
        match offs {
            Some((w, i, f, k))
                if i.saturating_add(family.shape.ints as u64) <= cap
                    && f.saturating_add(family.shape.floats as u64) <= cap
                    && k.saturating_add(self.sketch_cells_of(family)) <= sketch_cap =>
            {
                Ok(family.series_handle(id, w, i, f, k))
            }
            _ => Err(Error::new(
                ErrorKind::Corrupt,
                format!("series {id} points outside the value cells"),
            )
            .with_path(self.path())),
        }
    }

    /// Where a series of this shape would get its cells, if they fit.
    fn cells_room(&self, shape: Shape) -> Option<(u64, u64)> {
        let a = &self.map.header().alloc;
        let ints = a.int_cells_used.load(Relaxed);
        let floats = a.float_cells_used.load(Relaxed);
        let cap = self.map.fixed().cells_per_slot;
        let used = ints.checked_add(floats)?;
        let need = shape.ints as u64 + shape.floats as u64;
        (used.checked_add(need)? <= cap).then(|| (ints, cap - floats - shape.floats as u64))
    }

    /// Sketch cells a series of `family` takes.
    fn sketch_cells_of(&self, family: &Family) -> u64 {
        let places = exemplar_places(
            family.kind,
            family.n_bounds as usize,
            family.native != 0,
            family.exemplars,
        );
        (places * exemplar::RECORD) as u64
            + match native::schema_of(family.native) {
                Some(schema) => 2 * native::bins(schema) as u64,
                None => u64::from(family.window.age_buckets) * self.sketch.cells() as u64,
            }
    }

    /// Where `n` sketch cells would start, if they fit.
    fn sketch_room(&self, n: u64) -> Option<u64> {
        let used = self.map.header().alloc.sketch_cells_used.load(Relaxed);
        (used.checked_add(n)? <= self.map.fixed().sketch_cells_per_slot).then_some(used)
    }

    /// Takes the cells that [`Self::cells_room`] and
    /// [`Self::sketch_room`] offered.
    fn take_cells(&self, shape: Shape, sketch_cells: u64) {
        let a = &self.map.header().alloc;
        a.sketch_cells_used.fetch_add(sketch_cells, Release);
        a.int_cells_used.fetch_add(shape.ints as u64, Release);
        a.float_cells_used.fetch_add(shape.floats as u64, Release);
    }

    fn find_series(&self, family: u32, hash: u64, values: &[&str]) -> Found {
        let index = self.map.index();
        let recs = self.map.series();
        let mask = index.len() - 1;
        let mut i = hash as usize & mask;
        for _ in 0..index.len() {
            let e = index[i].load(Acquire);
            if e == 0 {
                return Found::Absent;
            }
            if e != TOMBSTONE {
                if let Some(rec) = recs.get(e as usize - 1) {
                    // The state word before and after the comparison: a
                    // record of a family with a TTL may be reused for
                    // other labels meanwhile (under the lock), and every
                    // reuse changes the word for good (`ttl.rs`).
                    let before = rec.state.load(Acquire);
                    if rec.hash.load(Relaxed) == hash
                        && rec.family.load(Relaxed) == family
                        && self
                            .arena_str(&rec.labels)
                            .is_some_and(|b| labels_equal(b, values))
                    {
                        fence(Acquire);
                        if rec.state.load(Relaxed) == before {
                            match state::of(before) {
                                state::LIVE => return Found::Live(e - 1),
                                state::INIT => return Found::Pending,
                                _ => {}
                            }
                        } else {
                            return Found::Pending;
                        }
                    }
                }
            }
            i = (i + 1) & mask;
        }
        Found::Absent
    }

    /// Where series `id` sits in the index, if it does.
    pub(crate) fn index_position(&self, id: u32, hash: u64) -> Option<usize> {
        let index = self.map.index();
        let mask = index.len() - 1;
        let mut i = hash as usize & mask;
        for _ in 0..index.len() {
            match index[i].load(Acquire) {
                0 => return None,
                e if e == id + 1 => return Some(i),
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// An index position for a new entry with this hash: the first empty
    /// or deleted one. (The index has twice as many entries as there can
    /// be series, so only a corrupt index has none.)
    pub(crate) fn free_index_position(&self, hash: u64) -> Option<usize> {
        let index = self.map.index();
        let mask = index.len() - 1;
        let mut pos = hash as usize & mask;
        for _ in 0..index.len() {
            if matches!(index[pos].load(Relaxed), 0 | TOMBSTONE) {
                return Some(pos);
            }
            pos = (pos + 1) & mask;
        }
        None
    }

    fn insert_series(&self, family: &Family, hash: u64, values: &[&str]) -> Result<Series> {
        let h = self.map.header();
        let fixed = self.map.fixed();
        let f = &self.map.families()[family.index as usize];
        let mut encoded = Vec::new();
        encode_strs(&mut encoded, values);
        let limit = f.max_series.load(Relaxed);
        if family.ttl {
            // Expire what is due, then take an expired series' record and
            // cells if there is one; a family (or store) that is full
            // looks for idle series at once.
            let full = (limit != 0 && f.series_count.load(Relaxed) >= limit)
                || h.alloc.series_used.load(Relaxed) >= fixed.max_series
                || self.cells_room(family.shape).is_none()
                || self.sketch_room(self.sketch_cells_of(family)).is_none();
            self.sweep(family.index, full);
            let within_limit = limit == 0 || f.series_count.load(Relaxed) < limit;
            if within_limit {
                if let Some(s) = self.reuse_series(family, hash, &encoded)? {
                    return Ok(s);
                }
            }
        }
        let id = h.alloc.series_used.load(Relaxed);
        let cells = self.cells_room(family.shape);
        let sketch_cells = self.sketch_cells_of(family);
        let sketch = self.sketch_room(sketch_cells);
        let mut arena = ArenaAlloc::new(self)?;
        let labels = if family.ttl {
            // Room for the next series that reuses the record (`ttl.rs`).
            let mut padded = encoded.clone();
            padded.resize(crate::ttl::label_room(encoded.len()), 0);
            arena.push(&padded)
        } else {
            arena.push(&encoded)
        };
        let reason = if limit != 0 && f.series_count.load(Relaxed) >= limit {
            Some(format!("the family's limit of {limit} series"))
        } else if id >= fixed.max_series {
            Some(format!(
                "the store's capacity of {} series",
                fixed.max_series
            ))
        } else if labels.is_none() {
            Some(format!("the store's {} label bytes", fixed.arena_bytes))
        } else if cells.is_none() {
            Some(format!(
                "the store's {} value cells per writer",
                fixed.cells_per_slot
            ))
        } else if sketch.is_none() {
            Some(format!(
                "the store's {} sketch cells per writer (sketch_cells_per_writer)",
                fixed.sketch_cells_per_slot
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            f.overflows.fetch_add(1, Relaxed);
            h.alloc.overflows_total.fetch_add(1, Relaxed);
            let ov = self.series_handle(family, family.overflow)?;
            let name = self
                .arena_str(&f.name)
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            return Err(Error::overflow(
                format!(
                    "a new series of {name:?} does not fit in {reason}; its updates go to the \
                     series labelled shmetrics_overflow=\"true\""
                ),
                ov,
            ));
        }
        let labels = labels.expect("checked above");
        let (int_off, float_off) = cells.expect("checked above");
        let sketch_off = sketch.expect("checked above");
        let index = self.map.index();
        let Some(pos) = self.free_index_position(hash) else {
            return Err(
                Error::new(ErrorKind::Corrupt, "the series index has no free entry")
                    .with_path(self.path()),
            );
        };
        // Order matters for recovery (see `recover`): the record is INIT
        // until both it and its index entry are written.
        let rec = &self.map.series()[id as usize];
        rec.state.store(state::INIT, Release);
        h.alloc.series_used.store(id + 1, Release);
        arena.commit();
        if family.ttl {
            // Creation counts as an update (slot 0 is every process's).
            self.stamp_created(family, int_off);
        }
        self.take_cells(family.shape, sketch_cells);
        rec.family.store(family.index, Relaxed);
        rec.hash.store(hash, Relaxed);
        set_ref(&rec.labels, labels, encoded.len());
        rec.int_off.store(int_off, Relaxed);
        rec.float_off.store(float_off, Relaxed);
        rec.sketch_off.store(sketch_off, Relaxed);
        rec.created_unix_ns.store(proc::unix_nanos(), Relaxed);
        index[pos].store(id + 1, Release);
        rec.state.store(state::LIVE, Release);
        f.series_count.fetch_add(1, Relaxed);
        self.series_handle(family, id)
    }

    /// Deletes the series with these label values. Returns whether it
    /// existed. Handles to it stay usable, but their updates are no longer
    /// exported; a later lookup of the same labels creates a new series
    /// that starts from zero. The deleted series' space is reclaimed by
    /// [`Store::wipe`].
    pub fn delete(&self, family: &Family, values: &[&str]) -> Result<bool> {
        self.check_family(family)?;
        if values.len() != family.n_labels as usize {
            return Err(Error::new(
                ErrorKind::LabelCount,
                format!(
                    "expected {} label values, got {}",
                    family.n_labels,
                    values.len()
                ),
            ));
        }
        self.check_writable()?;
        let _guard = self.lock()?;
        let hash = series_hash(family.index, values);
        let Found::Live(id) = self.find_series(family.index, hash, values) else {
            return Ok(false);
        };
        let rec = &self.map.series()[id as usize];
        if family.ttl {
            // Its space goes to a later series of the family.
            self.retire(family.index, id);
            return Ok(true);
        }
        rec.state.store(state::DEAD, Release);
        if let Some(pos) = self.index_position(id, hash) {
            self.map.index()[pos].store(TOMBSTONE, Release);
        }
        let f = &self.map.families()[family.index as usize];
        let _ = f
            .series_count
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
        Ok(true)
    }

    /// Deletes every series of the family, as prometheus_client's `clear()`
    /// does; the family itself and its overflow series stay. Returns how
    /// many series were deleted. What [`Store::delete`] says of handles holds
    /// for each of them.
    pub fn clear(&self, family: &Family) -> Result<usize> {
        self.check_family(family)?;
        self.check_writable()?;
        let _guard = self.lock()?;
        self.check_family(family)?;
        let used = self
            .map
            .header()
            .alloc
            .series_used
            .load(Acquire)
            .min(self.map.fixed().max_series) as usize;
        let mut deleted = 0u32;
        for (id, rec) in self.map.series()[..used].iter().enumerate() {
            let id = id as u32;
            if id == family.overflow
                || rec.family.load(Relaxed) != family.index
                || state::of(rec.state.load(Acquire)) != state::LIVE
            {
                continue;
            }
            if family.ttl {
                self.retire(family.index, id);
                deleted += 1;
                continue;
            }
            rec.state.store(state::DEAD, Release);
            if let Some(pos) = self.index_position(id, rec.hash.load(Relaxed)) {
                self.map.index()[pos].store(TOMBSTONE, Release);
            }
            deleted += 1;
        }
        let f = &self.map.families()[family.index as usize];
        if !family.ttl {
            let _ = f
                .series_count
                .fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_sub(deleted)));
        }
        Ok(deleted as usize)
    }

    /// Sets every value of every series to zero, in all slots. Families,
    /// series and handles stay as they are.
    pub fn reset(&self) -> Result<()> {
        self.check_writable()?;
        let _guard = self.lock()?;
        self.zero_sketches(|_| true);
        self.each_exemplar(|_| true, |ts, rec| exemplar::clear(ts, rec, false));
        self.zero_cells(|_| true);
        Ok(())
    }

    /// Removes every family and series (PromPHP's `wipeStorage`). Handles
    /// made before become stale: updates through them return
    /// [`ErrorKind::StaleHandle`], and families must be registered again.
    /// Writer slots are kept.
    pub fn wipe(&self) -> Result<()> {
        self.check_writable()?;
        let _guard = self.lock()?;
        self.wipe_locked();
        Ok(())
    }

    fn wipe_locked(&self) {
        let h = self.map.header();
        h.hot.wipe_pending.store(1, Release);
        h.hot.epoch.fetch_add(1, AcqRel);
        for f in self.live_range_families() {
            f.state.store(state::FREE, Release);
        }
        let series_used = h
            .alloc
            .series_used
            .load(Acquire)
            .min(self.map.fixed().max_series);
        for rec in &self.map.series()[..series_used as usize] {
            rec.state.store(state::FREE, Release);
        }
        for e in self.map.index() {
            if e.load(Relaxed) != 0 {
                e.store(0, Relaxed);
            }
        }
        // Sketches first: their headers, in the value cells, say which
        // sketch cells were touched.
        self.zero_sketches(|_| true);
        self.each_exemplar(|_| true, |ts, rec| exemplar::clear(ts, rec, true));
        self.zero_cells(|_| true);
        h.alloc.sketch_cells_used.store(0, Release);
        h.alloc.series_used.store(0, Release);
        h.alloc.families_used.store(0, Release);
        h.alloc.int_cells_used.store(0, Release);
        h.alloc.float_cells_used.store(0, Release);
        h.alloc.arena_used.store(0, Release);
        h.hot.wipe_pending.store(0, Release);
    }

    /// The series that use sketch cells (summaries with quantiles and
    /// native histograms), whatever their state.
    fn sketch_series(&self) -> Vec<SketchUse> {
        let uses: Vec<Option<FamilyType>> = self
            .live_range_families()
            .iter()
            .map(|f| self.family_type(f))
            .collect();
        let used = self.map.header().alloc.series_used.load(Acquire);
        let used = used.min(self.map.fixed().max_series);
        self.map.series()[..used as usize]
            .iter()
            .filter_map(|rec| {
                uses.get(rec.family.load(Relaxed) as usize)?
                    .as_ref()?
                    .sketch_use(rec)
            })
            .collect()
    }

    /// Zeroes one series' quantile sketches or native buckets in `slot`:
    /// the cells its headers say were touched, then the headers.
    pub(crate) fn clear_sketch(&self, slot: u32, u: SketchUse) {
        if let Some((headers, counts)) = self.sketch_cells_in(slot, u) {
            match u.kind {
                SketchKind::Summary(_) => window::clear_slot(headers, counts, self.sketch.cells()),
                SketchKind::Native(bins) => native::clear_slot(headers, counts, bins),
            }
        }
    }

    /// The header cells and sketch cells of one series in a slot; `None`
    /// where a (corrupt) record points outside the regions.
    fn sketch_cells_in(&self, slot: u32, u: SketchUse) -> Option<(&[AtomicU64], &[AtomicU64])> {
        let (headers, cells) = match u.kind {
            SketchKind::Summary(sets) => (
                window::header_cells(sets as usize),
                sets as usize * self.sketch.cells(),
            ),
            SketchKind::Native(bins) => (native::HEADER, 2 * bins),
        };
        let headers = self
            .map
            .cells(slot)
            .get(u.header..u.header.checked_add(headers)?)?;
        let counts = self
            .map
            .sketch(slot)
            .get(u.sketch..u.sketch.checked_add(cells)?)?;
        Some((headers, counts))
    }

    /// Zeroes the quantile sketches and native buckets of every slot
    /// whose index passes `which`: the cells their headers say were
    /// touched, then the headers.
    fn zero_sketches(&self, which: impl Fn(u32) -> bool) {
        let series = self.sketch_series();
        let hwm = self.map.header().alloc.slots_hwm.load(Acquire);
        for slot in (0..=hwm.min(self.map.fixed().max_slots)).filter(|s| which(*s)) {
            for s in &series {
                self.clear_sketch(slot, *s);
            }
        }
    }

    /// Calls `f` with the timestamp cell and the record of every exemplar
    /// place of every series (whatever its state) in every slot whose
    /// index passes `which`.
    fn each_exemplar(&self, which: impl Fn(u32) -> bool, f: impl Fn(&AtomicU64, &[AtomicU64])) {
        // Per family: the first timestamp cell (after the series' other
        // integer cells), the first record cell (after any native
        // buckets) and the places.
        let uses: Vec<Option<ExemplarPlaces>> = self
            .live_range_families()
            .iter()
            .map(|f| self.family_type(f)?.exemplar_places())
            .collect();
        if uses.iter().all(Option::is_none) {
            return;
        }
        let used = self.map.header().alloc.series_used.load(Acquire);
        let recs = &self.map.series()[..used.min(self.map.fixed().max_series) as usize];
        let hwm = self.map.header().alloc.slots_hwm.load(Acquire);
        for slot in (0..=hwm.min(self.map.fixed().max_slots)).filter(|s| which(*s)) {
            let (cells, sketch) = (self.map.cells(slot), self.map.sketch(slot));
            for rec in recs {
                if let Some(Some(e)) = uses.get(rec.family.load(Relaxed) as usize) {
                    e.each(rec, cells, sketch, &f);
                }
            }
        }
    }

    /// Zeroes the used cells of every slot whose index passes `which`.
    fn zero_cells(&self, which: impl Fn(u32) -> bool) {
        let h = self.map.header();
        let cap = self.map.fixed().cells_per_slot;
        let ints = h.alloc.int_cells_used.load(Acquire).min(cap) as usize;
        let floats = h.alloc.float_cells_used.load(Acquire).min(cap) as usize;
        let hwm = h
            .alloc
            .slots_hwm
            .load(Acquire)
            .min(self.map.fixed().max_slots);
        for slot in (0..=hwm).filter(|s| which(*s)) {
            let cells = self.map.cells(slot);
            let top = cells.len() - floats;
            for c in cells[..ints].iter().chain(&cells[top..]) {
                c.store(0, Relaxed);
            }
        }
    }

    // ----- writer slots --------------------------------------------------

    /// The slot this process writes through, claiming one on first use and
    /// after a fork.
    #[inline]
    pub(crate) fn slot(&self) -> Result<u32> {
        let local = self.local.load(Relaxed);
        let gen = FORK_GENERATION.load(Relaxed) as u32;
        if (local >> 32) as u32 == gen && local as u32 != NO_SLOT {
            return Ok(local as u32);
        }
        self.claim_slot()
    }

    #[cold]
    #[inline(never)]
    fn claim_slot(&self) -> Result<u32> {
        // Never write into a read-only mapping: that would fault.
        self.check_writable()?;
        // If the lock is unusable, write through the shared slot: updates
        // stay exact, only gauges lose their per-process meaning.
        Ok(self.try_claim_slot().unwrap_or(0))
    }

    fn try_claim_slot(&self) -> Result<u32> {
        let _guard = self.lock()?;
        let gen = FORK_GENERATION.load(Relaxed) as u32;
        let local = self.local.load(Relaxed);
        if (local >> 32) as u32 == gen && local as u32 != NO_SLOT {
            return Ok(local as u32); // another thread of ours was first
        }
        let h = self.map.header();
        let max = self.map.fixed().max_slots;
        let slots = self.map.slots();
        let hwm = h.alloc.slots_hwm.load(Acquire).min(max);
        let pid = std::process::id();
        let start = proc::own_start_time();
        let reusable = (1..=hwm).find(|&i| {
            let s = &slots[i as usize];
            match s.state.load(Acquire) {
                slot_state::FREE | slot_state::RELEASED => true,
                _ => !proc::is_alive(s.pid.load(Relaxed), s.start_time.load(Relaxed)),
            }
        });
        let chosen = reusable.or_else(|| {
            (hwm < max).then(|| {
                h.alloc.slots_hwm.store(hwm + 1, Release);
                hwm + 1
            })
        });
        let slot = match chosen {
            None => {
                h.alloc.slot_exhausted_total.fetch_add(1, Relaxed);
                0
            }
            Some(i) => {
                let s = &slots[i as usize];
                s.state.store(slot_state::CLAIMING, Release);
                s.pid.store(pid, Relaxed);
                if s.claims.load(Relaxed) > 0 {
                    // Counters and histograms carry on from the dead
                    // process's values. Its gauges do not: a new process
                    // starts with none.
                    self.zero_gauges(i);
                    // A dead owner may have died clearing a quantile set.
                    // (Native buckets have nothing to repair: like classic
                    // ones they only grow, and the new owner continues.)
                    for sk in self.sketch_series() {
                        if let (SketchKind::Summary(_), Some((headers, _))) =
                            (sk.kind, self.sketch_cells_in(i, sk))
                        {
                            window::reset_clearing(headers);
                        }
                    }
                    // Its exemplars stay (they are still the latest), but
                    // it may have died writing one.
                    self.each_exemplar(|s| s == i, exemplar::repair);
                    h.alloc.slot_reuses_total.fetch_add(1, Relaxed);
                }
                // A dead owner may have died in the middle of an update.
                s.pins.store(0, Relaxed);
                s.start_time.store(start, Relaxed);
                s.claims.fetch_add(1, Relaxed);
                s.claimed_unix_ns.store(proc::unix_nanos(), Relaxed);
                s.state.store(slot_state::LIVE, Release);
                h.alloc.slot_claims_total.fetch_add(1, Relaxed);
                i
            }
        };
        self.local
            .store(((gen as u64) << 32) | slot as u64, Relaxed);
        Ok(slot)
    }

    fn zero_gauges(&self, slot: u32) {
        let is_gauge: Vec<bool> = self
            .live_range_families()
            .iter()
            .map(|f| {
                f.kind.load(Relaxed) == Kind::Gauge as u32
                    && f.gauge_mode.load(Relaxed) != GaugeMode::Shared as u32
            })
            .collect();
        let used = self.map.header().alloc.series_used.load(Acquire);
        let used = used.min(self.map.fixed().max_series);
        let cells = self.map.cells(slot);
        for rec in &self.map.series()[..used as usize] {
            if is_gauge.get(rec.family.load(Relaxed) as usize) == Some(&true) {
                // A gauge has one integer cell (the marker) and one float
                // cell (the value).
                for off in [rec.int_off.load(Relaxed), rec.float_off.load(Relaxed)] {
                    if let Some(c) = cells.get(off as usize) {
                        c.store(0, Relaxed);
                    }
                }
            }
        }
    }

    /// Gives up this process's writer slot (for example before a clean
    /// exit), so that live gauge modes drop its values at once and another
    /// process may reuse it. Counter and histogram values stay counted.
    /// The next update claims a slot again.
    pub fn release_slot(&self) -> Result<()> {
        self.check_writable()?;
        let _guard = self.lock()?;
        let local = self.local.swap(u64::MAX, Relaxed);
        let gen = FORK_GENERATION.load(Relaxed) as u32;
        let slot = local as u32;
        if (local >> 32) as u32 == gen && slot != NO_SLOT && slot != 0 {
            let s = &self.map.slots()[slot as usize];
            if s.pid.load(Relaxed) == std::process::id() {
                s.state.store(slot_state::RELEASED, Release);
            }
        }
        Ok(())
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Only release a slot this very process claimed (not a parent's).
        let local = *self.local.get_mut();
        let gen = FORK_GENERATION.load(Relaxed) as u32;
        if (local >> 32) as u32 == gen
            && local as u32 != NO_SLOT
            && local as u32 != 0
            && self.map.writable()
        {
            let _ = self.release_slot();
        }
    }
}

pub(crate) fn set_ref(r: &layout::ArenaRef, off: u64, len: usize) {
    r.off.store(off, Relaxed);
    r.len.store(len as u64, Relaxed);
}

/// Reserves arena space under the lock; nothing is taken until `commit`.
pub(crate) struct ArenaAlloc<'a> {
    store: &'a Store,
    used: u64,
}

impl<'a> ArenaAlloc<'a> {
    pub(crate) fn new(store: &'a Store) -> Result<ArenaAlloc<'a>> {
        let used = store.map.header().alloc.arena_used.load(Acquire);
        if used > store.map.fixed().arena_bytes {
            return Err(
                Error::new(ErrorKind::Corrupt, "the arena fill mark is past its end")
                    .with_path(store.path()),
            );
        }
        Ok(ArenaAlloc { store, used })
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> Option<u64> {
        let off = self.used;
        let end = off.checked_add(bytes.len() as u64)?;
        if end > self.store.map.fixed().arena_bytes {
            return None;
        }
        self.store.map.arena_write(off, bytes);
        self.used = end;
        Some(off)
    }

    fn push_f64s(&mut self, v: &[f64]) -> Option<u64> {
        self.used = self.used.checked_add(7)? / 8 * 8;
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        self.push(&bytes)
    }

    pub(crate) fn commit(self) {
        self.store
            .map
            .header()
            .alloc
            .arena_used
            .store(self.used, Release);
    }
}

// ===== Raw handle conversion: a stopgap for the C ABI (crates/ffi) =========
//
// `shmetrics-ffi` hands `Family` and `Series` to C callers as plain
// integers. These two pairs are all it needs from core; nothing else here
// uses them, and they are to be replaced by whatever accessor the core API
// settles on. The layout of the arrays is private to this build: only
// `from_raw` of the same build reads what `to_raw` wrote.
//
// A handle forged through `from_raw` cannot cause memory unsafety: enum
// fields are validated here, every update checks the handle's store tag,
// epoch and cell offsets against the mapping (`Store::cells_checked`), and
// every other use of a handle's integers indexes with bounds checks. It
// can still write to cells that belong to other series of the same store.

fn pack(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

fn unpack(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

/// A summary has no bucket bounds, so its raw handles carry its window
/// where a histogram's carry the bounds' arena offset.
fn pack_window(w: Window) -> u64 {
    pack(w.age_buckets, w.period_ms)
}

fn unpack_window(v: u64) -> Window {
    let (age_buckets, period_ms) = unpack(v);
    Window {
        age_buckets,
        period_ms,
    }
}

const NO_WINDOW: Window = Window {
    age_buckets: 0,
    period_ms: 0,
};

/// The gauge mode, the exemplars flag and a histogram's native schema
/// code share a word: the mode in the low 15 bits, the flag in bit 15,
/// the code in the high 16.
fn pack_mode(mode: GaugeMode, native: u32, exemplars: bool) -> u32 {
    mode as u32 | u32::from(exemplars) << 15 | native << 16
}

/// The mode, the native code and the exemplars flag of [`pack_mode`];
/// `None` if any is not valid.
fn unpack_mode(v: u32) -> Option<(GaugeMode, u32, bool)> {
    let native = v >> 16;
    if native != 0 && native::schema_of(native).is_none() {
        return None;
    }
    Some((GaugeMode::from_u32(v & 0x7fff)?, native, v & 0x8000 != 0))
}

/// A series handle's kind, TTL flag and state word in one u32: the kind
/// in bits 0-3, the flag in bit 4, the state in bits 5-7 (states are
/// below 8) and the generation in the high 24 bits, where the word has it.
fn pack_kind(kind: Kind, ttl: bool, live: u32) -> u32 {
    kind as u32 | u32::from(ttl) << 4 | (state::of(live) & 7) << 5 | (live & !0xff)
}

/// The kind, the TTL flag and the state word of [`pack_kind`].
fn unpack_kind(v: u32) -> Option<(Kind, bool, u32)> {
    let kind = Kind::from_u32(v & 0xf)?;
    Some((kind, v & 0x10 != 0, (v & !0xff) | (v >> 5 & 7)))
}

impl Family {
    /// The handle as plain integers, for the C ABI. Read back only with
    /// [`Family::from_raw`] of the same build.
    #[doc(hidden)]
    pub fn to_raw(&self) -> [u64; 6] {
        [
            pack(self.tag, self.epoch),
            pack(self.index, self.kind as u32 | u32::from(self.ttl) << 4),
            pack(
                pack_mode(self.mode, self.native, self.exemplars),
                self.n_labels,
            ),
            pack(self.shape.ints, self.shape.floats),
            pack(self.n_bounds, self.overflow),
            if self.kind == Kind::Summary {
                pack_window(self.window)
            } else {
                self.bounds_off
            },
        ]
    }

    /// Rebuilds a handle from [`Family::to_raw`]; `None` if its kind or
    /// gauge mode is not valid. A forged handle gets an error, or at worst
    /// adds series or updates cells of the same store it does not own;
    /// never a memory-safety problem.
    #[doc(hidden)]
    pub fn from_raw(raw: [u64; 6]) -> Option<Family> {
        let (tag, epoch) = unpack(raw[0]);
        let (index, kind) = unpack(raw[1]);
        let (mode, n_labels) = unpack(raw[2]);
        let (ints, floats) = unpack(raw[3]);
        let (n_bounds, overflow) = unpack(raw[4]);
        let ttl = kind & 0x10 != 0;
        let kind = Kind::from_u32(kind & !0x10)?;
        let summary = kind == Kind::Summary;
        let (mode, native, exemplars) = unpack_mode(mode)?;
        Some(Family {
            ttl,
            tag,
            epoch,
            index,
            kind,
            mode,
            native,
            exemplars,
            n_labels,
            shape: Shape { ints, floats },
            n_bounds,
            bounds_off: if summary { 0 } else { raw[5] },
            overflow,
            window: if summary {
                unpack_window(raw[5])
            } else {
                NO_WINDOW
            },
        })
    }
}

impl Series {
    /// The handle as plain integers, for the C ABI. Read back only with
    /// [`Series::from_raw`] of the same build.
    #[doc(hidden)]
    pub fn to_raw(&self) -> [u64; 6] {
        [
            pack(self.tag, self.epoch),
            pack(self.id, self.family),
            pack(self.int_off, self.float_off),
            pack(
                pack_kind(self.kind, self.ttl_cell != 0, self.live),
                pack_mode(self.mode, self.native, self.exemplars),
            ),
            // Sketch offsets are below 2^32 (`layout::MAX_CELLS`).
            if self.kind == Kind::Summary {
                pack_window(self.window)
            } else {
                pack(self.n_bounds, self.sketch_off as u32)
            },
            if self.kind == Kind::Summary {
                self.sketch_off
            } else {
                self.bounds_off
            },
        ]
    }

    /// Rebuilds a handle from [`Series::to_raw`]; `None` if its kind or
    /// gauge mode is not valid. A forged handle gets an error, or at worst
    /// updates cells of the same store it does not own; never a
    /// memory-safety problem.
    #[doc(hidden)]
    #[inline]
    pub fn from_raw(raw: [u64; 6]) -> Option<Series> {
        let (tag, epoch) = unpack(raw[0]);
        let (id, family) = unpack(raw[1]);
        let (int_off, float_off) = unpack(raw[2]);
        let (kind, mode) = unpack(raw[3]);
        let (kind, ttl, live) = unpack_kind(kind)?;
        let summary = kind == Kind::Summary;
        let (mode, native, exemplars) = unpack_mode(mode)?;
        let (n_bounds, hist_sketch_off) = unpack(raw[4]);
        let n_bounds = if summary { 0 } else { n_bounds };
        let window = if summary {
            unpack_window(raw[4])
        } else {
            NO_WINDOW
        };
        let ttl_cell = if ttl {
            let places = exemplar_places(kind, n_bounds as usize, native != 0, exemplars);
            let shape = cells_for(
                kind,
                n_bounds as usize,
                window.age_buckets,
                native != 0,
                places,
                true,
            );
            shape.ints.saturating_sub(places as u32 + 1)
        } else {
            0
        };
        Some(Series {
            ttl_cell,
            live,
            tag,
            epoch,
            id,
            family,
            int_off,
            float_off,
            kind,
            mode,
            native,
            exemplars,
            n_bounds,
            bounds_off: if summary { 0 } else { raw[5] },
            window,
            sketch_off: if summary {
                raw[5]
            } else {
                u64::from(hist_sketch_off)
            },
        })
    }
}

//! Consistent snapshots: every family and series with values merged across
//! writer slots. Reading takes no lock and never blocks a writer.
//!
//! Families come out in registration order and series within a family in
//! creation order, so the output is stable without sorting.
//!
//! A refresh runs in phases: it resets the cache if the store is another
//! one or was wiped, decodes the records added since the last refresh
//! (`decode`), sums every slot's value cells (`merge`: the counts, then
//! the native histogram buckets (`natives`), then the sums) and emits the
//! series (`emit`). The
//! public views of the result are in `view`; the slots' liveness and the
//! store's telemetry in `slots`.

mod cardinality;
mod decode;
mod emit;
mod merge;
mod natives;
mod slots;
mod view;

use std::ops::Range;
use std::sync::atomic::Ordering::Acquire;

use crate::error::{Error, ErrorKind, Result};
use crate::model::{GaugeMode, Kind, Window};
use crate::native::Native;
use crate::store::{Shape, Store};
pub use cardinality::{FamilyCardinality, LabelCardinality};
use merge::{PerSlot, Placed, Sums};
use slots::SlotLife;
pub use view::{BucketRun, Exemplar, FamilyView, NativeBuckets, Quantile, SeriesView, Value};

/// Counts and capacities of a store: its self-telemetry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreStats {
    /// The file's layout version.
    pub layout_version: u32,
    /// The file's size in bytes (mostly sparse).
    pub file_size: u64,
    /// Families registered.
    pub families: u32,
    /// Most families.
    pub families_capacity: u32,
    /// Series allocated, overflow and deleted series included.
    pub series_allocated: u32,
    /// Most series.
    pub series_capacity: u32,
    /// Label bytes used.
    pub label_bytes_used: u64,
    /// Label bytes available.
    pub label_bytes_capacity: u64,
    /// Value cells a writer needs for every series so far (one that
    /// touched them all).
    pub cells_used: u64,
    /// Value cells per writer.
    pub cells_capacity: u64,
    /// Sketch cells used per writer (summary quantiles).
    pub sketch_cells_used: u64,
    /// Sketch cells per writer.
    pub sketch_cells_capacity: u64,
    /// Writer slots (not counting the shared slot).
    pub writers_capacity: u32,
    /// Slots owned by a live process.
    pub writers_live: u32,
    /// Slots whose process died or released them, awaiting reuse.
    pub writers_dead: u32,
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
    /// Series of families with a TTL that expired: idle for the TTL, found
    /// by a writer, their space given back to their family.
    pub series_expired_total: u64,
}

/// One writer slot, for `shmetrics inspect`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterInfo {
    /// The slot number (1-based; slot 0 is the shared spare).
    pub slot: u32,
    /// The last owner's pid.
    pub pid: u32,
    /// Whether the owner is alive.
    pub live: bool,
    /// How many times the slot was claimed.
    pub claims: u64,
    /// Value cells its owners took: a block per series they touched
    /// (`store/blocks.rs`).
    pub cells_used: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Span {
    off: u32,
    len: u32,
}

/// A family as output by the last refresh. The fields only some families
/// use (quantiles, native buckets, exemplars, a TTL) are in [`Rare`], so
/// that a family takes about a hundred bytes: an exporter of a million
/// series in families of eight keeps 125,000 of them.
#[derive(Clone, Debug)]
struct FamilyEntry {
    /// Index of the family record in the store.
    raw: u32,
    name: Span,
    help: Span,
    unit: Span,
    kind: Kind,
    mode: GaugeMode,
    shape: Shape,
    overflow_series: u32,
    label_names: Range<u32>,
    bounds: Range<u32>,
    /// The record's hints word (bit 0: a counter exposed under its name
    /// as given, without `_total`; see `family::hint_bits`).
    hints: u32,
    /// This refresh's series, in `Snapshot::series`.
    series: Range<u32>,
    /// Where this refresh's series' cumulative counts begin in
    /// `Snapshot::counts` (see [`Bases`]).
    counts_base: u32,
    overflows: u64,
    rare: Option<Box<Rare>>,
}

/// What only some families have; see [`FamilyEntry`].
#[derive(Clone, Debug, Default)]
struct Rare {
    /// Summary quantiles, a range of `Cache::quantiles`.
    quantiles: Range<u32>,
    /// A summary's quantile window (`age_buckets` 0 for none).
    window: Window,
    /// A histogram's native buckets, if it has them.
    native: Option<Native>,
    /// Exemplar places per series (0: none kept).
    exemplars: u32,
    /// Series TTL in ms (0: none), and the integer cell (from a series'
    /// first) of the time of its last update, in slot 0.
    ttl_ms: u64,
    ttl_cell: u32,
    /// The bases of this refresh's quantiles, exemplars and natives.
    bases: Bases,
}

/// Where a family's series' parts begin, each series taking the same
/// number in turn: cumulative counts in `Snapshot::counts` (see
/// [`FamilyEntry::counts_per_series`]), quantiles in
/// `Snapshot::quantiles` and exemplar places in `Snapshot::exemplars`;
/// and the first member's entry in `Snapshot::natives` (one per member).
#[derive(Clone, Copy, Debug, Default)]
struct Bases {
    counts: u32,
    quantiles: u32,
    exemplars: u32,
    natives: u32,
}

impl Rare {
    /// The fields boxed, unless the family uses none of them.
    fn boxed(self) -> Option<Box<Rare>> {
        let plain = self.quantiles.is_empty()
            && self.window == Window::default()
            && self.native.is_none()
            && self.exemplars == 0
            && self.ttl_ms == 0;
        (!plain).then(|| Box::new(self))
    }
}

impl FamilyEntry {
    /// How many label values each series has.
    fn n_labels(&self) -> u32 {
        self.label_names.end - self.label_names.start
    }

    /// Cumulative counts each series of this refresh takes: a histogram's
    /// buckets (`+Inf` included), a summary's count.
    fn counts_per_series(&self) -> u32 {
        match self.kind {
            Kind::Histogram => self.bounds.end - self.bounds.start + 1,
            Kind::Summary => 1,
            _ => 0,
        }
    }

    fn quantiles(&self) -> Range<u32> {
        self.rare.as_ref().map_or(0..0, |r| r.quantiles.clone())
    }

    fn window(&self) -> Window {
        self.rare
            .as_ref()
            .map_or_else(Window::default, |r| r.window)
    }

    fn native(&self) -> Option<Native> {
        self.rare.as_ref().and_then(|r| r.native)
    }

    fn exemplars(&self) -> u32 {
        self.rare.as_ref().map_or(0, |r| r.exemplars)
    }

    fn ttl_ms(&self) -> u64 {
        self.rare.as_ref().map_or(0, |r| r.ttl_ms)
    }

    fn ttl_cell(&self) -> u32 {
        self.rare.as_ref().map_or(0, |r| r.ttl_cell)
    }

    fn bases(&self) -> Bases {
        let rare = self.rare.as_ref().map_or_else(Bases::default, |r| r.bases);
        Bases {
            counts: self.counts_base,
            ..rare
        }
    }

    fn set_bases(&mut self, b: Bases) {
        self.counts_base = b.counts;
        if let Some(r) = &mut self.rare {
            r.bases = b;
        }
    }
}

/// A label a series shows besides its own: none, the overflow label, or
/// the `pid` label of a per-process gauge (`EXTRA_PID + i`: the span
/// `Snapshot::pid_spans[i]`).
const EXTRA_NONE: u32 = 0;
const EXTRA_OVERFLOW: u32 = 1;
const EXTRA_PID: u32 = 2;

/// One series of this refresh: a member of its family, with the label
/// the snapshot adds to it. Its number (value or sum) is at the same
/// index in `Snapshot::numbers`; its other parts are at its family's
/// bases (see [`FamilyEntry::bases`]). Eight bytes: an exporter keeps one
/// per series between scrapes.
#[derive(Clone, Copy, Debug)]
struct SeriesEntry {
    /// The member's index in its family's `Cache::members` list.
    member: u32,
    /// `EXTRA_NONE`, `EXTRA_OVERFLOW` or `EXTRA_PID + i`.
    extra: u32,
}

/// The latest exemplar of one place, as read by the last refresh.
#[derive(Clone, Debug)]
struct ExemplarEntry {
    value: f64,
    ts: u64,
    /// A range of `Snapshot::exemplar_labels`.
    labels: Range<u32>,
}

/// A native histogram series' buckets as merged by the last refresh.
#[derive(Clone, Debug)]
struct NativeEntry {
    /// The schema after any resolution reduction.
    schema: i32,
    zero_threshold: f64,
    zero_count: u64,
    /// The zero count plus every bucket: the histogram's count.
    total: u64,
    /// Negative, then positive side: the first bucket index, and a range
    /// of `Snapshot::native_counts`.
    runs: [(i32, Range<u32>); 2],
}

/// A decoded series record. Records never change once published (until a
/// wipe, which starts a new epoch), so they are decoded once; except a
/// record of a family with a TTL, which a new series may reuse (with a new
/// state word), and which is then decoded again.
#[derive(Clone, Copy, Debug)]
struct CachedSeries {
    id: u32,
    /// The record's state word when its labels were decoded; 0 for a
    /// record that was not live then.
    word: u32,
    /// The first of its label values (as many as its family's label
    /// names), in `Cache::ends`.
    values: u32,
    int_off: u32,
    float_off: u32,
    /// Its first sketch cell, in `Cache::sketch_offs` (for a family that
    /// has sketch cells: quantiles, native buckets, exemplars; else
    /// `u32::MAX`).
    sketch: u32,
    created_unix_ns: u64,
}

/// What a snapshot keeps between refreshes.
#[derive(Clone, Debug, Default)]
struct Cache {
    /// The store (tag) and epoch the cache belongs to.
    owner: Option<(u32, u64)>,
    /// Families' names, help texts, units and label names, the last as
    /// `spans` of it.
    strings: String,
    spans: Vec<Span>,
    /// Series' label values, one after the other in the order decoded,
    /// and where each ends: a series' values are `ends[v..v + n]` for its
    /// `CachedSeries::values` `v`, the first starting where the value
    /// before ends (4 bytes a value, not a span's 8).
    values: String,
    ends: Vec<u32>,
    bounds: Vec<f64>,
    /// Summary quantiles of every family.
    quantiles: Vec<f64>,
    /// A summary's merged sketch, and scratch for one slot's set: kept
    /// zeroed between series.
    sketch_acc: Vec<u64>,
    sketch_tmp: Vec<u64>,
    /// A summary's observations from its sets' exact buffers.
    sketch_exact: crate::window::Exact,
    /// Estimates of one series' quantiles.
    estimates: Vec<f64>,
    /// A native histogram's merged buckets (both sides): kept zeroed
    /// between series.
    native_acc: Vec<u64>,
    /// Family records decoded so far (each is final: live, dead or corrupt).
    families_done: u32,
    /// Store family index -> index in `Snapshot::families`.
    family_out: Vec<Option<u32>>,
    /// Series records decoded so far.
    series_done: u32,
    /// Per output family, its series in creation order.
    members: Vec<Vec<CachedSeries>>,
    /// Label values left unused by records decoded again; past a point
    /// the cache starts over rather than grow.
    stale_spans: usize,
    /// The merge phase's output, during a refresh only.
    sums: Sums,
    life: Vec<SlotLife>,
    /// The store's removal count at the start of the last refresh (`None`
    /// after a reset): while it stays, no series left `LIVE`.
    removals: Option<u64>,
    /// The first sketch cell of each series whose family has any (see
    /// `CachedSeries::sketch`): a side table, as most series have none.
    sketch_offs: Vec<u64>,
    /// Whether the last refresh's values can be rewritten in place (see
    /// `emit::replayable`).
    replayable: bool,
}

/// A consistent copy of a store's contents.
///
/// Make one with [`Store::snapshot`]. A long-lived reader (an exporter)
/// should keep one and refresh it with [`Store::snapshot_into`]: a refresh
/// reuses its buffers and decodes only what was added since the last one.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    families: Vec<FamilyEntry>,
    series: Vec<SeriesEntry>,
    numbers: Vec<f64>,
    counts: Vec<u64>,
    quantiles: Vec<Quantile>,
    /// Native histograms' buckets, one entry per member of a native
    /// family (in member order), and their counts.
    natives: Vec<NativeEntry>,
    native_counts: Vec<u64>,
    /// Per place of every series that keeps exemplars, its latest one.
    exemplars: Vec<Option<ExemplarEntry>>,
    /// Exemplar label names and values, as spans of `exemplar_strings`.
    exemplar_labels: Vec<(Span, Span)>,
    exemplar_strings: String,
    pids: String,
    /// The `pid` labels' values, as spans of `pids`.
    pid_spans: Vec<Span>,
    stats: StoreStats,
    cache: Cache,
}

impl Snapshot {
    /// Starts the cache over (keeping its buffers' capacity) unless it
    /// belongs to `owner`, a store's tag and epoch: for another store, or
    /// after a wipe.
    fn reset_cache(&mut self, owner: (u32, u64)) {
        let c = &mut self.cache;
        if c.owner == Some(owner) {
            return;
        }
        c.owner = Some(owner);
        c.strings.clear();
        c.spans.clear();
        c.values.clear();
        c.ends.clear();
        c.bounds.clear();
        c.quantiles.clear();
        c.families_done = 0;
        c.family_out.clear();
        c.series_done = 0;
        c.members.clear();
        c.stale_spans = 0;
        c.sketch_offs.clear();
        c.removals = None;
        c.replayable = false;
        self.families.clear();
    }
}

impl Store {
    /// Takes a consistent snapshot of every family and series.
    ///
    /// Counters and histograms are summed over all writer slots, alive or
    /// dead; gauges are combined by their mode. A histogram's counts are
    /// always cumulative and monotone, and its `+Inf` bucket equals its
    /// count. A histogram's or summary's sum includes every observation
    /// its count includes (`Store::observe`).
    ///
    /// # Errors
    /// [`ErrorKind::Busy`] if the store was wiped during every one of
    /// several attempts; [`ErrorKind::Corrupt`] if the allocation counters
    /// are out of range.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let mut snap = Snapshot::default();
        self.snapshot_into(&mut snap)?;
        Ok(snap)
    }

    /// Refreshes `snap` to the store's current contents, reusing its
    /// buffers and the records it already decoded. `snap` may come from
    /// any store (it is rebuilt if it is not from this one).
    ///
    /// # Errors
    /// As [`Store::snapshot`]. On error, `snap` is left empty.
    pub fn snapshot_into(&self, snap: &mut Snapshot) -> Result<()> {
        self.check_file()?;
        for _ in 0..16 {
            match self.try_refresh(snap) {
                Ok(true) => return Ok(()),
                Ok(false) => std::thread::yield_now(),
                Err(e) => {
                    *snap = Snapshot::default();
                    return Err(e);
                }
            }
        }
        *snap = Snapshot::default();
        Err(Error::new(
            ErrorKind::Busy,
            "the store was wiped during every snapshot attempt",
        )
        .with_path(self.path()))
    }

    /// One attempt; `Ok(false)` if a wipe interfered.
    fn try_refresh(&self, snap: &mut Snapshot) -> Result<bool> {
        let hot = &self.map.header().hot;
        let epoch = hot.epoch.load(Acquire);
        if self.wipe_in_progress() {
            return Ok(false);
        }
        snap.reset_cache((self.tag, epoch));
        // Read before any state word: a removal counted later is seen by
        // the next refresh, and one counted before shows in its record.
        let removals = self.map.header().alloc.series_removals.load(Acquire);
        let recheck = snap.cache.removals.replace(removals) != Some(removals);
        let (fam_used, series_used) = self.records_used()?;
        let decoded = (snap.cache.families_done, snap.cache.series_done);
        self.decode_new_families(snap, fam_used);
        self.decode_new_series(snap, series_used);
        self.decode_reused_series(snap);
        let same_records =
            !recheck && decoded == (snap.cache.families_done, snap.cache.series_done);
        // The cell counts are read only now. A series is published LIVE
        // after it took its cells, so these counts cover every series just
        // decoded.
        let cells = self.cells_in_use()?;
        let mut life = std::mem::take(&mut snap.cache.life);
        self.slot_lives(&mut life);
        snap.stats = self.stats_with(&life);
        // The native buckets between the merge's counts and its sums
        // (see `Store::observe_native` for why).
        let mut sums = Sums::default();
        let mut placed = Placed::default();
        let shared = self.merge_slots(&life, cells, &mut sums, &mut placed, |placed| {
            self.read_natives(
                snap,
                PerSlot {
                    life: &life,
                    placed,
                },
            );
        });
        if shared {
            let members = snap.cache.members.iter().flatten();
            let cells = members.map(|m| (m.int_off as usize, m.float_off as usize));
            self.add_shared_floats(&mut sums, cells);
        }
        snap.cache.sums = sums;
        let per_slot = PerSlot {
            life: &life,
            placed: &placed,
        };
        self.emit_series(snap, per_slot, recheck, same_records);
        // The series' values are in `numbers` and `counts` now: the
        // merged cells (16 bytes a counter) and the blocks read per slot
        // are not kept between reads.
        snap.cache.sums = Sums::default();
        drop(placed);
        snap.cache.life = life;

        if hot.epoch.load(Acquire) != epoch || self.wipe_in_progress() {
            snap.cache.owner = None;
            return Ok(false);
        }
        Ok(true)
    }

    /// The family and series records allocated so far.
    fn records_used(&self) -> Result<(u32, u32)> {
        let alloc = &self.map.header().alloc;
        let fx = self.map.fixed();
        let fam_used = alloc.families_used.load(Acquire);
        let series_used = alloc.series_used.load(Acquire);
        if fam_used > fx.max_families || series_used > fx.max_series {
            return Err(self.corrupt_counter());
        }
        Ok((fam_used, series_used))
    }

    fn corrupt_counter(&self) -> Error {
        Error::new(
            ErrorKind::Corrupt,
            "an allocation counter is past its capacity",
        )
        .with_path(self.path())
    }
}

impl Cache {
    /// A member's first sketch cell (`usize::MAX` if its family has none).
    fn sketch_off(&self, m: &CachedSeries) -> usize {
        sketch_off(&self.sketch_offs, m)
    }
}

/// A member's first sketch cell in `sketch_offs` (`Cache::sketch_offs`);
/// `usize::MAX` (past every region, so never read) if its family has none.
fn sketch_off(sketch_offs: &[u64], m: &CachedSeries) -> usize {
    sketch_offs
        .get(m.sketch as usize)
        .map_or(usize::MAX, |&o| usize::try_from(o).unwrap_or(usize::MAX))
}

fn push_str(buf: &mut String, s: &str) -> Span {
    let off = buf.len() as u32;
    buf.push_str(s);
    Span {
        off,
        len: s.len() as u32,
    }
}

// What a kept snapshot costs per series (docs/ARCHITECTURE.md, "Scale"):
// a series of the refresh and a decoded member.
const _: () = assert!(std::mem::size_of::<SeriesEntry>() == 8);
const _: () = assert!(std::mem::size_of::<CachedSeries>() == 32);

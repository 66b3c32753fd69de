//! Consistent snapshots: every family and series with values merged across
//! writer slots. Reading takes no lock and never blocks a writer.
//!
//! Families come out in registration order and series within a family in
//! creation order, so the output is stable without sorting.

use std::ops::Range;
use std::sync::atomic::{
    fence, AtomicU64,
    Ordering::{Acquire, Relaxed},
};

use crate::error::{Error, ErrorKind, Result};
use crate::exemplar;
use crate::family::{GaugeMode, Kind, OVERFLOW_LABEL, PID_LABEL};
use crate::native::{self, Native};
use crate::proc;
use crate::shm;
use crate::shm::layout::{slot_state, state, FamilyRec, SeriesRec, LAYOUT_VERSION};
use crate::store::{classic_cells, decode_strs, FamilyType, Shape, Store};
use crate::window::{self, Window};

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
    /// Value cells used per writer.
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
}

#[derive(Clone, Copy, Debug, Default)]
struct Span {
    off: u32,
    len: u32,
}

/// A family as output by the last refresh.
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
    /// Summary quantiles, a range of `Cache::quantiles`.
    quantiles: Range<u32>,
    /// A summary's quantile window (`age_buckets` 0 for none).
    window: Window,
    /// A histogram's native buckets, if it has them.
    native: Option<Native>,
    /// Exemplar places per series (0: none kept).
    exemplars: u32,
    /// Series TTL in ms (0: none), and the integer cell (from a series'
    /// first) of each slot's time of its last update.
    ttl_ms: u64,
    ttl_cell: u32,
    /// This refresh's series, in `Snapshot::series`.
    series: Range<u32>,
    overflows: u64,
}

#[derive(Clone, Copy, Debug)]
enum Extra {
    None,
    /// A span of `Snapshot::pids`.
    Pid(Span),
    Overflow,
}

#[derive(Clone, Debug)]
struct SeriesEntry {
    /// Label values: a range of `Cache::spans`.
    values: Range<u32>,
    extra: Extra,
    /// Index into `numbers` (the value, or the sum).
    number: u32,
    /// Index into `counts` (cumulative buckets, or the summary count).
    counts: u32,
    /// Index into `Snapshot::quantiles` of a summary's first quantile.
    quantiles: u32,
    /// Index into `Snapshot::natives` of a native histogram's buckets.
    native: u32,
    /// Index into `Snapshot::exemplars` of the series' first place.
    exemplars: u32,
    created_unix_ns: u64,
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
#[derive(Clone, Debug)]
struct CachedSeries {
    id: u32,
    /// The record's state word when its labels were decoded; 0 for a
    /// record that was not live then.
    word: u32,
    values: Range<u32>,
    int_off: u32,
    float_off: u32,
    sketch_off: u64,
    created_unix_ns: u64,
}

/// What a snapshot keeps between refreshes.
#[derive(Clone, Debug, Default)]
struct Cache {
    /// The store (tag) and epoch the cache belongs to.
    owner: Option<(u32, u64)>,
    strings: String,
    spans: Vec<Span>,
    bounds: Vec<f64>,
    /// Summary quantiles of every family.
    quantiles: Vec<f64>,
    /// A summary's merged sketch, and scratch for one slot's set: kept
    /// zeroed between series.
    sketch_acc: Vec<u64>,
    sketch_tmp: Vec<u64>,
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
    /// Label spans left unused by records decoded again; past a point the
    /// cache starts over rather than grow.
    stale_spans: usize,
    acc_ints: Vec<u64>,
    acc_floats: Vec<f64>,
    life: Vec<SlotLife>,
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
    stats: StoreStats,
    cache: Cache,
}

/// A family in a [`Snapshot`].
#[derive(Clone, Copy, Debug)]
pub struct FamilyView<'a> {
    snap: &'a Snapshot,
    f: &'a FamilyEntry,
}

/// A series in a [`Snapshot`].
#[derive(Clone, Copy, Debug)]
pub struct SeriesView<'a> {
    snap: &'a Snapshot,
    f: &'a FamilyEntry,
    s: &'a SeriesEntry,
}

/// A series' value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// A counter's total.
    Counter(f64),
    /// A gauge's value, combined by the family's mode.
    Gauge(f64),
    /// A histogram: classic buckets, native (exponential) buckets, or both.
    Histogram {
        /// Classic upper bounds, without `+Inf`; empty for a native-only
        /// histogram.
        bounds: &'a [f64],
        /// Cumulative counts, one per bound and a last one for `+Inf`,
        /// which is also the count. With native buckets the count is
        /// their total (zero bucket included), exactly, in every
        /// snapshot; the classic counts never exceed it.
        cumulative: &'a [u64],
        /// The sum of observations.
        sum: f64,
        /// The native buckets, for a family that has them.
        native: Option<NativeBuckets<'a>>,
    },
    /// A summary.
    Summary {
        /// Observations, since the series was created.
        count: u64,
        /// Their sum.
        sum: f64,
        /// The configured quantiles over the family's sliding window, in
        /// increasing order of `quantile`; empty when the family has none.
        /// A value is NaN when the window holds no observation.
        quantiles: &'a [Quantile],
    },
}

/// An OpenMetrics exemplar: the latest sampled observation of a counter
/// series or of a histogram bucket, over all processes.
#[derive(Clone, Copy, Debug)]
pub struct Exemplar<'a> {
    snap: &'a Snapshot,
    e: &'a ExemplarEntry,
}

impl<'a> Exemplar<'a> {
    /// The exemplar's labels (a trace id, say), in the order they were
    /// recorded.
    pub fn labels(&self) -> impl ExactSizeIterator<Item = (&'a str, &'a str)> + 'a {
        let snap = self.snap;
        let r = self.e.labels.start as usize..self.e.labels.end as usize;
        let s = |sp: Span| &snap.exemplar_strings[sp.off as usize..(sp.off + sp.len) as usize];
        snap.exemplar_labels[r]
            .iter()
            .map(move |(n, v)| (s(*n), s(*v)))
    }

    /// The value observed (a histogram's observation, or a counter's
    /// increment).
    pub fn value(&self) -> f64 {
        self.e.value
    }

    /// When it was recorded, in nanoseconds since the Unix epoch.
    pub fn timestamp_unix_ns(&self) -> u64 {
        self.e.ts
    }
}

impl PartialEq for Exemplar<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.value().to_bits() == other.value().to_bits()
            && self.timestamp_unix_ns() == other.timestamp_unix_ns()
            && self.labels().eq(other.labels())
    }
}

/// One quantile of a summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantile {
    /// The quantile, in `[0, 1]`.
    pub quantile: f64,
    /// Its estimate (NaN when the window is empty).
    pub value: f64,
}

/// A histogram's native (exponential) buckets, as Prometheus defines
/// them: bucket `i` of the positive side holds the values in
/// `(base^(i-1), base^i]`, with `base = 2^(2^-schema)`; the negative side
/// mirrors it; magnitudes up to `zero_threshold` count in the zero bucket.
///
/// From the store, `schema` is the family's, or lower when the snapshot
/// reduced the resolution to the family's bucket limit; `zero_threshold`
/// is the effective one (at least 2^-64); each run goes from the first to
/// the last non-empty bucket of its side. See [`crate::NativeOpts`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeBuckets<'a> {
    /// The resolution, from -4 to 8.
    pub schema: i32,
    /// The width of the zero bucket: `[-zero_threshold, zero_threshold]`.
    pub zero_threshold: f64,
    /// Observations in the zero bucket.
    pub zero_count: u64,
    /// Positive buckets.
    pub positive: BucketRun<'a>,
    /// Negative buckets (by magnitude).
    pub negative: BucketRun<'a>,
}

/// Consecutive native buckets: `counts[k]` is the (non-cumulative) count
/// of bucket index `offset + k`. Zero counts may occur inside a run.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BucketRun<'a> {
    /// The bucket index of `counts[0]`.
    pub offset: i32,
    /// Counts of consecutive buckets.
    pub counts: &'a [u64],
}

impl Snapshot {
    fn str(&self, s: Span) -> &str {
        &self.cache.strings[s.off as usize..(s.off + s.len) as usize]
    }

    /// Families in registration order.
    pub fn families(&self) -> impl ExactSizeIterator<Item = FamilyView<'_>> + '_ {
        self.families
            .iter()
            .map(move |f| FamilyView { snap: self, f })
    }

    /// The family of this name, if any.
    pub fn family(&self, name: &str) -> Option<FamilyView<'_>> {
        self.families().find(|f| f.name() == name)
    }

    /// Store telemetry at the time of the snapshot.
    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }

    /// Series in all families.
    pub fn series_count(&self) -> usize {
        self.series.len()
    }
}

impl<'a> FamilyView<'a> {
    /// The name, without suffixes (a counter's `_total` is not part of it).
    pub fn name(&self) -> &'a str {
        self.snap.str(self.f.name)
    }

    /// The help text, unescaped.
    pub fn help(&self) -> &'a str {
        self.snap.str(self.f.help)
    }

    /// The unit, empty if none.
    pub fn unit(&self) -> &'a str {
        self.snap.str(self.f.unit)
    }

    /// The metric type.
    pub fn kind(&self) -> Kind {
        self.f.kind
    }

    /// The gauge mode.
    pub fn gauge_mode(&self) -> GaugeMode {
        self.f.mode
    }

    /// The label names declared for the family.
    pub fn label_names(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let snap = self.snap;
        let r = self.f.label_names.start as usize..self.f.label_names.end as usize;
        snap.cache.spans[r].iter().map(move |s| snap.str(*s))
    }

    /// Histogram bucket bounds, without `+Inf`.
    pub fn buckets(&self) -> &'a [f64] {
        &self.snap.cache.bounds[self.f.bounds.start as usize..self.f.bounds.end as usize]
    }

    /// Series in creation order.
    pub fn series(&self) -> impl ExactSizeIterator<Item = SeriesView<'a>> + 'a {
        let (snap, f) = (self.snap, self.f);
        snap.series[f.series.start as usize..f.series.end as usize]
            .iter()
            .map(move |s| SeriesView { snap, f, s })
    }

    /// New label sets that went to the overflow series.
    pub fn overflows(&self) -> u64 {
        self.f.overflows
    }
}

impl<'a> SeriesView<'a> {
    /// The label values, in the order of the family's label names.
    pub fn label_values(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let snap = self.snap;
        let r = self.s.values.start as usize..self.s.values.end as usize;
        snap.cache.spans[r].iter().map(move |s| snap.str(*s))
    }

    /// All labels as (name, value) pairs: the family's, then `pid` (gauge
    /// modes `all`/`liveall`) or `shmetrics_overflow` (overflow series).
    pub fn labels(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let snap = self.snap;
        let names = FamilyView { snap, f: self.f }.label_names();
        let extra = match self.s.extra {
            Extra::None => None,
            Extra::Pid(s) => Some((
                PID_LABEL,
                &snap.pids[s.off as usize..(s.off + s.len) as usize],
            )),
            Extra::Overflow => Some((OVERFLOW_LABEL, "true")),
        };
        names.zip(self.label_values()).chain(extra)
    }

    /// The value.
    pub fn value(&self) -> Value<'a> {
        let n = self.snap.numbers[self.s.number as usize];
        match self.f.kind {
            Kind::Counter => Value::Counter(n),
            Kind::Gauge => Value::Gauge(n),
            Kind::Histogram => {
                let bounds = FamilyView {
                    snap: self.snap,
                    f: self.f,
                }
                .buckets();
                let c = self.s.counts as usize;
                let native = self.f.native.and_then(|_| {
                    let e = self.snap.natives.get(self.s.native as usize)?;
                    let run = |(offset, r): &(i32, Range<u32>)| BucketRun {
                        offset: *offset,
                        counts: &self.snap.native_counts[r.start as usize..r.end as usize],
                    };
                    Some(NativeBuckets {
                        schema: e.schema,
                        zero_threshold: e.zero_threshold,
                        zero_count: e.zero_count,
                        negative: run(&e.runs[0]),
                        positive: run(&e.runs[1]),
                    })
                });
                Value::Histogram {
                    bounds,
                    cumulative: &self.snap.counts[c..c + bounds.len() + 1],
                    sum: n,
                    native,
                }
            }
            Kind::Summary => {
                let q = self.s.quantiles as usize;
                Value::Summary {
                    count: self.snap.counts[self.s.counts as usize],
                    sum: n,
                    quantiles: &self.snap.quantiles[q..q + self.f.quantiles.len()],
                }
            }
        }
    }

    /// The series' exemplars, one entry per place, each the latest over
    /// all processes if any was recorded: for a counter one place; for a
    /// histogram one per classic bucket, in the order of
    /// [`Value::Histogram`]'s `cumulative` (`+Inf` last). Empty if the
    /// family keeps no exemplars (see [`crate::FamilyDesc::exemplars`]).
    pub fn exemplars(&self) -> impl ExactSizeIterator<Item = Option<Exemplar<'a>>> + 'a {
        let snap = self.snap;
        let start = (self.s.exemplars as usize).min(snap.exemplars.len());
        let end = start
            .saturating_add(self.f.exemplars as usize)
            .min(snap.exemplars.len());
        snap.exemplars[start..end]
            .iter()
            .map(move |e| e.as_ref().map(|e| Exemplar { snap, e }))
    }

    /// The exemplar of one place (see [`SeriesView::exemplars`]), if any.
    pub fn exemplar(&self, place: usize) -> Option<Exemplar<'a>> {
        self.exemplars().nth(place).flatten()
    }

    /// When the series was created, in nanoseconds since the Unix epoch.
    pub fn created_unix_ns(&self) -> u64 {
        self.s.created_unix_ns
    }

    /// Whether this is the family's overflow series.
    pub fn is_overflow(&self) -> bool {
        matches!(self.s.extra, Extra::Overflow)
    }
}

/// What a slot is, for merging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotLife {
    Unused,
    Live,
    Dead,
}

impl Store {
    /// Takes a consistent snapshot of every family and series.
    ///
    /// Counters and histograms are summed over all writer slots, alive or
    /// dead; gauges are combined by their mode. A histogram's counts are
    /// always cumulative and monotone, and its `+Inf` bucket equals its
    /// count.
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

    /// Counts and capacities, without reading the series.
    pub fn stats(&self) -> StoreStats {
        let mut life = Vec::new();
        self.slot_lives(&mut life);
        self.stats_with(&life)
    }

    /// Every writer slot that was ever claimed.
    pub fn writers(&self) -> Vec<WriterInfo> {
        let mut life = Vec::new();
        self.slot_lives(&mut life);
        let slots = self.map.slots();
        (1..life.len())
            .filter(|i| life[*i] != SlotLife::Unused)
            .map(|i| WriterInfo {
                slot: i as u32,
                pid: slots[i].pid.load(Relaxed),
                live: life[i] == SlotLife::Live,
                claims: slots[i].claims.load(Relaxed),
            })
            .collect()
    }

    fn slot_lives(&self, life: &mut Vec<SlotLife>) {
        let hwm = self
            .map
            .header()
            .alloc
            .slots_hwm
            .load(Acquire)
            .min(self.map.fixed().max_slots);
        life.clear();
        life.push(SlotLife::Live); // the shared slot
        for s in &self.map.slots()[1..=hwm as usize] {
            life.push(match s.state.load(Acquire) {
                slot_state::FREE => SlotLife::Unused,
                slot_state::LIVE
                    if proc::is_alive(s.pid.load(Relaxed), s.start_time.load(Relaxed)) =>
                {
                    SlotLife::Live
                }
                _ => SlotLife::Dead,
            });
        }
    }

    fn stats_with(&self, life: &[SlotLife]) -> StoreStats {
        let h = self.map.header();
        let fx = self.map.fixed();
        StoreStats {
            layout_version: LAYOUT_VERSION,
            file_size: fx.file_size,
            families: h.alloc.families_used.load(Relaxed),
            families_capacity: fx.max_families,
            series_allocated: h.alloc.series_used.load(Relaxed),
            series_capacity: fx.max_series,
            label_bytes_used: h.alloc.arena_used.load(Relaxed),
            label_bytes_capacity: fx.arena_bytes,
            cells_used: h
                .alloc
                .int_cells_used
                .load(Relaxed)
                .saturating_add(h.alloc.float_cells_used.load(Relaxed)),
            cells_capacity: fx.cells_per_slot,
            sketch_cells_used: h.alloc.sketch_cells_used.load(Relaxed),
            sketch_cells_capacity: fx.sketch_cells_per_slot,
            writers_capacity: fx.max_slots,
            writers_live: life[1..].iter().filter(|l| **l == SlotLife::Live).count() as u32,
            writers_dead: life[1..].iter().filter(|l| **l == SlotLife::Dead).count() as u32,
            writer_claims_total: h.alloc.slot_claims_total.load(Relaxed),
            writer_reuses_total: h.alloc.slot_reuses_total.load(Relaxed),
            writers_exhausted_total: h.alloc.slot_exhausted_total.load(Relaxed),
            overflows_total: h.alloc.overflows_total.load(Relaxed),
            lock_recoveries_total: h.alloc.lock_recoveries_total.load(Relaxed),
            series_expired_total: h.alloc.series_expired_total.load(Relaxed),
        }
    }

    /// One attempt; `Ok(false)` if a wipe interfered.
    fn try_refresh(&self, snap: &mut Snapshot) -> Result<bool> {
        let h = self.map.header();
        let fx = self.map.fixed();
        let epoch = h.hot.epoch.load(Acquire);
        if h.hot.wipe_pending.load(Acquire) != 0 {
            return Ok(false);
        }
        if snap.cache.owner != Some((self.tag, epoch)) {
            // Another store, or a wipe since: start over (keeping capacity).
            let c = &mut snap.cache;
            c.owner = Some((self.tag, epoch));
            c.strings.clear();
            c.spans.clear();
            c.bounds.clear();
            c.quantiles.clear();
            c.families_done = 0;
            c.family_out.clear();
            c.series_done = 0;
            c.members.clear();
            c.stale_spans = 0;
            snap.families.clear();
        }
        let corrupt = || {
            Error::new(
                ErrorKind::Corrupt,
                "an allocation counter is past its capacity",
            )
            .with_path(self.path())
        };
        let fam_used = h.alloc.families_used.load(Acquire);
        let series_used = h.alloc.series_used.load(Acquire);
        if fam_used > fx.max_families || series_used > fx.max_series {
            return Err(corrupt());
        }
        self.decode_new_families(snap, fam_used);
        self.decode_new_series(snap, series_used);
        self.decode_reused_series(snap);
        // The cell counts are read only now. A series is published LIVE
        // after it took its cells, so these counts cover every series just
        // decoded.
        let cap = fx.cells_per_slot as usize;
        let (ints_used, floats_used) = self.cell_counts();
        if ints_used.saturating_add(floats_used) > cap {
            return Err(corrupt());
        }
        let float_base = cap - floats_used;

        let mut life = std::mem::take(&mut snap.cache.life);
        self.slot_lives(&mut life);
        snap.stats = self.stats_with(&life);

        // Sum every slot that was ever used, dead ones included (a dead
        // process's counts stay counted): the integer cells and the float
        // cells each in one sequential pass per slot. Gauge cells are summed
        // too but unused; gauges are combined per slot below.
        let acc_i = &mut snap.cache.acc_ints;
        let acc_f = &mut snap.cache.acc_floats;
        acc_i.clear();
        acc_i.resize(ints_used, 0);
        acc_f.clear();
        acc_f.resize(floats_used, 0.0);
        // Four slots per pass: the accumulators are read and written once
        // per four slots instead of once per slot, which matters because
        // the merge is bound by memory bandwidth.
        let regions: Vec<&[AtomicU64]> = (life.iter().enumerate())
            .filter(|(_, l)| **l != SlotLife::Unused)
            .map(|(slot, _)| self.map.cells(slot as u32))
            .collect();
        let n_int = acc_i.len();
        for group in regions.chunks(4) {
            let r: Vec<&[AtomicU64]> = group.iter().map(|c| &c[..n_int]).collect();
            let ld = |c: &AtomicU64| c.load(Relaxed);
            match r[..] {
                [a, b, c, d] => {
                    for (i, acc) in acc_i.iter_mut().enumerate() {
                        let sum = ld(&a[i])
                            .wrapping_add(ld(&b[i]))
                            .wrapping_add(ld(&c[i]))
                            .wrapping_add(ld(&d[i]));
                        *acc = acc.wrapping_add(sum);
                    }
                }
                _ => {
                    for region in r {
                        for (acc, c) in acc_i.iter_mut().zip(region) {
                            *acc = acc.wrapping_add(ld(c));
                        }
                    }
                }
            }
        }
        for group in regions.chunks(4) {
            let r: Vec<&[AtomicU64]> = group.iter().map(|c| &c[float_base..]).collect();
            let ld = |c: &AtomicU64| f64::from_bits(c.load(Relaxed));
            match r[..] {
                [a, b, c, d] => {
                    for (i, acc) in acc_f.iter_mut().enumerate() {
                        *acc += (ld(&a[i]) + ld(&b[i])) + (ld(&c[i]) + ld(&d[i]));
                    }
                }
                _ => {
                    for region in r {
                        for (acc, c) in acc_f.iter_mut().zip(region) {
                            *acc += ld(c);
                        }
                    }
                }
            }
        }

        // The native buckets, read after the classic counts: see
        // `Store::observe_native` for why this order (and this fence)
        // makes every classic count at most the native total.
        fence(Acquire);
        snap.natives.clear();
        snap.native_counts.clear();
        for (fi, fam) in snap.families.iter().enumerate() {
            let Some(n) = fam.native else {
                continue;
            };
            let classic = classic_cells(fam.bounds.len(), true);
            let cells = n.cells();
            if snap.cache.native_acc.len() < cells {
                snap.cache.native_acc.resize(cells, 0);
            }
            for m in &snap.cache.members[fi] {
                let e = self.native_series(
                    &life,
                    n,
                    (m.int_off as usize + classic, m.sketch_off as usize),
                    &mut snap.cache.native_acc[..cells],
                    &mut snap.native_counts,
                );
                snap.natives.push(e);
            }
        }

        // Emit this refresh's series, family by family.
        snap.series.clear();
        snap.numbers.clear();
        snap.counts.clear();
        snap.quantiles.clear();
        snap.pids.clear();
        snap.exemplars.clear();
        snap.exemplar_labels.clear();
        snap.exemplar_strings.clear();
        let sketch_cells = self.sketch.cells();
        snap.cache.sketch_acc.resize(sketch_cells, 0);
        snap.cache.sketch_tmp.resize(sketch_cells, 0);
        let now_ms = shm::coarse_monotonic_ms();
        let hwm = (life.len() as u32).saturating_sub(1);
        let recs = self.map.series();
        let fam_recs = self.map.families();
        let slots = self.map.slots();
        let mut native_next = 0u32;
        for (fi, fam) in snap.families.iter_mut().enumerate() {
            fam.overflows = fam_recs[fam.raw as usize].overflows.load(Relaxed);
            let first = snap.series.len() as u32;
            for m in &snap.cache.members[fi] {
                // Every member of a native family has an entry, in order.
                let native_k = native_next;
                if fam.native.is_some() {
                    native_next += 1;
                }
                if recs[m.id as usize].state.load(Acquire) != m.word {
                    continue; // deleted or expired since it was decoded
                }
                let overflow = m.id == fam.overflow_series;
                if overflow && fam.overflows == 0 {
                    continue; // an unused overflow series is not exported
                }
                let (io, fo) = (m.int_off as usize, m.float_off as usize);
                if fam.ttl_ms > 0 && !overflow {
                    // Idle for the TTL: gone, whether or not a writer
                    // swept it yet.
                    let cell = io + fam.ttl_cell as usize;
                    if now_ms.saturating_sub(self.last_update(cell, hwm)) >= fam.ttl_ms {
                        continue;
                    }
                }
                let mut entry = SeriesEntry {
                    values: m.values.clone(),
                    extra: if overflow {
                        Extra::Overflow
                    } else {
                        Extra::None
                    },
                    number: snap.numbers.len() as u32,
                    counts: snap.counts.len() as u32,
                    quantiles: snap.quantiles.len() as u32,
                    native: native_k,
                    exemplars: snap.exemplars.len() as u32,
                    created_unix_ns: m.created_unix_ns,
                };
                // Checked indexing: the offsets were validated when the
                // record was decoded, but a corrupt store may since have
                // moved its counters backwards.
                let ints = acc_i.get(io..io.saturating_add(fam.shape.ints as usize));
                let float = fo.checked_sub(float_base).and_then(|i| acc_f.get(i));
                let (Some(ints), Some(&float)) = (ints, float) else {
                    continue;
                };
                if fam.exemplars > 0 {
                    let places = fam.exemplars as usize;
                    let ts_first = io + (fam.shape.ints as usize).saturating_sub(places);
                    let rec_first =
                        (m.sketch_off as usize).saturating_add(fam.native.map_or(0, |n| n.cells()));
                    for p in 0..places {
                        let e = self.latest_exemplar(
                            &life,
                            ts_first + p,
                            rec_first.saturating_add(p * exemplar::RECORD),
                            &mut snap.exemplar_labels,
                            &mut snap.exemplar_strings,
                        );
                        snap.exemplars.push(e);
                    }
                }
                match fam.kind {
                    // Integral increments, plus fractional ones.
                    Kind::Counter => snap.numbers.push(ints[0] as f64 + float),
                    Kind::Histogram => {
                        let classic = classic_cells(fam.bounds.len(), fam.native.is_some());
                        let classic = &ints[..classic.min(ints.len())];
                        let mut running = 0u64;
                        match snap.natives.get(native_k as usize) {
                            Some(e) if fam.native.is_some() => {
                                // The count is the native total; classic
                                // buckets (but `+Inf`, which is the
                                // count) are at most that.
                                let finite = classic.len().saturating_sub(1);
                                for c in &classic[..finite] {
                                    running = running.wrapping_add(*c);
                                    snap.counts.push(running.min(e.total));
                                }
                                snap.counts.push(e.total);
                            }
                            _ => {
                                for c in classic {
                                    running = running.wrapping_add(*c);
                                    snap.counts.push(running);
                                }
                            }
                        }
                        snap.numbers.push(float);
                    }
                    Kind::Summary => {
                        snap.counts.push(ints[0]);
                        snap.numbers.push(float);
                        if fam.window.age_buckets != 0 {
                            let qs = &snap.cache.quantiles
                                [fam.quantiles.start as usize..fam.quantiles.end as usize];
                            let est = &mut snap.cache.estimates;
                            est.clear();
                            self.summary_quantiles(
                                &life,
                                fam.window,
                                fam.window.period(now_ms),
                                (io + 1, m.sketch_off as usize),
                                qs,
                                (&mut snap.cache.sketch_acc, &mut snap.cache.sketch_tmp),
                                est,
                            );
                            snap.quantiles.extend(
                                qs.iter()
                                    .zip(est.iter())
                                    .map(|(&quantile, &value)| Quantile { quantile, value }),
                            );
                        }
                    }
                    Kind::Gauge => {
                        let mode = fam.mode;
                        let per_slot = life.iter().enumerate().filter_map(|(slot, l)| {
                            let wanted = match l {
                                SlotLife::Unused => false,
                                _ if mode == GaugeMode::Shared => slot == 0,
                                SlotLife::Dead => !mode.live_only(),
                                SlotLife::Live => true,
                            };
                            let cells = self.map.cells(slot as u32);
                            let mark = cells[io].load(Relaxed);
                            (wanted && mark != 0)
                                .then(|| (slot, f64::from_bits(cells[fo].load(Relaxed)), mark))
                        });
                        if mode.per_process() {
                            for (slot, v, _) in per_slot {
                                let off = snap.pids.len() as u32;
                                if slot == 0 {
                                    snap.pids.push_str("shared");
                                } else {
                                    use std::fmt::Write;
                                    let _ = write!(snap.pids, "{}", slots[slot].pid.load(Relaxed));
                                }
                                let span = Span {
                                    off,
                                    len: snap.pids.len() as u32 - off,
                                };
                                entry.extra = Extra::Pid(span);
                                entry.number = snap.numbers.len() as u32;
                                snap.numbers.push(v);
                                snap.series.push(entry.clone());
                            }
                            continue;
                        }
                        snap.numbers
                            .push(combine_gauge(mode, per_slot.map(|(_, v, m)| (v, m))));
                    }
                }
                snap.series.push(entry);
            }
            fam.series = first..snap.series.len() as u32;
        }
        snap.cache.life = life;

        if h.hot.epoch.load(Acquire) != epoch || h.hot.wipe_pending.load(Acquire) != 0 {
            snap.cache.owner = None;
            return Ok(false);
        }
        Ok(true)
    }

    /// Decodes family records added since the last refresh. Stops at a
    /// record still being written, to come back to it next time.
    fn decode_new_families(&self, snap: &mut Snapshot, fam_used: u32) {
        let recs = self.map.families();
        while snap.cache.families_done < fam_used {
            let f = &recs[snap.cache.families_done as usize];
            let out = match f.state.load(Acquire) {
                state::INIT => return,
                state::LIVE => self.decode_family(snap, snap.cache.families_done, f),
                _ => None,
            };
            if let Some(entry) = out {
                snap.cache.family_out.push(Some(snap.families.len() as u32));
                snap.families.push(entry);
                snap.cache.members.push(Vec::new());
            } else {
                snap.cache.family_out.push(None);
            }
            snap.cache.families_done += 1;
        }
    }

    fn decode_family(&self, snap: &mut Snapshot, raw: u32, f: &FamilyRec) -> Option<FamilyEntry> {
        let t = self.family_type(f)?;
        let ttl_cell = t.ttl_cell().unwrap_or(0) as u32;
        let FamilyType {
            kind,
            mode,
            n_bounds,
            shape,
            window,
            native,
            exemplars,
            ttl_ms,
            ..
        } = t;
        let c = &mut snap.cache;
        let mark = (
            c.strings.len(),
            c.spans.len(),
            c.bounds.len(),
            c.quantiles.len(),
        );
        let entry = (|| {
            let name = push_str(&mut c.strings, self.arena_utf8(&f.name)?);
            let help = push_str(&mut c.strings, self.arena_utf8(&f.help)?);
            let unit = push_str(&mut c.strings, self.arena_utf8(&f.unit)?);
            let first = c.spans.len() as u32;
            for s in decode_strs(self.arena_str(&f.label_names)?) {
                let span = push_str(&mut c.strings, std::str::from_utf8(s?).ok()?);
                c.spans.push(span);
            }
            let label_names = first..c.spans.len() as u32;
            if label_names.len() != f.n_labels.load(Relaxed) as usize {
                return None;
            }
            let b0 = c.bounds.len() as u32;
            if kind == Kind::Histogram {
                c.bounds
                    .extend_from_slice(self.map.arena_f64s(f.buckets.off.load(Relaxed), n_bounds)?);
            }
            let q0 = c.quantiles.len() as u32;
            if window.age_buckets != 0 {
                c.quantiles.extend_from_slice(
                    self.map
                        .arena_f64s(f.quantiles.off.load(Relaxed), f.quantiles.len.load(Relaxed))?,
                );
            }
            Some(FamilyEntry {
                raw,
                name,
                help,
                unit,
                kind,
                mode,
                shape,
                overflow_series: f.overflow_series.load(Relaxed).wrapping_sub(1),
                label_names,
                bounds: b0..c.bounds.len() as u32,
                quantiles: q0..c.quantiles.len() as u32,
                window,
                native,
                exemplars: exemplars as u32,
                ttl_ms,
                ttl_cell,
                series: 0..0,
                overflows: 0,
            })
        })();
        if entry.is_none() {
            // A corrupt record: drop whatever was pushed for it.
            c.strings.truncate(mark.0);
            c.spans.truncate(mark.1);
            c.bounds.truncate(mark.2);
            c.quantiles.truncate(mark.3);
        }
        entry
    }

    fn arena_utf8(&self, r: &crate::shm::layout::ArenaRef) -> Option<&str> {
        std::str::from_utf8(self.arena_str(r)?).ok()
    }

    /// Decodes series records added since the last refresh, appending each
    /// live one to its family's member list. Stops at a record still being
    /// written (or whose family is), to come back to it next time.
    fn decode_new_series(&self, snap: &mut Snapshot, series_used: u32) {
        let recs = self.map.series();
        let cap = self.map.fixed().cells_per_slot;
        // Whether a series' cells lie within the allocated ranges.
        let sketch_used = self.map.header().alloc.sketch_cells_used.load(Acquire);
        let fits = |io: u64, fo: u64, shape: Shape, so: u64, sketch: u64| {
            let (ints_used, floats_used) = self.cell_counts();
            let float_base = (cap as usize).saturating_sub(floats_used) as u64;
            io.saturating_add(shape.ints as u64) <= ints_used as u64
                && fo >= float_base
                && fo.saturating_add(shape.floats as u64) <= cap
                && so.saturating_add(sketch) <= sketch_used
        };
        while snap.cache.series_done < series_used {
            let id = snap.cache.series_done;
            let rec = &recs[id as usize];
            let word = rec.state.load(Acquire);
            match state::of(word) {
                state::INIT => return,
                st @ (state::LIVE | state::RETIRED | state::REUSABLE) => {
                    let fam = rec.family.load(Relaxed);
                    if fam >= snap.cache.families_done {
                        return; // its family is still being registered
                    }
                    if let Some(out) = snap.cache.family_out[fam as usize] {
                        let fam = &snap.families[out as usize];
                        let shape = fam.shape;
                        let sketch = match fam.native {
                            Some(n) => n.cells() as u64,
                            None => u64::from(fam.window.age_buckets) * self.sketch.cells() as u64,
                        } + u64::from(fam.exemplars) * exemplar::RECORD as u64;
                        let io = rec.int_off.load(Relaxed);
                        let fo = rec.float_off.load(Relaxed);
                        let so = rec.sketch_off.load(Relaxed);
                        // The counts are read after the record was seen
                        // LIVE, so a live series always fits; one that does
                        // not is corrupt, and skipped.
                        if fits(io, fo, shape, so, sketch) {
                            // A retired or reusable record (of a family
                            // with a TTL), or one that changed or is
                            // corrupt, is kept undecoded (word 0 matches no
                            // state): a new series may take it later.
                            let values = if st == state::LIVE {
                                self.decode_values(&mut snap.cache, rec, word)
                            } else {
                                None
                            };
                            snap.cache.members[out as usize].push(CachedSeries {
                                id,
                                word: if values.is_some() { word } else { 0 },
                                values: values.unwrap_or(0..0),
                                int_off: io as u32,
                                float_off: fo as u32,
                                sketch_off: so,
                                created_unix_ns: rec.created_unix_ns.load(Relaxed),
                            });
                        }
                    }
                }
                _ => {} // deleted or abandoned: never exported
            }
            snap.cache.series_done += 1;
        }
    }

    /// Decodes again the records of families with a TTL that a new series
    /// took since they were decoded (their state word changed and is
    /// live). The old label spans are left behind; once they are as many
    /// as the rest, the next refresh starts the cache over.
    fn decode_reused_series(&self, snap: &mut Snapshot) {
        let recs = self.map.series();
        let mut members = std::mem::take(&mut snap.cache.members);
        for (fam, list) in snap.families.iter().zip(members.iter_mut()) {
            if fam.ttl_ms == 0 {
                continue;
            }
            for m in list.iter_mut() {
                let word = recs[m.id as usize].state.load(Acquire);
                if word == m.word || state::of(word) != state::LIVE {
                    continue;
                }
                if let Some(values) =
                    self.decode_values(&mut snap.cache, &recs[m.id as usize], word)
                {
                    snap.cache.stale_spans += m.values.len();
                    m.values = values;
                    m.word = word;
                    m.created_unix_ns = recs[m.id as usize].created_unix_ns.load(Relaxed);
                }
            }
        }
        snap.cache.members = members;
        if snap.cache.stale_spans > snap.cache.spans.len() / 2 + 4096 {
            snap.cache.owner = None; // start over next time
        }
    }

    /// Estimates a summary series' quantiles `qs` over its window, merging
    /// the in-window sets of every slot that was ever used (a dead
    /// process's recent observations stay counted until they age out).
    /// `acc` and `tmp` are the sketch's size and zero, and left zero.
    #[allow(clippy::too_many_arguments)]
    fn summary_quantiles(
        &self,
        life: &[SlotLife],
        w: Window,
        period: u64,
        (header, sketch): (usize, usize),
        qs: &[f64],
        (acc, tmp): (&mut [u64], &mut [u64]),
        out: &mut Vec<f64>,
    ) {
        let bins = self.sketch.cells();
        let sets = w.age_buckets as usize;
        let mut touched: Option<(usize, usize)> = None;
        for (slot, l) in life.iter().enumerate() {
            if *l == SlotLife::Unused {
                continue;
            }
            let headers = self
                .map
                .cells(slot as u32)
                .get(header..header + window::header_cells(sets));
            let counts = self
                .map
                .sketch(slot as u32)
                .get(sketch..sketch + sets * bins);
            let (Some(headers), Some(counts)) = (headers, counts) else {
                continue;
            };
            if let Some((lo, hi)) = window::read_slot(headers, counts, bins, w, period, acc, tmp) {
                touched = Some(touched.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        match touched {
            Some((lo, hi)) => {
                self.sketch.quantiles_into(acc, lo..=hi, qs, out);
                acc[lo..=hi].fill(0);
            }
            None => out.extend(qs.iter().map(|_| f64::NAN)),
        }
    }

    /// Merges a native histogram series' buckets over every slot that was
    /// ever used (a dead process's observations stay counted), reduces
    /// the resolution to the family's bucket limit and appends the runs
    /// to `out`. `(header, sketch)` are the series' first native header
    /// cell and first sketch cell; `acc` is `2 * bins` cells, zero, and
    /// left zero.
    fn native_series(
        &self,
        life: &[SlotLife],
        n: Native,
        (header, sketch): (usize, usize),
        acc: &mut [u64],
        out: &mut Vec<u64>,
    ) -> NativeEntry {
        let bins = n.bins();
        let mut touched = [None; 2];
        let mut zero_count = 0u64;
        for (slot, l) in life.iter().enumerate() {
            if *l == SlotLife::Unused {
                continue;
            }
            let h = self
                .map
                .cells(slot as u32)
                .get(header..header.saturating_add(native::HEADER));
            let c = self
                .map
                .sketch(slot as u32)
                .get(sketch..sketch.saturating_add(2 * bins));
            if let (Some(h), Some(c)) = (h, c) {
                let z = native::read_slot(h, c, bins, acc, &mut touched);
                zero_count = zero_count.wrapping_add(z);
            }
        }
        let (schema, runs) = native::reduce(acc, bins, n.schema, n.max_buckets, touched);
        let mut total = zero_count;
        let mut out_runs: [(i32, Range<u32>); 2] = [(0, 0..0), (0, 0..0)];
        for (side, r) in runs.iter().enumerate() {
            let counts = &acc[r.start..r.start + r.len];
            total = counts.iter().fold(total, |t, c| t.wrapping_add(*c));
            let start = out.len() as u32;
            out.extend_from_slice(counts);
            out_runs[side] = (r.offset, start..out.len() as u32);
        }
        // The runs lie within the touched ranges: zeroing those leaves
        // the accumulator zero.
        for (side, t) in touched.iter().enumerate() {
            if let Some((lo, hi)) = t {
                acc[side * bins + lo..=side * bins + hi].fill(0);
            }
        }
        NativeEntry {
            schema,
            zero_threshold: n.zero_threshold,
            zero_count,
            total,
            runs: out_runs,
        }
    }

    /// The latest exemplar of one place over every slot that was ever
    /// used: the slot whose timestamp cell (integer cell `ts`) is the
    /// greatest, its record at sketch cell `rec` read with the seqlock.
    /// Only that record is read: a slot whose cell is 0 never wrote one,
    /// and its page may be a hole.
    fn latest_exemplar(
        &self,
        life: &[SlotLife],
        ts: usize,
        rec: usize,
        labels: &mut Vec<(Span, Span)>,
        strings: &mut String,
    ) -> Option<ExemplarEntry> {
        let (slot, _) = (life.iter().enumerate())
            .filter(|(_, l)| **l != SlotLife::Unused)
            .filter_map(|(slot, _)| {
                let t = self.map.cells(slot as u32).get(ts)?.load(Acquire);
                (t != 0).then_some((slot, t))
            })
            .max_by_key(|(_, t)| *t)?;
        let cells = self
            .map
            .sketch(slot as u32)
            .get(rec..rec.checked_add(exemplar::RECORD)?)?;
        let r = exemplar::read(cells)?;
        let first = labels.len() as u32;
        for (n, v) in r.pairs() {
            labels.push((push_str(strings, n), push_str(strings, v)));
        }
        Some(ExemplarEntry {
            value: r.value,
            ts: r.ts,
            labels: first..labels.len() as u32,
        })
    }

    /// The integer and float cells allocated so far.
    fn cell_counts(&self) -> (usize, usize) {
        let a = &self.map.header().alloc;
        let clamp = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        (
            clamp(a.int_cells_used.load(Acquire)),
            clamp(a.float_cells_used.load(Acquire)),
        )
    }

    /// Decodes a record's label values, which it had when its state word
    /// was `word` (read with Acquire before): `None` if they are corrupt,
    /// or if the record changed meanwhile (a record of a family with a TTL
    /// may be reused).
    fn decode_values(&self, c: &mut Cache, rec: &SeriesRec, word: u32) -> Option<Range<u32>> {
        let mark = (c.strings.len(), c.spans.len());
        let first = c.spans.len() as u32;
        let ok = (|| {
            for s in decode_strs(self.arena_str(&rec.labels)?) {
                let span = push_str(&mut c.strings, std::str::from_utf8(s?).ok()?);
                c.spans.push(span);
            }
            fence(Acquire);
            (rec.state.load(Relaxed) == word).then_some(())
        })();
        if ok.is_none() {
            c.strings.truncate(mark.0);
            c.spans.truncate(mark.1);
            return None;
        }
        Some(first..c.spans.len() as u32)
    }
}

fn push_str(buf: &mut String, s: &str) -> Span {
    let off = buf.len() as u32;
    buf.push_str(s);
    Span {
        off,
        len: s.len() as u32,
    }
}

/// Combines per-slot gauge values `(value, marker)`; the marker is the time
/// of the last set for the most-recent modes.
fn combine_gauge(mode: GaugeMode, vals: impl Iterator<Item = (f64, u64)>) -> f64 {
    match mode {
        // Per-process modes never get here (they emit one series a slot).
        GaugeMode::Sum
        | GaugeMode::LiveSum
        | GaugeMode::Shared
        | GaugeMode::All
        // Folded from +0.0: `sum()` of nothing is -0.0, which would print
        // as "-0" for a gauge that no process has set.
        | GaugeMode::LiveAll => vals.fold(0.0, |acc, v| acc + v.0),
        GaugeMode::Max | GaugeMode::LiveMax => vals.map(|v| v.0).reduce(f64::max).unwrap_or(0.0),
        GaugeMode::Min | GaugeMode::LiveMin => vals.map(|v| v.0).reduce(f64::min).unwrap_or(0.0),
        GaugeMode::MostRecent | GaugeMode::LiveMostRecent => {
            vals.max_by_key(|v| v.1).map(|v| v.0).unwrap_or(0.0)
        }
    }
}

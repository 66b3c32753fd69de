//! Consistent snapshots: every family and series with values merged across
//! writer slots. Reading takes no lock and never blocks a writer.
//!
//! Families come out in registration order and series within a family in
//! creation order, so the output is stable without sorting.

use std::ops::Range;
use std::sync::atomic::Ordering::{Acquire, Relaxed};

use crate::error::{Error, ErrorKind, Result};
use crate::family::{GaugeMode, Kind, OVERFLOW_LABEL, PID_LABEL};
use crate::proc;
use crate::shm::layout::{slot_state, state, LAYOUT_VERSION};
use crate::store::{cells_for, decode_strs, Shape, Store};

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

#[derive(Clone, Copy, Debug)]
struct Span {
    off: u32,
    len: u32,
}

#[derive(Clone, Debug)]
struct FamilyEntry {
    name: Span,
    help: Span,
    unit: Span,
    kind: Kind,
    mode: GaugeMode,
    label_names: Range<u32>,
    bounds: Range<u32>,
    series: Range<u32>,
    overflows: u64,
}

#[derive(Clone, Copy, Debug)]
enum Extra {
    None,
    Pid(Span),
    Overflow,
}

#[derive(Clone, Debug)]
struct SeriesEntry {
    values: Range<u32>,
    extra: Extra,
    /// Index into `numbers` (the value, or the sum).
    number: u32,
    /// Index into `counts` (cumulative buckets, or the summary count).
    counts: u32,
    created_unix_ns: u64,
}

/// A consistent copy of a store's contents.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    strings: String,
    spans: Vec<Span>,
    families: Vec<FamilyEntry>,
    bounds: Vec<f64>,
    series: Vec<SeriesEntry>,
    numbers: Vec<f64>,
    counts: Vec<u64>,
    stats: StoreStats,
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
    /// A classic histogram.
    Histogram {
        /// Upper bounds, without `+Inf`.
        bounds: &'a [f64],
        /// Cumulative counts, one per bound and a last one for `+Inf`,
        /// which is also the count.
        cumulative: &'a [u64],
        /// The sum of observations.
        sum: f64,
    },
    /// A summary.
    Summary {
        /// Observations.
        count: u64,
        /// Their sum.
        sum: f64,
    },
}

impl Snapshot {
    fn str(&self, s: Span) -> &str {
        &self.strings[s.off as usize..(s.off + s.len) as usize]
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
        self.snap.spans[self.f.label_names.start as usize..self.f.label_names.end as usize]
            .iter()
            .map(move |s| snap.str(*s))
    }

    /// Histogram bucket bounds, without `+Inf`.
    pub fn buckets(&self) -> &'a [f64] {
        &self.snap.bounds[self.f.bounds.start as usize..self.f.bounds.end as usize]
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
        snap.spans[self.s.values.start as usize..self.s.values.end as usize]
            .iter()
            .map(move |s| snap.str(*s))
    }

    /// All labels as (name, value) pairs: the family's, then `pid` (gauge
    /// modes `all`/`liveall`) or `shmetrics_overflow` (overflow series).
    pub fn labels(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let snap = self.snap;
        let names = FamilyView { snap, f: self.f }.label_names();
        let extra = match self.s.extra {
            Extra::None => None,
            Extra::Pid(span) => Some((PID_LABEL, snap.str(span))),
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
                Value::Histogram {
                    bounds,
                    cumulative: &self.snap.counts[c..c + bounds.len() + 1],
                    sum: n,
                }
            }
            Kind::Summary => Value::Summary {
                count: self.snap.counts[self.s.counts as usize],
                sum: n,
            },
        }
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
#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotLife {
    Unused,
    Live,
    Dead,
}

/// A family as the reader decoded it from the store.
struct RawFamily {
    out: u32,
    kind: Kind,
    mode: GaugeMode,
    shape: Shape,
    overflow_series: u32,
    overflows: u64,
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
        for _ in 0..16 {
            if let Some(s) = self.try_snapshot()? {
                return Ok(s);
            }
            std::thread::yield_now();
        }
        Err(Error::new(
            ErrorKind::Busy,
            "the store was wiped during every snapshot attempt",
        )
        .with_path(self.path()))
    }

    /// Counts and capacities, without reading the series.
    pub fn stats(&self) -> StoreStats {
        let life = self.slot_lives();
        self.stats_with(&life)
    }

    /// Every writer slot that was ever claimed.
    pub fn writers(&self) -> Vec<WriterInfo> {
        let life = self.slot_lives();
        let slots = self.map.slots();
        (1..life.len())
            .map(|i| WriterInfo {
                slot: i as u32,
                pid: slots[i].pid.load(Relaxed),
                live: life[i] == SlotLife::Live,
                claims: slots[i].claims.load(Relaxed),
            })
            .collect()
    }

    fn slot_lives(&self) -> Vec<SlotLife> {
        let hwm = self
            .map
            .header()
            .alloc
            .slots_hwm
            .load(Acquire)
            .min(self.map.fixed().max_slots);
        let slots = self.map.slots();
        let mut life = vec![SlotLife::Live];
        for s in &slots[1..=hwm as usize] {
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
        life
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
            cells_used: h.alloc.int_cells_used.load(Relaxed)
                + h.alloc.float_cells_used.load(Relaxed),
            cells_capacity: fx.cells_per_slot,
            writers_capacity: fx.max_slots,
            writers_live: life[1..].iter().filter(|l| **l == SlotLife::Live).count() as u32,
            writers_dead: life[1..].iter().filter(|l| **l == SlotLife::Dead).count() as u32,
            writer_claims_total: h.alloc.slot_claims_total.load(Relaxed),
            writer_reuses_total: h.alloc.slot_reuses_total.load(Relaxed),
            writers_exhausted_total: h.alloc.slot_exhausted_total.load(Relaxed),
            overflows_total: h.alloc.overflows_total.load(Relaxed),
            lock_recoveries_total: h.alloc.lock_recoveries_total.load(Relaxed),
        }
    }

    /// One attempt; `None` if a wipe interfered.
    fn try_snapshot(&self) -> Result<Option<Snapshot>> {
        let h = self.map.header();
        let fx = self.map.fixed();
        let epoch = h.hot.epoch.load(Acquire);
        if h.hot.wipe_pending.load(Acquire) != 0 {
            return Ok(None);
        }
        let fam_used = h.alloc.families_used.load(Acquire);
        let series_used = h.alloc.series_used.load(Acquire);
        let cap = fx.cells_per_slot;
        let ints_used = h.alloc.int_cells_used.load(Acquire);
        let floats_used = h.alloc.float_cells_used.load(Acquire);
        if fam_used > fx.max_families
            || series_used > fx.max_series
            || ints_used.saturating_add(floats_used) > cap
        {
            return Err(Error::new(
                ErrorKind::Corrupt,
                "an allocation counter is past its capacity",
            )
            .with_path(self.path()));
        }
        let (ints_used, floats_used) = (ints_used as usize, floats_used as usize);
        let float_base = cap as usize - floats_used;
        let life = self.slot_lives();
        let mut snap = Snapshot {
            stats: self.stats_with(&life),
            ..Snapshot::default()
        };

        // Families, in registration order.
        let mut raw: Vec<Option<RawFamily>> = Vec::with_capacity(fam_used as usize);
        for f in &self.map.families()[..fam_used as usize] {
            raw.push(self.read_family(f, &mut snap));
        }

        // Live series, grouped by family in creation order: a counting
        // sort, no comparisons.
        let recs = &self.map.series()[..series_used as usize];
        let mut picked: Vec<(u32, u32)> = Vec::with_capacity(recs.len()); // (family out, id)
        for (id, rec) in recs.iter().enumerate() {
            if rec.state.load(Acquire) != state::LIVE {
                continue;
            }
            let Some(Some(rf)) = raw.get(rec.family.load(Relaxed) as usize) else {
                continue;
            };
            let (io, fo) = (
                rec.int_off.load(Relaxed) as usize,
                rec.float_off.load(Relaxed) as usize,
            );
            // Cells outside the used ranges mean a corrupt record: skip it.
            if io + rf.shape.ints as usize > ints_used
                || fo < float_base
                || fo + rf.shape.floats as usize > cap as usize
            {
                continue;
            }
            if id as u32 == rf.overflow_series && rf.overflows == 0 {
                continue; // an unused overflow series is not exported
            }
            picked.push((rf.out, id as u32));
        }
        let n_out = snap.families.len();
        let mut starts = vec![0u32; n_out + 1];
        for p in &picked {
            starts[p.0 as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut order = vec![0u32; picked.len()];
        let mut next = starts.clone();
        for &(fam, id) in &picked {
            order[next[fam as usize] as usize] = id;
            next[fam as usize] += 1;
        }

        // Sum every slot that was ever used, dead ones included (a dead
        // process's counts stay counted): integer cells and float cells
        // each in one sequential pass per slot. Gauge cells are summed too
        // but not used; gauges are combined per slot below.
        let mut acc_i = vec![0u64; ints_used];
        let mut acc_f = vec![0f64; floats_used];
        for (slot, l) in life.iter().enumerate() {
            if *l == SlotLife::Unused {
                continue;
            }
            let cells = self.map.cells(slot as u32);
            for (a, c) in acc_i.iter_mut().zip(&cells[..ints_used]) {
                *a = a.wrapping_add(c.load(Relaxed));
            }
            for (a, c) in acc_f.iter_mut().zip(&cells[float_base..]) {
                *a += f64::from_bits(c.load(Relaxed));
            }
        }

        // Emit series family by family.
        let mut by_out: Vec<&RawFamily> = raw.iter().flatten().collect();
        by_out.sort_by_key(|r| r.out);
        let slots = self.map.slots();
        for (fi, rf) in by_out.iter().enumerate() {
            let first = snap.series.len() as u32;
            for &id in &order[starts[fi] as usize..starts[fi + 1] as usize] {
                let rec = &recs[id as usize];
                let Some(values) = self.read_values(rec, &mut snap) else {
                    continue;
                };
                let io = rec.int_off.load(Relaxed) as usize;
                let fo = rec.float_off.load(Relaxed) as usize;
                let mut entry = SeriesEntry {
                    values,
                    extra: if id == rf.overflow_series {
                        Extra::Overflow
                    } else {
                        Extra::None
                    },
                    number: snap.numbers.len() as u32,
                    counts: snap.counts.len() as u32,
                    created_unix_ns: rec.created_unix_ns.load(Relaxed),
                };
                let float = acc_f[fo - float_base];
                match rf.kind {
                    // Integral increments, plus fractional ones.
                    Kind::Counter => snap.numbers.push(acc_i[io] as f64 + float),
                    Kind::Histogram => {
                        let mut running = 0u64;
                        for c in &acc_i[io..io + rf.shape.ints as usize] {
                            running = running.wrapping_add(*c);
                            snap.counts.push(running);
                        }
                        snap.numbers.push(float);
                    }
                    Kind::Summary => {
                        snap.counts.push(acc_i[io]);
                        snap.numbers.push(float);
                    }
                    Kind::Gauge => {
                        let shared = rf.mode == GaugeMode::Shared;
                        let per_slot = life.iter().enumerate().filter_map(|(slot, l)| {
                            let wanted = match l {
                                SlotLife::Unused => false,
                                _ if shared => slot == 0,
                                SlotLife::Dead => !rf.mode.live_only(),
                                SlotLife::Live => true,
                            };
                            let cells = self.map.cells(slot as u32);
                            let mark = cells[io].load(Relaxed);
                            (wanted && mark != 0)
                                .then(|| (slot, f64::from_bits(cells[fo].load(Relaxed)), mark))
                        });
                        if rf.mode.per_process() {
                            for (slot, v, _) in per_slot {
                                let pid = match slot {
                                    0 => "shared".to_string(),
                                    _ => slots[slot].pid.load(Relaxed).to_string(),
                                };
                                entry.extra = Extra::Pid(push_str(&mut snap.strings, &pid));
                                entry.number = snap.numbers.len() as u32;
                                snap.numbers.push(v);
                                snap.series.push(entry.clone());
                            }
                            continue;
                        }
                        let v = combine_gauge(rf.mode, per_slot.map(|(_, v, m)| (v, m)));
                        snap.numbers.push(v);
                    }
                }
                snap.series.push(entry);
            }
            snap.families[fi].series = first..snap.series.len() as u32;
        }

        if h.hot.epoch.load(Acquire) != epoch || h.hot.wipe_pending.load(Acquire) != 0 {
            return Ok(None);
        }
        Ok(Some(snap))
    }

    fn read_family(
        &self,
        f: &crate::shm::layout::FamilyRec,
        snap: &mut Snapshot,
    ) -> Option<RawFamily> {
        if f.state.load(Acquire) != state::LIVE {
            return None;
        }
        let kind = Kind::from_u32(f.kind.load(Relaxed))?;
        let mode = GaugeMode::from_u32(f.gauge_mode.load(Relaxed))?;
        let n_bounds = f.buckets.len.load(Relaxed);
        let shape = Shape {
            ints: f.int_cells.load(Relaxed),
            floats: f.float_cells.load(Relaxed),
        };
        if shape
            != cells_for(
                kind,
                n_bounds as usize,
                f.summary_sketch_cells.load(Relaxed),
            )
        {
            return None;
        }
        let mark = (snap.strings.len(), snap.spans.len(), snap.bounds.len());
        let result = (|| {
            let name = push_str(
                &mut snap.strings,
                std::str::from_utf8(self.arena_str(&f.name)?).ok()?,
            );
            let help = push_str(
                &mut snap.strings,
                std::str::from_utf8(self.arena_str(&f.help)?).ok()?,
            );
            let unit = push_str(
                &mut snap.strings,
                std::str::from_utf8(self.arena_str(&f.unit)?).ok()?,
            );
            let first = snap.spans.len() as u32;
            for s in decode_strs(self.arena_str(&f.label_names)?) {
                let span = push_str(&mut snap.strings, std::str::from_utf8(s?).ok()?);
                snap.spans.push(span);
            }
            let label_names = first..snap.spans.len() as u32;
            if label_names.len() != f.n_labels.load(Relaxed) as usize {
                return None;
            }
            let b0 = snap.bounds.len() as u32;
            if kind == Kind::Histogram {
                snap.bounds
                    .extend_from_slice(self.map.arena_f64s(f.buckets.off.load(Relaxed), n_bounds)?);
            }
            let bounds = b0..snap.bounds.len() as u32;
            Some(FamilyEntry {
                name,
                help,
                unit,
                kind,
                mode,
                label_names,
                bounds,
                series: 0..0,
                overflows: f.overflows.load(Relaxed),
            })
        })();
        let Some(entry) = result else {
            // Corrupt record: drop whatever was pushed for it.
            snap.strings.truncate(mark.0);
            snap.spans.truncate(mark.1);
            snap.bounds.truncate(mark.2);
            return None;
        };
        let out = snap.families.len() as u32;
        let overflows = entry.overflows;
        snap.families.push(entry);
        Some(RawFamily {
            out,
            kind,
            mode,
            shape,
            overflow_series: f.overflow_series.load(Relaxed).wrapping_sub(1),
            overflows,
        })
    }

    fn read_values(
        &self,
        rec: &crate::shm::layout::SeriesRec,
        snap: &mut Snapshot,
    ) -> Option<Range<u32>> {
        let mark = (snap.strings.len(), snap.spans.len());
        let first = snap.spans.len() as u32;
        let ok = (|| {
            for s in decode_strs(self.arena_str(&rec.labels)?) {
                let span = push_str(&mut snap.strings, std::str::from_utf8(s?).ok()?);
                snap.spans.push(span);
            }
            Some(())
        })();
        if ok.is_none() {
            snap.strings.truncate(mark.0);
            snap.spans.truncate(mark.1);
            return None;
        }
        Some(first..snap.spans.len() as u32)
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
        | GaugeMode::LiveAll => vals.map(|v| v.0).sum(),
        GaugeMode::Max | GaugeMode::LiveMax => vals.map(|v| v.0).reduce(f64::max).unwrap_or(0.0),
        GaugeMode::Min | GaugeMode::LiveMin => vals.map(|v| v.0).reduce(f64::min).unwrap_or(0.0),
        GaugeMode::MostRecent | GaugeMode::LiveMostRecent => {
            vals.max_by_key(|v| v.1).map(|v| v.0).unwrap_or(0.0)
        }
    }
}

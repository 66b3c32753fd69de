//! The emit phase: this refresh's series, family by family, from the
//! merged sums, with what a kind reads besides them (a summary's
//! quantiles, a gauge's per-slot values, exemplars).

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::merge::PerSlot;
use super::{
    push_str, Bases, CachedSeries, ExemplarEntry, FamilyEntry, Quantile, SeriesEntry, SlotLife,
    Snapshot, Span, Sums, EXTRA_NONE, EXTRA_OVERFLOW, EXTRA_PID,
};
use crate::exemplar;
use crate::model::{GaugeMode, Kind, Window};
use crate::shm;
use crate::shm::layout::{SeriesRec, SlotRec};
use crate::store::{classic_cells, Store};
use crate::window;

/// What every series' emission reads besides the snapshot.
struct Merged<'a> {
    per_slot: PerSlot<'a>,
    sums: &'a Sums,
    recs: &'a [SeriesRec],
    slots: &'a [SlotRec],
    now_ms: u64,
    /// Whether a series may have been removed since the last refresh, so
    /// that every series' state word must be read again.
    recheck: bool,
}

impl Store {
    /// Emits the series of every family into `snap`, from the merged sums
    /// in its cache. `recheck`: a series may have been removed since the
    /// last refresh; `same_records`: no record was decoded since, and no
    /// series removed.
    pub(super) fn emit_series(
        &self,
        snap: &mut Snapshot,
        per_slot: PerSlot<'_>,
        recheck: bool,
        same_records: bool,
    ) {
        if same_records && snap.cache.replayable && self.replay_values(snap, per_slot) {
            return;
        }
        snap.series.clear();
        snap.numbers.clear();
        snap.counts.clear();
        snap.quantiles.clear();
        snap.pids.clear();
        snap.pid_spans.clear();
        snap.exemplars.clear();
        snap.exemplar_labels.clear();
        snap.exemplar_strings.clear();
        let sketch_cells = self.sketch.cells();
        snap.cache.sketch_acc.resize(sketch_cells, 0);
        snap.cache.sketch_tmp.resize(sketch_cells, 0);
        // Taken out while the series are pushed, and put back.
        let mut families = std::mem::take(&mut snap.families);
        let mut members = std::mem::take(&mut snap.cache.members);
        let sums = std::mem::take(&mut snap.cache.sums);
        let at = Merged {
            per_slot,
            sums: &sums,
            recs: self.map.series(),
            slots: self.map.slots(),
            now_ms: shm::coarse_monotonic_ms(),
            recheck,
        };
        // Room for every series at once: a fresh snapshot would otherwise
        // grow these by doubling, copying them each time.
        let (mut series, mut counts) = (0, 0);
        for (fam, list) in families.iter().zip(&members) {
            series += list.len();
            if fam.kind == Kind::Histogram {
                counts += list.len() * (fam.bounds.len() + 1);
            }
        }
        snap.series.reserve(series);
        snap.numbers.reserve(series);
        snap.counts.reserve(counts);
        // The next refresh may rewrite these values in place, unless
        // this one is the first since a removal.
        snap.cache.replayable = !recheck && families.iter().all(replayable);
        let fam_recs = self.map.families();
        let mut natives = 0u32;
        for (fam, list) in families.iter_mut().zip(&mut members) {
            fam.overflows = fam_recs[fam.raw as usize].overflows.load(Relaxed);
            fam.set_bases(Bases {
                counts: snap.counts.len() as u32,
                quantiles: snap.quantiles.len() as u32,
                exemplars: snap.exemplars.len() as u32,
                // Every member of a native family has an entry, in order.
                natives,
            });
            if fam.native().is_some() {
                natives += list.len() as u32;
            }
            let first = snap.series.len() as u32;
            for (k, m) in list.iter_mut().enumerate() {
                self.emit_member(snap, fam, (k as u32, m), &at);
            }
            fam.series = first..snap.series.len() as u32;
        }
        snap.families = families;
        snap.cache.members = members;
        snap.cache.sums = sums;
    }

    /// Emits member `k` of a family (one series, or one per slot for a
    /// per-process gauge), unless it was deleted or expired since it was
    /// decoded, or is an unused overflow series. Each series pushes one
    /// number and the family's `per_series` counts, quantiles and
    /// exemplar places, which is where the views find them.
    fn emit_member(
        &self,
        snap: &mut Snapshot,
        fam: &FamilyEntry,
        (k, m): (u32, &mut CachedSeries),
        at: &Merged,
    ) {
        // A series decoded live stays so until the store counts a removal;
        // a family with a TTL reuses records, so its members are always
        // read, as is a member kept undecoded (word 0).
        let read = at.recheck || fam.ttl_ms() > 0 || m.word == 0;
        if read && at.recs[m.id as usize].state.load(Acquire) != m.word {
            // Deleted or expired since it was decoded, for good (a state
            // word never comes back), so the next refreshes skip it too
            // without reading its record.
            m.word = 0;
            return;
        }
        let overflow = m.id == fam.overflow_series;
        if overflow && fam.overflows == 0 {
            return; // an unused overflow series is not exported
        }
        let (io, fo) = (m.int_off as usize, m.float_off as usize);
        if fam.ttl_ms() > 0 && !overflow {
            // Idle for the TTL: gone, whether or not a writer swept it yet.
            let cell = io + fam.ttl_cell() as usize;
            if at.now_ms.saturating_sub(self.last_update(cell)) >= fam.ttl_ms() {
                return;
            }
        }
        let entry = SeriesEntry {
            member: k,
            extra: if overflow { EXTRA_OVERFLOW } else { EXTRA_NONE },
        };
        let Some((ints, float)) = at.sums.series(io, fam.shape.ints as usize) else {
            snap.cache.replayable = false; // its sums may be there next time
            return;
        };
        let sketch = snap.cache.sketch_off(m);
        if fam.exemplars() > 0 {
            self.push_exemplars(snap, fam, (io, fo), sketch, at.per_slot);
        }
        match fam.kind {
            // Integral increments, plus fractional ones.
            Kind::Counter => snap.numbers.push(ints[0] as f64 + float),
            Kind::Histogram => {
                push_cumulative(snap, fam, ints, fam.bases().natives + k);
                snap.numbers.push(float);
            }
            Kind::Summary => {
                snap.counts.push(ints[0]);
                snap.numbers.push(float);
                self.push_quantiles(snap, fam, (io, fo, sketch), at);
            }
            Kind::Gauge if fam.mode.per_process() => {
                self.push_per_process(snap, fam.mode, (io, fo), entry, at);
                return;
            }
            Kind::Gauge => {
                let per_slot = self.gauge_slots(fam.mode, (io, fo), at.per_slot);
                let v = combine_gauge(fam.mode, per_slot.map(|(_, v, m)| (v, m)));
                snap.numbers.push(v);
            }
        }
        snap.series.push(entry);
    }

    /// Rewrites in place the values of the series the last refresh
    /// emitted, which are the series to emit when no record was decoded
    /// or removed since, every family is [`replayable`] and the last
    /// refresh skipped no series for want of sums: each series is one
    /// number (and a histogram's counts) at the same place. `false`, with
    /// values half rewritten, if a family's overflow series came into use
    /// or went out of it, or a series' cells are past the sums: the caller
    /// then emits every series anew.
    fn replay_values(&self, snap: &mut Snapshot, per_slot: PerSlot<'_>) -> bool {
        let fam_recs = self.map.families();
        let (sums, members) = (&snap.cache.sums, &snap.cache.members);
        for (fam, list) in snap.families.iter_mut().zip(members) {
            let overflows = fam_recs[fam.raw as usize].overflows.load(Relaxed);
            if (overflows == 0) != (fam.overflows == 0) {
                return false;
            }
            fam.overflows = overflows;
            let n_ints = fam.shape.ints as usize;
            let per = fam.counts_per_series() as usize;
            let series = fam.series.start as usize..fam.series.end as usize;
            let entries = snap.series[series.clone()].iter();
            let numbers = &mut snap.numbers[series];
            for (ord, (s, number)) in entries.zip(numbers).enumerate() {
                let Some(m) = list.get(s.member as usize) else {
                    return false;
                };
                let (io, fo) = (m.int_off as usize, m.float_off as usize);
                let Some((ints, float)) = sums.series(io, n_ints) else {
                    return false;
                };
                *number = match fam.kind {
                    Kind::Counter => ints[0] as f64 + float,
                    Kind::Histogram => {
                        let at = fam.bases().counts as usize + ord * per;
                        let out = &mut snap.counts[at..at + per];
                        let mut running = 0u64;
                        for (c, o) in ints[..per.min(n_ints)].iter().zip(out) {
                            running = running.wrapping_add(*c);
                            *o = running;
                        }
                        float
                    }
                    _ => {
                        let per_slot = self.gauge_slots(fam.mode, (io, fo), per_slot);
                        combine_gauge(fam.mode, per_slot.map(|(_, v, m)| (v, m)))
                    }
                };
            }
        }
        true
    }

    /// Pushes the latest exemplar of each of a series' places; `(io, fo)`
    /// are its cells in slot 0, `sketch` its first sketch cell.
    fn push_exemplars(
        &self,
        snap: &mut Snapshot,
        fam: &FamilyEntry,
        (io, fo): (usize, usize),
        sketch: usize,
        per_slot: PerSlot<'_>,
    ) {
        let places = fam.exemplars() as usize;
        let ts_first = (fam.shape.ints as usize).saturating_sub(places);
        let rec_first = sketch.saturating_add(fam.native().map_or(0, |n| n.cells()));
        for p in 0..places {
            let e = self.latest_exemplar(
                per_slot,
                (io, fo, ts_first + p),
                rec_first.saturating_add(p * exemplar::RECORD),
                &mut snap.exemplar_labels,
                &mut snap.exemplar_strings,
            );
            snap.exemplars.push(e);
        }
    }

    /// Pushes a summary series' quantiles, if its family has any;
    /// `(io, fo, sketch)` are its cells in slot 0 and its first sketch
    /// cell.
    fn push_quantiles(
        &self,
        snap: &mut Snapshot,
        fam: &FamilyEntry,
        (io, fo, sketch): (usize, usize, usize),
        at: &Merged,
    ) {
        if fam.window().age_buckets == 0 {
            return;
        }
        let qs =
            &snap.cache.quantiles[fam.quantiles().start as usize..fam.quantiles().end as usize];
        let est = &mut snap.cache.estimates;
        est.clear();
        self.summary_quantiles(
            at.per_slot,
            fam.window(),
            fam.window().period(at.now_ms),
            (io, fo, sketch),
            qs,
            (
                &mut snap.cache.sketch_acc,
                &mut snap.cache.sketch_tmp,
                &mut snap.cache.sketch_exact,
            ),
            est,
        );
        // Exactly one per quantile: the views find a series' quantiles
        // at its family's base plus its rank times their number.
        snap.quantiles
            .extend(qs.iter().enumerate().map(|(i, &quantile)| Quantile {
                quantile,
                value: est.get(i).copied().unwrap_or(f64::NAN),
            }));
    }

    /// Pushes a per-process gauge's series: `entry` once per slot that set
    /// it, with a `pid` label (`shared` for the shared slot).
    fn push_per_process(
        &self,
        snap: &mut Snapshot,
        mode: GaugeMode,
        cells: (usize, usize),
        mut entry: SeriesEntry,
        at: &Merged,
    ) {
        for (slot, v, _) in self.gauge_slots(mode, cells, at.per_slot) {
            let off = snap.pids.len() as u32;
            if slot == 0 {
                snap.pids.push_str("shared");
            } else {
                use std::fmt::Write;
                let _ = write!(snap.pids, "{}", at.slots[slot].pid.load(Relaxed));
            }
            let span = Span {
                off,
                len: snap.pids.len() as u32 - off,
            };
            entry.extra = EXTRA_PID + snap.pid_spans.len() as u32;
            snap.pid_spans.push(span);
            snap.numbers.push(v);
            snap.series.push(entry);
        }
    }

    /// A gauge series' value in each slot its mode reads and that set it:
    /// `(slot, value, marker)`, the marker being the time of the slot's
    /// last set for the most-recent modes. `(io, fo)` are its marker cell
    /// and its value cell in slot 0 (`PerSlot::cells` finds them in the
    /// other slots).
    fn gauge_slots<'s>(
        &'s self,
        mode: GaugeMode,
        (io, fo): (usize, usize),
        per_slot: PerSlot<'s>,
    ) -> impl Iterator<Item = (usize, f64, u64)> + 's {
        let life = per_slot.life;
        per_slot.cells(io, fo).filter_map(move |(slot, i, f)| {
            let wanted = match life[slot] {
                SlotLife::Unused => false,
                _ if mode == GaugeMode::Shared => slot == 0,
                SlotLife::Dead => !mode.live_only(),
                SlotLife::Live => true,
            };
            let cells = self.map.cells(slot as u32);
            // The mark first (Acquire), then the value it marks: see
            // `Store::gauge_mark`.
            let mark = cells.get(i)?.load(Acquire);
            let value = cells.get(f)?;
            (wanted && mark != 0).then(|| (slot, f64::from_bits(value.load(Relaxed)), mark))
        })
    }

    /// Estimates a summary series' quantiles `qs` over its window, merging
    /// the in-window sets of every slot that was ever used (a dead
    /// process's recent observations stay counted until they age out).
    /// `acc` and `tmp` are the sketch's size and zero, and left zero;
    /// `exact` gathers the sets' exact values.
    #[allow(clippy::too_many_arguments)]
    fn summary_quantiles(
        &self,
        per_slot: PerSlot<'_>,
        w: Window,
        period: u64,
        (io, fo, sketch): (usize, usize, usize),
        qs: &[f64],
        (acc, tmp, exact): (&mut [u64], &mut [u64], &mut window::Exact),
        out: &mut Vec<f64>,
    ) {
        let bins = self.sketch.cells();
        let sets = w.age_buckets as usize;
        let mut touched: Option<(usize, usize)> = None;
        exact.clear();
        for (slot, ints, _) in per_slot.cells(io, fo) {
            let slot = slot as u32;
            // The count, then the sets' headers.
            let header = ints + 1;
            let headers = (self.map.cells(slot)).get(header..header + window::header_cells(sets));
            let counts =
                (self.map.sketch(slot)).get(sketch..sketch + window::sketch_cells(sets, bins));
            let (Some(headers), Some(counts)) = (headers, counts) else {
                continue;
            };
            let read = window::read_slot(headers, counts, bins, w, period, (acc, tmp), exact);
            if let Some((lo, hi)) = read {
                touched = Some(touched.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        match touched {
            Some((lo, hi)) => {
                // The observations themselves while the sets' exact
                // buffers hold them all, else the sketch's estimates.
                if !exact.quantiles_into(qs, out) {
                    self.sketch.quantiles_into(acc, lo..=hi, qs, out);
                }
                acc[lo..=hi].fill(0);
            }
            None => out.extend(qs.iter().map(|_| f64::NAN)),
        }
    }

    /// The latest exemplar of one place over every slot that was ever
    /// used: the slot whose timestamp cell (integer cell `ts` of the
    /// series', whose cells in slot 0 are `io` and `fo`) is the greatest, its record at sketch cell `rec` read with the seqlock.
    /// Only that record is read: a slot whose cell is 0 never wrote one,
    /// and its page may be a hole.
    fn latest_exemplar(
        &self,
        per_slot: PerSlot<'_>,
        (io, fo, ts): (usize, usize, usize),
        rec: usize,
        labels: &mut Vec<(Span, Span)>,
        strings: &mut String,
    ) -> Option<ExemplarEntry> {
        let (slot, _) = (per_slot.cells(io, fo))
            .filter_map(|(slot, ints, _)| {
                let slot = slot as u32;
                let t = self.map.cells(slot).get(ints + ts)?.load(Acquire);
                (t != 0).then_some((slot, t))
            })
            .max_by_key(|(_, t)| *t)?;
        let cells = (self.map.sketch(slot)).get(rec..rec.checked_add(exemplar::RECORD)?)?;
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
}

/// Whether a family's series are each one number from the sums (and a
/// histogram's classic counts), and nothing else: what
/// [`Store::replay_values`] can rewrite in place. Not so for a family
/// with a TTL (its series expire with time), exemplars, native buckets,
/// summaries, or per-process gauges (a series per slot).
fn replayable(fam: &FamilyEntry) -> bool {
    let plain = fam.ttl_ms() == 0 && fam.exemplars() == 0 && fam.native().is_none();
    plain
        && match fam.kind {
            Kind::Counter | Kind::Histogram => true,
            Kind::Gauge => !fam.mode.per_process(),
            Kind::Summary => false,
        }
}

/// Pushes a histogram series' cumulative counts from its classic bucket
/// sums `ints`: exactly [`FamilyEntry::counts_per_series`] of them, where
/// the views look for them. With native buckets the count is the native
/// total (`Snapshot::natives[native_k]`); the classic buckets (but `+Inf`,
/// which is the count) are at most that.
fn push_cumulative(snap: &mut Snapshot, fam: &FamilyEntry, ints: &[u64], native_k: u32) {
    let per = fam.counts_per_series() as usize;
    let start = snap.counts.len();
    let classic = classic_cells(fam.bounds.len(), fam.native().is_some());
    let classic = &ints[..classic.min(ints.len())];
    let mut running = 0u64;
    match snap.natives.get(native_k as usize) {
        Some(e) if fam.native().is_some() => {
            let finite = classic.len().saturating_sub(1);
            for c in &classic[..finite] {
                running = running.wrapping_add(*c);
                snap.counts.push(running.min(e.total));
            }
            running = e.total;
        }
        _ => {
            for c in classic {
                running = running.wrapping_add(*c);
                snap.counts.push(running);
            }
        }
    }
    // The count (`+Inf`), and any bucket a corrupt shape left out.
    snap.counts.resize(start + per, running);
    snap.counts.truncate(start + per);
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
        GaugeMode::LiveAverage => {
            let (sum, n) = vals.fold((0.0, 0u32), |(s, n), v| (s + v.0, n + 1));
            if n == 0 {
                0.0
            } else {
                sum / f64::from(n)
            }
        }
    }
}

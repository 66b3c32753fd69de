//! Zeroing and repairing the values of many series at once, in every
//! slot: value cells, quantile sketches, native buckets and exemplars (for
//! reset, wipe, expiry and a reclaimed writer slot).

use std::sync::atomic::{AtomicU64, Ordering::*};

use super::blocks::SlotCells;
use super::shape::{ExemplarPlaces, SketchKind, SketchUse};
use super::{FamilyType, Store};
use crate::native;
use crate::window;

impl Store {
    /// The series that use sketch cells (summaries with quantiles and
    /// native histograms), whatever their state.
    pub(super) fn sketch_series(&self) -> Vec<SketchUse> {
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

    /// Zeroes one series' quantile sketches or native buckets in a slot:
    /// the cells its headers say were touched, then the headers.
    pub(crate) fn clear_sketch(&self, slot: &SlotCells<'_>, u: SketchUse) {
        if let Some((headers, counts)) = self.sketch_cells_in(slot, u) {
            match u.kind {
                SketchKind::Summary(_) => window::clear_slot(headers, counts, self.sketch.cells()),
                SketchKind::Native(bins) => native::clear_slot(headers, counts, bins),
            }
        }
    }

    /// The header cells and sketch cells of one series in a slot; `None`
    /// where a (corrupt) record points outside the regions.
    pub(super) fn sketch_cells_in<'a>(
        &'a self,
        slot: &SlotCells<'a>,
        u: SketchUse,
    ) -> Option<(&'a [AtomicU64], &'a [AtomicU64])> {
        let (headers, cells) = match u.kind {
            SketchKind::Summary(sets) => (
                window::header_cells(sets as usize),
                window::sketch_cells(sets as usize, self.sketch.cells()),
            ),
            SketchKind::Native(bins) => (native::HEADER, 2 * bins),
        };
        let headers = slot.ints(u.int_off, u.header, headers)?;
        let counts = self
            .map
            .sketch(slot.slot)
            .get(u.sketch..u.sketch.checked_add(cells)?)?;
        Some((headers, counts))
    }

    /// Zeroes the quantile sketches and native buckets of every slot
    /// whose index passes `which`: the cells their headers say were
    /// touched, then the headers.
    pub(super) fn zero_sketches(&self, which: impl Fn(u32) -> bool) {
        let series = self.sketch_series();
        if series.is_empty() {
            return;
        }
        for slot in (0..=self.slots_in_use()).filter(|s| which(*s)) {
            let cells = self.slot_cells(slot);
            for s in &series {
                self.clear_sketch(&cells, *s);
            }
        }
    }

    /// Calls `f` with the timestamp cell and the record of every exemplar
    /// place of every series (whatever its state) in every slot whose
    /// index passes `which`.
    pub(super) fn each_exemplar(
        &self,
        which: impl Fn(u32) -> bool,
        f: impl Fn(&AtomicU64, &[AtomicU64]),
    ) {
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
        for slot in (0..=self.slots_in_use()).filter(|s| which(*s)) {
            let (cells, sketch) = (self.slot_cells(slot), self.map.sketch(slot));
            for rec in recs {
                if let Some(Some(e)) = uses.get(rec.family.load(Relaxed) as usize) {
                    e.each(rec, &cells, sketch, &f);
                }
            }
        }
    }

    /// Zeroes the used cells of every slot whose index passes `which`;
    /// with `empty` (a wipe), empties the writer slots' block heaps too.
    pub(super) fn zero_cells(&self, which: impl Fn(u32) -> bool, empty: bool) {
        let h = self.map.header();
        let cap = self.map.fixed().cells_per_slot;
        let ints = h.alloc.int_cells_used.load(Acquire).min(cap) as usize;
        let floats = h.alloc.float_cells_used.load(Acquire).min(cap) as usize;
        if which(0) {
            let cells = self.map.cells(0);
            let top = cells.len() - floats;
            for c in cells[..ints].iter().chain(&cells[top..]) {
                c.store(0, Relaxed);
            }
        }
        self.clear_blocks(which, empty);
    }
}

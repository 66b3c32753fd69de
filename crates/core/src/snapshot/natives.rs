//! The native-bucket phase: each native histogram series' buckets
//! merged over the slots, read after the classic counts and before the
//! sums.

use std::ops::Range;
use std::sync::atomic::{fence, Ordering::Acquire};

use super::merge::PerSlot;
use super::{sketch_off, NativeEntry, Snapshot};
use crate::native::{self, Native};
use crate::store::{classic_cells, Store};

impl Store {
    /// Merges the buckets of every series of a native histogram family,
    /// one entry per member in member order, into `Snapshot::natives`.
    pub(super) fn read_natives(&self, snap: &mut Snapshot, per_slot: PerSlot<'_>) {
        // After the classic counts: see `Store::observe_native` for why
        // this order (and this fence) makes every classic count at most
        // the native total.
        fence(Acquire);
        snap.natives.clear();
        snap.native_counts.clear();
        for (fi, fam) in snap.families.iter().enumerate() {
            let Some(n) = fam.native() else {
                continue;
            };
            let classic = classic_cells(fam.bounds.len(), true);
            let cells = n.cells();
            if snap.cache.native_acc.len() < cells {
                snap.cache.native_acc.resize(cells, 0);
            }
            for m in &snap.cache.members[fi] {
                let sketch = sketch_off(&snap.cache.sketch_offs, m);
                let e = self.native_series(
                    per_slot,
                    n,
                    (m.int_off as usize, m.float_off as usize, classic, sketch),
                    &mut snap.cache.native_acc[..cells],
                    &mut snap.native_counts,
                );
                snap.natives.push(e);
            }
        }
    }

    /// Merges a native histogram series' buckets over every slot that was
    /// ever used (a dead process's observations stay counted), reduces
    /// the resolution to the family's bucket limit and appends the runs
    /// to `out`. `(io, fo)` are the series' cells in slot 0, `header`
    /// its first native header cell from its first, `sketch` its first
    /// sketch cell; `acc` is `2 * bins` cells, zero, and left zero.
    fn native_series(
        &self,
        per_slot: PerSlot<'_>,
        n: Native,
        (io, fo, header, sketch): (usize, usize, usize, usize),
        acc: &mut [u64],
        out: &mut Vec<u64>,
    ) -> NativeEntry {
        let bins = n.bins();
        let mut touched = [None; 2];
        let mut zero_count = 0u64;
        for (slot, ints, _) in per_slot.cells(io, fo) {
            let (slot, header) = (slot as u32, ints + header);
            let h = (self.map.cells(slot)).get(header..header.saturating_add(native::HEADER));
            let c = (self.map.sketch(slot)).get(sketch..sketch.saturating_add(2 * bins));
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
}

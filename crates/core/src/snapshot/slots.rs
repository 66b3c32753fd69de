//! Writer slots as the snapshot sees them: which were ever used and
//! whether their process lives, for the merge and for the store's
//! telemetry.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::{StoreStats, WriterInfo};
use crate::proc;
use crate::shm::layout::{slot_state, LAYOUT_VERSION};
use crate::store::Store;

/// What a slot is, for merging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SlotLife {
    Unused,
    Live,
    Dead,
}

/// The slots that were ever used, dead ones included: those a merge
/// reads.
pub(super) fn used(life: &[SlotLife]) -> impl Iterator<Item = u32> + '_ {
    (life.iter().enumerate())
        .filter(|(_, l)| **l != SlotLife::Unused)
        .map(|(slot, _)| slot as u32)
}

impl Store {
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
                cells_used: slots[i].blocks_used.load(Relaxed),
            })
            .collect()
    }

    pub(super) fn slot_lives(&self, life: &mut Vec<SlotLife>) {
        let hwm = self.slots_in_use();
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

    /// The value cells a slot needs for every series so far: slot 0 its
    /// integer and float cells, a writer slot that touched every series a
    /// block of each (`store/blocks.rs`); the larger of the two, which
    /// must fit in `cells_per_writer`.
    fn cells_per_writer(&self) -> u64 {
        let a = &self.map.header().alloc;
        let ints = a.int_cells_used.load(Relaxed);
        let dense = ints.saturating_add(a.float_cells_used.load(Relaxed));
        let series = u64::from(a.series_used.load(Relaxed));
        dense.max(ints.saturating_add(series.saturating_mul(crate::store::BLOCK_OVERHEAD as u64)))
    }

    pub(super) fn stats_with(&self, life: &[SlotLife]) -> StoreStats {
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
            cells_used: self.cells_per_writer(),
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
}

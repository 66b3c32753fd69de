//! The writer slot each process writes through: claimed on the first
//! handle or update (and after a fork), reclaimed from dead processes,
//! released.

use std::sync::atomic::Ordering::*;

use super::shape::SketchKind;
use super::{Store, NO_SLOT};
use crate::error::Result;
use crate::exemplar;
use crate::model::{GaugeMode, Kind};
use crate::proc;
use crate::shm::{layout::slot_state, FORK_GENERATION};
use crate::window;

impl Store {
    /// The slot this process writes through, claiming one on first use and
    /// after a fork.
    #[inline]
    pub(crate) fn slot(&self) -> Result<u32> {
        match self.cached_slot() {
            Some(slot) => Ok(slot),
            None => self.claim_slot(),
        }
    }

    /// The slot this process claimed already (in this fork generation),
    /// if any: the update path's check, which claims nothing.
    #[inline(always)]
    pub(crate) fn cached_slot(&self) -> Option<u32> {
        let local = self.local.load(Relaxed);
        let gen = FORK_GENERATION.load(Relaxed) as u32;
        ((local >> 32) as u32 == gen && local as u32 != NO_SLOT).then_some(local as u32)
    }

    /// The highest slot index that was ever used.
    pub(crate) fn slots_in_use(&self) -> u32 {
        let hwm = self.map.header().alloc.slots_hwm.load(Acquire);
        hwm.min(self.map.fixed().max_slots)
    }

    /// The slot this process writes through, if handle `s` was resolved
    /// for it (`Store::resolve`): the update path's check. A handle made
    /// before a fork, or for another slot, gets `None`, as before a slot
    /// is claimed.
    #[inline(always)]
    pub(crate) fn slot_of(&self, s: &crate::handle::Series) -> Option<u32> {
        let local = self.local.load(Relaxed);
        let gen = FORK_GENERATION.load(Relaxed) as u32;
        (local == s.at && (local >> 32) as u32 == gen).then_some(local as u32)
    }

    #[cold]
    #[inline(never)]
    fn claim_slot(&self) -> Result<u32> {
        // Never write into a read-only mapping: that would fault.
        self.check_writable()?;
        // If the lock is unusable, write through the shared slot: updates
        // stay exact, only gauges lose their per-process meaning.
        let slot = self.try_claim_slot().unwrap_or(0);
        if slot == 0 {
            // Before the first write there: readers merge slot 0 from now.
            let h = self.map.header();
            h.alloc.shared_slot_writers.fetch_add(1, Release);
        }
        Ok(slot)
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
        // A new slot's regions are reserved as far as the others' before
        // it is published; with no room on the file system, this process
        // writes through the shared slot 0 (whose regions always are).
        let chosen = reusable.or_else(|| {
            (hwm < max && self.reserve_blocks(hwm + 1, 1).is_ok()).then(|| {
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
                    let cells = self.slot_cells(i);
                    for sk in self.sketch_series() {
                        if let (SketchKind::Summary(_), Some((headers, _))) =
                            (sk.kind, self.sketch_cells_in(&cells, sk))
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
        let cells = self.slot_cells(slot);
        for rec in &self.map.series()[..used as usize] {
            if is_gauge.get(rec.family.load(Relaxed) as usize) == Some(&true) {
                // A gauge has one integer cell (the marker) and one float
                // cell (the value).
                let (io, fo) = (rec.int_off.load(Relaxed), rec.float_off.load(Relaxed));
                let marker = cells.ints(io as usize, 0, 1).and_then(|c| c.first());
                let value = cells.float(io as usize, fo as usize);
                for c in marker.into_iter().chain(value) {
                    c.store(0, Relaxed);
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

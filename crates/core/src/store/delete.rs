//! Deleting: one series, every series of a family, every value (reset)
//! and everything (wipe).

use std::sync::atomic::Ordering::*;

use super::labels::series_hash;
use super::series::{check_label_count, Found};
use super::{Family, Store};
use crate::error::Result;
use crate::exemplar;
use crate::shm::layout::{state, TOMBSTONE};

impl Store {
    /// Deletes the series with these label values. Returns whether it
    /// existed. Handles to it stay usable, but their updates are no longer
    /// exported; a later lookup of the same labels creates a new series
    /// that starts from zero. The deleted series' space is reclaimed by
    /// [`Store::wipe`].
    pub fn delete(&self, family: &Family, values: &[&str]) -> Result<bool> {
        self.check_family(family)?;
        check_label_count(family, values)?;
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

    pub(super) fn wipe_locked(&self) {
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
}

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
    /// existed. Handles to it, in every process, become stale: an update
    /// through one returns [`ErrorKind::StaleHandle`](crate::ErrorKind::StaleHandle),
    /// and a new lookup of the same labels creates a new series that starts
    /// from zero (the bindings do that by themselves). The deleted series'
    /// space is reclaimed by [`Store::wipe`] (or, in a family with a TTL,
    /// by its next series).
    pub fn delete(&self, family: &Family, values: &[&str]) -> Result<bool> {
        self.check_family(family)?;
        check_label_count(family, values)?;
        self.check_writable()?;
        let _guard = self.lock()?;
        let hash = series_hash(family.index, values);
        let Found::Live(id) = self.find_series(family.index, hash, values) else {
            return Ok(false);
        };
        self.remove_series(family, id);
        if !family.ttl {
            let f = &self.map.families()[family.index as usize];
            let _ = f
                .series_count
                .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
        }
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
            self.remove_series(family, id);
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

    /// Under the lock: takes live series `id` of `family` out of sight for
    /// good. Its state word changes, so that an update through any handle
    /// to it, in any process, fails from now on with
    /// [`ErrorKind::StaleHandle`](crate::ErrorKind::StaleHandle) (the
    /// caller looks the series up again and gets a new one from zero):
    /// a family with a TTL retires it (a new generation; its space goes to
    /// a later series of the family once no update can land in it), any
    /// other family marks it `DEAD` (its cells are never reused before a
    /// wipe, so an update racing the deletion lands in them and is
    /// deleted with the series). See docs/ARCHITECTURE.md, "Deletion".
    fn remove_series(&self, family: &Family, id: u32) {
        if family.ttl {
            self.retire(family.index, id);
            return;
        }
        let rec = &self.map.series()[id as usize];
        let word = rec.state.load(Relaxed);
        // SeqCst, as in `retire`: an update that starts once this returns
        // sees the new word.
        rec.state.store(state::with(word, state::DEAD), SeqCst);
        self.count_removal();
        if let Some(pos) = self.index_position(id, rec.hash.load(Relaxed)) {
            self.map.index()[pos].store(TOMBSTONE, Release);
        }
    }

    /// After a series left `LIVE` (or a lock recovery, which may have
    /// finished a removal): tells readers to check every series' state.
    pub(crate) fn count_removal(&self) {
        let h = self.map.header();
        h.alloc.series_removals.fetch_add(1, Release);
    }

    /// Sets every value of every series to zero, in all slots. Families,
    /// series and handles stay as they are.
    pub fn reset(&self) -> Result<()> {
        self.check_writable()?;
        let _guard = self.lock()?;
        self.zero_sketches(|_| true);
        self.each_exemplar(|_| true, |ts, rec| exemplar::clear(ts, rec, false));
        self.zero_cells(|_| true, false);
        Ok(())
    }

    /// Removes every family and series (PromPHP's `wipeStorage`). Handles
    /// made before become stale: updates through them return
    /// [`ErrorKind::StaleHandle`](crate::ErrorKind::StaleHandle), and
    /// families must be registered again. Writer slots are kept.
    pub fn wipe(&self) -> Result<()> {
        self.check_writable()?;
        let _guard = self.lock()?;
        self.wipe_locked();
        Ok(())
    }

    pub(super) fn wipe_locked(&self) {
        let h = self.map.header();
        h.hot.wipe_pending.store(super::wipe_flag::WIPING, Release);
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
        self.zero_cells(|_| true, true);
        h.alloc.sketch_cells_used.store(0, Release);
        h.alloc.series_used.store(0, Release);
        h.alloc.families_used.store(0, Release);
        h.alloc.int_cells_used.store(0, Release);
        h.alloc.float_cells_used.store(0, Release);
        h.alloc.arena_used.store(0, Release);
        h.hot.wipe_pending.store(0, Release);
    }
}

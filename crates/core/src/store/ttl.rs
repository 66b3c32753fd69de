//! Series TTL: idle series of a family with a TTL disappear, and their
//! records and cells go to the family's next new series.
//!
//! Three parts, each with its own promise:
//!
//! - **Touch.** Every update of a TTL series stores the coarse monotonic
//!   time (ms) in the series' TTL cell of slot 0, when that moved on since
//!   the cell was last written (so one write per millisecond at most, by
//!   any process); creating a series stores it too. It is the series' last
//!   update. (One cell, not one per writer slot: a reader then finds it
//!   without the writer slots' blocks, `blocks.rs`.)
//! - **Hiding.** A reader leaves out a series whose last update is at
//!   least the TTL ago, at once, whoever sweeps.
//! - **Reuse.** A writer, under the lock, sweeps a family (when it adds a
//!   series to it, at most every half TTL, or at once when the family or
//!   the store is full): it *retires* each idle series (a new generation in
//!   its state word, out of the index), then waits until no update can
//!   still land in the retired series' cells, zeroes them, and puts the
//!   record on the family's free list. The family's next new series takes
//!   it: same cells, new labels, the same (new) generation, `LIVE`.
//!
//! Why no update lands in a reused series. An update of a TTL series
//! (`Store::cells_ttl`) increments its slot's pin count, then checks that
//! the record's state word is still the one its handle was made with, then
//! writes, then decrements the pin count. Retiring stores the new state
//! word, then reads the pin counts; pin increment, state store and both
//! loads are sequentially consistent. So either the update's check sees
//! the new word (and the update fails with `StaleHandle`, so that the
//! caller looks the series up again) or the retiring writer sees the pin
//! (and waits, or leaves the record retired for a later sweep). Once every
//! live slot was seen at zero pins after the retirement, no update can
//! still land in the old series' cells. The pins of a slot whose owner
//! died are ignored (and reset when the slot is claimed again). An update
//! racing a retirement this way is lost with the expired series: it came
//! after the TTL of idleness, as the series was going.
//!
//! Why readers are never confused. A record's state word never repeats:
//! each retirement takes a new generation (24 bits). Readers that decode
//! a record's labels check the word before and after (a seqlock), and a
//! long-lived snapshot re-decodes a record whose word changed.

use std::sync::atomic::{fence, Ordering::*};

use super::blocks::SlotCells;
use super::{Family, FamilyType, Series, Store};
use crate::error::Result;
use crate::exemplar;
use crate::proc;
use crate::shm::{self, layout::slot_state, layout::state, layout::TOMBSTONE};

/// Label bytes reserved for a series of a family with a TTL: its encoded
/// length rounded up to a power of two (at least 32), so that a later
/// series of the family with labels of a similar length can reuse the
/// record's bytes. A record whose bytes are too short for the new labels
/// gets new bytes, and its old ones stay unused until a wipe.
pub(crate) fn label_room(len: usize) -> usize {
    len.max(32).next_power_of_two()
}

/// How many times a sweep re-reads a pinned slot before it leaves the
/// retired series for a later sweep. An update holds its pin for tens of
/// nanoseconds; only a writer stopped in the middle of one holds it
/// longer.
const PIN_WAIT_ROUNDS: u32 = 200;

impl Store {
    /// Looks for idle series in every family with a TTL now, and makes
    /// the space of those no writer can still touch reusable. Returns how
    /// many series expired. Writers do this by themselves as they add
    /// series; this is for tests and for a process that wants it done on
    /// a schedule.
    pub fn expire_idle(&self) -> Result<usize> {
        let _guard = self.lock()?;
        let used = self.map.header().alloc.families_used.load(Acquire);
        let used = used.min(self.map.fixed().max_families);
        let mut expired = 0;
        for index in 0..used {
            expired += self.sweep(index, true);
        }
        Ok(expired)
    }

    /// Under the lock: retires the idle series of family `index` if a
    /// sweep is due (or `now`), and makes retired series reusable where
    /// no update can land in them any more. Returns how many expired.
    pub(crate) fn sweep(&self, index: u32, now: bool) -> usize {
        let Some(f) = self.map.families().get(index as usize) else {
            return 0;
        };
        let Some(t) = self.family_type(f) else {
            return 0;
        };
        let Some(cell) = t.ttl_cell() else {
            return 0;
        };
        let now_ms = shm::coarse_monotonic_ms();
        let due = now_ms.saturating_sub(f.swept_ms.load(Relaxed)) >= t.ttl_ms / 2;
        if !(now || due) {
            return 0;
        }
        f.swept_ms.store(now_ms, Relaxed);
        let hwm = self.slots_in_use();
        let overflow = f.overflow_series.load(Relaxed).wrapping_sub(1);
        let used = self.map.header().alloc.series_used.load(Acquire);
        let used = used.min(self.map.fixed().max_series);
        let mut expired = 0;
        let mut retired = Vec::new();
        for (id, rec) in self.map.series()[..used as usize].iter().enumerate() {
            let id = id as u32;
            if rec.family.load(Relaxed) != index || id == overflow {
                continue;
            }
            match state::of(rec.state.load(Acquire)) {
                state::LIVE => {
                    let io = rec.int_off.load(Relaxed) as usize + cell;
                    if now_ms.saturating_sub(self.last_update(io)) >= t.ttl_ms {
                        self.retire(index, id);
                        expired += 1;
                        retired.push(id);
                    }
                }
                state::RETIRED => retired.push(id),
                _ => {}
            }
        }
        self.map
            .header()
            .alloc
            .series_expired_total
            .fetch_add(expired as u64, Relaxed);
        if !retired.is_empty() && self.pins_clear(hwm) {
            let slots: Vec<_> = (0..=hwm).map(|slot| self.slot_cells(slot)).collect();
            for id in retired {
                self.recycle(index, &t, id, &slots);
            }
        }
        expired
    }

    /// Before an update of TTL series `s` at `now_ms`: if no slot updated
    /// it for its family's TTL, sweeps the family (under the lock) and
    /// fails with `StaleHandle` when that expired the series. Without
    /// this, an update of a hidden series before any sweep would continue
    /// it (a family that gets no new label set is never swept otherwise).
    #[cold]
    #[inline(never)]
    pub(crate) fn expire_if_idle(&self, s: &Series, now_ms: u64) -> Result<()> {
        let Some(rec) = self.map.series().get(s.id as usize) else {
            return Ok(()); // the update's own checks refuse the handle
        };
        let family = rec.family.load(Relaxed);
        let Some(t) = (self.map.families().get(family as usize)).and_then(|f| self.family_type(f))
        else {
            return Ok(());
        };
        // Already expired: no sweep for a handle that is stale anyway.
        if rec.state.load(SeqCst) != s.live {
            return Err(crate::error::expired());
        }
        let cell = (rec.int_off.load(Relaxed) as usize).saturating_add(s.ttl_cell as usize);
        if now_ms.saturating_sub(self.last_update(cell)) < t.ttl_ms {
            return Ok(());
        }
        {
            let _guard = self.lock()?;
            self.sweep(family, true);
        }
        if rec.state.load(SeqCst) != s.live {
            return Err(crate::error::expired());
        }
        Ok(())
    }

    /// The last update of a TTL series: its TTL cell, `cell` in slot 0.
    pub(crate) fn last_update(&self, cell: usize) -> u64 {
        self.map.cells(0).get(cell).map_or(0, |c| c.load(Relaxed))
    }

    /// Under the lock: takes series `id` of family `index` out of sight
    /// (a new generation, `RETIRED`, out of the index). Its cells are
    /// reused only after [`Self::pins_clear`].
    pub(crate) fn retire(&self, index: u32, id: u32) {
        let rec = &self.map.series()[id as usize];
        let word = rec.state.load(Relaxed);
        // SeqCst: see the module documentation.
        rec.state
            .store(state::next_gen(word, state::RETIRED), SeqCst);
        self.count_removal();
        if let Some(pos) = self.index_position(id, rec.hash.load(Relaxed)) {
            self.map.index()[pos].store(TOMBSTONE, Release);
        }
        let f = &self.map.families()[index as usize];
        let _ = f
            .series_count
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    /// Whether every slot up to `hwm` whose owner may still run has no
    /// update of a TTL series in progress, waiting a little for those
    /// that do.
    fn pins_clear(&self, hwm: u32) -> bool {
        fence(SeqCst);
        let slots = self.map.slots();
        (0..=hwm as usize).all(|i| {
            let s = &slots[i];
            for round in 0..PIN_WAIT_ROUNDS {
                if s.pins.load(SeqCst) == 0 {
                    return true;
                }
                // A dead owner's pins are void. (Slot 0 has no owner to
                // ask: its pins must drain.)
                if i != 0
                    && (s.state.load(Acquire) == slot_state::FREE
                        || !proc::is_alive(s.pid.load(Relaxed), s.start_time.load(Relaxed)))
                {
                    return true;
                }
                if round < PIN_WAIT_ROUNDS / 2 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            false
        })
    }

    /// Under the lock, once no update can land in it: zeroes retired
    /// series `id` in every slot and puts it on its family's free list.
    fn recycle(&self, index: u32, t: &FamilyType, id: u32, slots: &[SlotCells<'_>]) {
        let rec = &self.map.series()[id as usize];
        let io = rec.int_off.load(Relaxed) as usize;
        let fo = rec.float_off.load(Relaxed) as usize;
        let sketch_use = t.sketch_use(rec);
        let exemplars = t.exemplar_places();
        for cells in slots {
            let sketch = self.map.sketch(cells.slot);
            // Sketches first: their headers (in the integer cells) say
            // which sketch cells were touched; then exemplar records,
            // whose timestamp cells say the same; then the cells. (A
            // writer slot's block stays the series' for the next one.)
            if let Some(u) = sketch_use {
                self.clear_sketch(cells, u);
            }
            if let Some(e) = exemplars {
                e.each(rec, cells, sketch, |ts, r| exemplar::clear(ts, r, true));
            }
            let ints = cells.ints(io, 0, t.shape.ints as usize);
            let float = cells.float(io, fo);
            for c in ints.into_iter().flatten().chain(float) {
                c.store(0, Relaxed);
            }
        }
        let f = &self.map.families()[index as usize];
        let word = rec.state.load(Relaxed);
        rec.hash.store(f.free_head.load(Relaxed), Relaxed);
        rec.state.store(state::with(word, state::REUSABLE), Release);
        f.free_head.store(u64::from(id) + 1, Relaxed);
    }

    /// Under the lock: gives the family's first reusable record, if any,
    /// to a new series with these (encoded) labels. `None` if there is
    /// none, or if the labels do not fit in the record's bytes and the
    /// arena has no room for them.
    pub(crate) fn reuse_series(
        &self,
        family: &Family,
        hash: u64,
        encoded: &[u8],
        created: u64,
    ) -> Result<Option<Series>> {
        let f = &self.map.families()[family.index as usize];
        let head = f.free_head.load(Relaxed);
        let Some(id) = head.checked_sub(1).map(|i| i as u32) else {
            return Ok(None);
        };
        let recs = self.map.series();
        let Some(rec) = recs.get(id as usize) else {
            f.free_head.store(0, Relaxed); // a corrupt list: drop it
            return Ok(None);
        };
        let word = rec.state.load(Acquire);
        if state::of(word) != state::REUSABLE || rec.family.load(Relaxed) != family.index {
            f.free_head.store(0, Relaxed);
            return Ok(None);
        }
        // The record's bytes if the labels fit, else new ones.
        let old_len = rec.labels.len.load(Relaxed) as usize;
        let (labels, fresh) = if encoded.len() <= label_room(old_len) {
            (rec.labels.off.load(Relaxed), None)
        } else {
            let mut arena = super::ArenaAlloc::new(self)?;
            let mut padded = encoded.to_vec();
            padded.resize(label_room(encoded.len()), 0);
            match arena.push(&padded) {
                Some(off) => (off, Some(arena)),
                None => return Ok(None),
            }
        };
        let Some(pos) = self.free_index_position(hash) else {
            return Ok(None);
        };
        // Off the free list first; recovery rebuilds the lists from the
        // states if this process dies before the record is LIVE.
        f.free_head.store(rec.hash.load(Relaxed), Relaxed);
        rec.state.store(state::with(word, state::INIT), Relaxed);
        fence(Release);
        if let Some(arena) = fresh {
            arena.commit();
        }
        // SAFETY of the rewrite (no `unsafe` here, but the argument the
        // mapping's `arena` relies on): these bytes belong to a record no
        // reader accepts while its state word differs from the one it saw
        // before reading them, and the word changed above.
        self.map.arena_write(labels, encoded);
        super::set_ref(&rec.labels, labels, encoded.len());
        rec.hash.store(hash, Relaxed);
        rec.created_unix_ns.store(created, Relaxed);
        self.stamp_created(family, rec.int_off.load(Relaxed));
        self.map.index()[pos].store(id + 1, Release);
        rec.state.store(state::with(word, state::LIVE), Release);
        f.series_count.fetch_add(1, Relaxed);
        self.series_handle(family, id).map(Some)
    }

    /// Marks a new series of a TTL family as just updated.
    pub(crate) fn stamp_created(&self, family: &Family, int_off: u64) {
        let cell = int_off as usize + family.ttl_cell() as usize;
        if let Some(c) = self.map.cells(0).get(cell) {
            c.store(shm::coarse_monotonic_ms(), Relaxed);
        }
    }

    /// Under the lock: the free lists of every family, from the states of
    /// the records.
    pub(crate) fn rebuild_free_lists(&self) {
        let fams = self.map.families();
        let used = self.map.header().alloc.families_used.load(Acquire);
        let fams = &fams[..used.min(self.map.fixed().max_families) as usize];
        for f in fams {
            f.free_head.store(0, Relaxed);
        }
        let used = self.map.header().alloc.series_used.load(Acquire);
        let used = used.min(self.map.fixed().max_series);
        for (id, rec) in self.map.series()[..used as usize].iter().enumerate() {
            if state::of(rec.state.load(Acquire)) != state::REUSABLE {
                continue;
            }
            if let Some(f) = fams.get(rec.family.load(Relaxed) as usize) {
                rec.hash.store(f.free_head.load(Relaxed), Relaxed);
                f.free_head.store(id as u64 + 1, Relaxed);
            }
        }
    }
}

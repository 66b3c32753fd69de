//! Finding a series by its label values, and inserting a new one.

use std::sync::atomic::{fence, Ordering::*};

use super::arena::{set_ref, ArenaAlloc};
use super::labels::{encode_strs, labels_equal, series_hash};
use super::space::Reach;
use super::{Family, Series, Store};
use crate::error::{Error, ErrorKind, Result};
use crate::proc;
use crate::shm::layout::{state, TOMBSTONE};

/// Checks that `values` has one value per label name of `family`.
pub(super) fn check_label_count(family: &Family, values: &[&str]) -> Result<()> {
    if values.len() == family.n_labels as usize {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::LabelCount,
        format!(
            "expected {} label values, got {}",
            family.n_labels,
            values.len()
        ),
    ))
}

pub(super) enum Found {
    Live(u32),
    /// An entry whose insert has not finished (or whose writer died).
    Pending,
    Absent,
}

impl Store {
    /// Gets or creates the series with these label values, and returns a
    /// handle for updates. Label values are any UTF-8 and stored exactly.
    ///
    /// Finding an existing series takes no lock. Creating one takes the
    /// store lock briefly, and so does this process's first handle of a
    /// series: it claims the process's writer slot if need be, and takes
    /// the series' cells in it (docs/ARCHITECTURE.md, "Writer cells").
    ///
    /// # Errors
    /// [`ErrorKind::LabelCount`] if the number of values is wrong;
    /// [`ErrorKind::Overflow`] if the series does not fit, carrying the
    /// family's overflow series ([`Error::overflow_series`]);
    /// [`ErrorKind::StaleHandle`] if the store was wiped since the family
    /// was registered.
    pub fn series(&self, family: &Family, values: &[&str]) -> Result<Series> {
        self.series_created(family, values, None)
    }

    /// Like [`Store::series`], but a series this call makes gets
    /// `created_unix_ns` as its creation time (what `_created` samples
    /// show) instead of the store's clock, when given: a binding's own
    /// clock, such as Python's `time.time()`, which tests replace. A
    /// series that exists already keeps its time.
    ///
    /// # Errors
    /// As [`Store::series`].
    pub fn series_created(
        &self,
        family: &Family,
        values: &[&str],
        created_unix_ns: Option<u64>,
    ) -> Result<Series> {
        // A handle is for writing; a read-only store hands out none.
        self.check_writable()?;
        self.check_family(family)?;
        check_label_count(family, values)?;
        // Found or made, then placed in this process's slot (which takes
        // the lock, so not while the search below holds it).
        match self.find_or_insert(family, values, created_unix_ns) {
            Ok(s) => Ok(self.place(s)),
            Err(e) => Err(e.map_overflow(|s| self.place(s))),
        }
    }

    /// The series of `family` with label `values`, made if there is none.
    fn find_or_insert(
        &self,
        family: &Family,
        values: &[&str],
        created_unix_ns: Option<u64>,
    ) -> Result<Series> {
        let hash = series_hash(family.index, values);
        if let Found::Live(id) = self.find_series(family.index, hash, values) {
            return self.series_handle(family, id);
        }
        let _guard = self.lock()?;
        self.check_family(family)?;
        match self.find_series(family.index, hash, values) {
            Found::Live(id) => self.series_handle(family, id),
            // Recovery (run when the lock was taken) settles every pending
            // insert, so this is only reachable on a corrupt store.
            Found::Pending => Err(
                Error::new(ErrorKind::Corrupt, "a series insert never finished")
                    .with_path(self.path()),
            ),
            Found::Absent => self.insert_series(
                family,
                hash,
                values,
                created_unix_ns.unwrap_or_else(proc::unix_nanos),
            ),
        }
    }

    /// Like [`Store::series`], but a series that does not fit resolves to
    /// the family's overflow series instead of an error.
    pub fn series_or_overflow(&self, family: &Family, values: &[&str]) -> Result<Series> {
        self.series_or_overflow_created(family, values, None)
    }

    /// Like [`Store::series_created`], but a series that does not fit
    /// resolves to the family's overflow series instead of an error.
    ///
    /// # Errors
    /// As [`Store::series`], but never [`ErrorKind::Overflow`].
    pub fn series_or_overflow_created(
        &self,
        family: &Family,
        values: &[&str],
        created_unix_ns: Option<u64>,
    ) -> Result<Series> {
        match self.series_created(family, values, created_unix_ns) {
            Err(e) if e.kind() == ErrorKind::Overflow => e.overflow_series().ok_or(e),
            r => r,
        }
    }

    pub(super) fn check_family(&self, family: &Family) -> Result<()> {
        if family.tag != self.tag || family.epoch != self.epoch() {
            return Err(Error::new(
                ErrorKind::StaleHandle,
                "the family handle is from before a wipe or from another Store; register it again",
            ));
        }
        // Only a forged handle (through the C ABI's raw form) fails this.
        if family.index >= self.map.header().alloc.families_used.load(Acquire) {
            return Err(Error::new(
                ErrorKind::StaleHandle,
                "the family handle names no registered family",
            ));
        }
        Ok(())
    }

    pub(crate) fn series_handle(&self, family: &Family, id: u32) -> Result<Series> {
        let offs = self.map.series().get(id as usize).map(|rec| {
            (
                rec.state.load(Acquire),
                rec.int_off.load(Relaxed),
                rec.float_off.load(Relaxed),
                rec.sketch_off.load(Relaxed),
            )
        });
        let cap = self.map.fixed().cells_per_slot;
        let sketch_cap = self.map.fixed().sketch_cells_per_slot;
        match offs {
            // A sketch offset of `sketch_cap` is none (an overflow series
            // not used yet): updates then find no sketch cells.
            Some((w, i, f, k))
                if i.saturating_add(family.shape.ints as u64) <= cap
                    && f.saturating_add(family.shape.floats as u64) <= cap
                    && (k == sketch_cap
                        || k.saturating_add(self.sketch_cells_of(family)) <= sketch_cap) =>
            {
                Ok(family.series_handle(id, w, i, f, k))
            }
            _ => Err(Error::new(
                ErrorKind::Corrupt,
                format!("series {id} points outside the value cells"),
            )
            .with_path(self.path())),
        }
    }

    pub(super) fn find_series(&self, family: u32, hash: u64, values: &[&str]) -> Found {
        let index = self.map.index();
        let recs = self.map.series();
        let mask = index.len() - 1;
        let mut i = hash as usize & mask;
        for _ in 0..index.len() {
            let e = index[i].load(Acquire);
            if e == 0 {
                return Found::Absent;
            }
            if e != TOMBSTONE {
                if let Some(rec) = recs.get(e as usize - 1) {
                    // The state word before and after the comparison: a
                    // record of a family with a TTL may be reused for
                    // other labels meanwhile (under the lock), and every
                    // reuse changes the word for good (`ttl.rs`).
                    let before = rec.state.load(Acquire);
                    if rec.hash.load(Relaxed) == hash
                        && rec.family.load(Relaxed) == family
                        && self
                            .arena_str(&rec.labels)
                            .is_some_and(|b| labels_equal(b, values))
                    {
                        fence(Acquire);
                        if rec.state.load(Relaxed) == before {
                            match state::of(before) {
                                state::LIVE => return Found::Live(e - 1),
                                state::INIT => return Found::Pending,
                                _ => {}
                            }
                        } else {
                            return Found::Pending;
                        }
                    }
                }
            }
            i = (i + 1) & mask;
        }
        Found::Absent
    }

    /// Where series `id` sits in the index, if it does.
    pub(crate) fn index_position(&self, id: u32, hash: u64) -> Option<usize> {
        let index = self.map.index();
        let mask = index.len() - 1;
        let mut i = hash as usize & mask;
        for _ in 0..index.len() {
            match index[i].load(Acquire) {
                0 => return None,
                e if e == id + 1 => return Some(i),
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// An index position for a new entry with this hash: the first empty
    /// or deleted one. (The index has twice as many entries as there can
    /// be series, so only a corrupt index has none.)
    pub(crate) fn free_index_position(&self, hash: u64) -> Option<usize> {
        let index = self.map.index();
        let mask = index.len() - 1;
        let mut pos = hash as usize & mask;
        for _ in 0..index.len() {
            if matches!(index[pos].load(Relaxed), 0 | TOMBSTONE) {
                return Some(pos);
            }
            pos = (pos + 1) & mask;
        }
        None
    }

    fn insert_series(
        &self,
        family: &Family,
        hash: u64,
        values: &[&str],
        created: u64,
    ) -> Result<Series> {
        let h = self.map.header();
        let f = &self.map.families()[family.index as usize];
        let mut encoded = Vec::new();
        encode_strs(&mut encoded, values);
        if family.ttl {
            if let Some(s) = self.reuse_expired(family, hash, &encoded, created)? {
                return Ok(s);
            }
        }
        let id = h.alloc.series_used.load(Relaxed);
        let cells = self.cells_room(family.shape);
        let sketch_cells = self.sketch_cells_of(family);
        let sketch = self.series_sketch_room(family, sketch_cells);
        let mut arena = ArenaAlloc::new(self)?;
        let labels = if family.ttl {
            // Room for the next series that reuses the record (`ttl.rs`).
            let mut padded = encoded.clone();
            padded.resize(super::ttl::label_room(encoded.len()), 0);
            arena.push(&padded)
        } else {
            arena.push(&encoded)
        };
        let (Some(labels), Some((int_off, float_off)), Some(sketch_off)) = (labels, cells, sketch)
        else {
            if let Some(e) = arena.no_space.take() {
                return Err(self.overflow_error(family, &e.reason()));
            }
            return Err(self.overflow(family, id, labels.is_some(), cells.is_some()));
        };
        if let Some(reason) = self.over_limit(family, id) {
            return Err(self.overflow_error(family, &reason));
        }
        let reach = Reach {
            series: (u64::from(id) + 1) * 64,
            ints: (int_off + u64::from(family.shape.ints)) * 8,
            floats: (self.map.fixed().cells_per_slot - float_off) * 8,
            ..Reach::default()
        };
        if let Err(e) = self.reserve_reach(reach) {
            return Err(self.overflow_error(family, &e.reason()));
        }
        let index = self.map.index();
        let Some(pos) = self.free_index_position(hash) else {
            return Err(
                Error::new(ErrorKind::Corrupt, "the series index has no free entry")
                    .with_path(self.path()),
            );
        };
        // Order matters for recovery (see `recover`): the record is INIT
        // until both it and its index entry are written.
        let rec = &self.map.series()[id as usize];
        rec.state.store(state::INIT, Release);
        h.alloc.series_used.store(id + 1, Release);
        arena.commit();
        if family.ttl {
            // Creation counts as an update (slot 0 is every process's).
            self.stamp_created(family, int_off);
        }
        self.take_cells(family.shape, sketch_cells);
        rec.family.store(family.index, Relaxed);
        rec.hash.store(hash, Relaxed);
        set_ref(&rec.labels, labels, encoded.len());
        rec.int_off.store(int_off, Relaxed);
        rec.float_off.store(float_off, Relaxed);
        rec.sketch_off.store(sketch_off, Relaxed);
        rec.created_unix_ns.store(created, Relaxed);
        index[pos].store(id + 1, Release);
        rec.state.store(state::LIVE, Release);
        f.series_count.fetch_add(1, Relaxed);
        self.series_handle(family, id)
    }

    /// For a family with a TTL: expires what is due, then gives an expired
    /// series' record and cells to the new series if there is one. A
    /// family (or store) that is full looks for idle series at once.
    fn reuse_expired(
        &self,
        family: &Family,
        hash: u64,
        encoded: &[u8],
        created: u64,
    ) -> Result<Option<Series>> {
        let f = &self.map.families()[family.index as usize];
        let limit = f.max_series.load(Relaxed);
        let full = (limit != 0 && f.series_count.load(Relaxed) >= limit)
            || self.map.header().alloc.series_used.load(Relaxed) >= self.map.fixed().max_series
            || self.cells_room(family.shape).is_none()
            || (self.series_sketch_room(family, self.sketch_cells_of(family))).is_none();
        self.sweep(family.index, full);
        if limit == 0 || f.series_count.load(Relaxed) < limit {
            return self.reuse_series(family, hash, encoded, created);
        }
        Ok(None)
    }

    /// Why a new series `id` of `family` is refused by a limit on series
    /// (the family's or the store's), if it is.
    fn over_limit(&self, family: &Family, id: u32) -> Option<String> {
        let f = &self.map.families()[family.index as usize];
        let limit = f.max_series.load(Relaxed);
        let max_series = self.map.fixed().max_series;
        if limit != 0 && f.series_count.load(Relaxed) >= limit {
            Some(format!("the family's limit of {limit} series"))
        } else if id >= max_series {
            Some(format!("the store's capacity of {max_series} series"))
        } else {
            None
        }
    }

    /// The error for a new series of `family` that did not get its label
    /// bytes, its value cells or its sketch cells (or went over a limit,
    /// which is named first).
    fn overflow(&self, family: &Family, id: u32, labels: bool, cells: bool) -> Error {
        let fixed = self.map.fixed();
        let reason = self.over_limit(family, id).unwrap_or_else(|| {
            if !labels {
                format!("the store's {} label bytes", fixed.arena_bytes)
            } else if !cells {
                format!(
                    "the store's {} value cells per writer",
                    fixed.cells_per_slot
                )
            } else {
                format!(
                    "the store's {} sketch cells per writer (sketch_cells_per_writer)",
                    fixed.sketch_cells_per_slot
                )
            }
        });
        self.overflow_error(family, &reason)
    }

    /// Where a new series of `family` would get its `n` sketch cells, if
    /// they fit and leave room for the family's overflow series' cells
    /// while it has none: the series that finds the sketch region full
    /// sends its updates there, quantiles and native buckets included.
    fn series_sketch_room(&self, family: &Family, n: u64) -> Option<u64> {
        let none = self.map.fixed().sketch_cells_per_slot;
        let pending = self
            .map
            .series()
            .get(family.overflow as usize)
            .is_some_and(|rec| rec.sketch_off.load(Relaxed) == none);
        let off = self.sketch_room(if pending { n.checked_mul(2)? } else { n })?;
        Some(off)
    }

    /// Gives `family`'s overflow series its sketch cells on its first use
    /// (registration leaves them out: see `register.rs`), if the store
    /// has room. Without them, its observations
    /// still count in its count and sum, and its quantiles, native
    /// buckets and exemplars are absent. Under the lock.
    fn give_overflow_sketch(&self, family: &Family) {
        let none = self.map.fixed().sketch_cells_per_slot;
        let Some(rec) = self.map.series().get(family.overflow as usize) else {
            return;
        };
        if rec.sketch_off.load(Relaxed) != none {
            return;
        }
        let n = self.sketch_cells_of(family);
        let Some(off) = self.sketch_room(n) else {
            return;
        };
        // Taken before the record points at them: a holder that dies in
        // between leaks them, and the record keeps pointing at none.
        let a = &self.map.header().alloc;
        a.sketch_cells_used.fetch_add(n, Release);
        rec.sketch_off.store(off, Release);
    }

    /// Counts an overflow of `family` and makes its error, which carries
    /// the family's overflow series.
    fn overflow_error(&self, family: &Family, reason: &str) -> Error {
        let f = &self.map.families()[family.index as usize];
        self.give_overflow_sketch(family);
        f.overflows.fetch_add(1, Relaxed);
        self.map
            .header()
            .alloc
            .overflows_total
            .fetch_add(1, Relaxed);
        let name = self
            .arena_str(&f.name)
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        match self.series_handle(family, family.overflow) {
            Ok(ov) => Error::overflow(
                format!(
                    "a new series of {name:?} does not fit in {reason}; its updates go to the \
                     series labelled shmetrics_overflow=\"true\""
                ),
                ov,
            ),
            Err(e) => e,
        }
    }
}

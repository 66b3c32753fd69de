//! Allocation under the lock: label bytes in the arena (reserved first,
//! taken at once on commit) and value and sketch cells in every slot
//! region.

use std::sync::atomic::Ordering::*;

use super::blocks;
use super::space::{NoSpace, Reach};
use super::{Family, Shape, Store};
use crate::error::{Error, ErrorKind, Result};
use crate::exemplar;
use crate::handle::exemplar_places;
use crate::native;
use crate::shm::layout;
use crate::window;

pub(crate) fn set_ref(r: &layout::ArenaRef, off: u64, len: usize) {
    r.off.store(off, Relaxed);
    r.len.store(len as u64, Relaxed);
}

/// Reserves arena space under the lock; nothing is taken until `commit`.
pub(crate) struct ArenaAlloc<'a> {
    store: &'a Store,
    used: u64,
    /// Why a push found no room on the file system, if one did.
    pub(super) no_space: Option<NoSpace>,
}

impl<'a> ArenaAlloc<'a> {
    pub(crate) fn new(store: &'a Store) -> Result<ArenaAlloc<'a>> {
        let used = store.map.header().alloc.arena_used.load(Acquire);
        if used > store.map.fixed().arena_bytes {
            return Err(
                Error::new(ErrorKind::Corrupt, "the arena fill mark is past its end")
                    .with_path(store.path()),
            );
        }
        Ok(ArenaAlloc {
            store,
            used,
            no_space: None,
        })
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> Option<u64> {
        let off = self.used;
        let end = off.checked_add(bytes.len() as u64)?;
        if end > self.store.map.fixed().arena_bytes {
            return None;
        }
        let reach = Reach {
            arena: end,
            ..Reach::default()
        };
        if let Err(e) = self.store.reserve_reach(reach) {
            self.no_space = Some(e);
            return None;
        }
        self.store.map.arena_write(off, bytes);
        self.used = end;
        Some(off)
    }

    pub(super) fn push_f64s(&mut self, v: &[f64]) -> Option<u64> {
        self.used = self.used.checked_add(7)? / 8 * 8;
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        self.push(&bytes)
    }

    pub(crate) fn commit(self) {
        self.store
            .map
            .header()
            .alloc
            .arena_used
            .store(self.used, Release);
    }
}

impl Store {
    /// Where a series of this shape would get its cells, if they fit:
    /// slot 0 holds them (integer cells from the start, float cells from
    /// the end), and a writer slot that touched every series holds a
    /// block of each (`blocks.rs`).
    pub(super) fn cells_room(&self, shape: Shape) -> Option<(u64, u64)> {
        let a = &self.map.header().alloc;
        let ints = a.int_cells_used.load(Relaxed);
        let floats = a.float_cells_used.load(Relaxed);
        let cap = self.map.fixed().cells_per_slot;
        let used = ints.checked_add(floats)?;
        let need = shape.ints as u64 + shape.floats as u64;
        let series = u64::from(a.series_used.load(Relaxed)) + 1;
        let blocks = (ints.checked_add(u64::from(shape.ints))?)
            .checked_add(series.checked_mul(blocks::OVERHEAD as u64)?)?;
        (shape.floats == 1 && used.checked_add(need)? <= cap && blocks <= cap)
            .then(|| (ints, cap - floats - shape.floats as u64))
    }

    /// Sketch cells a series of `family` takes.
    pub(super) fn sketch_cells_of(&self, family: &Family) -> u64 {
        let places = exemplar_places(
            family.kind,
            family.n_bounds as usize,
            family.native != 0,
            family.exemplars,
        );
        (places * exemplar::RECORD) as u64
            + match native::schema_of(family.native) {
                Some(schema) => 2 * native::bins(schema) as u64,
                None => {
                    window::sketch_cells(family.window.age_buckets as usize, self.sketch.cells())
                        as u64
                }
            }
    }

    /// Where `n` sketch cells would start, if they fit.
    pub(super) fn sketch_room(&self, n: u64) -> Option<u64> {
        let used = self.map.header().alloc.sketch_cells_used.load(Relaxed);
        (used.checked_add(n)? <= self.map.fixed().sketch_cells_per_slot).then_some(used)
    }

    /// Takes the cells that [`Self::cells_room`] and
    /// [`Self::sketch_room`] offered.
    pub(super) fn take_cells(&self, shape: Shape, sketch_cells: u64) {
        let a = &self.map.header().alloc;
        a.sketch_cells_used.fetch_add(sketch_cells, Release);
        a.int_cells_used.fetch_add(shape.ints as u64, Release);
        a.float_cells_used.fetch_add(shape.floats as u64, Release);
    }
}

//! Space on the file system: the store file is sparse (its regions are
//! sized for the capacities, most of which a store never uses), and a page
//! of a sparse file is allocated when it is first touched. On a full tmpfs
//! that allocation fails, and the access raises SIGBUS. So nothing is
//! touched before the file system granted it: the header, the slot table
//! and the series index are reserved (`posix_fallocate`) when the file is
//! created, and the regions that fill from one end (family and series
//! records, arena bytes, and each slot's integer and float cells) are
//! reserved as their fill marks grow, in chunks, under the lock, by
//! registration, series creation and slot claims. The update path only
//! touches value cells below the fill marks, so it needs no check there;
//! nor do readers, which read only below the fill marks too.
//!
//! The sketch region (summary quantile sets, native histogram buckets,
//! exemplar records) is the exception: a summary series takes 166 KiB
//! of it per writer slot, of which an observation stream touches a few
//! pages. Its pages are reserved when an update first writes them, on the
//! update's cold branch, page by page (`marks.rs`, and the exemplar
//! record's first write in `exemplar.rs`); readers read only what the
//! marks say was written, so only reserved pages.
//!
//! When the file system has no room, the change that needed it fails
//! before it wrote anything: registration with [`ErrorKind::StoreFull`],
//! a new series with [`ErrorKind::Overflow`] (its updates go to the
//! family's overflow series), a slot claim by falling back to the shared
//! slot, an observation whose sketch page is refused with
//! [`ErrorKind::StoreFull`]. Everything already stored stays as it was.
//!
//! [`ErrorKind::StoreFull`]: crate::ErrorKind::StoreFull
//! [`ErrorKind::Overflow`]: crate::ErrorKind::Overflow

use std::sync::atomic::{AtomicU64, Ordering::*};

use super::Store;
use crate::shm::layout::PAGE;

/// The least a reservation grows by: 16 pages.
const MIN_STEP: u64 = 64 << 10;
/// The most a reservation grows by beyond what is needed (an eighth of
/// what is reserved, up to this): 1 MiB.
const MAX_STEP: u64 = 1 << 20;

/// The fill marks, in bytes of their region, that a change is about to
/// reach: each region is reserved at least this far before the change
/// writes anything. Zero leaves a region as it is.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Reach {
    pub families: u64,
    pub series: u64,
    pub arena: u64,
    /// Per slot region: integer cells from its start, float cells from
    /// its end.
    pub ints: u64,
    pub floats: u64,
}

/// The file system refused space: which region, and its error.
#[derive(Debug)]
pub(super) struct NoSpace {
    pub what: &'static str,
    pub err: std::io::Error,
}

impl NoSpace {
    /// Why a new series did not fit, for its overflow error.
    pub fn reason(&self) -> String {
        format!(
            "the space the file system grants the store (no room for its {}: {})",
            self.what, self.err
        )
    }
}

impl std::fmt::Display for NoSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the file system holding the store has no room for its {} ({}): free space \
             there, make it larger, or put the store elsewhere",
            self.what, self.err
        )
    }
}

/// A region of the file: where it starts, how long it may grow, and
/// whether it fills from its end.
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    limit: u64,
    from_end: bool,
}

impl Span {
    /// Reserves bytes `[from, to)` of the region (counted from its fill
    /// end).
    fn reserve(self, store: &Store, from: u64, to: u64) -> std::io::Result<()> {
        let off = if self.from_end {
            self.start + self.limit - to
        } else {
            self.start + from
        };
        store.map.reserve(off, to - from)
    }
}

/// How far to reserve a region that holds `reserved` bytes and needs
/// `need`: a chunk beyond the need, so that the next changes find their
/// room reserved, page-aligned, within `limit`.
fn grown(reserved: u64, need: u64, limit: u64) -> u64 {
    let step = (reserved / 8).clamp(MIN_STEP, MAX_STEP);
    need.max(reserved.saturating_add(step))
        .div_ceil(PAGE)
        .saturating_mul(PAGE)
        .min(limit)
}

impl Store {
    /// Reserves every region of `reach` at least that far. Under the
    /// lock. On an error, what was reserved stays reserved (and counted
    /// where a whole region step succeeded); nothing else changed.
    pub(super) fn reserve_reach(&self, reach: Reach) -> Result<(), NoSpace> {
        let fx = *self.map.fixed();
        let a = &self.map.header().alloc;
        let single = |start: u64, limit: u64| {
            move |_: u64| Span {
                start,
                limit,
                from_end: false,
            }
        };
        let one = 0..1;
        self.grow(
            "family records",
            &a.families_reserved,
            reach.families,
            one.clone(),
            single(fx.off_families, fx.max_families as u64 * 256),
        )?;
        self.grow(
            "series records",
            &a.series_reserved,
            reach.series,
            one.clone(),
            single(fx.off_series, fx.max_series as u64 * 64),
        )?;
        self.grow(
            "label bytes",
            &a.arena_reserved,
            reach.arena,
            one,
            single(fx.off_arena, fx.arena_bytes),
        )?;
        let cells = |from_end| {
            move |s: u64| Span {
                start: fx.off_cells + s * fx.slot_stride,
                limit: fx.cells_per_slot * 8,
                from_end,
            }
        };
        let slots = self.reserved_slots();
        self.grow(
            "value cells",
            &a.int_cells_reserved,
            reach.ints,
            slots.clone(),
            cells(false),
        )?;
        self.grow(
            "value cells",
            &a.float_cells_reserved,
            reach.floats,
            slots,
            cells(true),
        )
    }

    /// The slots whose regions are reserved with the fill marks: slot 0,
    /// whose cells are laid out as the records say. Writer slots hold
    /// blocks, reserved as their heaps grow (`reserve_blocks`).
    fn reserved_slots(&self) -> std::ops::Range<u64> {
        0..1
    }

    /// Grows the reservation `mark` of the regions `span(i)` for each `i`
    /// of `which` (regions of the same size) to at least `need` bytes: a
    /// chunk more if the file system grants it, else just `need`.
    fn grow(
        &self,
        what: &'static str,
        mark: &AtomicU64,
        need: u64,
        which: std::ops::Range<u64>,
        span: impl Fn(u64) -> Span,
    ) -> Result<(), NoSpace> {
        let limit = span(0).limit;
        let have = mark.load(Relaxed).min(limit);
        let need = need.min(limit);
        if need <= have {
            return Ok(());
        }
        let mut result = Ok(());
        for to in [grown(have, need, limit), need] {
            result = which
                .clone()
                .try_for_each(|i| span(i).reserve(self, have, to));
            if result.is_ok() {
                mark.store(to, Release);
                return Ok(());
            }
        }
        Err(NoSpace {
            what,
            err: result.expect_err("an error, or returned above"),
        })
    }

    /// Reserves writer slot `slot`'s block heap (`blocks.rs`) at least
    /// `cells` cells from its start. Under the lock.
    pub(super) fn reserve_blocks(&self, slot: u32, cells: usize) -> Result<(), NoSpace> {
        let fx = *self.map.fixed();
        let span = Span {
            start: fx.off_cells + u64::from(slot) * fx.slot_stride,
            limit: fx.cells_per_slot * 8,
            from_end: false,
        };
        let mark = &self.map.slots()[slot as usize].blocks_reserved;
        self.grow("value cells", mark, cells as u64 * 8, 0..1, |_| span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_grow_in_page_aligned_chunks_within_the_limit() {
        // A first reservation takes the least step.
        assert_eq!(grown(0, 100, 1 << 30), MIN_STEP);
        // A need beyond the step is met, page-aligned.
        assert_eq!(grown(0, MIN_STEP + 1, 1 << 30), MIN_STEP + PAGE);
        // An eighth of what is reserved, at most 1 MiB.
        assert_eq!(
            grown(1 << 20, (1 << 20) + 1, 1 << 30),
            (1 << 20) + MIN_STEP * 2
        );
        assert_eq!(grown(64 << 20, (64 << 20) + 1, 1 << 30), (65 << 20));
        // Never past the region.
        assert_eq!(grown(0, 100, 8192), 8192);
        assert_eq!(grown(0, 100, 1000), 1000);
    }
}

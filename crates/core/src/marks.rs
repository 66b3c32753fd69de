//! The touched range of a run of sketch cells, kept in three integer
//! cells beside it, as summary sets and native histogram sides use it:
//! the low and high marks, and the reserved range.
//!
//! The low mark holds `bins - lowest touched position` and the high mark
//! `highest touched position + 1`, so that zeroed memory means "untouched"
//! and both only ever grow (`fetch_max`). A reader reads only the cells in
//! the range: on tmpfs, reading a hole of a file allocates a page.
//!
//! The sketch region is not reserved on the file system ahead of use, as
//! the other regions are (`store/space.rs`): a summary series takes tens
//! of KiB per writer slot, of which a few pages are ever touched. So the
//! pages of a run are reserved (`posix_fallocate`) when a write first
//! needs them, before the marks cover them. The third cell records which
//! positions are reserved: one range, page-aligned, grown by
//! compare-and-swap after the file system granted the new pages, so that
//! a range published there is reserved whole, whatever several threads
//! do at once. Every position between the marks is inside it (a position
//! is reserved before a mark covers it, and the reserved range is one
//! piece), so neither a writer nor a reader inside the marks can fault
//! for want of space. Widening the marks is the cold branch of an
//! update; a touch inside them costs what it cost without reservation.

use std::sync::atomic::{AtomicU64, Ordering::*};

use crate::shm::layout::PAGE;
use crate::shm::Mapping;

/// Integer cells of a run's marks: low, high, reserved.
pub(crate) const MARKS: usize = 3;

/// Cells in a page.
const PAGE_CELLS: usize = (PAGE / 8) as usize;

/// Grants the pages of the file under some cells, so that writing them
/// cannot fault for want of space.
pub(crate) trait Space {
    /// Reserves the pages under `cells`. Idempotent.
    fn reserve(&self, cells: &[AtomicU64]) -> std::io::Result<()>;
}

/// The store file's mapping: the sketch region's pages are reserved when
/// first written, on the update path's cold branch.
impl Space for Mapping {
    fn reserve(&self, cells: &[AtomicU64]) -> std::io::Result<()> {
        self.reserve_cells(cells)
    }
}

/// Widens the marks of `cells` (the run) to cover position `p`, reserving
/// its page first if needed. Call it before counting at `p`, so that a
/// count is never outside the range a reader looks at once it sees the
/// count. `marks` are the run's [`MARKS`] cells; `p < cells.len()`.
///
/// # Errors
/// The file system's error if it has no room for `p`'s page: then
/// nothing changed, and the caller must not write at `p`.
#[inline]
pub(crate) fn touch<S: Space>(
    marks: &[AtomicU64],
    cells: &[AtomicU64],
    p: usize,
    space: &S,
) -> std::io::Result<()> {
    let bins = cells.len();
    let lo = (bins - p) as u64;
    let hi = p as u64 + 1;
    if marks[0].load(Relaxed) < lo || marks[1].load(Relaxed) < hi {
        return widen(marks, cells, p, space);
    }
    Ok(())
}

/// The cold branch of [`touch`]: reserve, then widen.
#[cold]
#[inline(never)]
fn widen<S: Space>(
    marks: &[AtomicU64],
    cells: &[AtomicU64],
    p: usize,
    space: &S,
) -> std::io::Result<()> {
    reserve(&marks[2], cells, p, space)?;
    let bins = cells.len();
    marks[0].fetch_max((bins - p) as u64, Relaxed);
    marks[1].fetch_max(p as u64 + 1, Relaxed);
    Ok(())
}

/// Grows the reserved range in `word` to cover position `p` of `cells`:
/// the positions of `p`'s page are reserved, then published.
fn reserve<S: Space>(
    word: &AtomicU64,
    cells: &[AtomicU64],
    p: usize,
    space: &S,
) -> std::io::Result<()> {
    let bins = cells.len();
    // The page of `p`, in positions of the run: the mapping is
    // page-aligned, so the cells' addresses give their file's pages.
    let in_page = (cells.as_ptr() as usize / 8 + p) % PAGE_CELLS;
    let first = p.saturating_sub(in_page);
    let last = (p + (PAGE_CELLS - 1 - in_page)).min(bins - 1);
    let mut seen = word.load(Acquire);
    loop {
        let (lo, hi) = match reserved(seen, bins) {
            Some((lo, hi)) if lo <= p && p <= hi => return Ok(()),
            Some((lo, hi)) => {
                // The new pages: between the page and the range.
                let (a, b) = (first.min(lo), last.max(hi));
                if a < lo {
                    space.reserve(&cells[a..lo])?;
                }
                if b > hi {
                    space.reserve(&cells[hi + 1..=b])?;
                }
                (a, b)
            }
            None => {
                space.reserve(&cells[first..=last])?;
                (first, last)
            }
        };
        let new = ((bins - lo) as u64) << 32 | (hi as u64 + 1);
        match word.compare_exchange(seen, new, Release, Acquire) {
            Ok(_) => return Ok(()),
            // Another thread grew it meanwhile: cover `p` in its range.
            Err(now) => seen = now,
        }
    }
}

/// The reserved positions `(lowest, highest)` of a run of `bins` from its
/// reserved word (`bins - lowest` in the high half, `highest + 1` in the
/// low half), if any; `None` too for a word out of range (a corrupt file),
/// which is then reserved again.
fn reserved(word: u64, bins: usize) -> Option<(usize, usize)> {
    let (lo, hi) = ((word >> 32) as usize, (word & 0xffff_ffff) as usize);
    if lo == 0 || hi == 0 || lo > bins || hi > bins {
        return None;
    }
    let (lo, hi) = (bins - lo, hi - 1);
    (lo <= hi).then_some((lo, hi))
}

/// The touched positions `(lowest, highest)` from `[lo, hi]` marks, if
/// any; `None` too for marks out of range (a corrupt file).
#[inline]
pub(crate) fn range(marks: &[AtomicU64], bins: usize) -> Option<(usize, usize)> {
    let lo = marks[0].load(Relaxed);
    let hi = marks[1].load(Relaxed);
    if lo == 0 || hi == 0 || lo > bins as u64 || hi > bins as u64 {
        return None;
    }
    let (lo, hi) = (bins - lo as usize, hi as usize - 1);
    (lo <= hi).then_some((lo, hi))
}

/// Space that is always granted: for cells that are not in a store file
/// (tests).
#[cfg(test)]
pub(crate) struct Granted;

#[cfg(test)]
impl Space for Granted {
    fn reserve(&self, _: &[AtomicU64]) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records the cells it is asked to reserve, as positions of `run`;
    /// refuses once `room` pages were granted.
    struct Ledger<'a> {
        run: &'a [AtomicU64],
        granted: Mutex<Vec<(usize, usize)>>,
        room: usize,
    }

    impl Space for Ledger<'_> {
        fn reserve(&self, cells: &[AtomicU64]) -> std::io::Result<()> {
            let at = (cells.as_ptr() as usize - self.run.as_ptr() as usize) / 8;
            let mut g = self.granted.lock().unwrap();
            let pages: usize = g
                .iter()
                .map(|(a, b)| (b - a + 1).div_ceil(PAGE_CELLS))
                .sum();
            if pages + cells.len().div_ceil(PAGE_CELLS) > self.room {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            g.push((at, at + cells.len() - 1));
            Ok(())
        }
    }

    /// Cells enough to hold a page-aligned run of `n` ([`aligned`]).
    fn run(n: usize) -> Vec<AtomicU64> {
        (0..n + PAGE_CELLS).map(|_| AtomicU64::new(0)).collect()
    }

    /// The page-aligned run of `n` cells in `v`.
    fn aligned(v: &[AtomicU64], n: usize) -> &[AtomicU64] {
        let skip = (PAGE_CELLS - (v.as_ptr() as usize / 8) % PAGE_CELLS) % PAGE_CELLS;
        &v[skip..skip + n]
    }

    #[test]
    fn a_touch_reserves_its_page_once_and_marks_stay_inside_the_reserved_range() {
        let store = run(4 * PAGE_CELLS);
        let cells = aligned(&store, 4 * PAGE_CELLS);
        let marks: Vec<AtomicU64> = (0..MARKS).map(|_| AtomicU64::new(0)).collect();
        let space = Ledger {
            run: cells,
            granted: Mutex::new(Vec::new()),
            room: 4,
        };
        touch(&marks, cells, 600, &space).unwrap();
        touch(&marks, cells, 1000, &space).unwrap();
        touch(&marks, cells, 700, &space).unwrap();
        assert_eq!(*space.granted.lock().unwrap(), [(512, 1023)]);
        assert_eq!(range(&marks, cells.len()), Some((600, 1000)));
        // Far below: the pages between are reserved too, so the range
        // between the marks is.
        touch(&marks, cells, 5, &space).unwrap();
        assert_eq!(*space.granted.lock().unwrap(), [(512, 1023), (0, 511)]);
        touch(&marks, cells, 2047, &space).unwrap();
        assert_eq!(
            *space.granted.lock().unwrap(),
            [(512, 1023), (0, 511), (1024, 2047)]
        );
        assert_eq!(
            reserved(marks[2].load(Relaxed), cells.len()),
            Some((0, 2047))
        );
    }

    #[test]
    fn a_refused_page_changes_nothing() {
        let store = run(4 * PAGE_CELLS);
        let cells = aligned(&store, 4 * PAGE_CELLS);
        let marks: Vec<AtomicU64> = (0..MARKS).map(|_| AtomicU64::new(0)).collect();
        let space = Ledger {
            run: cells,
            granted: Mutex::new(Vec::new()),
            room: 1,
        };
        touch(&marks, cells, 10, &space).unwrap();
        let before: Vec<u64> = marks.iter().map(|m| m.load(Relaxed)).collect();
        let e = touch(&marks, cells, 1500, &space).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        let after: Vec<u64> = marks.iter().map(|m| m.load(Relaxed)).collect();
        assert_eq!(before, after);
        assert_eq!(range(&marks, cells.len()), Some((10, 10)));
    }

    #[test]
    fn racing_touches_publish_one_reserved_range_that_covers_both() {
        // Many threads touch far-apart positions of fresh runs at once;
        // afterwards every position between the marks lies in a granted
        // page, and the reserved word covers the marks.
        for round in 0..50 {
            let store = run(8 * PAGE_CELLS);
            let cells = aligned(&store, 8 * PAGE_CELLS);
            let marks: Vec<AtomicU64> = (0..MARKS).map(|_| AtomicU64::new(0)).collect();
            let space = Ledger {
                run: cells,
                granted: Mutex::new(Vec::new()),
                room: usize::MAX,
            };
            std::thread::scope(|s| {
                for t in 0..4 {
                    let (marks, space) = (&marks, &space);
                    s.spawn(move || {
                        let p = (t * 1931 + round * 7) % cells.len();
                        touch(marks, cells, p, space).unwrap();
                    });
                }
            });
            let (lo, hi) = range(&marks, cells.len()).unwrap();
            let granted = space.granted.lock().unwrap();
            for p in lo..=hi {
                assert!(
                    granted.iter().any(|(a, b)| (*a..=*b).contains(&p)),
                    "round {round}: position {p} between the marks was never reserved"
                );
            }
            let (rlo, rhi) = reserved(marks[2].load(Relaxed), cells.len()).unwrap();
            assert!(rlo <= lo && hi <= rhi);
        }
    }
}

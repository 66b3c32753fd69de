//! The touched range of a run of sketch cells, kept in two integer cells
//! beside it, as summary sets and native histogram sides use it.
//!
//! The low mark holds `bins - lowest touched position` and the high mark
//! `highest touched position + 1`, so that zeroed memory means "untouched"
//! and both only ever grow (`fetch_max`). A reader reads only the cells in
//! the range: on tmpfs, reading a hole of a file allocates a page.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Widens the range of `[lo, hi]` marks to cover position `p` of `bins`.
/// Call it before counting at `p`, so that a count is never outside the
/// range a reader looks at once it sees the count.
#[inline]
pub(crate) fn touch(marks: &[AtomicU64], p: usize, bins: usize) {
    let lo = (bins - p) as u64;
    if marks[0].load(Relaxed) < lo {
        marks[0].fetch_max(lo, Relaxed);
    }
    let hi = p as u64 + 1;
    if marks[1].load(Relaxed) < hi {
        marks[1].fetch_max(hi, Relaxed);
    }
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

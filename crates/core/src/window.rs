//! Summary quantiles over a sliding window, in shared memory.
//!
//! A summary series with quantiles has, in each writer slot, `age_buckets`
//! *sets*. A set counts the observations of one period of
//! `max_age / age_buckets` in the cells of a [`SketchMapping`]; the set of
//! period `p` is number `p % age_buckets`, so a set is reused every
//! `age_buckets` periods. The quantiles cover the sets of the last
//! `age_buckets` periods: between `max_age - period` and `max_age` of
//! observations, as client_golang's age buckets do.
//!
//! The series' ordinary cells, which every reader reads anyway, hold one
//! cell saying which set is current until when (so that an observation
//! needs no division to find its set), then a header of four integer
//! cells per set:
//! - the period it counts, plus one (0: never used; [`CLEARING`]: being
//!   cleared by its owner);
//! - the lowest and highest sketch cell it touched, so that a reader and a
//!   clear visit only those. This matters for memory, not only for time:
//!   reading a hole of a tmpfs file allocates a page for it, so a reader
//!   must never read a cell that no writer touched;
//! - the cells whose pages the file system granted: a set's pages are
//!   reserved when an observation first lands in them (see `marks.rs`),
//!   not when the series is made, since most of a set is never touched.
//!
//! The counts themselves live in the slot's sketch region.
//!
//! Only the slot's owner writes a set (several threads of it may). The
//! first thread to see a set from an old period clears it: it swaps the
//! period for [`CLEARING`], zeroes the counts in the touched range, and
//! publishes the new period (Release). A reader reads the period before
//! and after the counts and drops a set whose period moved, as with a
//! seqlock. A process killed mid-clear leaves [`CLEARING`], which readers
//! skip and the slot's next owner resets ([`reset_clearing`]).

use std::sync::atomic::{fence, AtomicU64, Ordering::*};

use crate::marks::{self, Space};
use crate::sketch::SketchMapping;

/// Integer cells of a set's header: period, then its marks (low, high,
/// reserved).
pub(crate) const SET_HEADER: usize = 1 + marks::MARKS;

/// The header cells of a series with `sets` sets: the current-set cell,
/// then each set's header.
pub(crate) const fn header_cells(sets: usize) -> usize {
    1 + sets * SET_HEADER
}

/// The current-set cell: the set in the low 8 bits (sets are at most 60),
/// the time its period ends in the rest. Zero (never written, or reset)
/// is never current.
#[inline]
fn current(cell: u64, now_ms: u64) -> Option<usize> {
    (now_ms < cell >> 8).then_some((cell & 0xff) as usize)
}

/// The period word of a set being cleared.
pub(crate) const CLEARING: u64 = u64::MAX;

/// How long a thread waits for another thread of its process to finish
/// clearing a set before it records the observation's count and sum only.
const CLEAR_WAIT_SPINS: u32 = 1 << 14;

/// A family's window: how many sets, and how long each period is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub age_buckets: u32,
    pub period_ms: u32,
}

impl Window {
    /// The period (plus one, so never 0) that `now_ms` falls in.
    #[inline]
    pub fn period(&self, now_ms: u64) -> u64 {
        now_ms / u64::from(self.period_ms.max(1)) + 1
    }

    /// Whether a set stamped `stamp` is inside the window at `period`. A
    /// stamp one period ahead is accepted: a writer's tick may be read a
    /// moment before the reader's.
    #[inline]
    pub fn contains(&self, stamp: u64, period: u64) -> bool {
        stamp != 0
            && stamp != CLEARING
            && stamp <= period + 1
            && stamp + u64::from(self.age_buckets) > period
    }
}

/// Records `v` in this slot's sets of one series: `headers` are the
/// series' [`header_cells`] cells, `counts` its
/// `age_buckets * mapping.cells()` sketch cells. Returns false when the
/// observation could not be placed (another thread of this process kept
/// its set in [`CLEARING`] for too long); the caller still counts it.
///
/// # Errors
/// The file system's error if it has no room for the page of the
/// observation's cell: nothing was recorded.
#[inline]
pub(crate) fn record<S: Space>(
    headers: &[AtomicU64],
    counts: &[AtomicU64],
    mapping: &SketchMapping,
    window: Window,
    now_ms: u64,
    v: f64,
    space: &S,
) -> std::io::Result<bool> {
    let Some((cur, sets)) = headers.split_first() else {
        return Ok(false);
    };
    let bins = mapping.cells();
    // The fast path: the set of the current period, without a division.
    let fast = current(cur.load(Relaxed), now_ms).and_then(|k| {
        let h = sets.get(k * SET_HEADER..(k + 1) * SET_HEADER)?;
        let stamp = h[0].load(Acquire);
        (stamp != 0 && stamp != CLEARING).then_some((k, h))
    });
    let (k, h) = match fast {
        Some(found) => found,
        None => match find_set(cur, sets, counts, bins, window, now_ms) {
            Some(found) => found,
            None => return Ok(false),
        },
    };
    let Some(set) = counts.get(k * bins..(k + 1) * bins) else {
        return Ok(false);
    };
    let i = mapping.cell_of(v);
    marks::touch(&h[1..], set, i, space)?;
    set[i].fetch_add(1, Relaxed);
    Ok(true)
}

/// The set of the period `now_ms` is in, rotated if it held an older
/// period, and remembered as current until the period ends.
#[cold]
#[inline(never)]
fn find_set<'a>(
    cur: &AtomicU64,
    sets: &'a [AtomicU64],
    counts: &[AtomicU64],
    bins: usize,
    window: Window,
    now_ms: u64,
) -> Option<(usize, &'a [AtomicU64])> {
    let period = window.period(now_ms);
    let k = (period % u64::from(window.age_buckets.max(1))) as usize;
    let h = sets.get(k * SET_HEADER..(k + 1) * SET_HEADER)?;
    let set = counts.get(k * bins..(k + 1) * bins)?;
    let stamp = h[0].load(Acquire);
    if stamp != period && !rotate(h, set, stamp, period) {
        return None;
    }
    let ends = period.saturating_mul(u64::from(window.period_ms.max(1)));
    cur.store(ends << 8 | k as u64, Relaxed);
    Some((k, h))
}

/// The touched range of a set from its header, if any.
#[inline]
fn marks(h: &[AtomicU64], bins: usize) -> Option<(usize, usize)> {
    marks::range(&h[1..], bins)
}

/// Clears a set from an old period and stamps it `period`, or waits for
/// the thread of this process that is doing so.
#[cold]
#[inline(never)]
fn rotate(h: &[AtomicU64], set: &[AtomicU64], mut stamp: u64, period: u64) -> bool {
    for spin in 0..CLEAR_WAIT_SPINS {
        if stamp == period {
            return true;
        }
        if stamp == CLEARING {
            if spin % 64 == 63 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            stamp = h[0].load(Acquire);
            continue;
        }
        match h[0].compare_exchange(stamp, CLEARING, Acquire, Acquire) {
            Ok(_) => {
                if let Some((lo, hi)) = marks(h, set.len()) {
                    for c in &set[lo..=hi] {
                        c.store(0, Relaxed);
                    }
                }
                h[1].store(0, Relaxed);
                h[2].store(0, Relaxed);
                h[0].store(period, Release);
                return true;
            }
            Err(seen) => stamp = seen,
        }
    }
    false
}

/// Adds this slot's in-window sets of one series to `acc` (the sketch's
/// cells), reading only touched cells. `tmp` is scratch of the same size.
/// Returns the lowest and highest cell added to, if any.
pub(crate) fn read_slot(
    headers: &[AtomicU64],
    counts: &[AtomicU64],
    bins: usize,
    window: Window,
    period: u64,
    acc: &mut [u64],
    tmp: &mut [u64],
) -> Option<(usize, usize)> {
    let mut touched: Option<(usize, usize)> = None;
    let sets = headers.get(1..).unwrap_or(&[]);
    for (k, h) in sets.chunks_exact(SET_HEADER).enumerate() {
        let Some(set) = counts.get(k * bins..(k + 1) * bins) else {
            break;
        };
        let stamp = h[0].load(Acquire);
        if !window.contains(stamp, period) {
            continue;
        }
        let Some((lo, hi)) = marks(h, bins) else {
            continue;
        };
        for (t, c) in tmp[lo..=hi].iter_mut().zip(&set[lo..=hi]) {
            *t = c.load(Relaxed);
        }
        // The counts' loads must complete before the period is read
        // again: a set cleared meanwhile shows a new period.
        fence(Acquire);
        if h[0].load(Relaxed) != stamp {
            continue;
        }
        for (a, t) in acc[lo..=hi].iter_mut().zip(&tmp[lo..=hi]) {
            *a += *t;
        }
        touched = Some(match touched {
            None => (lo, hi),
            Some((a, b)) => (a.min(lo), b.max(hi)),
        });
    }
    touched
}

/// Zeroes a series' sets in one slot: the touched counts, then the
/// headers. Used by reset and wipe, under the store lock.
pub(crate) fn clear_slot(headers: &[AtomicU64], counts: &[AtomicU64], bins: usize) {
    let Some((cur, sets)) = headers.split_first() else {
        return;
    };
    cur.store(0, Relaxed);
    for (k, h) in sets.chunks_exact(SET_HEADER).enumerate() {
        if let (Some((lo, hi)), Some(set)) = (marks(h, bins), counts.get(k * bins..(k + 1) * bins))
        {
            for c in &set[lo..=hi] {
                c.store(0, Relaxed);
            }
        }
        for c in h {
            c.store(0, Relaxed);
        }
    }
}

/// Resets sets that a dead owner left half-cleared, so that the slot's
/// next owner does not wait for a clear that nobody will finish. Their
/// counts are cleared by the next rotation, which sees an old period.
pub(crate) fn reset_clearing(headers: &[AtomicU64]) {
    for h in headers.get(1..).unwrap_or(&[]).chunks_exact(SET_HEADER) {
        if h[0].load(Relaxed) == CLEARING {
            h[0].store(0, Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::Granted;

    fn cells(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    fn mapping() -> SketchMapping {
        SketchMapping::new(0.01, 1e-3, 1e3).unwrap()
    }

    #[test]
    fn observations_expire_after_the_window() {
        let m = mapping();
        let w = Window {
            age_buckets: 3,
            period_ms: 1000,
        };
        let (h, c) = (cells(header_cells(3)), cells(3 * m.cells()));
        let mut acc = vec![0; m.cells()];
        let mut tmp = vec![0; m.cells()];
        assert!(record(&h, &c, &m, w, 500, 1.0, &Granted).unwrap());
        assert!(record(&h, &c, &m, w, 1500, 2.0, &Granted).unwrap());
        assert!(record(&h, &c, &m, w, 2500, 3.0, &Granted).unwrap());
        let read = |now: u64, acc: &mut Vec<u64>, tmp: &mut Vec<u64>| {
            acc.iter_mut().for_each(|a| *a = 0);
            read_slot(&h, &c, m.cells(), w, w.period(now), acc, tmp);
            acc.iter().sum::<u64>()
        };
        assert_eq!(read(2600, &mut acc, &mut tmp), 3);
        assert_eq!(read(3100, &mut acc, &mut tmp), 2, "the first period left");
        assert_eq!(read(5100, &mut acc, &mut tmp), 0, "all left");
        // Writing in period 4 reuses (and clears) the set of period 1.
        assert!(record(&h, &c, &m, w, 3200, 4.0, &Granted).unwrap());
        assert_eq!(read(3300, &mut acc, &mut tmp), 3);
        assert_eq!(m.quantile(&acc, 1.0).map(|v| v.round()), Some(4.0));
        assert_eq!(m.quantile(&acc, 0.0).map(|v| v.round()), Some(2.0));
    }

    #[test]
    fn a_set_being_cleared_is_skipped_by_readers_and_reset_for_a_new_owner() {
        let m = mapping();
        let w = Window {
            age_buckets: 2,
            period_ms: 1000,
        };
        let (h, c) = (cells(header_cells(2)), cells(2 * m.cells()));
        assert!(record(&h, &c, &m, w, 10, 5.0, &Granted).unwrap());
        let k = (w.period(10) % 2) as usize;
        h[1 + k * SET_HEADER].store(CLEARING, Relaxed);
        let mut acc = vec![0; m.cells()];
        let mut tmp = vec![0; m.cells()];
        assert_eq!(
            read_slot(&h, &c, m.cells(), w, w.period(10), &mut acc, &mut tmp),
            None
        );
        // Another thread would wait; a new owner resets it first.
        reset_clearing(&h);
        assert!(record(&h, &c, &m, w, 20, 6.0, &Granted).unwrap());
        read_slot(&h, &c, m.cells(), w, w.period(20), &mut acc, &mut tmp);
        assert_eq!(
            acc.iter().sum::<u64>(),
            1,
            "the old counts were cleared on reuse"
        );
    }

    #[test]
    fn clear_zeroes_touched_cells_only_and_the_headers() {
        let m = mapping();
        let w = Window {
            age_buckets: 2,
            period_ms: 1000,
        };
        let (h, c) = (cells(header_cells(2)), cells(2 * m.cells()));
        for v in [0.01, 0.5, 20.0] {
            record(&h, &c, &m, w, 1500, v, &Granted).unwrap();
        }
        clear_slot(&h, &c, m.cells());
        assert!(h.iter().chain(&c).all(|x| x.load(Relaxed) == 0));
    }
}

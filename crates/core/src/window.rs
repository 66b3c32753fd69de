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
//! needs no division to find its set), then a header of five integer
//! cells per set:
//! - the period it counts, plus one (0: never used; [`CLEARING`]: being
//!   cleared by its owner);
//! - the lowest and highest sketch cell it touched, so that a reader and a
//!   clear visit only those. This matters for memory, not only for time:
//!   reading a hole of a tmpfs file allocates a page for it, so a reader
//!   must never read a cell that no writer touched;
//! - the cells whose pages the file system granted: a set's pages are
//!   reserved when an observation first lands in them (see `marks.rs`),
//!   not when the series is made, since most of a set is never touched;
//! - the exact word: how many of the set's first [`EXACT`] observations
//!   were claimed and written in its exact buffer, and whether the
//!   buffer's page is reserved.
//!
//! The counts themselves live in the slot's sketch region, after them
//! each set's exact buffer: its first [`EXACT`] observations, as they
//! were. While every in-window set of every slot holds all its
//! observations there, the quantiles are exact (the nearest-rank
//! definition, which the sketch's estimates use too); past that, the
//! sketch's estimates. A small series (a test's, a rare event's) then
//! shows the values it observed, not their cells' values within 1%.
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
use crate::model::Window;
use crate::sketch::SketchMapping;

/// Integer cells of a set's header: period, then its marks (low, high,
/// reserved), then its exact word.
pub(crate) const SET_HEADER: usize = 2 + marks::MARKS;

/// Where the exact word is in a set's header.
const EXACT_WORD: usize = 1 + marks::MARKS;

/// Observations a set keeps exactly, besides counting them in its sketch.
pub(crate) const EXACT: usize = 16;

/// The exact word: observations claimed (low 16 bits), written (the next
/// 16), and whether the buffer's page is reserved (the top bit).
const CLAIMED: u64 = 0xffff;
const WRITTEN_ONE: u64 = 1 << 16;
const BUFFER_RESERVED: u64 = 1 << 63;

/// Sketch cells of a series with `sets` sets of `bins` cells: the sets'
/// counts, then their exact buffers.
pub(crate) const fn sketch_cells(sets: usize, bins: usize) -> usize {
    sets * (bins + EXACT)
}

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
/// series' [`header_cells`] cells, `counts` its [`sketch_cells`] sketch
/// cells. Returns false when the
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
        let h = header(sets, k)?;
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
    marks::touch(&h[1..EXACT_WORD], set, i, space)?;
    let exact = &h[EXACT_WORD];
    let seen = exact.load(Relaxed);
    // Up to one past the buffer: a claim that finds it full tells
    // readers that the set holds more than its buffer.
    if seen & CLAIMED <= EXACT as u64 {
        let sets = sets.len() / SET_HEADER;
        keep_exact(exact, seen, exact_buffer(counts, sets, bins, k), v, space)?;
    }
    set[i].fetch_add(1, Relaxed);
    Ok(true)
}

/// Set `k`'s header among a series' set headers. An array, so that the
/// update path indexes it without bound checks.
#[inline]
fn header(sets: &[AtomicU64], k: usize) -> Option<&[AtomicU64; SET_HEADER]> {
    sets.get(k * SET_HEADER..(k + 1) * SET_HEADER)?
        .try_into()
        .ok()
}

/// Set `k`'s exact buffer among a series' sketch cells.
#[inline]
fn exact_buffer(counts: &[AtomicU64], sets: usize, bins: usize, k: usize) -> Option<&[AtomicU64]> {
    let at = sets * bins + k * EXACT;
    counts.get(at..at + EXACT)
}

/// Keeps `v` in a set's exact buffer if it is among the set's first
/// [`EXACT`] observations, reserving the buffer's page first; the next
/// one only claims (so that claimed exceeds written). Cold: only the
/// first observations of a period come here.
#[cold]
#[inline(never)]
fn keep_exact<S: Space>(
    word: &AtomicU64,
    seen: u64,
    buffer: Option<&[AtomicU64]>,
    v: f64,
    space: &S,
) -> std::io::Result<()> {
    let Some(buffer) = buffer else {
        return Ok(());
    };
    if seen & BUFFER_RESERVED == 0 {
        space.reserve(buffer)?;
        word.fetch_or(BUFFER_RESERVED, Relaxed);
    }
    let at = (word.fetch_add(1, Relaxed) & CLAIMED) as usize;
    if let Some(cell) = buffer.get(at) {
        cell.store(v.to_bits(), Relaxed);
        // Publishes the value: a reader that sees as many written as
        // claimed sees every claimed value.
        word.fetch_add(WRITTEN_ONE, Release);
    }
    Ok(())
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
) -> Option<(usize, &'a [AtomicU64; SET_HEADER])> {
    let period = window.period(now_ms);
    let k = (period % u64::from(window.age_buckets.max(1))) as usize;
    let h = header(sets, k)?;
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
    marks::range(&h[1..EXACT_WORD], bins)
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
                // The reserved range and buffer stay reserved.
                let exact = &h[EXACT_WORD];
                exact.store(exact.load(Relaxed) & BUFFER_RESERVED, Relaxed);
                h[0].store(period, Release);
                return true;
            }
            Err(seen) => stamp = seen,
        }
    }
    false
}

/// The observations of a series' in-window sets, gathered from their
/// exact buffers across slots, and whether that is all of them. Kept
/// with a snapshot and cleared for each series, so that its room is
/// reused.
#[derive(Clone, Debug, Default)]
pub(crate) struct Exact {
    values: Vec<f64>,
    partial: bool,
}

impl Exact {
    /// Forgets the last series' observations.
    pub fn clear(&mut self) {
        self.values.clear();
        self.partial = false;
    }

    /// Pushes the exact quantiles `qs` (nearest rank, as
    /// [`SketchMapping::quantiles_into`] estimates them) to `out` and
    /// returns true if every in-window observation is here, and there is
    /// at least one; else pushes nothing and returns false.
    pub fn quantiles_into(&mut self, qs: &[f64], out: &mut Vec<f64>) -> bool {
        if self.partial || self.values.is_empty() {
            return false;
        }
        self.values.sort_unstable_by(f64::total_cmp);
        let n = self.values.len() as u64;
        out.extend(
            qs.iter()
                .map(|q| self.values[crate::sketch::nearest_rank(*q, n) as usize]),
        );
        true
    }

    /// Adds a set's exact values, given its exact word and buffer and the
    /// observations its counts hold, `n`. Only a set whose every
    /// observation is in its buffer adds: as many written as claimed, as
    /// many as counted, and no claim past the buffer (which says there
    /// were more). A writer between its claim and its count, or killed
    /// there, makes the set partial, and the sketch answers.
    fn add_set(&mut self, word: u64, buffer: Option<&[AtomicU64]>, n: u64) {
        if self.partial {
            return;
        }
        let claimed = word & CLAIMED;
        let written = (word / WRITTEN_ONE) & CLAIMED;
        let whole = claimed == written && claimed == n && claimed <= EXACT as u64;
        match buffer {
            // Claimed values only, whose page is reserved then.
            Some(b) if whole && (claimed == 0 || word & BUFFER_RESERVED != 0) => {
                let b = &b[..claimed as usize];
                self.values
                    .extend(b.iter().map(|c| f64::from_bits(c.load(Relaxed))));
            }
            _ => self.partial = true,
        }
    }
}

/// Adds this slot's in-window sets of one series to `acc` (the sketch's
/// cells), reading only touched cells, and their exact buffers to
/// `exact`. `tmp` is scratch of the same size as `acc`. Returns the
/// lowest and highest cell added to, if any.
pub(crate) fn read_slot(
    headers: &[AtomicU64],
    counts: &[AtomicU64],
    bins: usize,
    window: Window,
    period: u64,
    (acc, tmp): (&mut [u64], &mut [u64]),
    exact: &mut Exact,
) -> Option<(usize, usize)> {
    let mut touched: Option<(usize, usize)> = None;
    let sets = headers.get(1..).unwrap_or(&[]);
    let n_sets = sets.len() / SET_HEADER;
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
        let (kept, was_partial) = (exact.values.len(), exact.partial);
        let n = tmp[lo..=hi].iter().sum();
        let word = h[EXACT_WORD].load(Acquire);
        exact.add_set(word, exact_buffer(counts, n_sets, bins, k), n);
        // The counts' and exact values' loads must complete before the
        // period is read again: a set cleared meanwhile shows a new
        // period.
        fence(Acquire);
        if h[0].load(Relaxed) != stamp {
            exact.values.truncate(kept);
            exact.partial = was_partial;
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

/// Zeroes a series' sets in one slot: the touched counts and exact
/// values, then the headers. Used by reset and wipe, under the store lock.
pub(crate) fn clear_slot(headers: &[AtomicU64], counts: &[AtomicU64], bins: usize) {
    let Some((cur, sets)) = headers.split_first() else {
        return;
    };
    cur.store(0, Relaxed);
    let n_sets = sets.len() / SET_HEADER;
    for (k, h) in sets.chunks_exact(SET_HEADER).enumerate() {
        if let (Some((lo, hi)), Some(set)) = (marks(h, bins), counts.get(k * bins..(k + 1) * bins))
        {
            for c in &set[lo..=hi] {
                c.store(0, Relaxed);
            }
        }
        // The exact values claimed, if their page was reserved.
        let word = h[EXACT_WORD].load(Relaxed);
        let claimed = if word & BUFFER_RESERVED != 0 {
            (word & CLAIMED) as usize
        } else {
            0
        };
        if let Some(buffer) = exact_buffer(counts, n_sets, bins, k) {
            for c in &buffer[..claimed.min(EXACT)] {
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
        let (h, c) = (cells(header_cells(3)), cells(sketch_cells(3, m.cells())));
        let mut acc = vec![0; m.cells()];
        let mut tmp = vec![0; m.cells()];
        assert!(record(&h, &c, &m, w, 500, 1.0, &Granted).unwrap());
        assert!(record(&h, &c, &m, w, 1500, 2.0, &Granted).unwrap());
        assert!(record(&h, &c, &m, w, 2500, 3.0, &Granted).unwrap());
        let read = |now: u64, acc: &mut Vec<u64>, tmp: &mut Vec<u64>| {
            acc.iter_mut().for_each(|a| *a = 0);
            read_slot(
                &h,
                &c,
                m.cells(),
                w,
                w.period(now),
                (acc, tmp),
                &mut Exact::default(),
            );
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
        let (h, c) = (cells(header_cells(2)), cells(sketch_cells(2, m.cells())));
        assert!(record(&h, &c, &m, w, 10, 5.0, &Granted).unwrap());
        let k = (w.period(10) % 2) as usize;
        h[1 + k * SET_HEADER].store(CLEARING, Relaxed);
        let mut acc = vec![0; m.cells()];
        let mut tmp = vec![0; m.cells()];
        assert_eq!(
            read_slot(
                &h,
                &c,
                m.cells(),
                w,
                w.period(10),
                (&mut acc, &mut tmp),
                &mut Exact::default()
            ),
            None
        );
        // Another thread would wait; a new owner resets it first.
        reset_clearing(&h);
        assert!(record(&h, &c, &m, w, 20, 6.0, &Granted).unwrap());
        read_slot(
            &h,
            &c,
            m.cells(),
            w,
            w.period(20),
            (&mut acc, &mut tmp),
            &mut Exact::default(),
        );
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
        let (h, c) = (cells(header_cells(2)), cells(sketch_cells(2, m.cells())));
        for v in [0.01, 0.5, 20.0] {
            record(&h, &c, &m, w, 1500, v, &Granted).unwrap();
        }
        clear_slot(&h, &c, m.cells());
        assert!(h.iter().chain(&c).all(|x| x.load(Relaxed) == 0));
    }

    /// Reads one slot's window at `now` into a fresh accumulator:
    /// `(count in the sketch, exact quantiles if whole)`.
    fn read_at(
        h: &[AtomicU64],
        c: &[AtomicU64],
        m: &SketchMapping,
        w: Window,
        now: u64,
        qs: &[f64],
    ) -> (u64, Option<Vec<f64>>) {
        let mut acc = vec![0; m.cells()];
        let mut tmp = vec![0; m.cells()];
        let mut exact = Exact::default();
        read_slot(
            h,
            c,
            m.cells(),
            w,
            w.period(now),
            (&mut acc, &mut tmp),
            &mut exact,
        );
        let mut out = Vec::new();
        let whole = exact.quantiles_into(qs, &mut out);
        (acc.iter().sum(), whole.then_some(out))
    }

    #[test]
    fn the_first_observations_of_a_set_are_kept_exactly_and_then_the_sketch_takes_over() {
        let m = SketchMapping::summary();
        let w = Window {
            age_buckets: 2,
            period_ms: 1000,
        };
        let (h, c) = (cells(header_cells(2)), cells(sketch_cells(2, m.cells())));
        // PromPHP's tests: 0..=10, quantiles 0.1, 0.5, 0.9 are 1, 5 and 9
        // exactly (nearest rank: ceil(1.1), ceil(5.5), ceil(9.9) of 11).
        for v in 0..=10 {
            assert!(record(&h, &c, &m, w, 100, f64::from(v), &Granted).unwrap());
        }
        let qs = [0.0, 0.1, 0.5, 0.9, 1.0];
        assert_eq!(
            read_at(&h, &c, &m, w, 200, &qs),
            (11, Some(vec![0.0, 1.0, 5.0, 9.0, 10.0]))
        );
        // Up to EXACT observations in all, exact; one more, the sketch.
        for v in 11..EXACT {
            record(&h, &c, &m, w, 100, v as f64, &Granted).unwrap();
        }
        assert!(read_at(&h, &c, &m, w, 200, &qs).1.is_some());
        record(&h, &c, &m, w, 100, 99.0, &Granted).unwrap();
        assert_eq!(read_at(&h, &c, &m, w, 200, &qs), (EXACT as u64 + 1, None));
        // The next set (another period) keeps its own: both sets in the
        // window, one of them past its buffer, so not exact.
        record(&h, &c, &m, w, 1100, 7.0, &Granted).unwrap();
        assert_eq!(read_at(&h, &c, &m, w, 1200, &qs).1, None);
        // Once the full set left the window, the other is exact again;
        // and a set reused for a later period starts its buffer afresh.
        assert_eq!(read_at(&h, &c, &m, w, 2100, &qs), (1, Some(vec![7.0; 5])));
        record(&h, &c, &m, w, 2100, 3.0, &Granted).unwrap();
        record(&h, &c, &m, w, 2100, 4.0, &Granted).unwrap();
        assert_eq!(
            read_at(&h, &c, &m, w, 2200, &[0.5, 1.0]),
            (3, Some(vec![4.0, 7.0]))
        );
    }

    #[test]
    fn a_claimed_but_unwritten_exact_value_makes_the_set_inexact() {
        // A writer killed between claiming a place and writing it.
        let m = SketchMapping::summary();
        let w = Window {
            age_buckets: 1,
            period_ms: 1000,
        };
        let (h, c) = (cells(header_cells(1)), cells(sketch_cells(1, m.cells())));
        record(&h, &c, &m, w, 100, 2.5, &Granted).unwrap();
        let word = &h[1 + EXACT_WORD];
        word.fetch_add(1, Relaxed);
        let (n, exact) = read_at(&h, &c, &m, w, 200, &[0.5]);
        assert_eq!((n, exact), (1, None));
        // And its sketch still answers.
        let mut acc = vec![0; m.cells()];
        let mut tmp = vec![0; m.cells()];
        read_slot(
            &h,
            &c,
            m.cells(),
            w,
            w.period(200),
            (&mut acc, &mut tmp),
            &mut Exact::default(),
        );
        let q = m.quantile(&acc, 0.5).unwrap();
        assert!((q - 2.5).abs() / 2.5 < 0.01, "{q}");
    }
}

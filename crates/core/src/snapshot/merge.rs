//! The merge phase: the value cells of every slot that was ever used,
//! dead ones included (a dead process's counts stay counted), summed into
//! one integer and one float sum per cell by the same generic pass.
//!
//! The merge reads every slot's cells in use, so it is bound by memory
//! bandwidth: it goes through the cells in blocks small enough for the
//! block's sums to stay in the L2 cache while all slots are added to them
//! (each sum is written to memory once), eight slots at a time. Eight
//! streams need the slots' regions staggered (`layout::SLOT_STAGGER`),
//! else they evict each other from the L1 cache.
//!
//! The integer cells (the counts: histogram buckets, summary counts,
//! gauge marks) are merged first, the float cells (the sums, gauge
//! values) after a fence (Acquire): a writer adds an observation to the
//! sum before it counts it, with a Release, so every observation a merge
//! counts is in the sum it merges (`Store::observe`). Blocks only reorder
//! the reads within a pass.

use std::ops::Range;
use std::sync::atomic::{
    fence, AtomicU64,
    Ordering::{Acquire, Relaxed},
};

use super::{slots, SlotLife};
use crate::error::Result;
use crate::store::Store;

/// Cells per block: 64 KiB of sums, which stay in the L2 cache while
/// every slot is added to them; long enough runs of each slot for the
/// hardware prefetchers (8,192 cells: measured 4.0 ms against 4.8 ms for
/// 512 cells four slots at a time, on 100k series x 16 slots).
const BLOCK: usize = 8192;

/// The value cells in use in every slot: integer cells from the start of
/// a slot's region, float cells up to its end.
#[derive(Clone, Debug)]
pub(super) struct CellRanges {
    ints: Range<usize>,
    floats: Range<usize>,
}

/// Every slot's value cells summed: the merge phase's output. Gauge cells
/// are summed too but unused; gauges are combined per slot.
#[derive(Clone, Debug, Default)]
pub(super) struct Sums {
    ints: Vec<u64>,
    floats: Vec<f64>,
    /// The cell of `floats[0]`.
    float_base: usize,
}

impl Sums {
    /// A series' `n` integer sums from cell `io` and its float sum at cell
    /// `fo`; `None` unless all are in the sums. (The offsets were
    /// validated when the record was decoded, but a corrupt store may
    /// since have moved its counters backwards.)
    pub(super) fn series(&self, io: usize, n: usize, fo: usize) -> Option<(&[u64], f64)> {
        let ints = self.ints.get(io..io.saturating_add(n))?;
        let float = fo
            .checked_sub(self.float_base)
            .and_then(|i| self.floats.get(i))?;
        Some((ints, *float))
    }
}

/// A value cell as the merge sums it.
trait Cell: Copy + Default {
    fn load(c: &AtomicU64) -> Self;
    /// Integer cells wrap around; float cells add as `f64`.
    fn add(self, other: Self) -> Self;
}

impl Cell for u64 {
    #[inline(always)]
    fn load(c: &AtomicU64) -> Self {
        c.load(Relaxed)
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

impl Cell for f64 {
    #[inline(always)]
    fn load(c: &AtomicU64) -> Self {
        f64::from_bits(c.load(Relaxed))
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
}

impl Store {
    /// The integer and float cells allocated so far.
    pub(super) fn cell_counts(&self) -> (usize, usize) {
        let a = &self.map.header().alloc;
        let clamp = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        (
            clamp(a.int_cells_used.load(Acquire)),
            clamp(a.float_cells_used.load(Acquire)),
        )
    }

    /// The cells allocated so far, which must fit in a slot's region.
    pub(super) fn cells_in_use(&self) -> Result<CellRanges> {
        let cap = self.map.fixed().cells_per_slot as usize;
        let (ints_used, floats_used) = self.cell_counts();
        if ints_used.saturating_add(floats_used) > cap {
            return Err(self.corrupt_counter());
        }
        Ok(CellRanges {
            ints: 0..ints_used,
            floats: cap - floats_used..cap,
        })
    }

    /// Sums `cells` of every slot that was ever used into `sums`; the
    /// shared slot 0 only once a process took it for its updates (until
    /// then it holds no counts: with 16 writers, reading it would be a
    /// 17th of the merge's reads).
    ///
    /// The integer cells first, then `counted` (which reads the other
    /// cells that count observations: native buckets), then a fence
    /// (Acquire), then the float cells: see the module's comment.
    pub(super) fn merge_slots(
        &self,
        life: &[SlotLife],
        cells: CellRanges,
        sums: &mut Sums,
        counted: impl FnOnce(),
    ) {
        let shared = self.map.header().alloc.shared_slot_writers.load(Acquire) > 0;
        let regions: Vec<&[AtomicU64]> = (slots::used(life))
            .filter(|&s| s != 0 || shared)
            .map(|s| self.map.cells(s))
            .collect();
        sums.float_base = cells.floats.start;
        merge_split(&regions, cells.ints, &mut sums.ints);
        counted();
        fence(Acquire);
        merge_split(&regions, cells.floats, &mut sums.floats);
    }
}

/// Cell reads (cells times regions) from which a merge is split in two,
/// the upper half on a second thread: 16M reads (128 MB: a million
/// counters' integer cells read from 16 slots) take tens of milliseconds,
/// against some 50 microseconds to start a thread.
const SPLIT_READS: usize = 16 << 20;

/// [`merge`], in two halves on two threads when there is that much to
/// read and a second core to read it: one thread does not keep as many
/// reads in flight as the memory can serve.
///
/// The second thread's reads come before the caller's next ones as the
/// caller's own would: it ends with the same Acquire fence that
/// [`Store::merge_slots`] puts between the counts and the sums, and
/// joining it orders everything it did before what the caller does next.
fn merge_split<T: Cell + Send>(regions: &[&[AtomicU64]], cells: Range<usize>, acc: &mut Vec<T>) {
    merge_split_from(SPLIT_READS, regions, cells, acc);
}

/// [`merge_split`], splitting from `split_reads` reads.
fn merge_split_from<T: Cell + Send>(
    split_reads: usize,
    regions: &[&[AtomicU64]],
    cells: Range<usize>,
    acc: &mut Vec<T>,
) {
    let reads = cells.len().saturating_mul(regions.len());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if reads < split_reads || cores < 2 {
        merge(regions, cells, acc);
        return;
    }
    // On a block boundary, so that both halves keep the blocks' order.
    let mid = cells.start + cells.len() / 2 / BLOCK * BLOCK;
    acc.clear();
    if acc.capacity() < cells.len() {
        acc.reserve(cells.len()); // room for both halves
        crate::shm::advise_huge_pages(acc);
    }
    let mut upper = Vec::new();
    let split = std::thread::scope(|s| {
        let other = std::thread::Builder::new().spawn_scoped(s, || {
            merge(regions, mid..cells.end, &mut upper);
            fence(Acquire);
        });
        merge(regions, cells.start..mid, acc);
        match other.map(|t| t.join()) {
            Ok(Ok(())) => true,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            // No thread to be had (a limit on threads, say): this one
            // reads the upper half too.
            Err(_) => false,
        }
    });
    if !split {
        merge(regions, mid..cells.end, &mut upper);
    }
    acc.extend_from_slice(&upper);
}

/// Sets `acc[i]` to the sum of `cells.start + i` over all `regions`.
///
/// Every sum is the same as adding to zero, in region order, the sum of
/// each four regions (`(a + b) + (c + d)`), then each region left over:
/// the blocks, and reading eight regions at once (whose two fours are
/// added in turn), change the order of the memory reads, not of the
/// additions. Eight streams at once keep more reads in flight than four,
/// which is what a merge bound by memory needs.
fn merge<'a, T: Cell>(regions: &[&'a [AtomicU64]], cells: Range<usize>, acc: &mut Vec<T>) {
    acc.clear();
    if acc.capacity() < cells.len() {
        acc.reserve(cells.len());
        crate::shm::advise_huge_pages(acc);
    }
    for lo in cells.clone().step_by(BLOCK) {
        let block = lo..(lo + BLOCK).min(cells.end);
        let at = acc.len();
        let mut rest = regions;
        if let [a, b, c, d, e, f, g, h, ..] = *regions {
            // The first eight regions' sums start the block, without a
            // pass to zero it first.
            let n = block.len();
            let r = |s: &'a [AtomicU64]| &s[block.clone()][..n];
            let (a, b, c, d) = (r(a), r(b), r(c), r(d));
            let (e, f, g, h) = (r(e), r(f), r(g), r(h));
            acc.extend((0..n).map(|i| {
                let lo: T = sum4(&a[i], &b[i], &c[i], &d[i]);
                T::default().add(lo).add(sum4(&e[i], &f[i], &g[i], &h[i]))
            }));
            rest = &regions[8..];
        } else {
            acc.resize(at + block.len(), T::default());
        }
        while !rest.is_empty() {
            let take = match rest.len() {
                8.. => 8,
                4..=7 => 4,
                _ => 1,
            };
            add_group(&mut acc[at..], &rest[..take], block.clone());
            rest = &rest[take..];
        }
    }
}

/// Adds the `cells` of a group of eight, four or one region to `acc` (as
/// long as `cells`).
fn add_group<T: Cell>(acc: &mut [T], group: &[&[AtomicU64]], cells: Range<usize>) {
    let n = acc.len();
    let r = |i: usize| &group[i][cells.clone()][..n];
    match group.len() {
        8 => {
            let (a, b, c, d) = (r(0), r(1), r(2), r(3));
            let (e, f, g, h) = (r(4), r(5), r(6), r(7));
            for (i, x) in acc.iter_mut().enumerate() {
                let lo: T = sum4(&a[i], &b[i], &c[i], &d[i]);
                *x = x.add(lo).add(sum4(&e[i], &f[i], &g[i], &h[i]));
            }
        }
        4 => {
            let (a, b, c, d) = (r(0), r(1), r(2), r(3));
            for (i, x) in acc.iter_mut().enumerate() {
                *x = x.add(sum4(&a[i], &b[i], &c[i], &d[i]));
            }
        }
        _ => {
            for region in group {
                for (x, c) in acc.iter_mut().zip(&region[cells.clone()]) {
                    *x = x.add(T::load(c));
                }
            }
        }
    }
}

#[inline(always)]
fn sum4<T: Cell>(a: &AtomicU64, b: &AtomicU64, c: &AtomicU64, d: &AtomicU64) -> T {
    T::load(a).add(T::load(b)).add(T::load(c).add(T::load(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regions of `cells` cells, cell `i` of region `r` holding
    /// `f(r, i)`.
    fn regions(n: usize, cells: usize, f: impl Fn(usize, usize) -> u64) -> Vec<Vec<AtomicU64>> {
        (0..n)
            .map(|r| (0..cells).map(|i| AtomicU64::new(f(r, i))).collect())
            .collect()
    }

    #[test]
    fn a_split_merge_sums_what_one_thread_sums() {
        // Past two blocks and not a multiple of one, so that the halves
        // meet inside the range and the last block is short; 11 regions:
        // a group of eight, then single ones.
        let cells = 2 * BLOCK + 1234;
        let ints = regions(11, cells, |r, i| (r * 1_000_003 + i) as u64);
        let floats = regions(11, cells, |r, i| (0.25 * (r + i) as f64).to_bits());
        let (ints, floats): (Vec<&[AtomicU64]>, Vec<&[AtomicU64]>) = (
            ints.iter().map(Vec::as_slice).collect(),
            floats.iter().map(Vec::as_slice).collect(),
        );
        for range in [0..cells, 17..cells - 5] {
            let (mut one, mut two) = (Vec::<u64>::new(), Vec::<u64>::new());
            merge(&ints, range.clone(), &mut one);
            merge_split_from(1, &ints, range.clone(), &mut two);
            assert_eq!(one, two, "integer cells {range:?}");
            let (mut one, mut two) = (Vec::<f64>::new(), Vec::<f64>::new());
            merge(&floats, range.clone(), &mut one);
            merge_split_from(1, &floats, range.clone(), &mut two);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&one), bits(&two), "float cells {range:?}");
            assert_eq!(one.len(), range.len());
        }
        let sum: u64 = (0..11).map(|r| (r * 1_000_003 + 5) as u64).sum();
        let mut two = Vec::<u64>::new();
        merge_split_from(1, &ints, 0..cells, &mut two);
        assert_eq!(two[5], sum);
    }
}

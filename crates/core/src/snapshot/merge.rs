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

/// The value cells in use: slot 0's integer cells, from the start of its
/// region, which the merged sums mirror.
#[derive(Clone, Debug)]
pub(super) struct CellRanges {
    ints: Range<usize>,
}

/// Every slot's value cells summed: the merge phase's output. Gauge cells
/// are summed too but unused; gauges are combined per slot.
#[derive(Clone, Debug, Default)]
pub(super) struct Sums {
    ints: Vec<u64>,
    /// Each series' float sum, at its first integer cell: a writer slot's
    /// block names a series by that cell alone (`store/blocks.rs`).
    floats: Vec<f64>,
}

impl Sums {
    /// A series' `n` integer sums from cell `io`, and its float sum;
    /// `None` unless all are in the sums. (The offsets were validated
    /// when the record was decoded, but a corrupt store may since have
    /// moved its counters backwards.)
    pub(super) fn series(&self, io: usize, n: usize) -> Option<(&[u64], f64)> {
        let ints = self.ints.get(io..io.saturating_add(n))?;
        Some((ints, *self.floats.get(io)?))
    }

    /// Adds `v` to the float sum of the series whose first integer cell
    /// is `io`.
    fn add_float(&mut self, io: usize, v: f64) {
        if let Some(sum) = self.floats.get_mut(io) {
            *sum += v;
        }
    }
}

/// Sets `acc` to `n` zeros, written now in pages the kernel backs with
/// huge pages where it can. Not `vec![0; n]`, whose zeroed allocation
/// maps the kernel's zero page: the merge reads a sum before it writes
/// it, so each 4 KiB page of sums then took a copy-on-write fault, and
/// with the merge on two threads each fault flushed the other core's
/// TLB (about a tenth of a scrape's time at 1M series x 64 writers, in
/// `perf`).
fn zero<T: Copy + Default>(acc: &mut Vec<T>, n: usize) {
    empty_with_room(acc, n);
    acc.resize(n, T::default());
}

/// Empties `acc` and gives it room for `n` elements, asking for huge
/// pages when it has to allocate (before anything is written there).
fn empty_with_room<T>(acc: &mut Vec<T>, n: usize) {
    acc.clear();
    if acc.capacity() < n {
        acc.reserve(n);
        crate::shm::advise_huge_pages(acc);
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
        Ok(CellRanges { ints: 0..ints_used })
    }

    /// Sums `cells` of every slot that was ever used into `sums`; the
    /// shared slot 0 only once a process took it for its updates (until
    /// then it holds no counts: with 16 writers, reading it would be a
    /// 17th of the merge's reads). Slot 0's integer cells are merged
    /// densely, its float cells by [`Store::add_shared_floats`]; the
    /// writer slots block by block (`store/blocks.rs`). `placed` gets the
    /// blocks that readers need per slot.
    ///
    /// The integer cells first, then `counted` (which reads the other
    /// cells that count observations: native buckets), then a fence
    /// (Acquire), then the float cells: see the module's comment. A block
    /// that needs no per-slot read has its float cell read right after
    /// its integer cells, behind a fence of its own; the others' are read
    /// after `counted`. Returns whether slot 0 was merged.
    pub(super) fn merge_slots(
        &self,
        life: &[SlotLife],
        cells: CellRanges,
        sums: &mut Sums,
        placed: &mut Placed,
        counted: impl FnOnce(&Placed),
    ) -> bool {
        let shared = self.map.header().alloc.shared_slot_writers.load(Acquire) > 0;
        let dense: Vec<&[AtomicU64]> = if shared {
            vec![self.map.cells(0)]
        } else {
            Vec::new()
        };
        merge_split(&dense, cells.ints.clone(), &mut sums.ints);
        zero(&mut sums.floats, cells.ints.len());
        placed.entries.clear();
        let writers: Vec<u32> = slots::used(life).filter(|s| *s != 0).collect();
        self.merge_writers(&writers, sums, placed);
        placed.entries.sort_unstable();
        counted(placed);
        fence(Acquire);
        for e in &placed.entries {
            let cell = &self.map.cells(e.slot)[e.float_at as usize];
            sums.add_float(e.int_off as usize, f64::from_bits(cell.load(Relaxed)));
        }
        shared
    }

    /// Adds slot 0's float cell of each of `members` to its float sum,
    /// after [`Store::merge_slots`] (and so after its fence).
    pub(super) fn add_shared_floats(
        &self,
        sums: &mut Sums,
        members: impl Iterator<Item = (usize, usize)>,
    ) {
        let cells = self.map.cells(0);
        for (io, fo) in members {
            if let Some(c) = cells.get(fo) {
                sums.add_float(io, f64::from_bits(c.load(Relaxed)));
            }
        }
    }

    /// Adds the blocks of writer slots `writers` to `sums` (and `placed`),
    /// on two threads when there is that much to read and a second core
    /// to read it: the later slots into sums of their own, added to
    /// `sums` after. Joining the second thread orders its reads before
    /// what this one does next, as the fence after the counts does.
    fn merge_writers(&self, writers: &[u32], sums: &mut Sums, placed: &mut Placed) {
        let cells = |slot: &u32| self.blocks(*slot).fill();
        let total: usize = writers.iter().map(cells).sum();
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let enough = SPLIT_BLOCK_CELLS.max(SPLIT_PER_SUM.saturating_mul(sums.ints.len()));
        if total < enough || cores < 2 || writers.len() < 2 {
            for &slot in writers {
                self.merge_blocks(slot, sums, placed);
            }
            return;
        }
        // Where the first half of the cells ends.
        let mut run = 0;
        let mid = writers
            .iter()
            .position(|s| {
                run += cells(s);
                run >= total / 2
            })
            .map_or(writers.len(), |i| i + 1);
        let (first, second) = writers.split_at(mid.min(writers.len() - 1));
        let mut other = (Sums::default(), Placed::default());
        zero(&mut other.0.ints, sums.ints.len());
        zero(&mut other.0.floats, sums.floats.len());
        let split = std::thread::scope(|scope| {
            let t = std::thread::Builder::new().spawn_scoped(scope, || {
                for &slot in second {
                    self.merge_blocks(slot, &mut other.0, &mut other.1);
                }
            });
            for &slot in first {
                self.merge_blocks(slot, sums, placed);
            }
            match t.map(|t| t.join()) {
                Ok(Ok(())) => true,
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                Err(_) => false, // no thread to be had: this one reads them
            }
        });
        if !split {
            for &slot in second {
                self.merge_blocks(slot, sums, placed);
            }
            return;
        }
        for (a, b) in sums.ints.iter_mut().zip(&other.0.ints) {
            *a = a.wrapping_add(*b);
        }
        for (a, b) in sums.floats.iter_mut().zip(&other.0.floats) {
            *a += *b;
        }
        placed.entries.append(&mut other.1.entries);
    }

    /// Adds writer slot `slot`'s blocks to `sums`, but for the float
    /// cells of those readers need per slot, which go to `placed`. A
    /// block of a series past the sums (made after they were sized) is
    /// left out, as its series is.
    fn merge_blocks(&self, slot: u32, sums: &mut Sums, placed: &mut Placed) {
        let cells = self.map.cells(slot);
        for b in self.blocks(slot) {
            let (io, n) = (b.int_off as usize, b.ints as usize);
            let Some(acc) = sums.ints.get_mut(io..io + n) else {
                continue;
            };
            let ints = &cells[b.ints_at()..b.float_at()];
            for (sum, c) in acc.iter_mut().zip(ints) {
                *sum = sum.wrapping_add(c.load(Relaxed));
            }
            if b.per_slot {
                placed.entries.push(PlacedBlock {
                    int_off: b.int_off,
                    slot,
                    ints_at: b.ints_at() as u32,
                    float_at: b.float_at() as u32,
                });
            } else {
                fence(Acquire);
                // Most counters' float cells stay zero (whole increments
                // go to the integer cell): adding nothing would still
                // write the float sums, half of what the merge writes.
                let bits = cells[b.float_at()].load(Relaxed);
                if bits != 0 {
                    sums.add_float(io, f64::from_bits(bits));
                }
            }
        }
    }
}

/// A writer slot's block that readers need per slot (gauges by mode,
/// quantile sets, native buckets, exemplars): ordered by series, then
/// slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct PlacedBlock {
    /// The series' first integer cell in slot 0.
    pub int_off: u32,
    pub slot: u32,
    /// The block's first integer cell and its float cell in the slot.
    pub ints_at: u32,
    pub float_at: u32,
}

/// The slots a reader reads per series (gauges by mode, quantile sets,
/// native buckets, exemplars): those ever used, and where a series'
/// cells are in each.
#[derive(Clone, Copy)]
pub(super) struct PerSlot<'a> {
    pub life: &'a [SlotLife],
    pub placed: &'a Placed,
}

impl<'a> PerSlot<'a> {
    /// `(slot, first integer cell, float cell)` of the series whose cells
    /// in slot 0 are `io` and `fo`, in each slot that was ever used and
    /// holds them, in slot order: slot 0 at those cells, a writer slot at
    /// the series' block.
    pub(super) fn cells(
        self,
        io: usize,
        fo: usize,
    ) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
        let zero =
            (self.life.first().is_some_and(|l| *l != SlotLife::Unused)).then_some((0, io, fo));
        let life = self.life;
        zero.into_iter().chain(
            (self.placed.of(io).iter())
                .filter(move |e| {
                    life.get(e.slot as usize)
                        .is_some_and(|l| *l != SlotLife::Unused)
                })
                .map(|e| (e.slot as usize, e.ints_at as usize, e.float_at as usize)),
        )
    }
}

/// The blocks of the last merge that readers need per slot.
#[derive(Clone, Debug, Default)]
pub(super) struct Placed {
    entries: Vec<PlacedBlock>,
}

impl Placed {
    /// The blocks of the series whose first integer cell is `int_off`, in
    /// slot order.
    pub(super) fn of(&self, int_off: usize) -> &[PlacedBlock] {
        let Ok(io) = u32::try_from(int_off) else {
            return &[];
        };
        let lo = self.entries.partition_point(|e| e.int_off < io);
        let hi = lo + self.entries[lo..].partition_point(|e| e.int_off == io);
        &self.entries[lo..hi]
    }
}

/// Block cells from which [`Store::merge_writers`] splits the writer
/// slots between two threads: 8 MiB of reads take a few milliseconds,
/// against some 50 microseconds to start a thread.
const SPLIT_BLOCK_CELLS: usize = 1 << 20;

/// And block cells per integer sum from which it splits them: the second
/// thread's sums are zeroed, and added to the first's after, a pass of
/// each over every sum whatever the blocks. At 1M series, blocks of 1.1M
/// series (3.3M cells, 3 a sum) merged in 85.6 ms on one thread against
/// 90.5 on two; blocks of 7.4M series (22M cells, 20 a sum) in 121.4
/// against 116.7 (`benches/scale.sh`, one writer and 64 that touch a
/// tenth of the series each, besides the maker's).
const SPLIT_PER_SUM: usize = 8;

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
    empty_with_room(acc, cells.len()); // room for both halves
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
    empty_with_room(acc, cells.len());
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

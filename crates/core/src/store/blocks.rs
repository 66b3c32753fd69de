//! Writer slots' value cells, in the order each writer first touched its
//! series (docs/ARCHITECTURE.md, "Writer cells").
//!
//! Slot 0, which `shared` gauges and processes past the last slot write,
//! keeps every series' cells where its record says: its integer cells
//! from the region's start, its float cell as far from the region's end
//! as its first integer cell is from the start. The merged sums have the
//! same layout.
//!
//! Slots 1 and up hold a heap of blocks instead, one per series the
//! slot's owners touched, in the order they first did: a header cell,
//! the series' integer cells, its float cell. So a writer that touches a
//! tenth of the series takes a tenth of the cells, where one cell per
//! series and slot took a page per 256 series whatever it touched. The
//! header names the series by its first integer cell in slot 0, which is
//! also where the merge adds the block (the float cell's place follows
//! from it), and says whether readers need the block per slot (gauges,
//! quantiles, native buckets, exemplars, expiry), not only summed.
//!
//! A process finds its blocks through a map of its own (`OwnBlocks`, with
//! a lock-free table in front: `own_index.rs`), and
//! each handle it makes carries its block ([`Series::at`]), so that an
//! update costs what it cost with fixed offsets. A block is allocated
//! under the lock, its header written before the slot's fill mark
//! (`SlotRec::blocks_used`) covers it: a reader reads only blocks below
//! the mark, and a writer killed in between leaves a header past it that
//! the next allocation overwrites. A new owner of a dead process's slot
//! walks its blocks and carries on with them, as it carried on with its
//! cells.

use std::sync::atomic::{AtomicU64, Ordering::*};

use rustc_hash::FxHashMap as HashMap;

use super::{FamilyType, Store};
use crate::error::{Error, ErrorKind, Result};
use crate::handle::{Series, UNPLACED};
use crate::model::{GaugeMode, Kind};

/// Cells a block takes besides its series' integer cells: the header and
/// the float cell.
pub(crate) const OVERHEAD: usize = 2;

/// The header bit of a block that readers need per slot.
const PER_SLOT: u64 = 1 << 63;
/// The header's integer cell count, bits 32 to 62.
const INTS_MASK: u64 = (1 << 31) - 1;

/// One series' block in a writer slot's heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// The series' first integer cell in slot 0 (and in the sums).
    pub int_off: u32,
    /// Its integer cells.
    pub ints: u32,
    /// Whether readers need the block per slot, not only summed.
    pub per_slot: bool,
    /// The header's cell in the slot's region.
    pub pos: u32,
}

impl Block {
    /// The block's first integer cell.
    #[inline]
    pub fn ints_at(self) -> usize {
        self.pos as usize + 1
    }

    /// The block's float cell.
    #[inline]
    pub fn float_at(self) -> usize {
        self.ints_at() + self.ints as usize
    }

    /// The cell after the block.
    fn end(self) -> usize {
        self.float_at() + 1
    }

    fn header(self) -> u64 {
        u64::from(self.int_off)
            | (u64::from(self.ints) << 32)
            | if self.per_slot { PER_SLOT } else { 0 }
    }

    /// The block whose header is `word` at `pos`; `None` if it is not a
    /// header (no integer cells: zero is no block).
    fn read(word: u64, pos: usize) -> Option<Block> {
        let ints = (word >> 32) & INTS_MASK;
        Some(Block {
            int_off: word as u32,
            ints: u32::try_from(ints).ok().filter(|n| *n != 0)?,
            per_slot: word & PER_SLOT != 0,
            pos: u32::try_from(pos).ok()?,
        })
    }
}

/// The blocks of a slot's heap below its fill mark, in order. The walk
/// ends at a cell that is no header, or a block that would end past the
/// mark: in a corrupt heap, nothing after that is read.
pub(crate) struct Blocks<'a> {
    cells: &'a [AtomicU64],
    pos: usize,
    fill: usize,
}

impl Blocks<'_> {
    /// The cells below the fill mark.
    pub(crate) fn fill(&self) -> usize {
        self.fill
    }
}

impl Iterator for Blocks<'_> {
    type Item = Block;

    fn next(&mut self) -> Option<Block> {
        let word = self.cells.get(self.pos).filter(|_| self.pos < self.fill)?;
        let b = Block::read(word.load(Relaxed), self.pos).filter(|b| b.end() <= self.fill);
        self.pos = match b {
            // The next block's place by a branch the processor predicts,
            // not from the header just loaded: over blocks of one integer
            // cell (counters, gauges) the walk then runs ahead of its
            // loads instead of waiting for each. (`black_box` keeps the
            // compiler from folding the two arms into the second.)
            Some(b) if b.ints == 1 => self.pos + std::hint::black_box(OVERHEAD + 1),
            Some(b) => b.end(),
            None => self.fill,
        };
        b
    }
}

/// This process's blocks in the slot it writes through, by the series'
/// first integer cell.
#[derive(Debug, Default)]
pub(crate) struct OwnBlocks {
    /// The slot word (`Store::local`) and the epoch the map is for.
    key: Option<(u64, u32)>,
    by_off: HashMap<u32, Block>,
}

/// Whether readers need the cells of a series of type `t` per slot: for
/// a gauge's mode, a summary's quantile sets, a native histogram's
/// buckets, exemplars. (Expiry reads slot 0 only: `ttl.rs`.)
fn per_slot(t: &FamilyType) -> bool {
    t.kind == Kind::Gauge
        || (t.kind == Kind::Summary && t.window.age_buckets != 0)
        || t.native.is_some()
        || t.exemplars > 0
}

/// A series' cells in slot 0, which name its block, from its record
/// (a handle keeps neither once placed).
#[derive(Clone, Copy)]
struct Offsets {
    int_off: u32,
    float_off: u32,
}

/// One slot's value cells, as work over many series finds them (under
/// the lock: reset, wipe, expiry, a reclaimed slot): in slot 0 where the
/// records say, in a writer slot by its blocks.
pub(crate) struct SlotCells<'a> {
    pub slot: u32,
    pub cells: &'a [AtomicU64],
    /// A writer slot's blocks by the series' first integer cell.
    blocks: Option<HashMap<u32, Block>>,
}

impl<'a> SlotCells<'a> {
    /// `n` integer cells of the series whose first is `int_off` in slot
    /// 0, from its `k`th; `None` where it has none in this slot (or a
    /// corrupt record points outside the region).
    pub fn ints(&self, int_off: usize, k: usize, n: usize) -> Option<&'a [AtomicU64]> {
        let first = match &self.blocks {
            None => int_off,
            Some(m) => {
                let b = m.get(&u32::try_from(int_off).ok()?)?;
                if k.checked_add(n)? > b.ints as usize {
                    return None;
                }
                b.ints_at()
            }
        };
        let at = first.checked_add(k)?;
        self.cells.get(at..at.checked_add(n)?)
    }

    /// The float cell of the series whose cells in slot 0 are `int_off`
    /// and `float_off`.
    pub fn float(&self, int_off: usize, float_off: usize) -> Option<&'a AtomicU64> {
        let at = match &self.blocks {
            None => float_off,
            Some(m) => m.get(&u32::try_from(int_off).ok()?)?.float_at(),
        };
        self.cells.get(at)
    }
}

impl Store {
    /// Slot `slot`'s value cells, for work over many of its series.
    pub(crate) fn slot_cells(&self, slot: u32) -> SlotCells<'_> {
        SlotCells {
            slot,
            cells: self.map.cells(slot),
            blocks: (slot != 0).then(|| self.block_map(slot, |_| true)),
        }
    }

    /// The blocks of writer slot `slot` (1 and up) below its fill mark.
    pub(crate) fn blocks(&self, slot: u32) -> Blocks<'_> {
        let cells = self.map.cells(slot);
        let fill = match self.map.slots().get(slot as usize) {
            Some(s) if slot != 0 => s.blocks_used.load(Acquire),
            _ => 0,
        };
        Blocks {
            cells,
            pos: 0,
            fill: usize::try_from(fill).map_or(cells.len(), |f| f.min(cells.len())),
        }
    }

    /// The blocks of writer slot `slot` that pass `keep`, by the series'
    /// first integer cell.
    pub(crate) fn block_map(
        &self,
        slot: u32,
        keep: impl Fn(&Block) -> bool,
    ) -> HashMap<u32, Block> {
        self.blocks(slot)
            .filter(|b| keep(b))
            .map(|b| (b.int_off, b))
            .collect()
    }

    /// `s` with the cells it updates in slot `own` (this process's):
    /// the series' own cells in slot 0 (for a `shared` gauge, or a
    /// process that writes through slot 0), else its block in `own`,
    /// allocated now if this slot has none yet.
    ///
    /// # Errors
    /// [`ErrorKind::StoreFull`] if the slot's region (or the file system)
    /// has no room for the block; the lock's errors.
    pub(crate) fn resolve(&self, s: &Series, own: u32) -> Result<Series> {
        let at = self.local_word();
        let of = self.offsets(s)?;
        if own == 0 || (s.kind == Kind::Gauge && s.mode == GaugeMode::Shared) {
            return Ok(Series {
                at,
                ints_at: of.int_off,
                float_at: of.float_off,
                ..*s
            });
        }
        let b = self.own_block(s, own, at, of)?;
        Ok(Series {
            at,
            ints_at: b.ints_at() as u32,
            float_at: b.float_at() as u32,
            ..*s
        })
    }

    /// `s` resolved for this process's slot, claimed now if need be, when
    /// the store is writable; else (or if the slot has no room for its
    /// block) `s` as it is, whose updates take the cold path, which
    /// reports why. Only for a handle `Store::series` has just made, whose
    /// tag, epoch and state it checked; [`Store::placed`] places any
    /// handle, checking it first.
    pub(crate) fn place(&self, s: Series) -> Series {
        if !self.map.writable() || s.at != UNPLACED {
            return s;
        }
        match self.slot().and_then(|own| self.resolve(&s, own)) {
            Ok(placed) => placed,
            Err(_) => s,
        }
    }

    /// The cells of series `s` in slot 0, from its record.
    fn offsets(&self, s: &Series) -> Result<Offsets> {
        let rec =
            (self.map.series().get(s.id as usize)).ok_or_else(|| self.corrupt_series(s.id))?;
        let (int_off, float_off) = (rec.int_off.load(Relaxed), rec.float_off.load(Relaxed));
        match (u32::try_from(int_off), u32::try_from(float_off)) {
            (Ok(int_off), Ok(float_off)) => Ok(Offsets { int_off, float_off }),
            _ => Err(self.corrupt_series(s.id)),
        }
    }

    /// The integer cells of series `s`'s blocks, and whether readers need
    /// them per slot, from its family's record (not from the handle,
    /// which may be forged).
    fn block_type(&self, s: &Series) -> Result<(u32, bool)> {
        let rec = self.map.series().get(s.id as usize);
        let fam = rec.and_then(|r| self.map.families().get(r.family.load(Relaxed) as usize));
        match fam.and_then(|f| self.family_type(f)) {
            Some(t) => Ok((t.shape.ints, per_slot(&t))),
            None => Err(self.corrupt_series(s.id)),
        }
    }

    #[cold]
    fn corrupt_series(&self, id: u32) -> Error {
        Error::new(
            ErrorKind::Corrupt,
            format!("series {id}'s record names no family or cells in the store"),
        )
        .with_path(self.path())
    }

    /// The block of a series (`of`) in slot `own`, found in this
    /// process's index or map (built again when the slot word `at` or the
    /// epoch changed), else allocated.
    fn own_block(&self, s: &Series, own: u32, at: u64, of: Offsets) -> Result<Block> {
        let epoch = self.epoch();
        if let Some(b) = self.indexed_block(s.id, own, (at, epoch), of) {
            return Ok(b);
        }
        let int_off = of.int_off;
        let mut map = self
            .own_blocks
            .get()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.key != Some((at, epoch)) {
            // Under the lock, with the epoch read there: a wipe bumps
            // the epoch before it empties the heaps, so a map built
            // meanwhile without the lock could hold blocks of the new
            // epoch that the wipe then empties, and hand out their cells
            // again.
            let _guard = self.lock()?;
            let epoch = self.epoch();
            map.by_off = self.block_map(own, |_| true);
            map.key = Some((at, epoch));
            self.own_index.reset(at, epoch);
        }
        if let Some(b) = map.by_off.get(&int_off) {
            let ints = self.family_ints(s.id);
            return if ints == Some(b.ints) {
                self.own_index.put(s.id, b.pos);
                Ok(*b)
            } else {
                Err(Error::new(
                    ErrorKind::Corrupt,
                    format!(
                        "writer slot {own} has a block of {} cells for series {}, whose \
                         family's take {ints:?}",
                        b.ints, s.id
                    ),
                )
                .with_path(self.path()))
            };
        }
        let b = self.alloc_block(s, own, of)?;
        map.by_off.insert(int_off, b);
        self.own_index.put(s.id, b.pos);
        Ok(b)
    }

    /// The block of series `id` (`of`) in slot `own` if this process's
    /// index knows it for `key` (slot word and epoch) and the block's
    /// header, below the slot's fill mark, names the series' cells.
    #[inline]
    fn indexed_block(&self, id: u32, own: u32, key: (u64, u32), of: Offsets) -> Option<Block> {
        let pos = self.own_index.get(key.0, key.1, id)?;
        let heap = self.blocks(own);
        let word = heap.cells.get(pos as usize)?.load(Relaxed);
        let b = Block::read(word, pos as usize)?;
        let fits = b.int_off == of.int_off && b.end() <= heap.fill;
        (fits && self.family_ints(id) == Some(b.ints)).then_some(b)
    }

    /// The integer cells of series `id`'s family, from its family's
    /// record, unchecked (a block is made only for a family whose record
    /// `family_type` accepted).
    fn family_ints(&self, id: u32) -> Option<u32> {
        (self.map.series().get(id as usize))
            .and_then(|r| self.map.families().get(r.family.load(Relaxed) as usize))
            .map(|f| f.int_cells.load(Relaxed))
    }

    /// Appends a block for series `s` (whose cells in slot 0 are `of`) to
    /// slot `own`'s heap, under the lock.
    fn alloc_block(&self, s: &Series, own: u32, of: Offsets) -> Result<Block> {
        let (ints, per_slot) = self.block_type(s)?;
        let _guard = self.lock()?;
        if s.epoch != self.epoch() {
            return Err(crate::error::expired());
        }
        let rec = &self.map.slots()[own as usize];
        let cells = self.map.cells(own);
        let used = rec.blocks_used.load(Relaxed);
        let b = Block {
            int_off: of.int_off,
            ints,
            per_slot,
            pos: u32::try_from(used).map_err(|_| self.corrupt_fill(own))?,
        };
        if b.end() > cells.len() {
            return Err(Error::new(
                ErrorKind::StoreFull,
                format!(
                    "writer slot {own} has no room for another series' cells ({} cells per \
                     writer); open the store with more cells_per_writer",
                    cells.len()
                ),
            )
            .with_path(self.path()));
        }
        self.reserve_blocks(own, b.end())
            .map_err(|e| Error::new(ErrorKind::StoreFull, e.to_string()).with_path(self.path()))?;
        // Past the fill mark nothing is counted, but a writer killed here
        // before may have left a header, and a repaired store anything.
        for c in &cells[b.ints_at()..b.end()] {
            c.store(0, Relaxed);
        }
        cells[b.pos as usize].store(b.header(), Relaxed);
        rec.blocks_used.store(b.end() as u64, Release);
        Ok(b)
    }

    #[cold]
    fn corrupt_fill(&self, slot: u32) -> Error {
        Error::new(
            ErrorKind::Corrupt,
            format!("writer slot {slot}'s fill mark is past its region"),
        )
        .with_path(self.path())
    }

    /// Zeroes every block of the writer slots that pass `which`; with
    /// `empty` (a wipe, after which no handle is valid) empties their
    /// heaps too, else (a reset) keeps each block where handles find it.
    /// Under the lock.
    pub(super) fn clear_blocks(&self, which: impl Fn(u32) -> bool, empty: bool) {
        for slot in (1..=self.slots_in_use()).filter(|s| which(*s)) {
            let cells = self.map.cells(slot);
            for b in self.blocks(slot) {
                let from = if empty { b.pos as usize } else { b.ints_at() };
                for c in &cells[from..b.end()] {
                    c.store(0, Relaxed);
                }
            }
            if empty {
                // (Past a corrupt block, the next allocation zeroes what it takes.)
                self.map.slots()[slot as usize]
                    .blocks_used
                    .store(0, Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_zero_is_no_block() {
        let b = Block {
            int_off: u32::MAX,
            ints: (1 << 31) - 1,
            per_slot: true,
            pos: 7,
        };
        assert_eq!(Block::read(b.header(), 7), Some(b));
        let c = Block {
            int_off: 5,
            ints: 1,
            per_slot: false,
            pos: 0,
        };
        assert_eq!(Block::read(c.header(), 0), Some(c));
        assert_eq!((c.ints_at(), c.float_at(), c.end()), (1, 2, 3));
        assert_eq!(Block::read(0, 0), None);
    }

    #[test]
    fn a_walk_stops_at_what_is_not_a_block() {
        let cells: Vec<AtomicU64> = (0..16).map(|_| AtomicU64::new(0)).collect();
        let b = |int_off, ints, pos| Block {
            int_off,
            ints,
            per_slot: false,
            pos,
        };
        cells[0].store(b(0, 1, 0).header(), Relaxed);
        cells[3].store(b(9, 4, 3).header(), Relaxed);
        // A block that would end past the fill mark.
        cells[9].store(b(1, 5, 9).header(), Relaxed);
        let walk = |fill| {
            Blocks {
                cells: &cells,
                pos: 0,
                fill,
            }
            .collect::<Vec<_>>()
        };
        assert_eq!(walk(9), vec![b(0, 1, 0), b(9, 4, 3)]);
        assert_eq!(walk(12), vec![b(0, 1, 0), b(9, 4, 3)]);
        assert_eq!(walk(16), vec![b(0, 1, 0), b(9, 4, 3), b(1, 5, 9)]);
        // A zero header ends the walk.
        assert_eq!(walk(2), vec![]);
        cells[3].store(0, Relaxed);
        assert_eq!(walk(16), vec![b(0, 1, 0)]);
    }

    #[test]
    fn a_child_forked_while_another_thread_held_the_process_locks_does_not_wait_for_them() {
        use crate::{FamilyDesc, Kind, Options, Store};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let fam = store
            .register(&FamilyDesc::new("forked", Kind::Counter).labels(&["who"]))
            .unwrap();
        store
            .counter_inc(store.series(&fam, &["parent"]).unwrap())
            .unwrap();
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let store = &store;
        let code = std::thread::scope(|scope| {
            scope.spawn(move || {
                let _blocks = store.own_blocks.get().lock().unwrap();
                let _families = store.family_index.get().lock().unwrap();
                held_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            });
            held_rx.recv().unwrap();
            // A series and a family the process never looked up: both
            // need the locks the parent's thread holds.
            let code = crate::shm::in_child(|| {
                store
                    .series(&fam, &["child"])
                    .and_then(|s| store.counter_inc(s))
                    .and_then(|()| store.register(&FamilyDesc::new("later", Kind::Gauge)))
                    .is_ok()
            });
            done_tx.send(()).unwrap();
            code
        });
        assert_eq!(code, Some(0), "None: the child still waited after 20 s");
        let snap = store.snapshot().unwrap();
        // (Their Debug form: this module does not depend on the snapshot's.)
        let values: Vec<_> = (snap.family("forked").unwrap().series())
            .map(|s| format!("{:?}", s.value()))
            .collect();
        assert_eq!(values, ["Counter(1.0)"; 2], "the parent's and the child's");
    }
}

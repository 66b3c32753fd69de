//! The byte layout of a store file. See `docs/ARCHITECTURE.md` for the
//! picture; this file is the source of truth.
//!
//! Every field that more than one process may touch after the file is
//! published is an atomic, so that all cross-process access is well defined.
//! The fixed header is plain data: it is written once, before the file is
//! published under its name, and only ever read (by copy) afterwards.

use std::sync::atomic::{AtomicU32, AtomicU64};

/// The first eight bytes of every store file.
pub(crate) const MAGIC: [u8; 8] = *b"SHMETRIX";
/// Bumped on any incompatible change of this file.
pub(crate) const LAYOUT_VERSION: u32 = 9;
/// Page size used to align regions (and the size of the header).
pub(crate) const PAGE: u64 = 4096;

/// Record states shared by families and series.
///
/// A series record's state word also carries its generation in the high
/// 24 bits: expiry (see `ttl.rs`) bumps it, so a record that is reused
/// for another label set never shows a state word it showed before, and
/// handles (which carry the word they were made with) tell the two
/// apart. Family records keep generation 0.
pub(crate) mod state {
    /// Never used since creation or the last wipe.
    pub const FREE: u32 = 0;
    /// Being written under the lock; invisible to readers.
    pub const INIT: u32 = 1;
    /// Published.
    pub const LIVE: u32 = 2;
    /// Deleted, or abandoned by a writer that died mid-insert.
    pub const DEAD: u32 = 3;
    /// Expired or deleted from a family with a TTL: invisible, out of
    /// the index; its cells may still hold values, and a writer may still
    /// be about to update them. Becomes `REUSABLE` once no writer can.
    pub const RETIRED: u32 = 4;
    /// Cells zeroed, on its family's free list: the next series of the
    /// family may take the record and its cells.
    pub const REUSABLE: u32 = 5;

    /// The state part of a series' state word.
    #[inline]
    pub const fn of(word: u32) -> u32 {
        word & 0xff
    }

    /// The word with state `st` and the generation of `word`.
    #[inline]
    pub const fn with(word: u32, st: u32) -> u32 {
        (word & !0xff) | st
    }

    /// The word with state `st` and the generation after `word`'s
    /// (wrapping within its 24 bits).
    #[inline]
    pub const fn next_gen(word: u32, st: u32) -> u32 {
        (word & !0xff).wrapping_add(0x100) | st
    }
}

/// Writer slot states.
pub(crate) mod slot_state {
    /// Never claimed.
    pub const FREE: u32 = 0;
    /// Being claimed by the pid in the slot; not yet live.
    pub const CLAIMING: u32 = 1;
    /// Owned by the pid and start time in the slot, if that process lives.
    pub const LIVE: u32 = 2;
    /// Released by its owner; free for reuse.
    pub const RELEASED: u32 = 3;
}

/// The checksummed, write-once part of the header.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fixed {
    pub magic: [u8; 8],
    pub layout_version: u32,
    pub header_size: u32,
    pub file_size: u64,
    pub max_families: u32,
    /// Writer slots, not counting the shared slot 0.
    pub max_slots: u32,
    pub max_series: u32,
    /// Entries in the series index, a power of two.
    pub index_size: u32,
    pub arena_bytes: u64,
    /// 8-byte cells in each slot's region.
    pub cells_per_slot: u64,
    pub off_slots: u64,
    pub off_families: u64,
    pub off_series: u64,
    pub off_index: u64,
    pub off_arena: u64,
    pub off_cells: u64,
    /// Bytes between the starts of two slots' cell regions.
    pub slot_stride: u64,
    pub created_unix_ns: u64,
    /// 8-byte sketch cells in each slot's sketch region (summary quantile
    /// sketches). Sparse: a reader touches only the cells a writer did.
    pub sketch_cells_per_slot: u64,
    pub off_sketch: u64,
    /// Bytes between the starts of two slots' sketch regions.
    pub sketch_stride: u64,
    pub reserved: [u64; 5],
    /// xxh3 of all the bytes above.
    pub checksum: u64,
}

/// The robust process-shared mutex, alone on its cache lines.
#[repr(C, align(64))]
pub(crate) struct LockArea {
    pub mutex: libc::pthread_mutex_t,
}

/// Read on every update: kept apart from the counters that change on
/// series creation, so that creating series does not invalidate the line
/// every writer reads.
#[repr(C, align(64))]
pub(crate) struct HotArea {
    /// Bumped by every wipe; handles carry the epoch they were made in.
    pub epoch: AtomicU64,
    /// Non-zero while a wipe is in progress (or was, when its process died).
    pub wipe_pending: AtomicU32,
    pub _pad: AtomicU32,
}

/// Allocation counters and self-telemetry, changed under the lock.
#[repr(C, align(64))]
pub(crate) struct AllocArea {
    pub families_used: AtomicU32,
    pub series_used: AtomicU32,
    pub arena_used: AtomicU64,
    /// Integer cells used, allocated upwards from the start of slot 0's
    /// region (writer slots hold blocks: `store/blocks.rs`).
    pub int_cells_used: AtomicU64,
    /// Float cells used, allocated downwards from the end of slot 0's
    /// region.
    pub float_cells_used: AtomicU64,
    /// Highest slot index ever claimed (slots `1..=slots_hwm` have been used).
    pub slots_hwm: AtomicU32,
    pub _pad: AtomicU32,
    pub overflows_total: AtomicU64,
    pub slot_claims_total: AtomicU64,
    pub slot_reuses_total: AtomicU64,
    /// Processes that found every slot taken and shared slot 0.
    pub slot_exhausted_total: AtomicU64,
    /// Times a lock holder died and the next one repaired the store.
    pub lock_recoveries_total: AtomicU64,
    /// Sketch cells used, allocated upwards in each slot's sketch region.
    pub sketch_cells_used: AtomicU64,
    /// Series that expired (families with a TTL).
    pub series_expired_total: AtomicU64,
    /// How much of each growable region the file system has granted
    /// (`posix_fallocate`), ahead of the fill marks above: nothing at or
    /// past a fill mark is ever touched before its reservation covers it,
    /// so a full file system refuses a registration or a new series
    /// instead of faulting a page (see `store/space.rs`). Family and
    /// series records, arena bytes, and per slot region (in every slot up
    /// to `slots_hwm`, and slot 0): integer cells from the start, float
    /// cells from the end. (Sketch cells are reserved page by page as
    /// updates first write them: `marks.rs`.)
    pub families_reserved: AtomicU64,
    pub series_reserved: AtomicU64,
    pub arena_reserved: AtomicU64,
    pub int_cells_reserved: AtomicU64,
    pub float_cells_reserved: AtomicU64,
    /// Bumped (Release) after a series leaves `LIVE` (deleted, or retired
    /// in a family with a TTL) and after a lock recovery: a reader that
    /// finds it where it was at its last refresh knows that every series
    /// it saw live still is, without reading each state word.
    pub series_removals: AtomicU64,
    /// Processes that took the shared slot 0 for their updates (every
    /// slot taken, or the lock unusable), counted (Release) before their
    /// first write there. While it is 0, slot 0 holds no counts (only
    /// shared-mode gauges and TTL stamps, which readers take per slot),
    /// and the merge skips it.
    pub shared_slot_writers: AtomicU64,
    pub reserved: [AtomicU64; 2],
}

/// The whole header page.
#[repr(C)]
pub(crate) struct Header {
    pub fixed: Fixed,
    pub _pad0: [u8; 512 - std::mem::size_of::<Fixed>()],
    pub lock: LockArea,
    pub hot: HotArea,
    pub alloc: AllocArea,
}

/// A span of bytes in the arena.
#[repr(C)]
pub(crate) struct ArenaRef {
    pub off: AtomicU64,
    pub len: AtomicU64,
}

/// One writer slot: which process owns it.
#[repr(C, align(64))]
pub(crate) struct SlotRec {
    pub state: AtomicU32,
    pub pid: AtomicU32,
    /// The owner's start time in clock ticks since boot, from
    /// `/proc/<pid>/stat`; tells a live owner from a reused pid.
    pub start_time: AtomicU64,
    /// How many times the slot was claimed.
    pub claims: AtomicU64,
    pub claimed_unix_ns: AtomicU64,
    /// Updates of TTL series in progress through this slot (see
    /// `ttl.rs`): expiry reuses a series' cells only once it saw every
    /// live slot at zero after retiring it.
    pub pins: AtomicU64,
    /// Cells of the slot's block heap in use (slots 1 and up: see
    /// `store/blocks.rs`), published (Release) after the block below it
    /// is written. Changed under the lock.
    pub blocks_used: AtomicU64,
    /// Bytes of the block heap the file system granted, from the
    /// region's start (`store/space.rs`).
    pub blocks_reserved: AtomicU64,
    pub reserved: [AtomicU64; 1],
}

/// A family definition.
#[repr(C)]
pub(crate) struct FamilyRec {
    pub state: AtomicU32,
    pub kind: AtomicU32,
    pub gauge_mode: AtomicU32,
    pub n_labels: AtomicU32,
    pub name: ArenaRef,
    pub help: ArenaRef,
    pub unit: ArenaRef,
    /// Label names, each as a u32 length and the bytes.
    pub label_names: ArenaRef,
    /// Bucket bounds as f64, 8-aligned; `len` counts bounds, not bytes.
    pub buckets: ArenaRef,
    /// Summary quantiles as f64, 8-aligned; `len` counts quantiles.
    pub quantiles: ArenaRef,
    /// Integer cells per series.
    pub int_cells: AtomicU32,
    pub max_series: AtomicU32,
    /// Series allocated to the family (live ones; recomputed on recovery).
    pub series_count: AtomicU32,
    /// The overflow series' id plus one.
    pub overflow_series: AtomicU32,
    pub overflows: AtomicU64,
    /// Hash of the canonical definition, to detect conflicts cheaply.
    pub def_hash: AtomicU64,
    pub summary_max_age_ms: AtomicU64,
    pub summary_age_buckets: AtomicU32,
    /// Sketch cells per series: a summary's `age_buckets` sets of the
    /// quantile sketch's cells, a native histogram's two sides of
    /// buckets; 0 otherwise.
    pub sketch_cells: AtomicU32,
    pub created_unix_ns: AtomicU64,
    /// Float cells per series.
    pub float_cells: AtomicU32,
    /// 1 if the family keeps exemplars, else 0 (see `exemplar.rs`): a
    /// timestamp cell per exemplar place after the series' other integer
    /// cells, and a record per place in the sketch region, after any
    /// native buckets.
    pub exemplars: AtomicU32,
    /// A native histogram's schema plus 16; 0 for a family without
    /// native buckets.
    pub native_schema: AtomicU32,
    /// A native histogram's limit on populated buckets (0: none).
    pub native_max_buckets: AtomicU32,
    /// A native histogram's effective zero threshold, as f64 bits.
    pub native_zero_threshold: AtomicU64,
    /// A native histogram's buckets per side (follows from the schema;
    /// stored to check the record).
    pub native_bins: AtomicU64,
    /// Series TTL in milliseconds; 0 for a family whose series never
    /// expire. Such a family's series have one more integer cell, before
    /// any exemplar cells: in slot 0, the time of its last update.
    pub ttl_ms: AtomicU64,
    /// When (coarse monotonic ms) a writer last looked for idle series
    /// of the family.
    pub swept_ms: AtomicU64,
    /// The family's first `REUSABLE` series record, plus one (0: none);
    /// each one's `hash` links to the next the same way.
    pub free_head: AtomicU64,
    /// Exposition hints (`family::hint_bits`). Bit 0: a counter whose
    /// text and protobuf name is its name as given, without `_total` (see
    /// `FamilyDesc::name_as_given`; this word was that flag alone, 1 or
    /// 0, so older stores read the same); the other bits are
    /// `FamilyDesc::hints`, 0 by default.
    pub hints: AtomicU32,
    pub _pad: AtomicU32,
    pub reserved: [AtomicU64; 3],
}

/// A series: a family and one set of label values.
#[repr(C)]
pub(crate) struct SeriesRec {
    pub state: AtomicU32,
    pub family: AtomicU32,
    pub hash: AtomicU64,
    /// Label values, each as a u32 length and the bytes.
    pub labels: ArenaRef,
    /// First integer cell of the series within each slot's region.
    pub int_off: AtomicU64,
    /// First float cell of the series within each slot's region.
    pub float_off: AtomicU64,
    pub created_unix_ns: AtomicU64,
    /// First sketch cell of the series within each slot's sketch region.
    pub sketch_off: AtomicU64,
}

/// Index entries: 0 is empty, [`TOMBSTONE`] a deleted entry, anything else
/// a series id plus one.
pub(crate) const TOMBSTONE: u32 = u32::MAX;

const _: () = {
    assert!(std::mem::size_of::<Fixed>() <= 512);
    assert!(std::mem::size_of::<LockArea>() <= 128);
    assert!(std::mem::size_of::<Header>() <= PAGE as usize);
    assert!(std::mem::size_of::<SlotRec>() == 64);
    assert!(std::mem::size_of::<FamilyRec>() == 256);
    assert!(std::mem::size_of::<SeriesRec>() == 64);
};

/// Capacities chosen by the creator of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Capacities {
    pub max_families: u32,
    pub max_slots: u32,
    pub max_series: u32,
    pub arena_bytes: u64,
    pub cells_per_slot: u64,
    pub sketch_cells_per_slot: u64,
}

/// What each slot's cell region starts after the previous one's page-
/// aligned end: 17 cache lines, so that the same cell of 64 consecutive
/// slots falls in 64 different sets of a 4 KiB-periodic L1 cache. With
/// page-aligned regions, the merge's eight streams (and its sums) all
/// fell in one set of an 8-way L1 and evicted each other.
const SLOT_STAGGER: u64 = 17 * 64;

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

impl Fixed {
    /// Lays out a new file for the given capacities.
    pub fn plan(c: Capacities, created_unix_ns: u64) -> Fixed {
        let index_size = (c.max_series as u64 * 2).next_power_of_two().max(64);
        let off_slots = PAGE;
        let off_families = align_up(off_slots + (c.max_slots as u64 + 1) * 64, PAGE);
        let off_series = align_up(off_families + c.max_families as u64 * 256, PAGE);
        let off_index = align_up(off_series + c.max_series as u64 * 64, PAGE);
        let off_arena = align_up(off_index + index_size * 4, PAGE);
        let off_cells = align_up(off_arena + c.arena_bytes, PAGE);
        let slot_stride = align_up(c.cells_per_slot * 8, PAGE) + SLOT_STAGGER;
        let off_sketch = align_up(off_cells + slot_stride * (c.max_slots as u64 + 1), PAGE);
        let sketch_stride = align_up(c.sketch_cells_per_slot * 8, PAGE);
        let file_size = off_sketch + sketch_stride * (c.max_slots as u64 + 1);
        let mut f = Fixed {
            magic: MAGIC,
            layout_version: LAYOUT_VERSION,
            header_size: PAGE as u32,
            file_size,
            max_families: c.max_families,
            max_slots: c.max_slots,
            max_series: c.max_series,
            index_size: index_size as u32,
            arena_bytes: c.arena_bytes,
            cells_per_slot: c.cells_per_slot,
            off_slots,
            off_families,
            off_series,
            off_index,
            off_arena,
            off_cells,
            slot_stride,
            created_unix_ns,
            sketch_cells_per_slot: c.sketch_cells_per_slot,
            off_sketch,
            sketch_stride,
            reserved: [0; 5],
            checksum: 0,
        };
        f.checksum = f.compute_checksum();
        f
    }

    pub fn to_bytes(self) -> [u8; std::mem::size_of::<Fixed>()] {
        let mut out = [0u8; std::mem::size_of::<Fixed>()];
        let mut w = 0;
        let mut put = |b: &[u8]| {
            out[w..w + b.len()].copy_from_slice(b);
            w += b.len();
        };
        put(&self.magic);
        put(&self.layout_version.to_ne_bytes());
        put(&self.header_size.to_ne_bytes());
        put(&self.file_size.to_ne_bytes());
        put(&self.max_families.to_ne_bytes());
        put(&self.max_slots.to_ne_bytes());
        put(&self.max_series.to_ne_bytes());
        put(&self.index_size.to_ne_bytes());
        for v in [
            self.arena_bytes,
            self.cells_per_slot,
            self.off_slots,
            self.off_families,
            self.off_series,
            self.off_index,
            self.off_arena,
            self.off_cells,
            self.slot_stride,
            self.created_unix_ns,
            self.sketch_cells_per_slot,
            self.off_sketch,
            self.sketch_stride,
        ] {
            put(&v.to_ne_bytes());
        }
        for v in self.reserved {
            put(&v.to_ne_bytes());
        }
        put(&self.checksum.to_ne_bytes());
        out
    }

    /// Parses the fixed header from the start of a file. `None` if too short.
    pub fn from_bytes(b: &[u8]) -> Option<Fixed> {
        if b.len() < std::mem::size_of::<Fixed>() {
            return None;
        }
        let mut r = 0;
        let mut take = |n: usize| {
            let s = &b[r..r + n];
            r += n;
            s
        };
        let u32_ = |s: &[u8]| u32::from_ne_bytes(s.try_into().expect("4 bytes"));
        let u64_ = |s: &[u8]| u64::from_ne_bytes(s.try_into().expect("8 bytes"));
        let magic: [u8; 8] = take(8).try_into().expect("8 bytes");
        let layout_version = u32_(take(4));
        let header_size = u32_(take(4));
        let file_size = u64_(take(8));
        let max_families = u32_(take(4));
        let max_slots = u32_(take(4));
        let max_series = u32_(take(4));
        let index_size = u32_(take(4));
        let mut next = || u64_(take(8));
        let arena_bytes = next();
        let cells_per_slot = next();
        let off_slots = next();
        let off_families = next();
        let off_series = next();
        let off_index = next();
        let off_arena = next();
        let off_cells = next();
        let slot_stride = next();
        let created_unix_ns = next();
        let sketch_cells_per_slot = next();
        let off_sketch = next();
        let sketch_stride = next();
        let mut reserved = [0u64; 5];
        for v in &mut reserved {
            *v = next();
        }
        let checksum = next();
        Some(Fixed {
            magic,
            layout_version,
            header_size,
            file_size,
            max_families,
            max_slots,
            max_series,
            index_size,
            arena_bytes,
            cells_per_slot,
            off_slots,
            off_families,
            off_series,
            off_index,
            off_arena,
            off_cells,
            slot_stride,
            created_unix_ns,
            sketch_cells_per_slot,
            off_sketch,
            sketch_stride,
            reserved,
            checksum,
        })
    }

    pub fn compute_checksum(&self) -> u64 {
        let bytes = self.to_bytes();
        xxhash_rust::xxh3::xxh3_64(&bytes[..bytes.len() - 8])
    }

    /// Whether the header describes the layout this build would make for
    /// its own capacities: every offset where `plan` puts it.
    pub fn is_consistent(&self) -> bool {
        let caps = self.capacities();
        let c = &caps;
        if c.max_slots == 0 || c.max_series == 0 || c.max_families == 0 {
            return false;
        }
        // Guard the arithmetic in `plan` against absurd (corrupt) values.
        if c.max_slots > MAX_SLOTS
            || c.max_series > MAX_SERIES
            || c.max_families > MAX_FAMILIES
            || c.arena_bytes > MAX_ARENA
            || c.cells_per_slot > MAX_CELLS
            || c.sketch_cells_per_slot > MAX_CELLS
        {
            return false;
        }
        let mut planned = Fixed::plan(caps, self.created_unix_ns);
        planned.reserved = self.reserved;
        planned.checksum = self.checksum;
        planned == *self
    }

    pub fn capacities(&self) -> Capacities {
        Capacities {
            max_families: self.max_families,
            max_slots: self.max_slots,
            max_series: self.max_series,
            arena_bytes: self.arena_bytes,
            cells_per_slot: self.cells_per_slot,
            sketch_cells_per_slot: self.sketch_cells_per_slot,
        }
    }
}

/// Upper limits on capacities, so that sizes never overflow.
pub(crate) const MAX_SLOTS: u32 = 65_536;
pub(crate) const MAX_SERIES: u32 = 1 << 28;
pub(crate) const MAX_FAMILIES: u32 = 1 << 20;
pub(crate) const MAX_ARENA: u64 = 1 << 36;
pub(crate) const MAX_CELLS: u64 = 1 << 32;

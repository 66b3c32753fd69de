//! The store: opening a file, registering families, finding series, and
//! the per-process writer slot. Updates live in [`crate::update`], reading
//! in [`crate::snapshot`].
//!
//! One file per concern, each adding its part of `impl Store`:
//!
//! - `options`: how a store is opened ([`Options`]) and the capacities
//!   it is created with;
//! - `open`: opening the file, and recovery after a lock holder died;
//! - `register`: registering families (finding one by name, inserting a
//!   record);
//! - `exposed`: one exposed name, one family (across types);
//! - `shape`: the cells a family's series take, and a family record's
//!   type read back and checked;
//! - `labels`: label values as the store keeps them (encoding, hashing);
//! - `series`: finding and inserting series;
//! - `delete`: deleting series, clearing a family, reset and wipe;
//! - `cells`: zeroing the values, sketches and exemplars of many series;
//! - `slots`: the writer slot each process writes through;
//! - `blocks`: a writer slot's cells, a block per series it touched;
//! - `own_index`: where this process found its blocks, without a lock;
//! - `placed`: handles kept placed for the process using them, across forks;
//! - `arena`: allocating label bytes and value cells;
//! - `ttl`: series expiry and the reuse of expired series' space;
//! - `codec`: handles as plain integers, for the C ABI.

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

use crate::error::{Error, ErrorKind, Result};
use crate::native;
use crate::shm::layout::{self, FamilyRec};
use crate::shm::{LockGuard, Mapping, PerFork};
use crate::sketch::SketchMapping;

mod arena;
mod blocks;
mod cells;
mod codec;
mod delete;
mod exposed;
mod labels;
mod open;
mod options;
mod own_index;
mod placed;
mod register;
mod series;
mod shape;
mod slots;
mod space;
mod ttl;
mod wipe_flag;

pub(crate) use crate::handle::{classic_cells, Shape};
pub use crate::handle::{Family, Series};
pub(crate) use arena::{set_ref, ArenaAlloc};
pub(crate) use blocks::OVERHEAD as BLOCK_OVERHEAD;
pub(crate) use labels::decode_strs;
pub use open::PathNow;
pub use options::{Options, DEFAULT_DIR};
pub use placed::PlacedSeries;
use register::FamilyIndex;
pub(crate) use shape::FamilyType;

/// No slot claimed yet (low half of [`Store::local`]).
const NO_SLOT: u32 = u32::MAX;

/// Hands out a distinct tag to every `Store` value in this process, so a
/// handle cannot be used with a store other than the one that made it.
static NEXT_TAG: AtomicU32 = AtomicU32::new(1);

/// A store of metrics shared by all processes that open the same file.
///
/// `Store` is `Send + Sync`: share one per process (for example in an
/// `Arc` or a `static`). Each `Store` value writes through its own writer
/// slot, claimed when it makes its first series handle (or on its first
/// update) and again after a `fork()`.
#[derive(Debug)]
pub struct Store {
    pub(crate) map: Mapping,
    pub(crate) tag: u32,
    /// The fork generation (high 32 bits) and slot (low 32 bits) this
    /// process writes through.
    local: AtomicU64,
    /// This process's blocks in the slot it writes through.
    own_blocks: PerFork<blocks::OwnBlocks>,
    /// Where it found some of them last, read without the mutex.
    own_index: own_index::OwnIndex,
    /// This process's index of the family records by name, so that
    /// registering (which PHP does for every metric on every request) does
    /// not scan every record: see [`FamilyIndex`].
    family_index: PerFork<FamilyIndex>,
    /// The summary sketch's mapping, the same in every process.
    pub(crate) sketch: SketchMapping,
    /// The native histograms' bucket bounds, computed once per process.
    pub(crate) native_tables: &'static native::Tables,
}

impl Store {
    /// The store file's path.
    pub fn path(&self) -> &Path {
        self.map.path()
    }

    /// Whether the store was opened read-only.
    pub fn is_read_only(&self) -> bool {
        !self.map.writable()
    }

    /// The fork generation and slot this process writes through, as
    /// handles carry it ([`Series::at`]).
    #[inline(always)]
    pub(crate) fn local_word(&self) -> u64 {
        self.local.load(Relaxed)
    }

    pub(crate) fn epoch(&self) -> u32 {
        self.map.header().hot.epoch.load(Acquire) as u32
    }

    fn check_writable(&self) -> Result<()> {
        if self.map.writable() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::ReadOnly,
                "open the store without read_only to write",
            )
            .with_path(self.path()))
        }
    }

    pub(crate) fn lock(&self) -> Result<LockGuard<'_>> {
        let guard = self.map.lock()?;
        if guard.recovered {
            self.map
                .header()
                .alloc
                .lock_recoveries_total
                .fetch_add(1, Relaxed);
            self.recover();
            // The dead holder may have been removing a series.
            self.count_removal();
        } else {
            self.clear_damaged_wipe_flag();
        }
        Ok(guard)
    }

    fn live_range_families(&self) -> &[FamilyRec] {
        let used = self
            .map
            .header()
            .alloc
            .families_used
            .load(Acquire)
            .min(self.map.fixed().max_families);
        &self.map.families()[..used as usize]
    }

    pub(crate) fn arena_str(&self, r: &layout::ArenaRef) -> Option<&[u8]> {
        self.map.arena(r.off.load(Relaxed), r.len.load(Relaxed))
    }
}

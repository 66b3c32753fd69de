//! A lock-free index of this process's blocks by series, in front of the
//! map that `Store::own_blocks` keeps under a mutex (`blocks.rs`).
//!
//! Every handle `Store::series` returns is placed, so every lookup of an
//! existing series finds its block; so does the first update through a
//! handle made before a fork. Through the mutex and a hash lookup that
//! doubled a lookup's cost (`benches/update.rs`, "get_or_create+inc").
//! The index answers most of them with a few loads: a fixed table of
//! recently found blocks, by series, which the mutex's holder fills and
//! empties (when the slot word or the epoch changes). Readers take its
//! answers as hints: the block's header must name the series' cells.
//!
//! Readers check the table's version around their reads, as with a
//! sequence lock: a reader that ran while the table was emptied for
//! another slot word or epoch finds the version changed and asks the
//! mutex's holder instead.

use std::sync::atomic::{fence, AtomicU64, Ordering::*};

/// Entries in the table: 32 KiB a store handle. A process whose working
/// set is larger takes the mutex for those that collide.
const ENTRIES: usize = 4096;

#[derive(Debug)]
pub(crate) struct OwnIndex {
    /// Even while the entries are for `at` and `epoch`; odd while the
    /// mutex's holder changes them.
    version: AtomicU64,
    /// The slot word (`Store::local`) and the epoch the entries are for.
    at: AtomicU64,
    epoch: AtomicU64,
    /// At `id % ENTRIES`: `id << 32 | (pos + 1)` of the block of series
    /// `id` at `pos`; 0 for none.
    entries: Box<[AtomicU64]>,
}

impl Default for OwnIndex {
    fn default() -> OwnIndex {
        OwnIndex {
            version: AtomicU64::new(0),
            at: AtomicU64::new(u64::MAX),
            epoch: AtomicU64::new(u64::MAX),
            entries: (0..ENTRIES).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

fn entry(id: u32, pos: u32) -> Option<u64> {
    let pos = pos.checked_add(1)?;
    Some(u64::from(id) << 32 | u64::from(pos))
}

impl OwnIndex {
    /// Where the block of series `id` was found last, for slot word `at`
    /// and epoch `epoch`, if the table still knows.
    #[inline]
    pub fn get(&self, at: u64, epoch: u32, id: u32) -> Option<u32> {
        let before = self.version.load(Acquire);
        if before & 1 != 0 {
            return None;
        }
        let key = (self.at.load(Relaxed), self.epoch.load(Relaxed));
        let e = self.entries[id as usize % ENTRIES].load(Relaxed);
        fence(Acquire);
        if self.version.load(Relaxed) != before || key != (at, u64::from(epoch)) {
            return None;
        }
        let pos = (e as u32).checked_sub(1)?;
        ((e >> 32) as u32 == id).then_some(pos)
    }

    /// Records the block of series `id` at `pos`. By the mutex's holder,
    /// for the slot word and epoch of the last [`OwnIndex::reset`].
    pub fn put(&self, id: u32, pos: u32) {
        if let Some(e) = entry(id, pos) {
            self.entries[id as usize % ENTRIES].store(e, Relaxed);
        }
    }

    /// Empties the table for slot word `at` and epoch `epoch`. By the
    /// mutex's holder.
    pub fn reset(&self, at: u64, epoch: u32) {
        let v = self.version.load(Relaxed);
        self.version.store(v | 1, Relaxed);
        fence(Release);
        for e in &*self.entries {
            e.store(0, Relaxed);
        }
        self.at.store(at, Relaxed);
        self.epoch.store(u64::from(epoch), Relaxed);
        self.version.store((v | 1) + 1, Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_only_for_its_key_and_series() {
        let ix = OwnIndex::default();
        assert_eq!(ix.get(u64::MAX, u32::MAX, 0), None);
        ix.reset(7, 1);
        ix.put(0, 0);
        ix.put(5, 30);
        assert_eq!(ix.get(7, 1, 0), Some(0));
        assert_eq!(ix.get(7, 1, 5), Some(30));
        assert_eq!(ix.get(7, 2, 5), None, "another epoch");
        assert_eq!(ix.get(8, 1, 5), None, "another slot word");
        // A series in the same entry replaces the one before.
        ix.put(5 + ENTRIES as u32, 60);
        assert_eq!(ix.get(7, 1, 5), None);
        assert_eq!(ix.get(7, 1, 5 + ENTRIES as u32), Some(60));
        // A position that does not fit is not recorded.
        ix.put(9, u32::MAX);
        assert_eq!(ix.get(7, 1, 9), None);
        ix.reset(8, 1);
        assert_eq!(ix.get(8, 1, 0), None, "emptied");
        assert_eq!(ix.version.load(Relaxed) % 2, 0);
    }
}

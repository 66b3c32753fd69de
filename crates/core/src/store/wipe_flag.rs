//! The wipe flag (`wipe_pending` in the header's hot line): what readers
//! make of it, and its repair when it is damaged.
//!
//! A wipe sets the flag to [`WIPING`] and clears it again while it holds
//! the store lock, so a flag that is set while the lock is free was not
//! set by a wipe: it is damaged (a flipped bit, a stray write). Readers
//! then read on, and the next writer that takes the lock, or opens the
//! store, clears it. Nothing is erased. Only a flag of [`WIPING`] left by
//! a lock holder that died redoes the wipe, as before: that wipe may have
//! been half done.

use std::sync::atomic::Ordering::*;

use super::Store;
use crate::shm::LockState;

/// The only value a wipe writes to the flag.
pub(super) const WIPING: u32 = 1;

impl Store {
    /// Whether a wipe may be in progress, so that a reader must not trust
    /// what it reads now: the flag is set and the lock is not free (held
    /// by a live wiper, or left by a dead one that the next writer's
    /// repair finishes). A flag set with the lock free is damaged.
    pub(crate) fn wipe_in_progress(&self) -> bool {
        self.wipe_flag() != 0 && self.map.lock_state() != LockState::Free
    }

    /// Whether the flag is set while the lock is free: damaged.
    pub(super) fn wipe_flag_damaged(&self) -> bool {
        self.wipe_flag() != 0 && self.map.lock_state() == LockState::Free
    }

    fn wipe_flag(&self) -> u32 {
        self.map.header().hot.wipe_pending.load(Acquire)
    }

    /// Under the lock, taken from a holder that released it normally: a
    /// wipe clears the flag before it releases the lock, so a flag still
    /// set is damaged. Clears it and counts the repair.
    pub(super) fn clear_damaged_wipe_flag(&self) {
        let h = self.map.header();
        if h.hot.wipe_pending.load(Acquire) != 0 {
            h.hot.wipe_pending.store(0, Release);
            h.alloc.lock_recoveries_total.fetch_add(1, Relaxed);
        }
    }

    /// Under the lock, after a holder that died: whether it was wiping
    /// (the flag is [`WIPING`]), so the wipe must be redone. Any other
    /// set value is damaged, and cleared.
    pub(super) fn dead_holder_was_wiping(&self) -> bool {
        let flag = &self.map.header().hot.wipe_pending;
        match flag.load(Acquire) {
            0 => false,
            WIPING => true,
            _ => {
                flag.store(0, Release);
                false
            }
        }
    }

    /// A writer that opens the store repairs a damaged flag at once, so
    /// that readers need not judge it on every snapshot.
    pub(super) fn repair_wipe_flag_on_open(&self) {
        if self.map.writable() && self.wipe_flag_damaged() {
            // A failure (a busy lock) leaves the repair to the next locker;
            // readers already read past a damaged flag.
            let _ = self.lock();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::shm::layout::{Header, HotArea};

    /// `tests/suite/wipe_flag.rs` flips bits at this offset of the file.
    #[test]
    fn the_flag_is_at_byte_584() {
        let at = std::mem::offset_of!(Header, hot) + std::mem::offset_of!(HotArea, wipe_pending);
        assert_eq!(at, 584);
    }
}

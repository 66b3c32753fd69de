//! Checks of a store's file and lock that do not belong on any hot path:
//! for readers before they read, and for `shmetrics inspect`.

use crate::error::Result;
use crate::shm::LockState;
use crate::Store;

impl Store {
    /// Checks that the store file is still whole: another process may
    /// have truncated it, and reading past its end would kill this
    /// process with SIGBUS. Snapshots and the store's growth check it
    /// themselves.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Truncated`] if the file is now shorter than its
    /// header says.
    pub fn check_file(&self) -> Result<()> {
        self.map.check_size()
    }

    /// Who holds the store lock: nobody, a live process of the store, or
    /// a stale word (corrupt, planted, or left by a thread that is gone),
    /// which the next writer repairs.
    pub fn lock_state(&self) -> LockState {
        self.map.lock_state()
    }
}

/// Faults (SIGBUS) inside store mappings that this process survived since
/// it started: accesses to pages of a store file that another process
/// truncated, or that a full file system could not grant. What such an
/// access wrote is lost; the store's next size check reports the file.
pub fn faults_absorbed() -> usize {
    crate::shm::sigbus::absorbed()
}

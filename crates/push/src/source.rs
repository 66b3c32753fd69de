//! Where every pusher takes its snapshots from.

use shmetrics_core::{Snapshot, Store};

/// Where snapshots come from.
pub trait Source: Send + Sync + 'static {
    /// Refreshes `snap` to the store's current contents. `Ok(false)` if
    /// there is no store to read yet (nothing is pushed then). Called from
    /// a blocking thread.
    fn refresh(&self, snap: &mut Snapshot) -> Result<bool, shmetrics_core::Error>;
}

impl Source for Store {
    fn refresh(&self, snap: &mut Snapshot) -> Result<bool, shmetrics_core::Error> {
        self.snapshot_into(snap).map(|()| true)
    }
}

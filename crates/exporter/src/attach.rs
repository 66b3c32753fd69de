//! The store the exporter serves, followed by its path: when the path
//! names another file than the one mapped (the store was removed and
//! created again, or another file was renamed over it), the new file is
//! opened and served from the next request on. A removed store whose path
//! is not re-created goes on being served, marked stale.

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use shmetrics_core::{ErrorKind, Options, Store};

/// A store file the exporter has opened, and which file it is.
#[derive(Debug)]
pub struct Attached {
    /// The store, mapped read-only. A render in progress keeps it mapped
    /// after another file replaces it.
    pub store: Arc<Store>,
    /// The file's device and inode.
    pub id: (u64, u64),
    /// The device and the inode, as label values.
    pub device: String,
    /// See `device`.
    pub inode: String,
    /// When it was opened, in Unix seconds.
    pub since: f64,
}

impl Attached {
    /// Opens the store at `path` read-only, expecting its owner and group
    /// as `options` says.
    pub(crate) fn open(path: &Path, options: &Options) -> Result<Attached, String> {
        let store = Store::open(path, options).map_err(|e| {
            if e.kind() == ErrorKind::Io && !path.exists() {
                format!(
                    "the store {} does not exist yet; waiting for the application to create it",
                    path.display()
                )
            } else {
                format!("cannot open the store: {e}")
            }
        })?;
        let id = store
            .file_id()
            .map_err(|e| format!("cannot open the store: {e}"))?;
        Ok(Attached::new(store, id))
    }

    /// An opened store, its file's identity `id`, attached now.
    pub(crate) fn new(store: Store, id: (u64, u64)) -> Attached {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Attached {
            store: Arc::new(store),
            id,
            device: id.0.to_string(),
            inode: id.1.to_string(),
            since,
        }
    }

    /// One line on which file is served and since when.
    pub fn describe(&self) -> String {
        format!(
            "file device {}, inode {}, attached at {:.3} (Unix time)",
            self.device, self.inode, self.since
        )
    }
}

/// The renderer's hold on the store: what it serves, and why it could not
/// open the store or follow its path.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// The file served, once one was opened.
    pub current: Option<Arc<Attached>>,
    /// Why the last attempt to open the store failed, while none is served.
    pub error: Option<String>,
    /// Why the served file is no longer the one at the path (it was
    /// removed, or the file now there cannot be opened).
    pub stale: Option<String>,
}

impl Slot {
    /// Records that the path no longer names the served file, logging the
    /// reason when it changes.
    pub fn mark_stale(&mut self, why: String) {
        if self.stale.as_deref() != Some(why.as_str()) {
            tracing::warn!("{why}");
        }
        self.stale = Some(why);
    }

    /// Records a failed open while nothing is served, logging the reason
    /// when it changes (so that a waiting exporter does not
    /// flood its log).
    pub fn mark_error(&mut self, why: String) {
        if self.error.as_deref() != Some(why.as_str()) {
            tracing::warn!("{why}");
        }
        self.error = Some(why);
    }

    /// Serves `new` from now on.
    pub fn replace(&mut self, new: Arc<Attached>, path: &Path) {
        if self.current.is_some() {
            tracing::info!(
                "the store {} names another file now; serving it ({})",
                path.display(),
                new.describe()
            );
        } else if self.error.is_some() {
            tracing::info!("attached to the store {}", path.display());
        }
        self.current = Some(new);
        self.error = None;
        self.stale = None;
    }
}

//! Opening a store file, and repairing what a lock holder that died was
//! doing.

use std::io::ErrorKind as IoKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::*};

use super::options::DEFAULT_DIR;
use super::{Options, Store, NEXT_TAG};
use crate::error::{ErrorKind, Result};
use crate::native;
use crate::proc;
use crate::shm::layout::{state, Fixed};
use crate::shm::trust::Trust;
use crate::shm::{self, Mapping};
use crate::sketch::SketchMapping;

/// What a store's path names now, compared with the file mapped
/// ([`Store::path_now`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathNow {
    /// The same file.
    Same,
    /// Nothing: the file was removed (and not created again yet).
    Gone,
    /// Another file, or the path cannot be examined: open it again.
    Other,
}

impl Store {
    /// Opens the store at `path`, creating it if `options.create` is set
    /// and it does not exist.
    ///
    /// A file that is not a store, was cut short, is corrupt or comes from
    /// another layout version gives an error naming the file and the
    /// problem; it is never reinitialised.
    pub fn open(path: impl AsRef<Path>, options: &Options) -> Result<Store> {
        let path = path.as_ref();
        shm::install_fork_hook();
        let caps = options.capacities()?;
        let trust = Trust {
            owner: options.owner,
            group: options.group,
            own_group_writes: options.mode == 0o660,
        };
        let map = match Mapping::open(path, !options.read_only, &trust) {
            Ok(m) => m,
            Err(e) if options.create && !options.read_only && e.kind() == ErrorKind::Io => {
                if path.exists() {
                    // Another process created it since this one looked
                    // (or it exists and could not be opened: the same
                    // error again).
                    Mapping::open(path, true, &trust)?
                } else {
                    Mapping::create_or_open(
                        path,
                        Fixed::plan(caps, proc::unix_nanos()),
                        options.mode,
                        &trust,
                    )?
                }
            }
            Err(e) => return Err(e),
        };
        let store = Store {
            map,
            tag: NEXT_TAG.fetch_add(1, Relaxed),
            local: AtomicU64::new(u64::MAX),
            own_blocks: Default::default(),
            own_index: Default::default(),
            family_index: Default::default(),
            sketch: SketchMapping::summary(),
            native_tables: native::Tables::get(),
        };
        store.repair_wipe_flag_on_open();
        Ok(store)
    }

    /// The mapped file's identity, its device and inode. A reader that
    /// stays open compares it with what the path names now (a `stat`) to
    /// notice that the store was removed, or replaced by another file.
    pub fn file_id(&self) -> Result<(u64, u64)> {
        self.map.file_id()
    }

    /// What the store's path names now, compared with the file this
    /// handle mapped: an `fstat` of the mapped file and an `lstat` of the
    /// path, so a symbolic link put there counts as
    /// another file (which opening then refuses). Long-lived handles call
    /// it between requests, never on the update path, and open the path
    /// again on [`PathNow::Other`].
    pub fn path_now(&self) -> PathNow {
        let Ok(mapped) = self.file_id() else {
            return PathNow::Other;
        };
        match std::fs::symlink_metadata(self.map.path()) {
            Ok(m) if (m.dev(), m.ino()) == mapped => PathNow::Same,
            Ok(_) => PathNow::Other,
            Err(e) if e.kind() == IoKind::NotFound => PathNow::Gone,
            Err(_) => PathNow::Other,
        }
    }

    /// The default store path: `$SHMETRICS_STORE` if set, else
    /// `/dev/shm/shmetrics`.
    pub fn default_path() -> PathBuf {
        std::env::var_os("SHMETRICS_STORE")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(DEFAULT_DIR).join("shmetrics"))
    }

    /// Repairs what a lock holder that died was doing. Every step is
    /// idempotent, so a repair that is itself interrupted is simply redone
    /// by the next lock holder.
    pub(super) fn recover(&self) {
        let h = self.map.header();
        if self.dead_holder_was_wiping() {
            self.wipe_locked();
            return;
        }
        for f in self.live_range_families() {
            if f.state.load(Acquire) == state::INIT {
                f.state.store(state::DEAD, Release);
            }
        }
        let series_used = (h.alloc.series_used.load(Acquire)).min(self.map.fixed().max_series);
        let recs = &self.map.series()[..series_used as usize];
        let fams = self.live_range_families();
        let has_ttl = |fam: u32| {
            fams.get(fam as usize)
                .is_some_and(|f| f.ttl_ms.load(Relaxed) > 0)
        };
        for (id, rec) in recs.iter().enumerate() {
            let word = rec.state.load(Acquire);
            if state::of(word) != state::INIT {
                continue;
            }
            // Publish it if the dead writer got as far as the index, else
            // abandon it: its bytes and cells leak until the next wipe,
            // unless its family has a TTL, whose records are reused (its
            // cells are zero: a new record's are fresh, a reused one's were
            // zeroed before it went on the free list, and no handle to it
            // was ever made).
            let indexed = self
                .index_position(id as u32, rec.hash.load(Relaxed))
                .is_some();
            let to = if indexed {
                state::LIVE
            } else if has_ttl(rec.family.load(Relaxed)) {
                state::REUSABLE
            } else {
                state::DEAD
            };
            rec.state.store(state::with(word, to), Release);
        }
        // The free lists, from the records: the dead lock holder may have
        // been taking a record off one, or putting one on.
        self.rebuild_free_lists();
        // Recount each family's series from the records.
        let mut counts = vec![0u32; fams.len()];
        for rec in recs {
            let fam = rec.family.load(Relaxed) as usize;
            if state::of(rec.state.load(Acquire)) == state::LIVE && fam < counts.len() {
                counts[fam] += 1;
            }
        }
        for (f, n) in fams.iter().zip(counts) {
            let overflow_alloc = u32::from(f.overflow_series.load(Relaxed) != 0);
            f.series_count
                .store(n.saturating_sub(overflow_alloc), Relaxed);
        }
    }
}

//! A series handle that keeps itself placed for the process using it, for
//! bindings whose metric objects outlive a `fork()`.
//!
//! A handle carries the slot word of the process it was placed for
//! ([`Series::at`]). In a child of that process, the handle's updates take
//! the cold path, which finds the series' block again on every update: a
//! prefork server whose master made the metrics (gunicorn's `--preload`,
//! uWSGI without `lazy-apps`, Puma's `preload_app!`) pays that in every
//! worker. [`Store::placed`] gives a handle placed for the calling
//! process; a binding that can keep it calls that. One that shares a
//! handle between threads keeps it in a [`PlacedSeries`], which re-places
//! its handle after a fork and hands it to any thread without a lock.

use std::sync::atomic::{fence, AtomicU64, Ordering::*};

use super::{Series, Store};
use crate::shm::FORK_GENERATION;

/// A [`Series`] shared between threads, kept placed for the process that
/// updates through it (see the module's comment). Reading it costs a few
/// loads; the first read in a child after a fork places it for the
/// child.
#[derive(Debug)]
pub struct PlacedSeries {
    made: Series,
    /// A sequence lock over `at` and `cells`: the fork generation of its
    /// writer in the high half, a count in the low half, odd while
    /// written. A count left odd by a fork (a thread of the parent was
    /// writing) is taken over by the child's first writer.
    version: AtomicU64,
    /// The placed handle's slot word ([`Series::at`]).
    at: AtomicU64,
    /// Its integer and float cells: `ints_at | float_at << 32`.
    cells: AtomicU64,
}

impl PlacedSeries {
    /// Keeps `s`, placed for the process where it is read next.
    pub fn new(s: Series) -> PlacedSeries {
        PlacedSeries {
            made: s,
            version: AtomicU64::new(0),
            at: AtomicU64::new(s.at),
            cells: AtomicU64::new(u64::from(s.ints_at) | u64::from(s.float_at) << 32),
        }
    }

    /// The handle as it was made.
    pub fn made(&self) -> Series {
        self.made
    }

    /// The handle to update `store` through from this process: placed for
    /// it, unless the store cannot place it ([`Store::placed`]).
    #[inline(always)]
    pub fn get(&self, store: &Store) -> Series {
        if store.is_placed(&self.made) {
            return self.made;
        }
        self.kept(store)
    }

    /// The handle placed for this process, as kept (see `version`), else
    /// placed now. Out of line: only a handle made before a fork comes
    /// here, and an update through it is still far cheaper than the cold
    /// path.
    #[inline(never)]
    fn kept(&self, store: &Store) -> Series {
        let before = self.version.load(Acquire);
        let at = self.at.load(Relaxed);
        let cells = self.cells.load(Relaxed);
        fence(Acquire);
        let s = Series {
            at,
            ints_at: cells as u32,
            float_at: (cells >> 32) as u32,
            ..self.made
        };
        if before & 1 == 0 && self.version.load(Relaxed) == before && store.is_placed(&s) {
            return s;
        }
        self.place(store)
    }

    /// Places the handle for this process and keeps it, unless another
    /// thread is keeping one now.
    #[cold]
    #[inline(never)]
    fn place(&self, store: &Store) -> Series {
        let s = store.placed(self.made);
        if !store.is_placed(&s) {
            return s;
        }
        let gen = FORK_GENERATION.load(Relaxed) as u32;
        let v = self.version.load(Relaxed);
        let (v_gen, count) = ((v >> 32) as u32, v as u32);
        if count & 1 == 1 && v_gen == gen {
            return s; // another thread of this process is writing
        }
        let writing = u64::from(gen) << 32 | u64::from(count.wrapping_add(1) | 1);
        if self
            .version
            .compare_exchange(v, writing, Acquire, Relaxed)
            .is_ok()
        {
            fence(Release);
            self.at.store(s.at, Relaxed);
            self.cells
                .store(u64::from(s.ints_at) | u64::from(s.float_at) << 32, Relaxed);
            self.version.store(writing.wrapping_add(1), Release);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FamilyDesc, Kind, Options};

    fn counter_store() -> (tempfile::TempDir, Store, Series) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let fam = store
            .register(&FamilyDesc::new("placed", Kind::Counter))
            .unwrap();
        let s = store.series(&fam, &[]).unwrap();
        (dir, store, s)
    }

    /// The counter's value, in its Debug form (this module does not
    /// depend on the snapshot's).
    fn total(store: &Store) -> String {
        let snap = store.snapshot().unwrap();
        let family = snap.family("placed").unwrap();
        let value = format!("{:?}", family.series().next().unwrap().value());
        value
    }

    #[test]
    fn a_handle_made_before_a_fork_is_placed_for_the_child_by_its_first_read() {
        let (_dir, store, s) = counter_store();
        let cell = PlacedSeries::new(s);
        assert!(store.is_placed(&s));
        assert_eq!(cell.get(&store), s, "placed for this process already");
        store.counter_inc(cell.get(&store)).unwrap();
        let code = crate::shm::in_child(|| {
            let got = cell.get(&store);
            !store.is_placed(&s)
                && store.is_placed(&got)
                && got.at != s.at
                && store.placed(s) == got
                && store.counter_add(got, 2.0).is_ok()
                && cell.get(&store) == got
        });
        assert_eq!(code, Some(0));
        assert_eq!(cell.get(&store), s, "the parent's cell is its own");
        assert_eq!(total(&store), "Counter(3.0)");
    }

    #[test]
    fn threads_of_a_child_place_a_shared_handle_at_once_and_lose_no_update() {
        let (_dir, store, s) = counter_store();
        let cell = PlacedSeries::new(s);
        let code = crate::shm::in_child(|| {
            std::thread::scope(|scope| {
                let threads: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            (0..10_000).all(|_| store.counter_inc(cell.get(&store)).is_ok())
                        })
                    })
                    .collect();
                threads.into_iter().all(|t| t.join().unwrap_or(false))
            }) && store.is_placed(&cell.get(&store))
        });
        assert_eq!(code, Some(0));
        assert_eq!(total(&store), "Counter(40000.0)");
    }

    #[test]
    fn a_write_that_a_fork_interrupted_is_taken_over() {
        let (_dir, store, s) = counter_store();
        let cell = PlacedSeries::new(s);
        // (`kept`: `get` would take `s` itself, placed for this process.)
        // What a child sees when a thread of its parent was placing the
        // handle at the fork: an odd count of an earlier generation, and
        // a placement that is not this process's.
        let earlier = u64::from((FORK_GENERATION.load(Relaxed) as u32).wrapping_sub(1));
        cell.version.store(earlier << 32 | 7, Relaxed);
        cell.at.store(s.at ^ 1, Relaxed);
        let got = cell.kept(&store);
        assert_eq!(got, s);
        assert_eq!(cell.version.load(Relaxed) & 1, 0, "written");
        assert_eq!(cell.at.load(Relaxed), s.at);
        // One of this generation, still odd: another thread is writing,
        // so the read places the handle without keeping it.
        let now = u64::from(FORK_GENERATION.load(Relaxed) as u32);
        cell.version.store(now << 32 | 9, Relaxed);
        cell.at.store(s.at ^ 1, Relaxed);
        assert_eq!(cell.kept(&store), s);
        assert_eq!(cell.at.load(Relaxed), s.at ^ 1, "not kept");
    }
}

//! Process-local state that a `fork()` must not hand to the child as it
//! was.
//!
//! Another thread of the parent may hold one of a store's mutexes at the
//! moment of a fork. The child gets the mutex locked, and no thread of the
//! child will ever unlock it: its first lookup that needed it would wait
//! forever. So each such value belongs to one fork generation: a child's
//! first access makes a fresh one. The parent's copy is left alone in the
//! child (never dropped: its contents may be half-changed), which costs the
//! child nothing but the copy-on-write pages it already shares.
//!
//! Only caches live here (the block map, the family index): a fresh one is
//! built again from the store.

use std::sync::atomic::{AtomicPtr, Ordering::*};

use crate::shm::FORK_GENERATION;

/// A `T` for each fork generation of the process, made with `T::default()`
/// on the generation's first access.
pub(crate) struct PerFork<T: Default> {
    /// Never null. Only [`PerFork::get`] replaces it, and only with the
    /// value of a later generation; the one it replaced is never freed.
    cur: AtomicPtr<Generation<T>>,
}

struct Generation<T> {
    gen: u64,
    value: T,
}

impl<T: Default> Default for PerFork<T> {
    fn default() -> Self {
        let first = Generation {
            gen: FORK_GENERATION.load(Relaxed),
            value: T::default(),
        };
        PerFork {
            cur: AtomicPtr::new(Box::into_raw(Box::new(first))),
        }
    }
}

impl<T: Default> PerFork<T> {
    /// This fork generation's value.
    #[inline]
    pub fn get(&self) -> &T {
        let p = self.cur.load(Acquire);
        // SAFETY: `cur` is never null, and what it pointed to at any time
        // is freed only by `drop`, which `&self` excludes.
        let g = unsafe { &*p };
        if g.gen == FORK_GENERATION.load(Relaxed) {
            &g.value
        } else {
            self.renew(p)
        }
    }

    /// Puts a fresh value for this generation in place of `old` (which is
    /// left as it is, never freed), unless another thread of this process
    /// did first.
    #[cold]
    #[inline(never)]
    fn renew(&self, mut old: *mut Generation<T>) -> &T {
        let gen = FORK_GENERATION.load(Relaxed);
        let fresh = Box::into_raw(Box::new(Generation {
            gen,
            value: T::default(),
        }));
        loop {
            match self.cur.compare_exchange(old, fresh, AcqRel, Acquire) {
                // SAFETY: `fresh` is now `cur`: see `get`.
                Ok(_) => return unsafe { &(*fresh).value },
                Err(now) => {
                    // SAFETY: as in `get`.
                    let g = unsafe { &*now };
                    if g.gen == gen {
                        // SAFETY: `fresh` was never shared.
                        drop(unsafe { Box::from_raw(fresh) });
                        return &g.value;
                    }
                    old = now;
                }
            }
        }
    }
}

impl<T: Default> Drop for PerFork<T> {
    fn drop(&mut self) {
        // Only the current generation's value: those it replaced belong
        // to a parent's threads (see the module's comment).
        // SAFETY: `cur` came from `Box::into_raw` and nothing borrows it
        // (`&mut self`).
        drop(unsafe { Box::from_raw(*self.cur.get_mut()) });
    }
}

impl<T: Default + std::fmt::Debug> std::fmt::Debug for PerFork<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

// SAFETY: a `PerFork<T>` hands out `&T` to any thread and moves its `T`s
// with it, as a `T` behind an `Arc` would.
unsafe impl<T: Default + Send + Sync> Sync for PerFork<T> {}
// SAFETY: as above.
unsafe impl<T: Default + Send> Send for PerFork<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_later_generation_gets_a_fresh_value_and_keeps_it() {
        let v: PerFork<Mutex<Vec<u32>>> = PerFork::default();
        v.get().lock().unwrap().push(1);
        assert_eq!(*v.get().lock().unwrap(), [1]);
        // What a fork does in the child, with the value locked by a
        // thread that the child does not have.
        let held = v.get().lock().unwrap();
        let before = v.cur.load(Relaxed);
        // SAFETY: the test's own value; nothing else reads it.
        unsafe { (*before).gen = FORK_GENERATION.load(Relaxed).wrapping_sub(1) };
        assert!(v.get().lock().unwrap().is_empty(), "a fresh value");
        v.get().lock().unwrap().push(2);
        assert_eq!(*v.get().lock().unwrap(), [2], "kept for the generation");
        drop(held);
        // The replaced value is the test's to free here, as no fork made it.
        // SAFETY: `before` came from `Box::into_raw` and is no longer `cur`.
        drop(unsafe { Box::from_raw(before) });
    }
}

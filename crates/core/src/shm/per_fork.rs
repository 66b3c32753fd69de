//! Process-local state that a `fork()` must not hand to the child as it
//! was.
//!
//! Another thread of the parent may hold one of a store's mutexes at the
//! moment of a fork. The child gets the mutex locked, and no thread of the
//! child will ever unlock it: its first lookup that needed it would wait
//! forever. So each such value belongs to one fork generation: a child's
//! first access makes a fresh one. The parent's copy is left alone in the
//! child until the store is dropped (then freed, unless its mutex is still
//! held: its contents may be half-changed), which costs the child nothing
//! but the copy-on-write pages it already shares.
//!
//! Only caches live here (the block map, the family index): a fresh one is
//! built again from the store.

use std::sync::atomic::{AtomicPtr, Ordering::*};
use std::sync::{Mutex, TryLockError};

use crate::shm::FORK_GENERATION;

/// A `Mutex<T>` for each fork generation of the process, made with
/// `T::default()` on the generation's first access.
pub(crate) struct PerFork<T: Default> {
    /// Never null. Only [`PerFork::get`] replaces it, and only with the
    /// value of a later generation, which keeps the one it replaced in
    /// `earlier`: they are freed with the `PerFork`, never before.
    cur: AtomicPtr<Generation<T>>,
}

struct Generation<T> {
    gen: u64,
    value: Mutex<T>,
    /// The generation this one replaced, or null.
    earlier: *mut Generation<T>,
}

impl<T: Default> Generation<T> {
    fn boxed(gen: u64, earlier: *mut Generation<T>) -> *mut Generation<T> {
        Box::into_raw(Box::new(Generation {
            gen,
            value: Mutex::default(),
            earlier,
        }))
    }
}

impl<T: Default> Default for PerFork<T> {
    fn default() -> Self {
        let gen = FORK_GENERATION.load(Relaxed);
        PerFork {
            cur: AtomicPtr::new(Generation::boxed(gen, std::ptr::null_mut())),
        }
    }
}

impl<T: Default> PerFork<T> {
    /// This fork generation's value.
    #[inline]
    pub fn get(&self) -> &Mutex<T> {
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

    /// Puts a fresh value for this generation in place of `old` (kept as
    /// it is, in the fresh one's `earlier`), unless another thread of
    /// this process did first.
    #[cold]
    #[inline(never)]
    fn renew(&self, mut old: *mut Generation<T>) -> &Mutex<T> {
        let gen = FORK_GENERATION.load(Relaxed);
        let fresh = Generation::boxed(gen, old);
        loop {
            match self.cur.compare_exchange(old, fresh, AcqRel, Acquire) {
                // SAFETY: `fresh` is now `cur`: see `get`.
                Ok(_) => return unsafe { &(*fresh).value },
                Err(now) => {
                    // SAFETY: as in `get`.
                    let g = unsafe { &*now };
                    if g.gen == gen {
                        // SAFETY: `fresh` was never shared; its `earlier`
                        // is not its own to free.
                        drop(unsafe { Box::from_raw(fresh) });
                        return &g.value;
                    }
                    old = now;
                    // SAFETY: `fresh` is not shared yet.
                    unsafe { (*fresh).earlier = now };
                }
            }
        }
    }
}

impl<T: Default> Drop for PerFork<T> {
    fn drop(&mut self) {
        let mut p = *self.cur.get_mut();
        while !p.is_null() {
            // SAFETY: every generation came from `Box::into_raw`, is in
            // the chain once, and nothing borrows it (`&mut self`).
            let g = unsafe { Box::from_raw(p) };
            p = g.earlier;
            // A value whose mutex a thread of a parent held at the fork
            // may be half-changed: it is leaked, not dropped. Any other
            // is whole, even if poisoned.
            let held = matches!(g.value.try_lock(), Err(TryLockError::WouldBlock));
            if held {
                std::mem::forget(g);
            }
        }
    }
}

impl<T: Default + std::fmt::Debug> std::fmt::Debug for PerFork<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

// SAFETY: a `PerFork<T>` hands out `&Mutex<T>` to any thread and owns its
// `T`s (the raw pointers are its own boxes), as an `Arc<Mutex<T>>` would.
unsafe impl<T: Default + Send> Sync for PerFork<T> {}
// SAFETY: as above.
unsafe impl<T: Default + Send> Send for PerFork<T> {}

/// Runs `f` in a child process, for tests of what a fork leaves behind:
/// its exit code (0 if `f` returned true, 1 if false), or `None` if it
/// was still running after 20 s (it is then killed).
#[cfg(test)]
pub(crate) fn in_child(f: impl FnOnce() -> bool) -> Option<i32> {
    // SAFETY: the child runs only `f` (which must not wait for a lock
    // that only another thread of the parent releases, unless that is
    // what the test checks) and leaves with `_exit`, without the parent's
    // destructors or the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(false);
        // SAFETY: see above.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    for _ in 0..2000 {
        // SAFETY: waits for our own child, without blocking.
        match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
            0 => std::thread::sleep(std::time::Duration::from_millis(10)),
            _ => return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        }
    }
    // SAFETY: our own child, then reaped.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_generation_gets_a_fresh_value_and_keeps_it() {
        let v: PerFork<Vec<u32>> = PerFork::default();
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
        // SAFETY: as above.
        assert_eq!(unsafe { (*v.cur.load(Relaxed)).earlier }, before);
        drop(held); // so that dropping `v` frees both generations
    }
}

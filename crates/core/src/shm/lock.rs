//! The store lock: a robust, process-shared pthread mutex in the header
//! page, taken only to change the store's shape (new families, series,
//! slots; delete, wipe). No wait on it is without end:
//!
//! - A holder that died is reported by the kernel (`EOWNERDEAD`), and the
//!   next locker repairs what it was doing.
//! - A lock word that names a thread which is not alive, or not of a
//!   process that maps this store, or that the mutex's owner field does
//!   not confirm (a flipped bit, a planted word), is released by the next
//!   locker after one short wait, and the store is repaired as after a
//!   dead holder.
//! - A lock held by a live process of this store for longer than
//!   [`LOCK_TIMEOUT`] (a stopped process, a hung one) gives
//!   [`ErrorKind::Busy`], naming that process; a lock word that the pthread
//!   library refuses, or a mutex whose kind is not the creator's (checked
//!   before any pthread call), gives [`ErrorKind::Corrupt`].

use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::Mapping;
use crate::error::{Error, ErrorKind, Result};

/// The longest a locker waits for a live holder.
pub(crate) const LOCK_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a waiting locker looks at who holds the lock.
const LOCK_SLICE: Duration = Duration::from_millis(100);
/// The owner's thread id in a robust futex word (the rest are the
/// kernel's `FUTEX_WAITERS` and `FUTEX_OWNER_DIED` bits).
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
const FUTEX_WAITERS: u32 = 0x8000_0000;

/// Who holds the store lock, as `shmetrics inspect` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockState {
    /// Nobody.
    Free,
    /// A thread of a live process that maps the store (normally only for
    /// microseconds).
    Held {
        /// The holder's process id.
        pid: u32,
        /// The holder's thread id.
        tid: u32,
    },
    /// The word names a thread that is gone or is not of a process of this
    /// store: the next writer releases it and repairs the store.
    Stale {
        /// The thread id in the lock word.
        tid: u32,
    },
}

impl std::fmt::Display for LockState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockState::Free => write!(f, "free"),
            LockState::Held { pid, tid } => write!(f, "held by pid {pid} (thread {tid})"),
            LockState::Stale { tid } => write!(
                f,
                "STALE: the lock word names thread {tid}, which is not a live process of this \
                 store (a corrupt or planted word); the next writer repairs it"
            ),
        }
    }
}

/// Holds the store lock; unlocks on drop.
pub(crate) struct LockGuard<'a> {
    mapping: &'a Mapping,
    /// The previous holder died holding the lock, or the lock word was
    /// stale: the caller must repair the store before relying on it.
    pub recovered: bool,
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard exists only while this thread holds the mutex.
        unsafe { libc::pthread_mutex_unlock(self.mapping.mutex_ptr()) };
    }
}

impl Mapping {
    /// Takes the store lock. If its previous holder died while holding it,
    /// or the lock word was stale, the lock is still granted and
    /// `recovered` is true: the caller must repair whatever that holder
    /// was doing before it relies on the store. The file's size is checked
    /// first (a locker goes on to grow the store).
    pub fn lock(&self) -> Result<LockGuard<'_>> {
        if !self.writable {
            return Err(
                Error::new(ErrorKind::ReadOnly, "cannot take the store lock").with_path(&self.path),
            );
        }
        self.check_size()?;
        self.check_mutex_kind()?;
        let start = Instant::now();
        let mut looked = start;
        let mut pause = Duration::from_micros(10);
        let mut released = false;
        loop {
            // SAFETY: the mutex pointer is the robust process-shared mutex
            // the creator initialised before publishing the file.
            // (`trylock` and short sleeps rather than a timed lock: the
            // futex timeout of `pthread_mutex_timedlock` is not kept under
            // valgrind, which the C ABI tests run in.)
            match unsafe { libc::pthread_mutex_trylock(self.mutex_ptr()) } {
                0 => return Ok(self.guard(released)),
                libc::EOWNERDEAD => {
                    // SAFETY: we hold the mutex (EOWNERDEAD grants it);
                    // marking it consistent lets later lockers proceed
                    // normally. If we die before the repair finishes, the
                    // next locker gets EOWNERDEAD again and repeats the
                    // (idempotent) repair.
                    unsafe { libc::pthread_mutex_consistent(self.mutex_ptr()) };
                    return Ok(self.guard(true));
                }
                libc::EBUSY => {}
                rc => return Err(self.unusable(std::io::Error::from_raw_os_error(rc))),
            }
            if looked.elapsed() >= LOCK_SLICE {
                looked = Instant::now();
                match self.lock_state() {
                    LockState::Stale { tid } => released |= self.release_stale(tid),
                    LockState::Held { pid, .. } if start.elapsed() >= LOCK_TIMEOUT => {
                        return Err(self.held_too_long(pid, start.elapsed()));
                    }
                    _ if start.elapsed() >= LOCK_TIMEOUT => {
                        let word = self.lock_word().load(Ordering::Relaxed);
                        return Err(self.unusable(format!("its word is {word:#x}")));
                    }
                    _ => {}
                }
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    fn guard(&self, recovered: bool) -> LockGuard<'_> {
        LockGuard {
            mapping: self,
            recovered,
        }
    }

    /// Refuses a mutex whose kind is not the one the creator set (a
    /// robust, process-shared mutex): glibc picks its code by that word,
    /// and a corrupt or planted one sends it where a robust mutex never
    /// goes (a kind with lock elision runs a hardware transaction, which
    /// faults on a processor without it). glibc only: its `__kind` is at
    /// byte 16 on 64-bit targets, and never changes after `init`.
    fn check_mutex_kind(&self) -> Result<()> {
        #[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
        {
            let kind = self.mutex_word(16).load(Ordering::Relaxed);
            let expected = expected_mutex_kind();
            if kind != expected {
                return Err(self.unusable(format!(
                    "its kind word is {kind:#x}, not {expected:#x} (a robust, process-shared mutex)"
                )));
            }
        }
        Ok(())
    }

    /// A 32-bit word of the mutex: glibc's futex word `__lock` at byte 0,
    /// its `__owner` at byte 8, its `__kind` at byte 16.
    fn mutex_word(&self, at: usize) -> &AtomicU32 {
        const _: () = assert!(std::mem::size_of::<libc::pthread_mutex_t>() >= 20);
        // SAFETY: the mutex lies in the mapped header page, aligned to 64
        // bytes, and is at least 20 bytes long; glibc changes these words
        // with atomic instructions and plain aligned stores, so viewing
        // them as atomics is sound. `at` is 0, 8 or 16.
        unsafe { &*((self.mutex_ptr() as *const u8).add(at) as *const AtomicU32) }
    }

    fn lock_word(&self) -> &AtomicU32 {
        self.mutex_word(0)
    }

    /// Who holds the lock, judged from its words and `/proc`. A holder
    /// that took the lock has its thread id in both the futex word and
    /// `__owner` (glibc sets the second right after the first), lives,
    /// and maps this store.
    pub fn lock_state(&self) -> LockState {
        let word = self.lock_word().load(Ordering::Acquire);
        let tid = word & FUTEX_TID_MASK;
        if tid == 0 {
            // Waiters on a lock nobody holds: no unlock will wake them.
            return if word == FUTEX_WAITERS {
                LockState::Stale { tid }
            } else {
                LockState::Free
            };
        }
        if self.mutex_word(8).load(Ordering::Acquire) != tid {
            return LockState::Stale { tid };
        }
        match thread_group(tid) {
            Some(pid) if self.mapped_by(pid) => LockState::Held { pid, tid },
            _ => LockState::Stale { tid },
        }
    }

    /// Releases a lock word that names `tid`, which is not a live thread
    /// of this store; true if it did.
    fn release_stale(&self, tid: u32) -> bool {
        let word = self.lock_word();
        let seen = word.load(Ordering::Acquire);
        // Only the very word judged stale: a live locker that took the
        // lock meanwhile has another.
        seen & FUTEX_TID_MASK == tid
            && word
                .compare_exchange(seen, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// Whether process `pid` maps this store's file (by device and inode,
    /// from `/proc/<pid>/maps`).
    fn mapped_by(&self, pid: u32) -> bool {
        let Ok(meta) = self.file.metadata() else {
            return false;
        };
        let maps = match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            Ok(maps) => maps,
            // Another user's process, which this one may not inspect:
            // assume it is a writer of the store, and never steal its lock.
            Err(e) => return e.kind() == std::io::ErrorKind::PermissionDenied,
        };
        let dev = format!(
            "{:02x}:{:02x}",
            libc::major(meta.dev()),
            libc::minor(meta.dev())
        );
        let ino = meta.ino().to_string();
        maps.lines().any(|l| {
            let mut f = l.split_ascii_whitespace().skip(3);
            f.next() == Some(dev.as_str()) && f.next() == Some(ino.as_str())
        })
    }

    fn held_too_long(&self, pid: u32, waited: Duration) -> Error {
        Error::new(
            ErrorKind::Busy,
            format!(
                "the store lock has been held for over {:.1} s by pid {pid}, a live process of \
                 this store (stopped or hung?); it is normally held for microseconds",
                waited.as_secs_f64()
            ),
        )
        .with_path(&self.path)
    }

    fn unusable(&self, why: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::Corrupt,
            format!("the store lock is unusable ({why}); the store must be re-created"),
        )
        .with_path(&self.path)
    }

    pub(super) fn mutex_ptr(&self) -> *mut libc::pthread_mutex_t {
        &self.header().lock.mutex as *const libc::pthread_mutex_t as *mut libc::pthread_mutex_t
    }
}

/// Makes `mutex` a store lock: robust and process-shared. The one place
/// that says what kind of mutex a store's lock is, for its creator
/// (`Mapping::init_header`) and for [`expected_mutex_kind`].
///
/// # Safety
/// `mutex` is valid for writes, aligned, and not in use: no thread
/// holds or waits on it, and no other process can see it yet.
pub(super) unsafe fn init_store_mutex(mutex: *mut libc::pthread_mutex_t) {
    // SAFETY: the attribute object lives on this stack frame and is
    // destroyed after use; `mutex` is the caller's to initialise.
    unsafe {
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        libc::pthread_mutexattr_init(&mut attr);
        libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED);
        libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST);
        libc::pthread_mutex_init(mutex, &attr);
        libc::pthread_mutexattr_destroy(&mut attr);
    }
}

/// The kind word (see [`Mapping::check_mutex_kind`]) of a mutex made as
/// a store's creator makes its lock ([`init_store_mutex`]), with this
/// process's glibc. Kept once known; threads that find it unknown at once
/// each work it out (the same word), rather than one waiting for another,
/// which a fork could leave waiting for good.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
fn expected_mutex_kind() -> u32 {
    const UNKNOWN: u32 = u32::MAX;
    static KIND: AtomicU32 = AtomicU32::new(UNKNOWN);
    let known = KIND.load(Ordering::Relaxed);
    if known != UNKNOWN {
        return known;
    }
    // SAFETY: a zeroed pthread_mutex_t on this stack frame, seen by no
    // one else; it is only read (its kind word, 4 bytes at byte 16 of at
    // least 20) and destroyed, never locked.
    let kind = unsafe {
        let mut m: libc::pthread_mutex_t = std::mem::zeroed();
        init_store_mutex(&mut m);
        let kind = std::ptr::read(
            (&m as *const libc::pthread_mutex_t as *const u8)
                .add(16)
                .cast::<u32>(),
        );
        libc::pthread_mutex_destroy(&mut m);
        kind
    };
    KIND.store(kind, Ordering::Relaxed);
    kind
}

/// The process a thread belongs to (`Tgid` in `/proc/<tid>/status`), if
/// the thread is alive (zombies are not).
fn thread_group(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    if field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X')) {
        return None;
    }
    field("Tgid:")?.parse().ok()
}

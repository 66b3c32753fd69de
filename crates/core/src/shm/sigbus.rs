//! The last line against SIGBUS: a page of a store mapping that the file
//! no longer backs (another process truncated the file) or that the file
//! system cannot grant (a full tmpfs) raises SIGBUS on access, which
//! would kill the process: a web server's worker, or the exporter.
//!
//! The store avoids what it can: it checks the file's size before reading
//! a snapshot and before growing, and it reserves every page on the file
//! system before anything touches it (`store/space.rs`), so a full tmpfs
//! refuses a registration or a new series, never a page. But a truncation
//! can land between a check and the access, or under a writer's update
//! path, which makes no system call. So each process
//! installs a SIGBUS handler that, for a fault inside a store mapping,
//! maps a private zero page over the faulting page and returns: the
//! access is retried on that page and succeeds. What is written there is
//! lost, as it would be with the truncated file; the next size check
//! reports the truncation ([`crate::ErrorKind::Truncated`]). A fault
//! anywhere else goes to the handler that was installed before (Rust's
//! own, a runtime's, or the default, which ends the process as before).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::layout::PAGE;

/// Mapped store regions of this process: (start, length) pairs; a start
/// of 0 is a free entry.
const MAX_REGIONS: usize = 256;
static REGIONS: [(AtomicUsize, AtomicUsize); MAX_REGIONS] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_REGIONS];
/// An entry being filled in.
const CLAIMING: usize = usize::MAX;
/// Faults absorbed so far.
static ABSORBED: AtomicUsize = AtomicUsize::new(0);
/// The disposition before ours, to pass other faults on to.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Protects `[start, start + len)` until [`unguard`] is called with the
/// same start. Returns false if the table is full (the region then has no
/// protection beyond the store's own checks).
pub(crate) fn guard(start: usize, len: usize) -> bool {
    install();
    for (s, l) in &REGIONS {
        // Claim the entry first (CLAIMING is no address a handler matches),
        // so that two threads guarding at once never mix their lengths.
        if s.compare_exchange(0, CLAIMING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            l.store(len, Ordering::Release);
            s.store(start, Ordering::Release);
            return true;
        }
    }
    false
}

/// Ends the protection of the region starting at `start`.
pub(crate) fn unguard(start: usize) {
    for (s, _) in &REGIONS {
        if s.compare_exchange(start, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// SIGBUS faults inside store mappings that this process survived.
pub(crate) fn absorbed() -> usize {
    ABSORBED.load(Ordering::Relaxed)
}

fn install() {
    PREVIOUS.get_or_init(|| {
        // SAFETY: `sigaction` structs are plain C data, valid zeroed; the
        // handler is an `extern "C"` function of the SA_SIGINFO shape, and
        // the old disposition is saved to pass other faults on.
        unsafe {
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_sigbus as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut ours.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGBUS, &ours, &mut old);
            old
        }
    });
}

fn in_a_store(addr: usize) -> bool {
    REGIONS.iter().any(|(s, l)| {
        let start = s.load(Ordering::Acquire);
        start != 0 && start != CLAIMING && addr >= start && addr - start < l.load(Ordering::Acquire)
    })
}

/// The handler. Only async-signal-safe work: atomics and `mmap`.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers;
    // for SIGBUS its address field is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    if in_a_store(addr) {
        let page = addr & !(PAGE as usize - 1);
        // SAFETY: the page lies in a live store mapping (registered until
        // the mapping is dropped), which this process owns; replacing it
        // with a private zero page (MAP_FIXED) changes only what that
        // mapping shows at that page. Readers and writers there see
        // zeroes, which every record of the layout treats as unused.
        let p = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                PAGE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            ABSORBED.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    pass_on(sig, info, ctx);
}

/// Hands a fault that is not ours to the previous disposition: calls its
/// handler, or restores the default (or ignore) and returns, so that the
/// access faults again and the default action ends the process.
fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(prev) = PREVIOUS.get() else { return };
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // SAFETY: reinstalls the saved disposition (async-signal-safe).
        unsafe { libc::sigaction(libc::SIGBUS, prev, std::ptr::null_mut()) };
    } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed as an SA_SIGINFO
        // handler with this signature; it gets the arguments we got.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: the previous handler was installed as a plain handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

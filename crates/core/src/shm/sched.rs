//! How a reader of stores (the exporter) shares the CPU with the writers:
//! a higher nice value, so the kernel runs a worker before a render, and a
//! short scheduler slice, so that once a render runs it gives the core
//! back within that slice when a worker wakes.
//!
//! The slice matters on a host whose cores the workers keep busy. Linux's
//! EEVDF scheduler lets a task that was picked run for its whole slice
//! (0.75 ms and more by default) before a waking task of the same policy
//! gets the core, and a niced task gets as many slices as any other, only
//! less often. A render of 100k series takes about 16 ms of CPU: some ten
//! stalls of a worker per scrape with the default slice, each one adding
//! its length to the latency of the requests queued on that worker. A
//! custom slice (`sched_attr.sched_runtime` for `SCHED_OTHER`, Linux 6.12
//! and later) bounds each stall; the render takes the same CPU time.

use std::io;
use std::time::Duration;

/// The shortest and longest slice Linux accepts (100 µs, 100 ms).
const SLICE_RANGE: (Duration, Duration) = (Duration::from_micros(100), Duration::from_millis(100));

/// Sets the calling thread's nice value to `nice` (if above 0) and its
/// scheduler slice to `slice` (if given), keeping its policy. Threads
/// started afterwards inherit both, so call it before any thread starts.
/// A real-time or deadline thread is left as it is.
///
/// A kernel without custom slices (before 6.12) takes the nice value and
/// ignores the slice. An error leaves the thread as it was, except that
/// the nice value is still set when only the slice was refused.
///
/// # Errors
/// A slice outside 100 µs..=100 ms ([`io::ErrorKind::InvalidInput`]), or
/// what the kernel's `sched_getattr`/`sched_setattr` report.
pub fn share_cpu(nice: i32, slice: Option<Duration>) -> io::Result<()> {
    if let Some(s) = slice {
        if s < SLICE_RANGE.0 || s > SLICE_RANGE.1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a scheduler slice of {s:?} is outside 100µs..=100ms"),
            ));
        }
    }
    let mut attr = get_attr()?;
    if !matches!(
        attr.sched_policy as libc::c_int,
        libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE
    ) {
        // A real-time or deadline task: neither a nice value nor a fair
        // slice applies (and sched_runtime is a deadline task's budget).
        return Ok(());
    }
    if nice > 0 {
        attr.sched_nice = nice;
    }
    attr.sched_flags = 0;
    let Some(slice) = slice else {
        return set_attr(&attr);
    };
    // The range check above keeps it far below u64::MAX.
    let sliced = libc::sched_attr {
        sched_runtime: slice.as_nanos() as u64,
        ..attr
    };
    set_attr(&sliced).or_else(|e| {
        // Keep the nice value at least.
        set_attr(&attr)?;
        Err(e)
    })
}

/// The calling thread's nice value and slice, as the kernel reports them:
/// for tests and diagnostics.
///
/// # Errors
/// What `sched_getattr` reports.
pub fn cpu_share() -> io::Result<(i32, Duration)> {
    let a = get_attr()?;
    Ok((a.sched_nice, Duration::from_nanos(a.sched_runtime)))
}

fn get_attr() -> io::Result<libc::sched_attr> {
    // SAFETY: sched_attr is plain integers, for which all zeroes is valid.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    // SAFETY: pid 0 is the calling thread; `attr` is a valid, writable
    // sched_attr of `size` bytes, which the kernel fills up to that size.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &raw mut attr,
            size,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(attr)
}

fn set_attr(attr: &libc::sched_attr) -> io::Result<()> {
    let mut attr = *attr;
    attr.size = std::mem::size_of::<libc::sched_attr>() as u32;
    // SAFETY: pid 0 is the calling thread; `attr` is a valid sched_attr
    // whose `size` field says how many bytes the kernel may read.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0,
            &raw const attr,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this kernel has custom slices (6.12 and later).
    fn kernel_has_slices() -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut v = release
            .split(|c: char| !c.is_ascii_digit())
            .map(|n| n.parse::<u32>().unwrap_or(0));
        (v.next().unwrap_or(0), v.next().unwrap_or(0)) >= (6, 12)
    }

    /// A nice value above the calling thread's (as `nice cargo test`
    /// may have raised it), which any process may take.
    fn higher_nice(by: i32) -> i32 {
        (cpu_share().unwrap().0 + by).min(19)
    }

    #[test]
    fn sets_the_nice_value_and_the_slice_of_the_thread_and_its_children() {
        // A thread of its own: the setting stays with it.
        std::thread::spawn(|| {
            let nice = higher_nice(2);
            share_cpu(nice, Some(Duration::from_micros(200))).unwrap();
            let child = std::thread::spawn(|| cpu_share().unwrap()).join().unwrap();
            for (n, slice) in [cpu_share().unwrap(), child] {
                assert_eq!(n, nice);
                if kernel_has_slices() {
                    assert_eq!(slice, Duration::from_micros(200));
                }
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn no_slice_leaves_the_slice_and_a_bad_slice_changes_nothing() {
        std::thread::spawn(|| {
            let before = cpu_share().unwrap();
            let nice = higher_nice(1);
            for bad in [Duration::from_micros(50), Duration::from_secs(1)] {
                let e = share_cpu(nice, Some(bad)).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
                assert_eq!(cpu_share().unwrap(), before);
            }
            share_cpu(nice, None).unwrap();
            assert_eq!(cpu_share().unwrap(), (nice, before.1));
        })
        .join()
        .unwrap();
    }
}

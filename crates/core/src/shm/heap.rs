//! Giving the allocator's free memory back to the system.

/// Returns the C allocator's free pages to the system (glibc's
/// `malloc_trim`; elsewhere nothing). glibc keeps what a long-lived
/// process freed for its next allocations, so an exporter that rendered a
/// large page would otherwise keep the page's memory while idle.
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under
    // its own locks; any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Makes the C allocator map every block of at least `bytes` on its own
/// and unmap it when freed (glibc's `M_MMAP_THRESHOLD`; elsewhere
/// nothing). glibc raises its threshold as large blocks are freed, so a
/// long-lived reader's per-read buffers (a million series' merged cells
/// are 16 MB) would otherwise come from the heap, and their pages stay
/// with the process between reads. Setting the threshold fixes it.
///
/// It also fixes the heap's trim threshold at glibc's default (128 KiB),
/// which glibc would otherwise raise with it: the free memory at the top
/// of the heap goes back after each scrape. That costs a plain scrape of
/// a million series some 9% (its 20 MB of pieces fault their pages in
/// again each time); a trim threshold of 32 MiB made it 14% faster, but
/// kept 7 MiB more between gzip scrapes, which is what Prometheus asks
/// for, and those came first (docs/ARCHITECTURE.md, "Scale").
pub fn unmap_large_frees(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's own parameters, under its
    // own lock; any thread may call it at any time.
    unsafe {
        let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// Asks the kernel to back the room `buf` has allocated with transparent
/// huge pages where it can (Linux's `MADV_HUGEPAGE`, for the part aligned
/// to 2 MiB; elsewhere nothing). A buffer of many megabytes that each
/// read allocates and fills (a million series' merged cells: 16 MB) then
/// costs a few page faults instead of one per 4 KiB page. Call it before
/// the room is first written; it changes how pages are backed, never
/// their contents.
pub(crate) fn advise_huge_pages<T>(buf: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = buf.as_ptr() as usize;
        let end = start.saturating_add(buf.capacity().saturating_mul(std::mem::size_of::<T>()));
        let lo = start.next_multiple_of(HUGE);
        let hi = end - end % HUGE;
        if hi > lo {
            // SAFETY: [lo, hi) lies within the allocation `buf` owns (its
            // capacity), and MADV_HUGEPAGE only sets how the kernel backs
            // those pages: no memory is freed, moved or changed, so no
            // reference into `buf` is affected. A refusal is harmless.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

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

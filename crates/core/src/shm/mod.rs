//! The only module of `shmetrics-core` with `unsafe` code: mapping a store
//! file, viewing its bytes as the layout's records, the robust
//! process-shared lock, the fork hook and the process's caches that a fork
//! renews ([`PerFork`]), and the scheduler attributes a
//! reader of stores takes to share the CPU with the writers ([`sched`]).
//!
//! Everything handed out of this module is a shared reference to atomics (or
//! a bounds-checked byte slice), so the rest of the crate is safe Rust.
//!
//! # Truncation and full file systems
//! A process that truncates a mapped store, or a file system that cannot
//! grant a page, makes an access to the mapping fault (SIGBUS). Pages are
//! granted before use ([`Mapping::reserve`], driven by `store/space.rs`).
//! Readers and growing writers check the file's size first ([`Mapping::check_size`]);
//! a fault that still happens inside a store mapping is absorbed by the
//! handler in [`sigbus`], so that the process lives on and the next check
//! reports the truncation.

mod heap;
pub(crate) mod layout;
mod lock;
mod per_fork;
pub(crate) mod sched;
pub(crate) mod sigbus;
pub(crate) mod trust;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Once;

use memmap2::{MmapOptions, MmapRaw};

use crate::error::{Error, ErrorKind, Result};
pub(crate) use heap::advise_huge_pages;
pub use heap::{trim_heap, unmap_large_frees};
use layout::{FamilyRec, Fixed, Header, SeriesRec, SlotRec, LAYOUT_VERSION, MAGIC};
pub(crate) use lock::LockGuard;
pub use lock::LockState;
#[cfg(test)]
pub(crate) use per_fork::in_child;
pub(crate) use per_fork::PerFork;
use trust::Trust;

/// A slot's cells as a pointer and a length: a slice without the niche of
/// its non-null pointer, so that a `Result` holding one carries a tag of
/// its own and the update path tests no pointer for null
/// (`update::Cells`).
#[derive(Clone, Copy)]
pub(crate) struct Region<'a> {
    ptr: *const AtomicU64,
    len: usize,
    life: std::marker::PhantomData<&'a [AtomicU64]>,
}

impl<'a> Region<'a> {
    #[inline(always)]
    pub fn new(cells: &'a [AtomicU64]) -> Region<'a> {
        Region {
            ptr: cells.as_ptr(),
            len: cells.len(),
            life: std::marker::PhantomData,
        }
    }

    #[inline(always)]
    pub fn cells(&self) -> &'a [AtomicU64] {
        // SAFETY: `ptr` and `len` are those of a slice that lives for 'a
        // (`Region::new` is the only way to make one).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A mapped store file.
pub(crate) struct Mapping {
    map: MmapRaw,
    /// Where the series records, the slots' cells and the arena start in
    /// `map`: the update path's offsets added once, at open.
    series_base: *const u8,
    cells_base: *const u8,
    arena_base: *const u8,
    /// The mapped file, kept open to check its size and identity.
    file: File,
    fixed: Fixed,
    writable: bool,
    path: PathBuf,
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("path", &self.path)
            .field("writable", &self.writable)
            .field("size", &self.fixed.file_size)
            .finish()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Before the fields drop (and the memory is unmapped).
        sigbus::unguard(self.map.as_ptr() as usize);
    }
}

// SAFETY: the mapping is plain memory shared with other processes; all
// access to it goes through atomics or copies, so sharing it between
// threads is no different from sharing it between processes. The base
// pointers point into that same memory, and are read through alike.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Creates a new store file at `path`, atomically: the file is built
    /// under a temporary name and linked into place only when complete, so
    /// no process ever sees a half-initialised store. If another process
    /// wins the race, its file is opened instead.
    pub fn create_or_open(path: &Path, fixed: Fixed, mode: u32, trust: &Trust) -> Result<Mapping> {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path.file_name().ok_or_else(|| {
            Error::new(ErrorKind::Io, "the store path has no file name").with_path(path)
        })?;
        sweep_stale_temporaries(dir, &name.to_string_lossy());
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            fixed.created_unix_ns
        ));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, "cannot create the store file", &e))?;
        let cleanup = |e: Error| {
            let _ = std::fs::remove_file(&tmp);
            e
        };
        // The umask may have narrowed the mode; set it exactly (0660 must
        // stay group-writable). It is never wider than asked.
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
            .map_err(|e| cleanup(Error::io(path, "cannot set the store file's mode", &e)))?;
        file.set_len(fixed.file_size)
            .map_err(|e| cleanup(Error::io(path, "cannot size the store file", &e)))?;
        // The parts of the file that are touched at any position from the
        // start: the header page and the slot table (written below and at
        // the first claim), and the series index (probed at a hash's
        // position). Without their pages granted, a full file system
        // would fault (SIGBUS) there. The regions that fill from one end
        // are reserved as they grow (`store/space.rs`).
        let fixed_parts = [
            (0, fixed.off_families),
            (fixed.off_index, fixed.off_arena - fixed.off_index),
        ];
        for (off, len) in fixed_parts {
            reserve(&file, off, len).map_err(|e| {
                cleanup(Error::io(
                    path,
                    "cannot reserve the store's header and tables (file system full?)",
                    &e,
                ))
            })?;
        }
        let map = MmapRaw::map_raw(&file)
            .map_err(|e| cleanup(Error::io(path, "cannot map the store file", &e)))?;
        let mapping = Mapping::new(map, file, fixed, true, path);
        mapping.init_header();
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => {
                let _ = std::fs::remove_file(&tmp);
                Ok(mapping)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let _ = std::fs::remove_file(&tmp);
                drop(mapping);
                Mapping::open(path, true, trust)
            }
            Err(e) => Err(cleanup(Error::io(
                path,
                "cannot publish the store file",
                &e,
            ))),
        }
    }

    fn init_header(&self) {
        let bytes = self.fixed.to_bytes();
        // SAFETY: the file is fresh, sized to `file_size` >= one page, and
        // not yet visible to any other process (it has a private temporary
        // name), so writing its first bytes races with nobody.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.map.as_mut_ptr(), bytes.len());
        }
        // SAFETY: the mutex lies in the mapped, page-aligned header and is
        // suitably aligned; no other process can see the file yet, so no
        // one holds or waits on it.
        unsafe { lock::init_store_mutex(self.mutex_ptr()) }
    }

    /// Opens and validates an existing store file: the file at `path`
    /// itself (not a symbolic link), a regular file that `trust` accepts,
    /// with a valid header.
    pub fn open(path: &Path, writable: bool, trust: &Trust) -> Result<Mapping> {
        let mut file = open_no_follow(path, writable)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io(path, "cannot stat the store file", &e))?;
        trust.check(&meta, writable, path)?;
        let fixed = read_fixed(&mut file, meta.len(), path)?;
        let mut opts = MmapOptions::new();
        opts.len(fixed.file_size as usize);
        let map = if writable {
            opts.map_raw(&file)
        } else {
            opts.map_raw_read_only(&file)
        }
        .map_err(|e| Error::io(path, "cannot map the store file", &e))?;
        if (map.len() as u64) < fixed.file_size {
            return Err(
                Error::new(ErrorKind::Truncated, "the file shrank while it was opened")
                    .with_path(path),
            );
        }
        Ok(Mapping::new(map, file, fixed, writable, path))
    }

    /// Wraps a new mapping, guarded against SIGBUS (see [`sigbus`]).
    fn new(map: MmapRaw, file: File, fixed: Fixed, writable: bool, path: &Path) -> Mapping {
        sigbus::guard(map.as_ptr() as usize, map.len());
        let at = |off: u64| map.as_ptr().wrapping_add(off as usize);
        Mapping {
            series_base: at(fixed.off_series),
            cells_base: at(fixed.off_cells),
            arena_base: at(fixed.off_arena),
            map,
            file,
            fixed,
            writable,
            path: path.to_path_buf(),
        }
    }

    /// Checks that the file is still as long as its header says (another
    /// process may have truncated it): reading or writing a mapped page
    /// past the end of the file would raise SIGBUS. Costs one `fstat`, so
    /// it is made before reading a snapshot and before growing the store,
    /// never on the update path.
    pub fn check_size(&self) -> Result<()> {
        let len = self
            .file
            .metadata()
            .map_err(|e| Error::io(&self.path, "cannot stat the store file", &e))?
            .len();
        if len < self.fixed.file_size {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!(
                    "the file was cut to {len} bytes while in use, its header says {}; \
                     its metrics are lost: remove it and restart the writers",
                    self.fixed.file_size
                ),
            )
            .with_path(&self.path));
        }
        Ok(())
    }

    /// Makes the file system grant the bytes `[off, off + len)` of the
    /// file, so that touching them through the mapping cannot fault for
    /// want of space. Under the store lock, on the slow path (registration,
    /// series creation, claiming a slot); sketch pages also on an update's
    /// cold branch, through [`crate::marks::Space`].
    pub fn reserve(&self, off: u64, len: u64) -> std::io::Result<()> {
        debug_assert!(off.saturating_add(len) <= self.fixed.file_size);
        reserve(&self.file, off, len)
    }

    pub fn fixed(&self) -> &Fixed {
        &self.fixed
    }

    /// The byte offset in the file of cells of this mapping, checked.
    fn offset_of(&self, cells: &[AtomicU64]) -> Option<u64> {
        let off = (cells.as_ptr() as usize).checked_sub(self.map.as_ptr() as usize)? as u64;
        let end = off.checked_add(std::mem::size_of_val(cells) as u64)?;
        (end <= self.fixed.file_size).then_some(off)
    }

    pub fn writable(&self) -> bool {
        self.writable
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A slice of records at a byte offset, checked for bounds and
    /// alignment.
    fn slice_at<T: SharedRecord>(&self, off: u64, n: u64) -> &[T] {
        let bytes = n.checked_mul(std::mem::size_of::<T>() as u64);
        let end = bytes.and_then(|b| off.checked_add(b));
        assert!(
            end.is_some_and(|e| e <= self.fixed.file_size)
                && off.is_multiple_of(std::mem::align_of::<T>() as u64),
            "records outside the mapping"
        );
        // SAFETY: the range is inside the mapping (checked above, and the
        // mapping is at least `file_size` long, checked at open), aligned
        // for `T` (the mapping is page-aligned and `off` is a multiple of
        // `T`'s alignment), and `T` is a `SharedRecord`: made only of
        // atomics and plain integers, for which every bit pattern is valid
        // and concurrent access from other processes is through atomics.
        unsafe {
            std::slice::from_raw_parts(self.map.as_ptr().add(off as usize) as *const T, n as usize)
        }
    }

    /// The header page. On the hot path (every update reads the epoch), so
    /// without the checks of [`Self::slice_at`].
    #[inline]
    pub fn header(&self) -> &Header {
        // SAFETY: every mapping is at least `file_size` bytes, and a
        // consistent layout (checked at open, true by construction at
        // create) puts the first region at `PAGE`, so the file holds a
        // whole page, which holds a `Header` (a compile-time assertion in
        // layout.rs). The mapping is page-aligned. `Header` is a
        // `SharedRecord`.
        unsafe { &*(self.map.as_ptr() as *const Header) }
    }

    /// Slot records, index 0 being the shared slot.
    pub fn slots(&self) -> &[SlotRec] {
        self.slice_at(self.fixed.off_slots, self.fixed.max_slots as u64 + 1)
    }

    pub fn families(&self) -> &[FamilyRec] {
        self.slice_at(self.fixed.off_families, self.fixed.max_families as u64)
    }

    pub fn series(&self) -> &[SeriesRec] {
        self.slice_at(self.fixed.off_series, self.fixed.max_series as u64)
    }

    /// The state word of series record `id`, `None` past the last record.
    /// On the hot path (every update checks that its series is still the
    /// one its handle was made for), so with one comparison instead of the
    /// checks of [`Self::series`]: the region's bounds and alignment were
    /// proved once, at open. A forged `id` (handles come from integers
    /// through the C ABI) gets `None`, never a stray read.
    #[inline]
    pub fn series_state(&self, id: u32, order: Ordering) -> Option<u32> {
        if id >= self.fixed.max_series {
            return None;
        }
        let start = id as usize * std::mem::size_of::<SeriesRec>();
        // SAFETY: `Fixed::is_consistent` (checked at open, and by
        // construction at create) proves the layout is exactly what `plan`
        // makes: `off_series` is page-aligned and `max_series` records of
        // 64 bytes (`size_of::<SeriesRec>()`, a compile-time assertion in
        // layout.rs) end before `off_index <= file_size`, which the mapping
        // covers (checked at open). `id < max_series` (checked above), so
        // the record lies in the mapping and is aligned, and `SeriesRec` is
        // a `SharedRecord`. `series_base` is the mapping's start plus
        // `off_series` (`Mapping::new`).
        let rec = unsafe { &*(self.series_base.add(start) as *const SeriesRec) };
        Some(rec.state.load(order))
    }

    pub fn index(&self) -> &[AtomicU32] {
        self.slice_at(self.fixed.off_index, self.fixed.index_size as u64)
    }

    /// The cells of one slot. On the hot path: no checks beyond clamping
    /// the slot, because the region's bounds were proved once, at open.
    #[inline]
    pub fn cells(&self, slot: u32) -> &[AtomicU64] {
        let slot = slot.min(self.fixed.max_slots) as usize;
        let start = slot * self.fixed.slot_stride as usize;
        // SAFETY: `Fixed::is_consistent` (checked at open, and by
        // construction at create) proves the layout is exactly what `plan`
        // makes: `off_cells` is page-aligned, each slot region is
        // `slot_stride >= cells_per_slot * 8` bytes, and the
        // `max_slots + 1` regions end at `file_size`, which the mapping
        // covers (checked at open). `slot <= max_slots`, so the slice lies
        // in the mapping and is aligned; atomics are valid for any bits.
        // `cells_base` is the mapping's start plus `off_cells`.
        unsafe {
            std::slice::from_raw_parts(
                self.cells_base.add(start) as *const AtomicU64,
                self.fixed.cells_per_slot as usize,
            )
        }
    }

    /// The sketch cells of one slot. Same argument as [`Self::cells`].
    /// Readers must touch only cells a writer touched (the ranges the
    /// series' headers record): reading a hole in a tmpfs file allocates
    /// a page for it.
    #[inline]
    pub fn sketch(&self, slot: u32) -> &[AtomicU64] {
        let slot = slot.min(self.fixed.max_slots) as usize;
        let start = self.fixed.off_sketch as usize + slot * self.fixed.sketch_stride as usize;
        // SAFETY: `Fixed::is_consistent` proves the layout is what `plan`
        // makes: `off_sketch` is page-aligned, each slot's sketch region is
        // `sketch_stride >= sketch_cells_per_slot * 8` bytes, and the
        // `max_slots + 1` regions end at `file_size`, which the mapping
        // covers (checked at open). `slot <= max_slots`, so the slice lies
        // in the mapping and is aligned; atomics are valid for any bits.
        unsafe {
            std::slice::from_raw_parts(
                self.map.as_ptr().add(start) as *const AtomicU64,
                self.fixed.sketch_cells_per_slot as usize,
            )
        }
    }

    /// Bytes of the arena, `None` if the span is outside it.
    ///
    /// The bytes below the arena's fill mark are written once, under the
    /// lock, before anything that refers to them is published; they change
    /// again only after a wipe, which readers detect through the epoch.
    #[inline]
    pub fn arena(&self, off: u64, len: u64) -> Option<&[u8]> {
        let end = off.checked_add(len)?;
        if end > self.fixed.arena_bytes {
            return None;
        }
        // SAFETY: the span lies inside the arena region, which lies inside
        // the mapping (checked at open). Every bit pattern is a valid `u8`.
        // Other processes only write arena bytes that are not yet
        // published, or after a wipe; a reader racing a wipe may see bytes
        // change under it, which is harmless for plain bytes, and which the
        // epoch check after every read detects. `arena_base` is the
        // mapping's start plus `off_arena`.
        Some(unsafe { std::slice::from_raw_parts(self.arena_base.add(off as usize), len as usize) })
    }

    /// `n` f64 values in the arena at an 8-aligned offset, `None` if the
    /// span is outside the arena or misaligned. Same publication rules as
    /// [`Self::arena`].
    #[inline]
    pub fn arena_f64s(&self, off: u64, n: u64) -> Option<&[f64]> {
        let bytes = self.arena(off, n.checked_mul(8)?)?;
        if !off.is_multiple_of(8) {
            return None;
        }
        // SAFETY: `bytes` is in bounds and 8-aligned (the arena starts on a
        // page boundary and `off` is a multiple of 8); every bit pattern is
        // a valid f64.
        Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const f64, n as usize) })
    }

    /// Writes bytes into the arena. Only called under the store lock, on
    /// bytes above the fill mark, which no reader looks at yet.
    pub fn arena_write(&self, off: u64, bytes: &[u8]) {
        assert!(self.writable, "arena_write on a read-only mapping");
        let end = off.checked_add(bytes.len() as u64);
        assert!(
            end.is_some_and(|e| e <= self.fixed.arena_bytes),
            "arena write out of bounds"
        );
        // SAFETY: in bounds (checked above), the mapping is writable
        // (checked above), and the caller holds the store lock and writes
        // above the fill mark, so no other writer touches these bytes and
        // no reader has been told they exist.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.map
                    .as_mut_ptr()
                    .add((self.fixed.off_arena + off) as usize),
                bytes.len(),
            );
        }
    }
}

/// How old a creator's temporary file must be before another creator
/// removes it: a creation takes milliseconds, so one this old was left by
/// a creator that died (killed, or out of space before the cleanup of
/// earlier versions).
const STALE_TEMPORARY: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the temporary files (`.NAME.PID.NANOS.tmp`) that creators of
/// the store `name` in `dir` left behind when they died, older than
/// [`STALE_TEMPORARY`]. Best effort: another user's file in a sticky
/// directory stays, and any error is ignored (creation goes on).
fn sweep_stale_temporaries(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(middle) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".tmp"))
        else {
            continue;
        };
        // Exactly PID.NANOS: another store's name that starts with this
        // one's (`NAME.x`) has more parts.
        let mut parts = middle.split('.');
        let ours = matches!(
            (parts.next(), parts.next(), parts.next()),
            (Some(pid), Some(ns), None)
                if pid.parse::<u32>().is_ok() && ns.parse::<u64>().is_ok()
        );
        let old = entry
            .metadata()
            .ok()
            .filter(|m| m.file_type().is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_TEMPORARY);
        if ours && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Makes the file system allocate `len` bytes of `file` at `off`
/// (`posix_fallocate`), so that touching them through a mapping cannot
/// fault for want of space.
fn reserve(file: &File, off: u64, len: u64) -> std::io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    let (off, len) = (off as libc::off_t, len as libc::off_t);
    loop {
        // SAFETY: posix_fallocate on an open file descriptor; no memory
        // is passed. It returns the error number rather than setting
        // errno.
        match unsafe { libc::posix_fallocate(file.as_raw_fd(), off, len) } {
            0 => return Ok(()),
            libc::EINTR => continue,
            rc => return Err(std::io::Error::from_raw_os_error(rc)),
        }
    }
}

impl Mapping {
    /// Makes the file system grant the pages under `cells`, cells of this
    /// mapping. The sketch region's pages are reserved when first
    /// written, on the update path's cold branch: `marks.rs` makes the
    /// mapping its `Space` with this (there, so that this module, which
    /// marks.rs reads the page size from, does not name it back).
    pub fn reserve_cells(&self, cells: &[AtomicU64]) -> std::io::Result<()> {
        let off = self.offset_of(cells).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "cells outside the store")
        })?;
        reserve(&self.file, off, std::mem::size_of_val(cells) as u64)
    }
}

/// Opens the file at `path` without following a symbolic link in its
/// last component, and without blocking (a FIFO planted at the path must
/// not hang the opener; regular files ignore the flag).
fn open_no_follow(path: &Path, writable: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(writable)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::new(
                ErrorKind::Untrusted,
                "it is a symbolic link, which a store path never follows \
                 (another user could point it anywhere); give the real file's path",
            )
            .with_path(path),
            _ => Error::io(path, "cannot open the store file", &e),
        })
}

/// Reads and checks the fixed header of an open file `len` bytes long.
fn read_fixed(file: &mut File, len: u64, path: &Path) -> Result<Fixed> {
    let mut head = [0u8; std::mem::size_of::<Fixed>()];
    let n = read_up_to(file, &mut head)
        .map_err(|e| Error::io(path, "cannot read the store file", &e))?;
    let err = |kind, msg: String| Err(Error::new(kind, msg).with_path(path));
    if n == 0 {
        return err(
            ErrorKind::ForeignFile,
            "the file is empty, not a shmetrics store".into(),
        );
    }
    if n < MAGIC.len() || head[..MAGIC.len()] != MAGIC {
        return err(
            ErrorKind::ForeignFile,
            "the file does not start with the shmetrics magic number; it was left untouched".into(),
        );
    }
    if n < head.len() {
        return err(
            ErrorKind::Truncated,
            format!("the header is cut short at {n} bytes"),
        );
    }
    let fixed = Fixed::from_bytes(&head).expect("a full header was read");
    if fixed.layout_version != LAYOUT_VERSION {
        return err(
            ErrorKind::VersionMismatch,
            format!(
                "the file has layout version {}, this build reads version {}; \
                 remove the file (its metrics are lost) or use a matching build",
                fixed.layout_version, LAYOUT_VERSION
            ),
        );
    }
    if fixed.checksum != fixed.compute_checksum() {
        return err(
            ErrorKind::Corrupt,
            "the header checksum does not match".into(),
        );
    }
    if !fixed.is_consistent() {
        return err(
            ErrorKind::Corrupt,
            "the header's sizes and offsets are inconsistent".into(),
        );
    }
    if len < fixed.file_size {
        return err(
            ErrorKind::Truncated,
            format!(
                "the file is {len} bytes, its header says {}",
                fixed.file_size
            ),
        );
    }
    Ok(fixed)
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Types that may be viewed in place in the shared mapping.
///
/// # Safety
/// Implementors are `repr(C)`, contain only atomics, plain integers and
/// arrays of them (every bit pattern valid), and hold no pointers.
pub(crate) unsafe trait SharedRecord {}
// SAFETY: each is repr(C) and made only of atomics, integers, arrays of
// them, and (for the header) a pthread mutex that is only touched through
// the pthread API.
unsafe impl SharedRecord for Header {}
// SAFETY: see above.
unsafe impl SharedRecord for SlotRec {}
// SAFETY: see above.
unsafe impl SharedRecord for FamilyRec {}
// SAFETY: see above.
unsafe impl SharedRecord for SeriesRec {}
// SAFETY: an atomic integer.
unsafe impl SharedRecord for AtomicU32 {}
// SAFETY: an atomic integer.
unsafe impl SharedRecord for AtomicU64 {}

/// Incremented in every child right after `fork()`. A process compares it
/// with the value it saw when it claimed its writer slot, so a child never
/// writes through its parent's slot.
pub(crate) static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    // Only an atomic increment: async-signal-safe, as a handler run after
    // fork() in a multi-threaded parent must be.
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the fork hook once per process.
pub(crate) fn install_fork_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a handler with no prepare/parent parts; the
        // child handler only does an atomic increment.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
}

/// Milliseconds on the host's monotonic clock, at the resolution of the
/// kernel's tick (`CLOCK_MONOTONIC_COARSE`: a vDSO read, no system call, a
/// few nanoseconds). Every process of the host reads the same clock, so
/// writers and readers agree on a summary window's periods; unlike the
/// wall clock, it never steps.
#[inline]
pub(crate) fn coarse_monotonic_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through a pointer to a
    // live, writable local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .wrapping_mul(1000)
        .wrapping_add(ts.tv_nsec as u64 / 1_000_000)
}

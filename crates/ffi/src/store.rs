//! Opening and closing a store, and whole-store operations.

use std::ffi::{c_char, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use shmetrics_core::{Options, PathNow, Store};

use crate::error::{ffi_body, shmetrics_result, FfiError};
use crate::ptr::{self, Out};
use crate::types::{
    shmetrics_options, shmetrics_path_now, shmetrics_stats, shmetrics_store, RenderCache,
};

const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => panic!("the version has a NUL"),
    };

/// The crate version's major, minor and patch numbers, parsed at compile
/// time from what Cargo sets, so that they are written only in Cargo.toml.
const MAJOR: u32 = parse_version_part(env!("CARGO_PKG_VERSION_MAJOR"));
const MINOR: u32 = parse_version_part(env!("CARGO_PKG_VERSION_MINOR"));
const PATCH: u32 = parse_version_part(env!("CARGO_PKG_VERSION_PATCH"));

/// A decimal number from Cargo's `CARGO_PKG_VERSION_*`, in a `const`.
const fn parse_version_part(s: &str) -> u32 {
    let bytes = s.as_bytes();
    assert!(!bytes.is_empty(), "an empty version number");
    let mut n: u32 = 0;
    let mut i = 0;
    while i < bytes.len() {
        assert!(
            bytes[i].is_ascii_digit(),
            "a version number that is not decimal"
        );
        n = n * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    n
}

/// The library's version, for example "1.0.0". The string is static: do
/// not free it.
#[no_mangle]
pub extern "C" fn shmetrics_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The library's major version, `SHMETRICS_VERSION_MAJOR` of the header it
/// was built with. Libraries of different majors are not compatible: a
/// binding compares this with the major it was written for before any
/// other call. This function and its signature never change, so that any
/// library can be asked. The library's file name (SONAME) is
/// `libshmetrics.so.<major>`.
#[no_mangle]
pub extern "C" fn shmetrics_version_major() -> u32 {
    MAJOR
}

/// The library's minor version, `SHMETRICS_VERSION_MINOR` of its header.
#[no_mangle]
pub extern "C" fn shmetrics_version_minor() -> u32 {
    MINOR
}

/// The library's patch version, `SHMETRICS_VERSION_PATCH` of its header.
#[no_mangle]
pub extern "C" fn shmetrics_version_patch() -> u32 {
    PATCH
}

/// Fills `*out` with the default options: create the file if missing,
/// read-write, mode 0600, 4096 families, 65536 series, 16 MiB of label
/// bytes, 128 writers, 16 value cells per series, no other owner or group
/// trusted (-1).
#[no_mangle]
pub extern "C" fn shmetrics_options_default(out: *mut shmetrics_options) -> shmetrics_result {
    ffi_body!("shmetrics_options_default", {
        Out::new(out, "out")?.write(shmetrics_options::from(&Options::default()));
        Ok(())
    })
}

/// Opens the store file at `path` (`path_len` bytes, no NUL needed),
/// creating it if `opts->create` is set and it does not exist. `path` may
/// be NULL with `path_len` 0 for the default path: `$SHMETRICS_STORE` if
/// set, else `/dev/shm/shmetrics`. `opts` may be NULL for the defaults.
///
/// On success `*out` is a new store handle, to be freed with
/// `shmetrics_store_close`; on failure it is NULL. A file that is not a
/// store (`SHMETRICS_FOREIGN_FILE`), is cut short, corrupt or from another
/// layout version is never overwritten.
///
/// A process should open a store once and share the handle between its
/// threads: each handle claims its own writer slot.
#[no_mangle]
pub extern "C" fn shmetrics_store_open(
    path: *const c_char,
    path_len: usize,
    opts: *const shmetrics_options,
    out: *mut *mut shmetrics_store,
) -> shmetrics_result {
    ffi_body!("shmetrics_store_open", {
        let out = Out::new(out, "out")?;
        out.write(std::ptr::null_mut());
        let (path, options) = path_and_options(path, path_len, opts)?;
        let store = Store::open(&path, &options)?;
        out.write(ptr::into_raw(Box::new(handle(store, false))));
        Ok(())
    })
}

/// The handles made by `shmetrics_store_open_persistent`: (path,
/// read-only, the handle's address). A handle is freed only by the
/// `shmetrics_store_close_persistent` that closes its last reference, so
/// for callers that never close them (PHP) the addresses stay valid for
/// the life of the process (and of a child forked from it, which inherits
/// the memory). The lock also orders every change of a handle's `refs`.
static PERSISTENT: Mutex<Vec<(PathBuf, bool, usize)>> = Mutex::new(Vec::new());

/// Opens the store file at `path` for the rest of the process's life, or
/// returns the handle an earlier call made: later calls with the same
/// `path` and the same `opts->read_only` return the same handle, and
/// their other options are ignored. Arguments are as for
/// `shmetrics_store_open`.
///
/// This is for runtimes that cannot keep a pointer from one request to
/// the next, such as PHP under php-fpm: each request asks again and gets
/// the handle of its worker process, so the store is mapped, and a writer
/// slot claimed, once per process rather than once per request. The
/// library is never unloaded (it is linked with `-z nodelete`), so the
/// handle outlives the FFI object that asked for it.
///
/// The handle belongs to the library: `shmetrics_store_close` ignores it.
/// Each call that returns it counts one reference, which
/// `shmetrics_store_close_persistent` gives back: several users of the
/// process (the Lua VMs of one nginx worker, for `http` and `stream`)
/// share the handle, and it is freed only when the last of them closes
/// it. A child forked after the call gets the same handle, which claims a
/// writer slot of its own on its first update, as every handle does.
#[no_mangle]
pub extern "C" fn shmetrics_store_open_persistent(
    path: *const c_char,
    path_len: usize,
    opts: *const shmetrics_options,
    out: *mut *mut shmetrics_store,
) -> shmetrics_result {
    ffi_body!("shmetrics_store_open_persistent", {
        open_persistent(path, path_len, opts, out, false)
    })
}

/// The path (NULL with length 0 for the default) and options (NULL for
/// the defaults) of the open calls.
fn path_and_options(
    path: *const c_char,
    path_len: usize,
    opts: *const shmetrics_options,
) -> Result<(PathBuf, Options), FfiError> {
    let path = if path.is_null() && path_len == 0 {
        Store::default_path()
    } else {
        PathBuf::from(OsStr::from_bytes(ptr::bytes(path, path_len, "path")?))
    };
    let options = if opts.is_null() {
        Options::default()
    } else {
        Options::from(&ptr::read(opts, "opts")?)
    };
    Ok((path, options))
}

fn handle(store: Store, persistent: bool) -> shmetrics_store {
    shmetrics_store {
        store,
        render: Mutex::new(RenderCache::default()),
        persistent,
        refs: AtomicUsize::new(usize::from(persistent)),
        cache: Mutex::default(),
    }
}

/// `shmetrics_store_open_persistent`, and with `renew`
/// `shmetrics_store_reopen_persistent`.
fn open_persistent(
    path: *const c_char,
    path_len: usize,
    opts: *const shmetrics_options,
    out: *mut *mut shmetrics_store,
    renew: bool,
) -> Result<(), FfiError> {
    let out = Out::new(out, "out")?;
    out.write(std::ptr::null_mut());
    let (path, options) = path_and_options(path, path_len, opts)?;
    // A panic while the lock is held leaves the list as it was before
    // the push, so a poisoned lock is still consistent.
    let mut open = PERSISTENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let known = open
        .iter()
        .position(|(p, ro, _)| *p == path && *ro == options.read_only);
    if let Some(i) = known {
        let old = open[i].2 as *mut shmetrics_store;
        let keep = !renew
            || match ptr::object(old, "store")?.store.path_now() {
                PathNow::Same => true,
                PathNow::Gone => !options.create,
                PathNow::Other => false,
            };
        if keep {
            ptr::object(old, "store")?.refs.fetch_add(1, Relaxed);
            out.write(old);
            return Ok(());
        }
    }
    let store = Store::open(&path, &options)?;
    let handle = ptr::into_raw(Box::new(handle(store, true)));
    match known {
        Some(i) => {
            let old = std::mem::replace(&mut open[i].2, handle as usize) as *mut shmetrics_store;
            // The old file is no longer the store: its slot is of no use.
            let _ = ptr::object(old, "store")?.store.release_slot();
        }
        None => open.push((path, options.read_only, handle as usize)),
    }
    out.write(handle);
    Ok(())
}

/// The process's handle of the store at `path` (`path_len` bytes) made by
/// `shmetrics_store_open_persistent` or `shmetrics_store_reopen_persistent`
/// with this `read_only`, if there is one and the path still names the
/// file it mapped (one `fstat` and one `lstat`: call it once per request,
/// not per update); else NULL, and the caller opens the path with
/// `shmetrics_store_reopen_persistent`. Records no error.
///
/// For runtimes that cannot keep a pointer from one request to the next
/// (PHP under php-fpm): one call with plain arguments per request, and a
/// store that was removed or replaced is noticed at the next request.
#[no_mangle]
pub extern "C" fn shmetrics_store_persistent(
    path: *const c_char,
    path_len: usize,
    read_only: bool,
) -> *mut shmetrics_store {
    std::panic::catch_unwind(|| {
        let path = PathBuf::from(OsStr::from_bytes(ptr::bytes(path, path_len, "path").ok()?));
        let open = PERSISTENT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let &(_, _, addr) = open
            .iter()
            .find(|(p, ro, _)| *p == path && *ro == read_only)?;
        let handle = addr as *mut shmetrics_store;
        let same = ptr::object(handle, "store").ok()?.store.path_now() == PathNow::Same;
        same.then_some(handle)
    })
    .ok()
    .flatten()
    .unwrap_or(std::ptr::null_mut())
}

/// As `shmetrics_store_open_persistent`, except that a handle of the
/// process whose path now names another file (the store was removed and
/// created again, or replaced by a rename: `SHMETRICS_PATH_OTHER`), or no
/// file while `opts->create` is set (`SHMETRICS_PATH_GONE`), is replaced:
/// the path is opened again and later calls return the new handle, so
/// that updates land in the file the exporter serves. The old handle gives
/// up its writer slot; it stays valid (it is never freed) for a caller
/// still holding it. Without `opts->create`, a removed store keeps its
/// handle.
#[no_mangle]
pub extern "C" fn shmetrics_store_reopen_persistent(
    path: *const c_char,
    path_len: usize,
    opts: *const shmetrics_options,
    out: *mut *mut shmetrics_store,
) -> shmetrics_result {
    ffi_body!("shmetrics_store_reopen_persistent", {
        open_persistent(path, path_len, opts, out, true)
    })
}

/// Closes a store handle and frees it, releasing this handle's writer slot
/// (counter and histogram values stay counted; live gauge modes drop its
/// gauges). NULL is ignored. No other call may use the handle during or
/// after this one; handles of families and series made through it become
/// useless. A handle from `shmetrics_store_open_persistent` is ignored:
/// it lives as long as the process.
#[no_mangle]
pub extern "C" fn shmetrics_store_close(store: *mut shmetrics_store) {
    let _ = ffi_body!("shmetrics_store_close", {
        if ptr::object(store, "store").is_ok_and(|h| h.persistent) {
            return Ok(());
        }
        ptr::free(store);
        Ok(())
    });
}

/// Gives back one reference to a handle made by
/// `shmetrics_store_open_persistent` or `shmetrics_store_reopen_persistent`
/// (each call that returned it counts one). The last reference closes it
/// as `shmetrics_store_close` closes the others: takes it out of the
/// process's handles (a later `shmetrics_store_open_persistent` of its
/// path opens the file again), releases its writer slot, unmaps the file
/// and frees the handle. Any other handle is closed as by
/// `shmetrics_store_close`; NULL is ignored.
///
/// For a caller that knows that none of its code uses the handle any
/// more, during or after this call: the Lua binding, once every registry
/// of its VM follows a replaced store file, gives back the old one this
/// way. Another VM of the same process that still holds the old handle
/// keeps it until it follows too; the last one unmaps the file (and its
/// memory goes with it, if the file was removed).
#[no_mangle]
pub extern "C" fn shmetrics_store_close_persistent(store: *mut shmetrics_store) {
    let _ = ffi_body!("shmetrics_store_close_persistent", {
        let Ok(h) = ptr::object(store, "store") else {
            return Ok(());
        };
        if h.persistent {
            let mut open = PERSISTENT
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let left = h.refs.load(Relaxed).saturating_sub(1);
            h.refs.store(left, Relaxed);
            if left > 0 {
                return Ok(());
            }
            open.retain(|&(_, _, addr)| addr != store as usize);
        }
        ptr::free(store);
        Ok(())
    });
}

/// Sets every value of every series to zero, in all writer slots.
/// Families, series and handles stay valid.
#[no_mangle]
pub extern "C" fn shmetrics_store_reset(store: *const shmetrics_store) -> shmetrics_result {
    ffi_body!("shmetrics_store_reset", {
        ptr::object(store, "store")?.store.reset()?;
        Ok(())
    })
}

/// Removes every family and series (PromPHP's `wipeStorage`), in every
/// process. All family and series handles become stale: updates through
/// them fail with `SHMETRICS_STALE_HANDLE`, and families must be
/// registered again.
#[no_mangle]
pub extern "C" fn shmetrics_store_wipe(store: *const shmetrics_store) -> shmetrics_result {
    ffi_body!("shmetrics_store_wipe", {
        ptr::object(store, "store")?.store.wipe()?;
        Ok(())
    })
}

/// Gives up this handle's writer slot, for example before a worker exits
/// cleanly, so that live gauge modes drop its values at once and another
/// process may reuse the slot. The next update claims a slot again.
#[no_mangle]
pub extern "C" fn shmetrics_store_release_slot(store: *const shmetrics_store) -> shmetrics_result {
    ffi_body!("shmetrics_store_release_slot", {
        ptr::object(store, "store")?.store.release_slot()?;
        Ok(())
    })
}

/// Sets `*out` to what the store's path names now, compared with the file
/// this handle mapped: one `fstat` and one `lstat`, so call it between
/// requests, not per update. A long-lived handle whose path names another
/// file (`SHMETRICS_PATH_OTHER`: the store was removed and created again,
/// or replaced) should be closed and the path opened again, so that its
/// updates land in the file the exporter serves.
#[no_mangle]
pub extern "C" fn shmetrics_store_path_now(
    store: *const shmetrics_store,
    out: *mut shmetrics_path_now,
) -> shmetrics_result {
    ffi_body!("shmetrics_store_path_now", {
        let store = ptr::object(store, "store")?;
        let out = Out::new(out, "out")?;
        out.write(match store.store.path_now() {
            PathNow::Same => shmetrics_path_now::SHMETRICS_PATH_SAME,
            PathNow::Gone => shmetrics_path_now::SHMETRICS_PATH_GONE,
            PathNow::Other => shmetrics_path_now::SHMETRICS_PATH_OTHER,
        });
        Ok(())
    })
}

/// Fills `*out` with the store's counts and capacities.
#[no_mangle]
pub extern "C" fn shmetrics_store_stats(
    store: *const shmetrics_store,
    out: *mut shmetrics_stats,
) -> shmetrics_result {
    ffi_body!("shmetrics_store_stats", {
        let store = ptr::object(store, "store")?;
        let out = Out::new(out, "out")?;
        out.write(shmetrics_stats::from(&store.store.stats()));
        Ok(())
    })
}

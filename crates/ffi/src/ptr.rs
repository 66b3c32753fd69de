//! The only module with `unsafe` code: turning the raw pointers and lengths
//! that C callers pass into Rust values, writing through out-pointers, and
//! owning boxes handed to C.
//!
//! Every function here is safe to call from the rest of the crate, and
//! sound under the ABI contract stated in the crate docs (and in
//! `shmetrics.h`): a non-NULL pointer the caller passes points to a valid,
//! initialised value of the declared type (or `len` of them) that stays
//! valid and unchanged for the duration of the call; an out-pointer points
//! to writable memory of the declared type that no input overlaps; an
//! opaque pointer came from this library and was not freed. Only the
//! exported functions call these helpers, and only with pointers received
//! from the C caller. NULL and misaligned pointers, and lengths that no
//! allocation can have, are checked here and become errors.

use std::ffi::c_char;
use std::mem::size_of;

use crate::result::FfiError;

/// A copy of the value `p` points to.
#[inline]
pub(crate) fn read<T: Copy>(p: *const T, param: &'static str) -> Result<T, FfiError> {
    if p.is_null() {
        return Err(FfiError::Null(param));
    }
    if !p.is_aligned() {
        return Err(FfiError::Misaligned(param));
    }
    // SAFETY: `p` is non-NULL and aligned (checked above) and, by the ABI
    // contract, points to an initialised `T`. `T: Copy` (plain data), so a
    // bitwise copy is a valid value.
    Ok(unsafe { p.read() })
}

/// A shared reference to an opaque object this library handed out.
#[inline]
pub(crate) fn object<'a, T>(p: *const T, param: &'static str) -> Result<&'a T, FfiError> {
    if p.is_null() {
        return Err(FfiError::Null(param));
    }
    if !p.is_aligned() {
        return Err(FfiError::Misaligned(param));
    }
    // SAFETY: non-NULL and aligned (checked above); by the ABI contract it
    // came from `into_raw` below and was not freed, so it points to a live
    // `T`. Only shared references are made (the objects are `Sync`), and
    // the caller may not free it during the call.
    Ok(unsafe { &*p })
}

/// Hands ownership of `b` to the C caller.
pub(crate) fn into_raw<T>(b: Box<T>) -> *mut T {
    Box::into_raw(b)
}

/// Takes back and drops an object made by [`into_raw`]; NULL is ignored.
pub(crate) fn free<T>(p: *mut T) {
    if p.is_null() || !p.is_aligned() {
        return;
    }
    // SAFETY: by the ABI contract `p` came from `into_raw::<T>` and is
    // freed once, after every other call using it has returned.
    drop(unsafe { Box::from_raw(p) });
}

/// `len` bytes at `ptr`; NULL is allowed when `len` is 0.
#[inline]
pub(crate) fn bytes<'a>(
    ptr: *const c_char,
    len: usize,
    param: &'static str,
) -> Result<&'a [u8], FfiError> {
    slice(ptr.cast::<u8>(), len, param)
}

/// `len` values of `T` at `ptr`; NULL is allowed when `len` is 0.
#[inline]
pub(crate) fn slice<'a, T: Copy>(
    ptr: *const T,
    len: usize,
    param: &'static str,
) -> Result<&'a [T], FfiError> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(FfiError::Null(param));
    }
    if !ptr.is_aligned() {
        return Err(FfiError::Misaligned(param));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(FfiError::TooLong(param, len));
    }
    // SAFETY: non-NULL, aligned, and the total size fits in an isize
    // (checked above); by the ABI contract `ptr` points to `len`
    // initialised `T`s that are not written during the call. `T: Copy`
    // is plain data.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// An out-pointer, checked for NULL and alignment.
#[derive(Debug)]
pub(crate) struct Out<T: Copy> {
    p: *mut T,
}

impl<T: Copy> Out<T> {
    #[inline]
    pub(crate) fn new(p: *mut T, param: &'static str) -> Result<Out<T>, FfiError> {
        if p.is_null() {
            return Err(FfiError::Null(param));
        }
        if !p.is_aligned() {
            return Err(FfiError::Misaligned(param));
        }
        Ok(Out { p })
    }

    /// Stores `v`; the previous contents (possibly uninitialised) are
    /// neither read nor dropped.
    #[inline]
    pub(crate) fn write(&self, v: T) {
        // SAFETY: non-NULL and aligned (checked in `new`); by the ABI
        // contract it points to writable memory for a `T` that no input of
        // the call overlaps. `write` does not read or drop the old value.
        unsafe { self.p.write(v) }
    }
}

/// A caller's byte buffer: `cap` bytes at `ptr` (NULL allowed when `cap`
/// is 0, to ask for the size).
#[derive(Debug)]
pub(crate) struct OutBuf {
    ptr: *mut u8,
    cap: usize,
}

impl OutBuf {
    pub(crate) fn new(
        ptr: *mut c_char,
        cap: usize,
        param: &'static str,
    ) -> Result<OutBuf, FfiError> {
        if cap > 0 && ptr.is_null() {
            return Err(FfiError::Null(param));
        }
        if cap > isize::MAX as usize {
            return Err(FfiError::TooLong(param, cap));
        }
        Ok(OutBuf {
            ptr: ptr.cast::<u8>(),
            cap,
        })
    }

    /// The buffer's size.
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// Copies the first `min(data.len(), cap)` bytes of `data`; returns how
    /// many were copied.
    pub(crate) fn write(&self, data: &[u8]) -> usize {
        let n = data.len().min(self.cap);
        if n > 0 {
            // SAFETY: `n > 0` so `cap > 0` and `ptr` is non-NULL (checked in
            // `new`); by the ABI contract `ptr` is writable for `cap >= n`
            // bytes and overlaps no input, in particular not `data`, which
            // is memory this library owns. Bytes have no alignment needs.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, n) };
        }
        n
    }

    /// Copies as much of `data` as fits with a terminating NUL after it
    /// (nothing when `cap` is 0); returns whether all of it fit.
    pub(crate) fn write_c_string(&self, data: &[u8]) -> bool {
        if self.cap == 0 {
            return false; // not even the NUL fits
        }
        let n = self.write(&data[..data.len().min(self.cap - 1)]);
        // SAFETY: `n <= cap - 1`, so `ptr + n` is inside the buffer, which
        // is non-NULL because `cap > 0` (see `write`).
        unsafe { self.ptr.add(n).write(0) };
        n == data.len()
    }
}

/// The NUL-terminated string at `p`, for tests.
#[cfg(test)]
pub(crate) fn c_str<'a>(p: *const c_char) -> &'a str {
    assert!(!p.is_null());
    // SAFETY: tests pass only pointers to NUL-terminated strings that
    // outlive the returned reference (static strings, or test buffers).
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap()
}

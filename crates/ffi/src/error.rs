//! The per-thread last error message, and the panic boundary every
//! exported function runs its body in. The result codes and the error
//! type are in `result`.

use std::cell::RefCell;
use std::ffi::c_char;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::ptr::{Out, OutBuf};
pub use crate::result::shmetrics_result;
use crate::result::shmetrics_result::*;
pub(crate) use crate::result::FfiError;

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Records `e` as this thread's last error; returns its code.
#[cold]
#[inline(never)]
fn record(function: &str, e: FfiError) -> shmetrics_result {
    set_last_error(|s| e.write_message(function, s));
    e.code()
}

fn set_last_error(f: impl FnOnce(&mut String)) {
    // `try_with`: during thread teardown the slot may be gone; the code
    // still reaches the caller.
    let _ = LAST_ERROR.try_with(|cell| {
        if let Ok(mut s) = cell.try_borrow_mut() {
            s.clear();
            f(&mut s);
        }
    });
}

#[cold]
#[inline(never)]
pub(crate) fn panicked(function: &str, payload: Box<dyn std::any::Any + Send>) -> shmetrics_result {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    set_last_error(|s| {
        let _ = write!(
            s,
            "{function}: internal error (panic): {what}; this is a bug in shmetrics, please report it"
        );
    });
    // Dropping the payload could itself panic; never let that escape.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    SHMETRICS_PANIC
}

/// Runs the body of exported function `function` behind the panic
/// boundary: `Ok` becomes `SHMETRICS_OK`; an error becomes its code and
/// this thread's last error message; a panic becomes `SHMETRICS_PANIC`.
///
/// `AssertUnwindSafe` is justified because a panic ends the call: the
/// store's lock guard unlocks while unwinding, the render cache recovers
/// from a poisoned mutex by starting afresh, and nothing else the closure
/// touches outlives the call.
#[inline(always)]
pub(crate) fn run(
    function: &'static str,
    body: impl FnOnce() -> Result<(), FfiError>,
) -> shmetrics_result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SHMETRICS_OK,
        Ok(Err(e)) => record(function, e),
        Err(payload) => panicked(function, payload),
    }
}

/// The panic boundary of an exported function: `ffi_body!("name", { ...;
/// Ok(()) })` runs the block (whose `?` takes store errors and `FfiError`s)
/// and returns a `shmetrics_result`.
macro_rules! ffi_body {
    ($function:literal, $body:block) => {
        $crate::error::run($function, move || -> Result<(), $crate::error::FfiError> {
            $body
        })
    };
}
pub(crate) use ffi_body;

/// A fixed, NUL-terminated description of result code `code`, for any
/// value (unknown codes get a generic text). The string is static: do not
/// free it.
#[no_mangle]
pub extern "C" fn shmetrics_strerror(code: u32) -> *const c_char {
    match shmetrics_result::from_u32(code) {
        Some(c) => c.describe().as_ptr(),
        None => c"unknown shmetrics result code".as_ptr(),
    }
}

/// Copies the message of the last failed call on the calling thread into
/// `buf`, followed by a NUL, and stores its length (without the NUL) in
/// `*len`. The message names the store file where one is involved and
/// says what to fix. Successful calls leave it as it was; with no failure
/// yet it is empty.
///
/// Needs `cap >= *len + 1`; otherwise returns `SHMETRICS_BUFFER_TOO_SMALL`
/// after copying as much as fits (NUL-terminated, when `cap > 0`). `buf`
/// may be NULL when `cap` is 0, to ask for the length. This function never
/// changes the last error itself.
#[no_mangle]
pub extern "C" fn shmetrics_last_error(
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> shmetrics_result {
    let result = catch_unwind(|| {
        let len = match Out::new(len, "len") {
            Ok(l) => l,
            Err(e) => return e.code(),
        };
        let buf = match OutBuf::new(buf, cap, "buf") {
            Ok(b) => b,
            Err(e) => return e.code(),
        };
        LAST_ERROR
            .try_with(|cell| {
                let s = cell.borrow();
                len.write(s.len());
                if buf.write_c_string(s.as_bytes()) {
                    SHMETRICS_OK
                } else {
                    SHMETRICS_BUFFER_TOO_SMALL
                }
            })
            .unwrap_or_else(|_| {
                len.write(0);
                if buf.write_c_string(b"") {
                    SHMETRICS_OK
                } else {
                    SHMETRICS_BUFFER_TOO_SMALL
                }
            })
    });
    result.unwrap_or(SHMETRICS_PANIC)
}

#[cfg(test)]
pub(crate) fn last_error_string() -> String {
    LAST_ERROR.with(|c| c.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_describe() {
        let mut seen = std::collections::HashSet::new();
        for c in shmetrics_result::ALL {
            assert!(seen.insert(c as u32), "duplicate {c:?}");
            assert_eq!(shmetrics_result::from_u32(c as u32), Some(c));
            assert!(!c.describe().to_bytes().is_empty());
            let s = crate::ptr::c_str(shmetrics_strerror(c as u32));
            assert_eq!(s, c.describe().to_str().unwrap());
        }
        assert_eq!(shmetrics_result::from_u32(18), None);
        assert_eq!(
            crate::ptr::c_str(shmetrics_strerror(12345)),
            "unknown shmetrics result code"
        );
        assert_eq!(SHMETRICS_OK as u32, 0);
        assert_eq!(SHMETRICS_NULL_PARAMETER as u32, 100);
        assert_eq!(SHMETRICS_PANIC as u32, 103);
    }

    #[test]
    fn panics_become_a_code_and_a_message() {
        let r = run("shmetrics_test", || panic!("boom {}", 42));
        assert_eq!(r, SHMETRICS_PANIC);
        let msg = last_error_string();
        assert!(
            msg.contains("shmetrics_test") && msg.contains("boom 42"),
            "{msg}"
        );
        let r = run("shmetrics_test", || std::panic::panic_any(7u8));
        assert_eq!(r, SHMETRICS_PANIC);
        assert!(last_error_string().contains("(no message)"));
    }

    #[test]
    fn last_error_copies_and_reports_the_size() {
        let r = run("shmetrics_test", || Err(FfiError::Null("thing")));
        assert_eq!(r, SHMETRICS_NULL_PARAMETER);
        let want = "shmetrics_test: argument `thing` is NULL";
        let mut len = 0usize;
        // Size query.
        assert_eq!(
            shmetrics_last_error(std::ptr::null_mut(), 0, &mut len),
            SHMETRICS_BUFFER_TOO_SMALL
        );
        assert_eq!(len, want.len());
        // Too small: truncated and NUL-terminated.
        let mut small = [0x55 as c_char; 8];
        assert_eq!(
            shmetrics_last_error(small.as_mut_ptr(), small.len(), &mut len),
            SHMETRICS_BUFFER_TOO_SMALL
        );
        assert_eq!(crate::ptr::c_str(small.as_ptr()), &want[..7]);
        // Exactly enough.
        let mut buf = vec![0x55 as c_char; want.len() + 1];
        assert_eq!(
            shmetrics_last_error(buf.as_mut_ptr(), buf.len(), &mut len),
            SHMETRICS_OK
        );
        assert_eq!(crate::ptr::c_str(buf.as_ptr()), want);
        // NULL arguments are refused without touching the message.
        assert_eq!(
            shmetrics_last_error(buf.as_mut_ptr(), buf.len(), std::ptr::null_mut()),
            SHMETRICS_NULL_PARAMETER
        );
        assert_eq!(
            shmetrics_last_error(std::ptr::null_mut(), 10, &mut len),
            SHMETRICS_NULL_PARAMETER
        );
        assert_eq!(last_error_string(), want);
        // Success leaves the message alone.
        assert_eq!(run("shmetrics_test", || Ok(())), SHMETRICS_OK);
        assert_eq!(last_error_string(), want);
    }

    #[test]
    fn last_error_is_per_thread() {
        let _ = run("shmetrics_test", || Err(FfiError::Utf8("x")));
        let other = std::thread::spawn(last_error_string).join().unwrap();
        assert_eq!(other, "");
        assert!(last_error_string().contains("UTF-8"));
    }
}

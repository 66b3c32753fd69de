//! Result codes, the per-thread last error message, and the panic boundary
//! every exported function runs its body in.

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};

use shmetrics_core::ErrorKind;

use crate::ptr::{Out, OutBuf};

/// What a call returns: `SHMETRICS_OK` (0), or the reason it failed.
///
/// The numeric values are stable. Codes 1 to 98 name the store's error
/// kinds, codes from 100 the ABI's own errors. After a failure,
/// `shmetrics_last_error` gives the message, which says what to fix;
/// `shmetrics_strerror` gives a fixed description of a code.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum shmetrics_result {
    /// Success.
    SHMETRICS_OK = 0,
    /// The store file cannot be created, opened, sized or mapped.
    SHMETRICS_IO = 1,
    /// The file is not a shmetrics store; it was left untouched.
    SHMETRICS_FOREIGN_FILE = 2,
    /// The file was written by an incompatible layout version.
    SHMETRICS_VERSION_MISMATCH = 3,
    /// The file is shorter than its header says.
    SHMETRICS_TRUNCATED = 4,
    /// The file is corrupt, or a handle points outside the store.
    SHMETRICS_CORRUPT = 5,
    /// A metric or label name breaks the Prometheus rules or is reserved.
    SHMETRICS_INVALID_NAME = 6,
    /// The number of label values differs from the family's label names.
    SHMETRICS_LABEL_COUNT = 7,
    /// A value is NaN, or a counter was given a negative or infinite amount.
    SHMETRICS_INVALID_VALUE = 8,
    /// Options are out of range (buckets not increasing, a zero capacity,
    /// an unknown kind or gauge mode, ...).
    SHMETRICS_INVALID_OPTIONS = 9,
    /// A family of that name is registered with another definition.
    SHMETRICS_CONFLICT = 10,
    /// The store has no room for another family.
    SHMETRICS_STORE_FULL = 11,
    /// A new series does not fit. `shmetrics_series_get` still fills in the
    /// family's overflow series, which records under the label
    /// `shmetrics_overflow="true"`.
    SHMETRICS_OVERFLOW = 12,
    /// An update of the wrong type (a gauge set on a counter series).
    SHMETRICS_WRONG_TYPE = 13,
    /// The handle is from before a wipe, from another store handle, or not
    /// a handle at all: get it again.
    SHMETRICS_STALE_HANDLE = 14,
    /// The store was opened read-only and was asked to write.
    SHMETRICS_READ_ONLY = 15,
    /// No consistent snapshot could be taken: the store was wiped
    /// repeatedly while reading. Try again.
    SHMETRICS_BUSY = 16,
    /// The store path is a symbolic link or not a regular file, or the
    /// file's owner or group-write permission is not one the options
    /// trust (`shmetrics_options.owner` and `.group`).
    SHMETRICS_UNTRUSTED = 17,
    /// An error of a kind this version of the ABI has no code for yet; see
    /// `shmetrics_last_error`.
    SHMETRICS_ERROR = 99,
    /// A required pointer argument is NULL.
    SHMETRICS_NULL_PARAMETER = 100,
    /// A string argument is not valid UTF-8.
    SHMETRICS_INVALID_UTF8 = 101,
    /// The caller's buffer is too small; the length out-parameter says how
    /// many bytes are needed.
    SHMETRICS_BUFFER_TOO_SMALL = 102,
    /// The library hit an internal bug (a Rust panic) and did not finish
    /// the call. Please report it with the last error message.
    SHMETRICS_PANIC = 103,
    /// An argument is out of range: an unknown format, a misaligned
    /// pointer, a length no buffer can have.
    SHMETRICS_INVALID_ARGUMENT = 104,
}

use shmetrics_result::*;

impl shmetrics_result {
    /// The code for a store error kind.
    pub fn from_kind(kind: ErrorKind) -> shmetrics_result {
        match kind {
            ErrorKind::Io => SHMETRICS_IO,
            ErrorKind::ForeignFile => SHMETRICS_FOREIGN_FILE,
            ErrorKind::VersionMismatch => SHMETRICS_VERSION_MISMATCH,
            ErrorKind::Truncated => SHMETRICS_TRUNCATED,
            ErrorKind::Corrupt => SHMETRICS_CORRUPT,
            ErrorKind::InvalidName => SHMETRICS_INVALID_NAME,
            ErrorKind::LabelCount => SHMETRICS_LABEL_COUNT,
            ErrorKind::InvalidValue => SHMETRICS_INVALID_VALUE,
            ErrorKind::InvalidOptions => SHMETRICS_INVALID_OPTIONS,
            ErrorKind::Conflict => SHMETRICS_CONFLICT,
            ErrorKind::StoreFull => SHMETRICS_STORE_FULL,
            ErrorKind::Overflow => SHMETRICS_OVERFLOW,
            ErrorKind::WrongType => SHMETRICS_WRONG_TYPE,
            ErrorKind::StaleHandle => SHMETRICS_STALE_HANDLE,
            ErrorKind::ReadOnly => SHMETRICS_READ_ONLY,
            ErrorKind::Busy => SHMETRICS_BUSY,
            ErrorKind::Untrusted => SHMETRICS_UNTRUSTED,
            _ => SHMETRICS_ERROR,
        }
    }

    /// Every code, for tests and bindings.
    ///
    /// cbindgen:ignore
    pub const ALL: [shmetrics_result; 24] = [
        SHMETRICS_OK,
        SHMETRICS_IO,
        SHMETRICS_FOREIGN_FILE,
        SHMETRICS_VERSION_MISMATCH,
        SHMETRICS_TRUNCATED,
        SHMETRICS_CORRUPT,
        SHMETRICS_INVALID_NAME,
        SHMETRICS_LABEL_COUNT,
        SHMETRICS_INVALID_VALUE,
        SHMETRICS_INVALID_OPTIONS,
        SHMETRICS_CONFLICT,
        SHMETRICS_STORE_FULL,
        SHMETRICS_OVERFLOW,
        SHMETRICS_WRONG_TYPE,
        SHMETRICS_STALE_HANDLE,
        SHMETRICS_READ_ONLY,
        SHMETRICS_BUSY,
        SHMETRICS_UNTRUSTED,
        SHMETRICS_ERROR,
        SHMETRICS_NULL_PARAMETER,
        SHMETRICS_INVALID_UTF8,
        SHMETRICS_BUFFER_TOO_SMALL,
        SHMETRICS_PANIC,
        SHMETRICS_INVALID_ARGUMENT,
    ];

    /// The code with this number, if there is one.
    pub fn from_u32(code: u32) -> Option<shmetrics_result> {
        Self::ALL.into_iter().find(|c| *c as u32 == code)
    }

    /// A fixed description of the code.
    pub fn describe(self) -> &'static CStr {
        match self {
            SHMETRICS_OK => c"success",
            SHMETRICS_IO => c"I/O error",
            SHMETRICS_FOREIGN_FILE => c"not a shmetrics store",
            SHMETRICS_VERSION_MISMATCH => c"incompatible store layout version",
            SHMETRICS_TRUNCATED => c"store file is truncated",
            SHMETRICS_CORRUPT => c"store file is corrupt",
            SHMETRICS_INVALID_NAME => c"invalid name",
            SHMETRICS_LABEL_COUNT => c"wrong number of label values",
            SHMETRICS_INVALID_VALUE => c"invalid value",
            SHMETRICS_INVALID_OPTIONS => c"invalid options",
            SHMETRICS_CONFLICT => c"conflicting family definition",
            SHMETRICS_STORE_FULL => c"store is full",
            SHMETRICS_OVERFLOW => c"series capacity exceeded",
            SHMETRICS_WRONG_TYPE => c"wrong metric type",
            SHMETRICS_STALE_HANDLE => c"stale handle",
            SHMETRICS_READ_ONLY => c"store is opened read-only",
            SHMETRICS_BUSY => c"store is busy",
            SHMETRICS_UNTRUSTED => c"untrusted store file",
            SHMETRICS_ERROR => c"error",
            SHMETRICS_NULL_PARAMETER => c"a required pointer argument is NULL",
            SHMETRICS_INVALID_UTF8 => c"a string argument is not valid UTF-8",
            SHMETRICS_BUFFER_TOO_SMALL => c"buffer too small",
            SHMETRICS_PANIC => c"internal error (panic) in shmetrics",
            SHMETRICS_INVALID_ARGUMENT => c"an argument is out of range",
        }
    }
}

/// Why a call failed, before it is turned into a code and a message.
#[derive(Debug)]
pub(crate) enum FfiError {
    /// An error from the store.
    Core(shmetrics_core::Error),
    /// The named pointer argument is NULL.
    Null(&'static str),
    /// The named pointer argument is not aligned for its type.
    Misaligned(&'static str),
    /// The named length argument is larger than any buffer can be.
    TooLong(&'static str, usize),
    /// The named string argument is not UTF-8.
    Utf8(&'static str),
    /// Any other code, with its message.
    Other(shmetrics_result, String),
}

impl From<shmetrics_core::Error> for FfiError {
    #[cold]
    fn from(e: shmetrics_core::Error) -> FfiError {
        FfiError::Core(e)
    }
}

impl FfiError {
    pub(crate) fn code(&self) -> shmetrics_result {
        match self {
            FfiError::Core(e) => shmetrics_result::from_kind(e.kind()),
            FfiError::Null(_) => SHMETRICS_NULL_PARAMETER,
            FfiError::Misaligned(_) | FfiError::TooLong(..) => SHMETRICS_INVALID_ARGUMENT,
            FfiError::Utf8(_) => SHMETRICS_INVALID_UTF8,
            FfiError::Other(code, _) => *code,
        }
    }

    fn write_message(&self, function: &str, out: &mut String) {
        let _ = match self {
            FfiError::Core(e) => write!(out, "{e}"),
            FfiError::Null(p) => write!(out, "{function}: argument `{p}` is NULL"),
            FfiError::Misaligned(p) => {
                write!(
                    out,
                    "{function}: argument `{p}` is not aligned for its type"
                )
            }
            FfiError::TooLong(p, n) => {
                write!(out, "{function}: `{p}` has an impossible length of {n}")
            }
            FfiError::Utf8(p) => write!(out, "{function}: `{p}` is not valid UTF-8"),
            FfiError::Other(_, msg) => write!(out, "{msg}"),
        };
    }
}

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
fn panicked(function: &str, payload: Box<dyn std::any::Any + Send>) -> shmetrics_result {
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
    fn every_known_kind_has_its_own_code() {
        let kinds = [
            ErrorKind::Io,
            ErrorKind::ForeignFile,
            ErrorKind::VersionMismatch,
            ErrorKind::Truncated,
            ErrorKind::Corrupt,
            ErrorKind::InvalidName,
            ErrorKind::LabelCount,
            ErrorKind::InvalidValue,
            ErrorKind::InvalidOptions,
            ErrorKind::Conflict,
            ErrorKind::StoreFull,
            ErrorKind::Overflow,
            ErrorKind::WrongType,
            ErrorKind::StaleHandle,
            ErrorKind::ReadOnly,
            ErrorKind::Busy,
            ErrorKind::Untrusted,
        ];
        let codes: Vec<u32> = kinds
            .iter()
            .map(|k| shmetrics_result::from_kind(*k) as u32)
            .collect();
        // Stable numbering: the kinds in declaration order are 1..=17.
        assert_eq!(codes, (1..=17).collect::<Vec<u32>>());
    }

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

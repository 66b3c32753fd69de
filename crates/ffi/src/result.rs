//! Result codes, and the error a call fails with before it becomes a code
//! and a message.

use std::ffi::CStr;
use std::fmt::Write as _;

use shmetrics_core::ErrorKind;

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

    pub(crate) fn write_message(&self, function: &str, out: &mut String) {
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
}

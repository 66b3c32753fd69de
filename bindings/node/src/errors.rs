//! Core errors as JavaScript errors. napi-rs throws a plain `Error` whose
//! `code` is one of its own statuses, so the core's error kind travels at
//! the head of the message, `[LabelCount] expected 2 label values, got 1`;
//! `lib/errors.js` takes it off again into the package's `ShmetricsError`
//! (`err.code === 'LabelCount'`). Nothing else reads the message.

use shmetrics_core::{Error, ErrorKind};

/// The result every exported function returns.
pub type JsResult<T> = napi::Result<T>;

/// The name of an error kind, as JavaScript code sees it in `err.code`.
pub(crate) fn code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Io => "Io",
        ErrorKind::ForeignFile => "ForeignFile",
        ErrorKind::VersionMismatch => "VersionMismatch",
        ErrorKind::Truncated => "Truncated",
        ErrorKind::Corrupt => "Corrupt",
        ErrorKind::InvalidName => "InvalidName",
        ErrorKind::LabelCount => "LabelCount",
        ErrorKind::InvalidValue => "InvalidValue",
        ErrorKind::InvalidOptions => "InvalidOptions",
        ErrorKind::Conflict => "Conflict",
        ErrorKind::StoreFull => "StoreFull",
        ErrorKind::Overflow => "Overflow",
        ErrorKind::WrongType => "WrongType",
        ErrorKind::StaleHandle => "StaleHandle",
        ErrorKind::ReadOnly => "ReadOnly",
        ErrorKind::Busy => "Busy",
        ErrorKind::Untrusted => "Untrusted",
        _ => "Error",
    }
}

/// A core error as a JavaScript error.
pub fn to_js(e: Error) -> napi::Error {
    napi::Error::from_reason(format!("[{}] {e}", code(e.kind())))
}

/// An argument this binding refuses before the core sees it.
pub fn invalid(message: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(format!("[InvalidOptions] {message}"))
}

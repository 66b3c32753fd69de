//! The one error type of the store, with a kind that callers can match on.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::handle::Series;

/// What went wrong. Every variant's doc says when it occurs.
///
/// Bindings map kinds to their own exception classes (for example
/// `InvalidName` to `ValueError`); the C ABI maps each kind to a stable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Occurs when the store file cannot be created, opened, sized or mapped.
    Io,
    /// Occurs when a file does not start with the shmetrics magic number: it
    /// is some other file, and it is left untouched.
    ForeignFile,
    /// Occurs when the file was written by an incompatible layout version.
    VersionMismatch,
    /// Occurs when the file is shorter than its header says it must be.
    Truncated,
    /// Occurs when the header checksum does not match, or a record points
    /// outside its region.
    Corrupt,
    /// Occurs when a metric or label name breaks the Prometheus data-model
    /// rules, or uses a reserved name.
    InvalidName,
    /// Occurs when the number of label values differs from the family's
    /// number of label names.
    LabelCount,
    /// Occurs when a value is NaN, or a counter is given a negative or
    /// infinite amount.
    InvalidValue,
    /// Occurs when options are out of range: buckets not increasing, a
    /// capacity of zero, and the like.
    InvalidOptions,
    /// Occurs when a family of the same name is already registered with a
    /// different type, labels, buckets or mode.
    Conflict,
    /// Occurs when the store has no room left for a new family.
    StoreFull,
    /// Occurs when a new label set does not fit (the family's or the store's
    /// series limit, the label bytes or the value cells are exhausted). The
    /// error carries the family's overflow series, see
    /// [`Error::overflow_series`].
    Overflow,
    /// Occurs when an update is made through a handle of the wrong type (a
    /// gauge `set` on a counter series).
    WrongType,
    /// Occurs when a handle was made before the store was wiped, or by
    /// another `Store` instance. Look the series up again.
    StaleHandle,
    /// Occurs when a store opened read-only is asked to write.
    ReadOnly,
    /// Occurs when a consistent snapshot could not be taken because the store
    /// was wiped repeatedly while reading.
    Busy,
    /// Occurs when the store path is a symbolic link or not a regular
    /// file, or the file is owned by a user, or writable by a group, that
    /// the options do not name (see [`crate::Options::owner`]).
    Untrusted,
}

impl ErrorKind {
    fn describe(self) -> &'static str {
        match self {
            ErrorKind::Io => "I/O error",
            ErrorKind::ForeignFile => "not a shmetrics store",
            ErrorKind::VersionMismatch => "incompatible store layout version",
            ErrorKind::Truncated => "store file is truncated",
            ErrorKind::Corrupt => "store file is corrupt",
            ErrorKind::InvalidName => "invalid name",
            ErrorKind::LabelCount => "wrong number of label values",
            ErrorKind::InvalidValue => "invalid value",
            ErrorKind::InvalidOptions => "invalid options",
            ErrorKind::Conflict => "conflicting family definition",
            ErrorKind::StoreFull => "store is full",
            ErrorKind::Overflow => "series capacity exceeded",
            ErrorKind::WrongType => "wrong metric type",
            ErrorKind::StaleHandle => "stale series handle",
            ErrorKind::ReadOnly => "store is opened read-only",
            ErrorKind::Busy => "store is busy",
            ErrorKind::Untrusted => "untrusted store file",
        }
    }
}

/// An error from the store: a [`ErrorKind`], a message saying what to fix,
/// and the store file's path where one is involved.
#[derive(Clone)]
pub struct Error {
    // Boxed, so that `Result<(), Error>` is one word and the hot path's
    // `Ok(())` comes back in a register.
    inner: Box<Inner>,
}

#[derive(Clone)]
struct Inner {
    kind: ErrorKind,
    message: String,
    path: Option<PathBuf>,
    overflow: Option<Series>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        let message = message.into();
        Error {
            inner: Box::new(Inner {
                kind,
                message,
                path: None,
                overflow: None,
            }),
        }
    }

    pub(crate) fn with_path(mut self, path: &Path) -> Error {
        self.inner.path = Some(path.to_path_buf());
        self
    }

    pub(crate) fn io(path: &Path, what: &str, err: &std::io::Error) -> Error {
        Error::new(ErrorKind::Io, format!("{what}: {err}")).with_path(path)
    }

    pub(crate) fn overflow(message: String, series: Series) -> Error {
        let inner = Inner {
            kind: ErrorKind::Overflow,
            message,
            path: None,
            overflow: Some(series),
        };
        Error {
            inner: Box::new(inner),
        }
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The message alone, without the kind or path.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The store file the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// For [`ErrorKind::Overflow`]: the family's overflow series. Updates
    /// made through it are counted under the family's overflow label set, so
    /// nothing is lost while the caller reports the problem.
    pub fn overflow_series(&self) -> Option<Series> {
        self.inner.overflow
    }

    /// The error with its overflow series passed through `f`.
    pub(crate) fn map_overflow(mut self, f: impl FnOnce(Series) -> Series) -> Error {
        if let Some(s) = self.inner.overflow {
            self.inner.overflow = Some(f(s));
        }
        self
    }
}

/// A handle to a series that expired (its family has a TTL) or was deleted
/// since the handle was made.
#[cold]
#[inline(never)]
pub(crate) fn expired() -> Error {
    Error::new(
        ErrorKind::StaleHandle,
        "the series expired (its family has a TTL) or was deleted since this handle was made; \
         look the series up again",
    )
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.inner.path {
            write!(f, "{}: ", path.display())?;
        }
        write!(f, "{}: {}", self.inner.kind.describe(), self.inner.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("message", &self.inner.message)
            .field("path", &self.inner.path)
            .finish()
    }
}

impl std::error::Error for Error {}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

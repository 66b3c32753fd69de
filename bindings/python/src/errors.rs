//! The package's exceptions, and the mapping from the store's error kinds
//! to them. Each one subclasses the built-in exception a Python user would
//! catch for that kind of mistake (`ValueError` for bad names, labels and
//! values, `TypeError` for a wrong metric type, `OSError` for the store
//! file), so code written for prometheus_client's errors keeps working.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use shmetrics_core::{Error, ErrorKind};

create_exception!(
    shmetrics,
    InvalidNameError,
    PyValueError,
    "A metric, label or unit name breaks the Prometheus naming rules, or is reserved."
);
create_exception!(
    shmetrics,
    LabelError,
    PyValueError,
    "Label values do not match the metric's label names."
);
create_exception!(
    shmetrics,
    InvalidValueError,
    PyValueError,
    "A value is NaN, or a counter was given a negative or infinite amount."
);
create_exception!(
    shmetrics,
    InvalidOptionsError,
    PyValueError,
    "An option is out of range (buckets not increasing, an unknown gauge mode, a zero capacity)."
);
create_exception!(
    shmetrics,
    ConflictError,
    PyValueError,
    "A metric of the same name exists in the store with another type, labels, buckets, unit or mode."
);
create_exception!(
    shmetrics,
    CapacityError,
    PyValueError,
    "The store has no room for another metric; create it with larger capacities."
);
create_exception!(
    shmetrics,
    WrongTypeError,
    PyTypeError,
    "An update does not fit the metric's type."
);
create_exception!(
    shmetrics,
    StaleHandleError,
    PyRuntimeError,
    "The metric was created before the store was wiped; create it again."
);
create_exception!(
    shmetrics,
    StoreFileError,
    PyOSError,
    "The store file cannot be used: missing, unreadable, not a store, truncated, corrupt, from another layout version, or opened read-only."
);
create_exception!(
    shmetrics,
    NotConfiguredError,
    PyRuntimeError,
    "No store is configured: set SHMETRICS_STORE or call shmetrics.configure(path=...)."
);

/// The Python exception for a store error. The message is the store's own:
/// it says what went wrong, what to fix and, for file problems, which file.
pub(crate) fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::InvalidName => InvalidNameError::new_err(msg),
        ErrorKind::LabelCount => LabelError::new_err(msg),
        ErrorKind::InvalidValue => InvalidValueError::new_err(msg),
        ErrorKind::InvalidOptions => InvalidOptionsError::new_err(msg),
        ErrorKind::Conflict => ConflictError::new_err(msg),
        ErrorKind::StoreFull | ErrorKind::Overflow => CapacityError::new_err(msg),
        ErrorKind::WrongType => WrongTypeError::new_err(msg),
        ErrorKind::StaleHandle => StaleHandleError::new_err(msg),
        // Io, ForeignFile, VersionMismatch, Truncated, Corrupt, ReadOnly,
        // Busy, and any kind added later.
        _ => StoreFileError::new_err(msg),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("InvalidNameError", py.get_type::<InvalidNameError>())?;
    m.add("LabelError", py.get_type::<LabelError>())?;
    m.add("InvalidValueError", py.get_type::<InvalidValueError>())?;
    m.add("InvalidOptionsError", py.get_type::<InvalidOptionsError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("CapacityError", py.get_type::<CapacityError>())?;
    m.add("WrongTypeError", py.get_type::<WrongTypeError>())?;
    m.add("StaleHandleError", py.get_type::<StaleHandleError>())?;
    m.add("StoreFileError", py.get_type::<StoreFileError>())?;
    m.add("NotConfiguredError", py.get_type::<NotConfiguredError>())?;
    Ok(())
}

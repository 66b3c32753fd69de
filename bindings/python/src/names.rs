//! Names: prometheus_client's escaping schemes (the core's, see
//! `shmetrics_core::Escaping`) and its legacy validation switch. The store
//! takes UTF-8 names, as prometheus_client 0.26 does by default; with
//! `enable_legacy_validation()` (or `PROMETHEUS_LEGACY_NAME_VALIDATION`)
//! the binding refuses names outside the legacy set before they reach it.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use shmetrics_core::{is_legacy_label_name, is_legacy_metric_name, Escaping};

use crate::errors::InvalidNameError;

/// Whether names outside the legacy set are refused.
static LEGACY: AtomicBool = AtomicBool::new(false);

/// Turns prometheus_client's legacy name validation on or off.
#[pyfunction]
pub(crate) fn set_legacy_validation(on: bool) {
    LEGACY.store(on, Relaxed);
}

/// Whether legacy name validation is on.
#[pyfunction]
pub(crate) fn legacy_validation() -> bool {
    LEGACY.load(Relaxed)
}

/// Refuses, under legacy validation, a metric name or label names outside
/// the legacy set (`what` names them in the message).
pub(crate) fn check_legacy(metric: Option<&str>, labels: &[&str], what: &str) -> PyResult<()> {
    if !LEGACY.load(Relaxed) {
        return Ok(());
    }
    if let Some(m) = metric.filter(|m| !is_legacy_metric_name(m)) {
        return Err(InvalidNameError::new_err(format!(
            "invalid metric name {m:?}: legacy validation is on, so it must match \
             [a-zA-Z_:][a-zA-Z0-9_:]*"
        )));
    }
    if let Some(l) = labels.iter().find(|l| !is_legacy_label_name(l)) {
        return Err(InvalidNameError::new_err(format!(
            "invalid {what} {l:?}: legacy validation is on, so it must match [a-zA-Z_][a-zA-Z0-9_]*"
        )));
    }
    Ok(())
}

fn scheme(escaping: &str) -> PyResult<Escaping> {
    Escaping::parse(escaping).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown escaping {escaping:?}: one of allow-utf-8, underscores, dots, values"
        ))
    })
}

/// A metric name escaped as prometheus_client's `escape_metric_name` does
/// (unquoted).
#[pyfunction]
pub(crate) fn escape_metric_name(name: &str, escaping: &str) -> PyResult<String> {
    Ok(shmetrics_core::escape_metric_name(name, scheme(escaping)?).into_owned())
}

/// A label name escaped as prometheus_client's `escape_label_name` does
/// (unquoted).
#[pyfunction]
pub(crate) fn escape_label_name(name: &str, escaping: &str) -> PyResult<String> {
    Ok(shmetrics_core::escape_label_name(name, scheme(escaping)?).into_owned())
}

/// Whether a metric name is in the legacy set `[a-zA-Z_:][a-zA-Z0-9_:]*`.
#[pyfunction]
pub(crate) fn is_legacy_metric(name: &str) -> bool {
    is_legacy_metric_name(name)
}

/// Whether a label name is in the legacy set `[a-zA-Z_][a-zA-Z0-9_]*`.
#[pyfunction]
pub(crate) fn is_legacy_label(name: &str) -> bool {
    is_legacy_label_name(name)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_legacy_validation, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_validation, m)?)?;
    m.add_function(wrap_pyfunction!(escape_metric_name, m)?)?;
    m.add_function(wrap_pyfunction!(escape_label_name, m)?)?;
    m.add_function(wrap_pyfunction!(is_legacy_metric, m)?)?;
    m.add_function(wrap_pyfunction!(is_legacy_label, m)?)?;
    Ok(())
}

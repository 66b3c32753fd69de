//! Names: prometheus_client's legacy validation switch. The store
//! takes UTF-8 names, as prometheus_client 0.26 does by default; with
//! `enable_legacy_validation()` (or `PROMETHEUS_LEGACY_NAME_VALIDATION`)
//! the binding refuses names outside the legacy set before they reach it.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use pyo3::prelude::*;
use shmetrics_core::NameRules;

use crate::errors::{to_py, InvalidNameError};

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

/// The core's name rules for this process's registrations and exemplars.
pub(crate) fn rules() -> NameRules {
    if LEGACY.load(Relaxed) {
        NameRules::Legacy
    } else {
        NameRules::Utf8
    }
}

/// Checks a metric's names before a registry keeps them: `name` (the
/// part given, which prometheus_client refuses empty whatever the
/// namespace), and under legacy validation the full name and the label
/// names (the core's [`NameRules::Legacy`]). Under the default rules the
/// store checks the rest.
pub(crate) fn check_given(name: &str, full: &str, labels: &[&str]) -> PyResult<()> {
    if name.is_empty() {
        return Err(InvalidNameError::new_err("metric name should not be empty"));
    }
    let rules = rules();
    if rules == NameRules::Legacy {
        rules.check_metric_name(full).map_err(to_py)?;
    }
    check_legacy(labels)
}

/// Refuses, under legacy validation, label names (of series or
/// exemplars) outside the legacy set.
pub(crate) fn check_legacy(labels: &[&str]) -> PyResult<()> {
    let rules = rules();
    if rules == NameRules::Legacy {
        for l in labels {
            rules.check_label_name(l).map_err(to_py)?;
        }
    }
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_legacy_validation, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_validation, m)?)?;
    Ok(())
}

//! Names: prometheus_client's legacy validation switch. The store
//! takes UTF-8 names, as prometheus_client 0.26 does by default; with
//! `enable_legacy_validation()` (or `PROMETHEUS_LEGACY_NAME_VALIDATION`)
//! the binding refuses names outside the legacy set before they reach it.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use pyo3::prelude::*;
use shmetrics_core::NameRules;

use crate::errors::to_py;

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

/// Refuses, under legacy validation, a metric name or label names outside
/// the legacy set (the core's [`NameRules::Legacy`]), before a registry
/// keeps the name. Under the default rules the store checks them.
pub(crate) fn check_legacy(metric: Option<&str>, labels: &[&str]) -> PyResult<()> {
    let rules = rules();
    if rules == NameRules::Utf8 {
        return Ok(());
    }
    if let Some(m) = metric {
        rules.check_metric_name(m).map_err(to_py)?;
    }
    for l in labels {
        rules.check_label_name(l).map_err(to_py)?;
    }
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_legacy_validation, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_validation, m)?)?;
    Ok(())
}

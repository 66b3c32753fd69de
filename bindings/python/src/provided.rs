//! What the Python package hands the native module: the objects of
//! `shmetrics.registry` (`REGISTRY`, `NO_REGISTRY`) and of
//! `shmetrics._metrics` (the timer and tracker classes, `set_function`,
//! `remove_by_labels`, `metric_repr`) that the metric classes use. Those
//! modules import this one, so this one does not import them back by
//! name: each calls `_native._provide(NAME=object, ...)` once it has made
//! them (at its end), and the package's `__init__` imports both before
//! anything can make a metric. The first object given for a name stays,
//! as an import cached on first use did.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// One object the package provides: its name (the keyword of
/// `_provide`, the name it has in the module that provides it) and
/// that module, for the error when it was not provided.
pub(crate) struct Provided {
    name: &'static str,
    module: &'static str,
    cell: PyOnceLock<Py<PyAny>>,
}

impl Provided {
    const fn new(name: &'static str, module: &'static str) -> Provided {
        Provided {
            name,
            module,
            cell: PyOnceLock::new(),
        }
    }

    /// The object, or a `RuntimeError` if its module has not provided it
    /// (only if something made a metric before `import shmetrics` was
    /// done).
    pub(crate) fn get<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyAny>> {
        match self.cell.get(py) {
            Some(obj) => Ok(obj.bind(py)),
            None => Err(self.missing()),
        }
    }

    #[cold]
    fn missing(&self) -> PyErr {
        PyRuntimeError::new_err(format!(
            "{}.{} was not provided to shmetrics._native yet: import shmetrics first",
            self.module, self.name
        ))
    }
}

/// `shmetrics.registry.REGISTRY`: the registry of a metric made without
/// `registry`.
pub(crate) static REGISTRY: Provided = Provided::new("REGISTRY", "shmetrics.registry");
/// `shmetrics.registry.NO_REGISTRY`: what `registry=None` gives.
pub(crate) static NO_REGISTRY: Provided = Provided::new("NO_REGISTRY", "shmetrics.registry");
/// The helper classes and functions of `shmetrics._metrics`.
pub(crate) static TIMER: Provided = Provided::new("Timer", "shmetrics._metrics");
pub(crate) static EXCEPTION_COUNTER: Provided =
    Provided::new("ExceptionCounter", "shmetrics._metrics");
pub(crate) static INPROGRESS_TRACKER: Provided =
    Provided::new("InprogressTracker", "shmetrics._metrics");
pub(crate) static SET_FUNCTION: Provided = Provided::new("set_function", "shmetrics._metrics");
pub(crate) static REMOVE_BY_LABELS: Provided =
    Provided::new("remove_by_labels", "shmetrics._metrics");
pub(crate) static METRIC_REPR: Provided = Provided::new("metric_repr", "shmetrics._metrics");

static ALL: [&Provided; 8] = [
    &REGISTRY,
    &NO_REGISTRY,
    &TIMER,
    &EXCEPTION_COUNTER,
    &INPROGRESS_TRACKER,
    &SET_FUNCTION,
    &REMOVE_BY_LABELS,
    &METRIC_REPR,
];

/// Takes the objects the package provides, by name (`REGISTRY`,
/// `NO_REGISTRY`, `Timer`, `ExceptionCounter`, `InprogressTracker`,
/// `set_function`, `remove_by_labels`, `metric_repr`). For the package's
/// own modules only.
#[pyfunction]
#[pyo3(signature = (**objects))]
pub(crate) fn _provide(py: Python<'_>, objects: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let Some(objects) = objects else {
        return Ok(());
    };
    for (name, obj) in objects.iter() {
        let name: String = name.extract()?;
        let Some(p) = ALL.iter().find(|p| p.name == name) else {
            return Err(PyTypeError::new_err(format!(
                "_provide() got an unexpected keyword argument '{name}'"
            )));
        };
        // Already provided: the first stays.
        let _ = p.cell.set(py, obj.unbind());
    }
    Ok(())
}

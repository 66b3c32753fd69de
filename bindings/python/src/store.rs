//! `shmetrics.Store`: one open store file, and the process's default store
//! that metrics use unless given another.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, TryLockError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use shmetrics_core::{Options, Snapshot, Store};
use shmetrics_expo::Format;

use crate::errors::{to_py, NotConfiguredError};

/// The environment variable naming the default store file.
pub(crate) const STORE_ENV: &str = "SHMETRICS_STORE";

/// prometheus_client's multiprocess directory variables (the lower-case one
/// is its deprecated spelling), honoured when [`STORE_ENV`] is not set: the
/// store is then the file [`MULTIPROC_STORE_FILE`] in that directory, so an
/// app deployed for multiprocess mode runs unchanged.
const MULTIPROC_DIR_ENV: [&str; 2] = ["PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir"];

/// The store file's name in a multiprocess directory.
pub(crate) const MULTIPROC_STORE_FILE: &str = "shmetrics.shm";

/// The default store's path from the environment: [`STORE_ENV`], else
/// [`MULTIPROC_STORE_FILE`] in the directory a [`MULTIPROC_DIR_ENV`]
/// variable names.
#[pyfunction]
pub(crate) fn store_path_from_env() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|p| !p.is_empty());
    if let Some(path) = var(STORE_ENV) {
        return Some(PathBuf::from(path));
    }
    let dir = MULTIPROC_DIR_ENV.iter().find_map(|k| var(k))?;
    Some(PathBuf::from(dir).join(MULTIPROC_STORE_FILE))
}

/// An open store file. Every process that opens the same path shares its
/// metrics; a forked child writes through a writer slot of its own.
#[pyclass(frozen, name = "Store", module = "shmetrics._native")]
pub(crate) struct PyStore {
    pub(crate) inner: Arc<Store>,
    /// Kept between renders, so each render refreshes it incrementally.
    snapshot: Mutex<Option<Snapshot>>,
}

impl PyStore {
    fn render_bytes(&self, format: Format) -> shmetrics_core::Result<Vec<u8>> {
        let mut out = Vec::new();
        // A lock held by a thread that did not survive a fork() would never
        // be released in the child: take a fresh snapshot rather than wait.
        match self.snapshot.try_lock() {
            Ok(mut kept) => {
                match kept.as_mut() {
                    Some(snap) => self.inner.snapshot_into(snap)?,
                    None => *kept = Some(self.inner.snapshot()?),
                }
                let snap = kept.as_ref().expect("filled above");
                shmetrics_expo::encode(snap, format, &mut out);
            }
            Err(TryLockError::WouldBlock) | Err(TryLockError::Poisoned(_)) => {
                let snap = self.inner.snapshot()?;
                shmetrics_expo::encode(&snap, format, &mut out);
            }
        }
        Ok(out)
    }
}

pub(crate) fn parse_format(name: &str) -> PyResult<Format> {
    Format::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown exposition format {name:?}: use \"text\" (Prometheus 0.0.4) or \"openmetrics\""
        ))
    })
}

#[pymethods]
impl PyStore {
    /// Opens the store at `path`, creating it (mode 0o600, or 0o660) if it
    /// does not exist and `create` is true. Capacities apply only when the
    /// file is created.
    #[new]
    #[pyo3(signature = (path, *, create = true, read_only = false, mode = 0o600,
                        max_series = None, max_families = None, label_bytes = None,
                        max_writers = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        read_only: bool,
        mode: u32,
        max_series: Option<u32>,
        max_families: Option<u32>,
        label_bytes: Option<u64>,
        max_writers: Option<u32>,
    ) -> PyResult<PyStore> {
        let mut o = Options {
            create,
            read_only,
            mode,
            ..Options::default()
        };
        if let Some(v) = max_series {
            o.max_series = v;
        }
        if let Some(v) = max_families {
            o.max_families = v;
        }
        if let Some(v) = label_bytes {
            o.label_bytes = v;
        }
        if let Some(v) = max_writers {
            o.max_writers = v;
        }
        let store = py.detach(|| Store::open(&path, &o)).map_err(to_py)?;
        Ok(PyStore {
            inner: Arc::new(store),
            snapshot: Mutex::new(None),
        })
    }

    /// The store file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    /// Whether the store was opened read-only.
    #[getter]
    fn read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    /// The exposition of every metric in the store, summed over all
    /// processes: `"text"` (Prometheus 0.0.4) or `"openmetrics"`. The GIL
    /// is released while rendering.
    #[pyo3(signature = (format = "text"))]
    fn render<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyBytes>> {
        let format = parse_format(format)?;
        let out = py.detach(|| self.render_bytes(format)).map_err(to_py)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The store's families, summed over all processes, as plain values
    /// (see `collect::families`): what `shmetrics.CollectorRegistry` turns
    /// into prometheus_client's `Metric` objects. The snapshot is taken
    /// with the GIL released.
    fn collect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let snap = py.detach(|| self.inner.snapshot()).map_err(to_py)?;
        crate::collect::families(py, &snap)
    }

    /// Sets every value in the store to zero; metrics stay.
    fn reset(&self) -> PyResult<()> {
        self.inner.reset().map_err(to_py)
    }

    /// Removes every metric from the store, in all processes (PromPHP's
    /// `wipeStorage`). Metric objects made before must be created again.
    fn wipe(&self) -> PyResult<()> {
        self.inner.wipe().map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!(
            "shmetrics.Store({:?}{})",
            self.inner.path().display().to_string(),
            if self.inner.is_read_only() {
                ", read_only=True"
            } else {
                ""
            }
        )
    }
}

/// The default store. Touched only with the GIL held, so the lock is never
/// contended (and never held across a fork()).
static DEFAULT: Mutex<Option<Py<PyStore>>> = Mutex::new(None);

/// Makes `store` the default for metrics created from now on (`None`
/// forgets it).
#[pyfunction]
#[pyo3(signature = (store))]
pub(crate) fn set_default_store(store: Option<Py<PyStore>>) {
    *DEFAULT.lock().unwrap_or_else(|e| e.into_inner()) = store;
}

/// The default store: the one set by `configure()`, else the file named by
/// `SHMETRICS_STORE` or, without it, `shmetrics.shm` in the directory
/// `PROMETHEUS_MULTIPROC_DIR` names (opened, and created if missing, on
/// first use).
#[pyfunction]
pub(crate) fn default_store(py: Python<'_>) -> PyResult<Py<PyStore>> {
    let mut default = DEFAULT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = default.as_ref() {
        return Ok(s.clone_ref(py));
    }
    let Some(path) = store_path_from_env() else {
        return Err(NotConfiguredError::new_err(format!(
            "no store is configured: set the {STORE_ENV} environment variable to the store \
             file's path (for example /dev/shm/myapp.shm), or call \
             shmetrics.configure(path=...) before creating metrics"
        )));
    };
    let store = Store::open(path, &Options::default()).map_err(to_py)?;
    let store = Py::new(
        py,
        PyStore {
            inner: Arc::new(store),
            snapshot: Mutex::new(None),
        },
    )?;
    *default = Some(store.clone_ref(py));
    Ok(store)
}

/// The `Content-Type` of a format: `"text"` or `"openmetrics"`.
#[pyfunction]
pub(crate) fn content_type(format: &str) -> PyResult<&'static str> {
    Ok(parse_format(format)?.content_type())
}

/// The format to answer a scrape with, from its `Accept` header, as
/// `(format, content_type)`.
#[pyfunction]
#[pyo3(signature = (accept))]
pub(crate) fn negotiate(accept: Option<&str>) -> (&'static str, &'static str) {
    let f = shmetrics_expo::negotiate(accept);
    let name = match f {
        Format::OpenMetrics => "openmetrics",
        _ => "text",
    };
    (name, f.content_type())
}

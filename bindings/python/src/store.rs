//! `shmetrics.Store`: one open store file, and the process's default store
//! that metrics use unless given another.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::{Arc, Mutex, TryLockError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use shmetrics_core::{Options, PathNow, Snapshot, Store};
use shmetrics_expo::client_python::{encode_snapshot, Retype, StoreView};
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
///
/// `check()` opens the path again when it names another file than the one
/// mapped (the store was removed and created again): the metric objects
/// made before see the new generation on their next update and register
/// again in the new file.
#[pyclass(frozen, name = "Store", module = "shmetrics._native")]
pub(crate) struct PyStore {
    /// The file open now. Locked only with the GIL held, and briefly.
    inner: Mutex<Arc<Store>>,
    /// Bumped by every reopen.
    generation: AtomicU64,
    /// What the store was opened with, to open it again.
    options: Options,
    /// Kept between renders, so each render refreshes it incrementally,
    /// with the generation of the file it is of. Held while rendering,
    /// with the GIL released: a thread forked then finds it locked for
    /// good, so no path waits for it (`try_lock`), and `check()` never
    /// takes it (a snapshot of an older generation is dropped instead).
    snapshot: Mutex<Option<(u64, Snapshot)>>,
}

impl PyStore {
    fn new_open(store: Store, options: Options) -> PyStore {
        PyStore {
            inner: Mutex::new(Arc::new(store)),
            generation: AtomicU64::new(0),
            options,
            snapshot: Mutex::new(None),
        }
    }

    /// The file open now.
    pub(crate) fn store(&self) -> Arc<Store> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The file open now, with its generation (both changed by `check()`
    /// under the same lock).
    fn store_now(&self) -> (u64, Arc<Store>) {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (self.generation(), inner.clone())
    }

    /// How many times the store was opened again.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Acquire)
    }

    /// Runs `f` on a fresh snapshot of the store, refreshing the one kept
    /// between renders.
    fn with_snapshot(
        &self,
        (generation, store): &(u64, Arc<Store>),
        f: impl FnOnce(&Snapshot),
    ) -> shmetrics_core::Result<()> {
        // A lock held by a thread that did not survive a fork() would never
        // be released in the child: take a fresh snapshot rather than wait.
        match self.snapshot.try_lock() {
            Ok(mut kept) => {
                match kept.as_mut() {
                    Some((g, snap)) if g == generation => store.snapshot_into(snap)?,
                    _ => *kept = Some((*generation, store.snapshot()?)),
                }
                f(&kept.as_ref().expect("filled above").1);
            }
            Err(TryLockError::WouldBlock) | Err(TryLockError::Poisoned(_)) => {
                f(&store.snapshot()?);
            }
        }
        Ok(())
    }

    fn render_bytes(
        &self,
        store: &(u64, Arc<Store>),
        format: Format,
    ) -> shmetrics_core::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.with_snapshot(store, |snap| shmetrics_expo::encode(snap, format, &mut out))?;
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
        Ok(PyStore::new_open(store, o))
    }

    /// The store file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.store().path().to_path_buf()
    }

    /// Whether the store was opened read-only.
    #[getter]
    fn read_only(&self) -> bool {
        self.store().is_read_only()
    }

    /// How many times `check()` opened the path again.
    #[getter(generation)]
    fn py_generation(&self) -> u64 {
        self.generation()
    }

    /// What the path names now, compared with the file mapped (an `fstat`
    /// and an `lstat`): `"same"`, `"gone"` (removed, not created again
    /// yet) or `"other"`.
    fn path_now(&self) -> &'static str {
        match self.store().path_now() {
            PathNow::Same => "same",
            PathNow::Gone => "gone",
            PathNow::Other => "other",
        }
    }

    /// Opens the path again if it names another file than the one mapped
    /// (the store was removed and created again, by a deploy script or an
    /// operator), so that updates land in the file the exporter serves.
    /// Returns whether it did. Metric objects made before register again
    /// in the new file on their next update. Costs an `fstat` and an
    /// `lstat`: call it between requests, not per update.
    fn check(&self, py: Python<'_>) -> PyResult<bool> {
        let current = self.store();
        if current.path_now() != PathNow::Other {
            return Ok(false);
        }
        let path = current.path().to_path_buf();
        let options = Options {
            create: false,
            ..self.options.clone()
        };
        let reopened = py.detach(|| Store::open(&path, &options)).map_err(to_py)?;
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *inner = Arc::new(reopened);
        // The snapshot kept is of the old file: the next render sees its
        // generation and drops it (its lock is not taken here: a render
        // may hold it, or, in a forked child, a thread that is gone).
        self.generation.fetch_add(1, Release);
        Ok(true)
    }

    /// The exposition of every metric in the store, summed over all
    /// processes: `"text"` (Prometheus 0.0.4) or `"openmetrics"`. The GIL
    /// is released while rendering.
    #[pyo3(signature = (format = "text"))]
    fn render<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyBytes>> {
        let format = parse_format(format)?;
        let store = self.store_now();
        let out = py
            .detach(|| self.render_bytes(&store, format))
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The store's families as prometheus_client writes a registry that
    /// shows them (`shmetrics_expo::client_python`), in the text format or
    /// OpenMetrics (without `# EOF`): with `_created` samples if
    /// `created`, the gauge families named in `retype` typed as `"info"`
    /// or `"stateset"` in OpenMetrics, and the `_sum` of histograms with a
    /// negative bucket bound only if `negative_bucket_sum`; the families
    /// named in `skip` are left out. The GIL is released while rendering.
    #[pyo3(signature = (openmetrics = false, escaping = "underscores", created = true, retype = None,
                        negative_bucket_sum = false, skip = None))]
    #[allow(clippy::too_many_arguments)] // prometheus_client's page options, by keyword
    fn render_client_python<'py>(
        &self,
        py: Python<'py>,
        openmetrics: bool,
        escaping: &str,
        created: bool,
        retype: Option<HashMap<String, String>>,
        negative_bucket_sum: bool,
        skip: Option<HashSet<String>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let page = crate::render::page(openmetrics, escaping);
        let retype: HashMap<String, Retype> = retype
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(name, kind)| match kind.as_str() {
                "info" => Some((name, Retype::Info)),
                "stateset" => Some((name, Retype::StateSet)),
                _ => None,
            })
            .collect();
        let lookup = |name: &str| retype.get(name).copied();
        let skip = skip.unwrap_or_default();
        let skipped = |name: &str| skip.contains(name);
        let view = StoreView {
            created,
            negative_bucket_sum,
            retype: &lookup,
            skip: &skipped,
        };
        let mut out = Vec::new();
        let store = self.store_now();
        py.detach(|| {
            self.with_snapshot(&store, |snap| encode_snapshot(snap, page, &view, &mut out))
        })
        .map_err(to_py)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The store's families, summed over all processes, as plain values
    /// (see `collect::families`): what `shmetrics.CollectorRegistry` turns
    /// into prometheus_client's `Metric` objects. The snapshot is taken
    /// with the GIL released.
    fn collect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let store = self.store();
        let snap = py.detach(|| store.snapshot()).map_err(to_py)?;
        crate::collect::families(py, &snap)
    }

    /// Sets every value in the store to zero; metrics stay.
    fn reset(&self) -> PyResult<()> {
        self.store().reset().map_err(to_py)
    }

    /// Removes every metric from the store, in all processes (PromPHP's
    /// `wipeStorage`). Metric objects made before must be created again.
    fn wipe(&self) -> PyResult<()> {
        self.store().wipe().map_err(to_py)
    }

    fn __repr__(&self) -> String {
        let store = self.store();
        format!(
            "shmetrics.Store({:?}{})",
            store.path().display().to_string(),
            if store.is_read_only() {
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
    let options = Options::default();
    let store = Store::open(path, &options).map_err(to_py)?;
    let store = Py::new(py, PyStore::new_open(store, options))?;
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

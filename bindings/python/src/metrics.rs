//! The metric classes: construction, `labels()`, `remove()`, `clear()` and
//! the updates, straight into the store. The classes are final: a method
//! call on an exact native type skips the subtype walk that a Python
//! subclass costs on every update (about 20 ns here). The timers and
//! trackers are small Python classes (`python/shmetrics/_metrics.py`),
//! which that module provides (`provided.rs`).

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use shmetrics_core::{
    ErrorKind, Family, FamilyDesc, GaugeMode, Kind, NativeOpts, PlacedSeries, Series, Store,
};

use crate::errors::{to_py, LabelError};
use crate::provided::{
    Provided, EXCEPTION_COUNTER, INPROGRESS_TRACKER, METRIC_REPR, NO_REGISTRY, REGISTRY,
    REMOVE_BY_LABELS, SET_FUNCTION, TIMER,
};
use crate::store::{default_store, PyStore};

/// prometheus_client's default histogram bounds (0.26), without `+Inf`:
/// Python dashboards are built on them, so the binding uses them rather
/// than the core's `DEFAULT_BUCKETS`.
const PROMETHEUS_CLIENT_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// `Histogram.DEFAULT_BUCKETS`: [`PROMETHEUS_CLIENT_BUCKETS`] and `+Inf`,
/// as prometheus_client's tuple.
pub(crate) fn default_buckets(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    let mut bounds = PROMETHEUS_CLIENT_BUCKETS.to_vec();
    bounds.push(f64::INFINITY);
    PyTuple::new(py, bounds)
}

/// The constructors' `registry` argument: not given, or given (`None`
/// too), which prometheus_client tells apart.
pub(crate) enum RegistryArg {
    NotGiven,
    Given(Py<PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for RegistryArg {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(RegistryArg::Given(obj.to_owned().unbind()))
    }
}

/// The registry of a metric created with `registry`: not given,
/// `REGISTRY` (prometheus_client's default); `None`, no registry, as in
/// prometheus_client (`shmetrics.registry.NO_REGISTRY`: the default
/// store, not listed anywhere, no duplicate check).
fn registry_or_default(py: Python<'_>, registry: RegistryArg) -> PyResult<Bound<'_, PyAny>> {
    match registry {
        RegistryArg::Given(r) if !r.is_none(py) => Ok(r.into_bound(py)),
        RegistryArg::Given(_) => Ok(NO_REGISTRY.get(py)?.clone()),
        RegistryArg::NotGiven => Ok(REGISTRY.get(py)?.clone()),
    }
}

/// One of the helper classes or functions of `shmetrics._metrics` (which
/// it provides: `provided.rs`), called with `args`.
fn helper<'py>(
    py: Python<'py>,
    provided: &Provided,
    args: impl pyo3::call::PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    provided.get(py)?.call1(args)
}

/// What the parent and all children of one metric share.
struct Def {
    /// The store object: its generation says whether the file was opened
    /// again since a metric object was made.
    store_obj: Py<PyStore>,
    /// The definition, to register the family again in a reopened file.
    desc: FamilyDesc,
    name: String,
    label_names: Vec<String>,
    /// Whether the family's series expire (`ttl_seconds`).
    ttl: bool,
    /// The family registered in the file opened last, by generation.
    again: Mutex<Option<(u64, Arc<Store>, Family)>>,
}

impl Def {
    /// The store open now and the family in it, registering the family
    /// again if the store was reopened since `m` was made.
    fn family_now(&self, m: &Metric) -> PyResult<(u64, Arc<Store>, Family)> {
        let store_obj = self.store_obj.get();
        let generation = store_obj.generation();
        if generation == m.generation {
            return Ok((generation, m.store.clone(), m.family));
        }
        let mut again = self.again.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((g, store, family)) = again.as_ref().filter(|(g, ..)| *g == generation) {
            return Ok((*g, store.clone(), *family));
        }
        let store = store_obj.store();
        let family = store.register(&self.desc).map_err(to_py)?;
        *again = Some((generation, store.clone(), family));
        Ok((generation, store, family))
    }
}

/// A metric object's series in a store opened again after it was made.
struct Moved {
    generation: u64,
    store: Arc<Store>,
    family: Family,
    series: Series,
}

/// One metric object: a parent (with or without labels) or a child made by
/// `labels()`.
struct Metric {
    def: Arc<Def>,
    /// The store's generation when this object was made; updates compare
    /// it with the store object's (one load) and take the slow path
    /// through `moved` once the store was opened again.
    generation: u64,
    /// The store open then, one pointer away for the updates.
    store: Arc<Store>,
    /// The family in `store`.
    family: Family,
    /// The series updates go to: set on children and on parents without
    /// labels. Kept placed for the process using it: a metric made in a
    /// prefork master (gunicorn's `--preload`, uWSGI without
    /// `lazy-apps`) updates through the fast path in its workers too.
    series: Option<PlacedSeries>,
    /// On a parent with labels: children by the tuple `labels()` was given,
    /// so a repeated `labels(...)` is one dict lookup.
    children: Option<Py<PyDict>>,
    /// On a child: its label values.
    label_values: Option<Vec<String>>,
    /// For a family with a TTL: the handle of the series looked up again
    /// after it expired (and came back with the next update).
    renewed: Mutex<Option<Series>>,
    /// The series in the store opened last, once it was opened again.
    moved: Mutex<Option<Moved>>,
}

/// What a metric's registry says about the options its constructor was
/// not given.
#[derive(Default)]
struct Hints {
    /// The gauge mode (a private registry's `shared`; else `all`).
    gauge_mode: Option<String>,
    /// Whether counters and histograms keep exemplars (a private
    /// registry's do, as prometheus_client's always do).
    exemplars: bool,
}

/// How the exposition writes this process's families, as
/// prometheus_client serves them. In one process, `_created` in every
/// format (`Created::EveryFormat`): OpenMetrics `_created` samples, and in
/// the text format `name_created` gauge families, as its
/// `generate_latest` writes them, so that Prometheus stores the same
/// series from `shmetrics serve` as from the app's own endpoint. None
/// with `PROMETHEUS_DISABLE_CREATED_SERIES` set to true (its own test of
/// the variable), nor in multiprocess mode (`PROMETHEUS_MULTIPROC_DIR`
/// set), whose `MultiProcessCollector` serves none.
fn exposition_hints() -> shmetrics_core::Hints {
    let truthy = |v: &str| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "t");
    let disabled = std::env::var("PROMETHEUS_DISABLE_CREATED_SERIES").is_ok_and(|v| truthy(&v));
    let multiprocess = std::env::var_os("PROMETHEUS_MULTIPROC_DIR").is_some_and(|v| !v.is_empty());
    shmetrics_core::Hints {
        created: if disabled || multiprocess {
            shmetrics_core::Created::Never
        } else {
            shmetrics_core::Created::EveryFormat
        },
        ..shmetrics_core::Hints::default()
    }
}

/// Arguments shared by every metric constructor.
struct Common<'a, 'py> {
    name: &'a str,
    documentation: &'a str,
    labelnames: Option<Vec<String>>,
    namespace: &'a str,
    subsystem: &'a str,
    unit: &'a str,
    /// `REGISTRY` when not given.
    registry: Bound<'py, PyAny>,
    ttl_seconds: Option<f64>,
}

impl Common<'_, '_> {
    /// The full name as prometheus_client builds it: namespace, subsystem
    /// and name joined by `_`, a counter's `_total` dropped (the exposition
    /// adds it back), and `_<unit>` appended when the name lacks it.
    fn full_name(&self, kind: Kind) -> String {
        let mut full = [self.namespace, self.subsystem, self.name]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("_");
        if kind == Kind::Counter && full.ends_with("_total") {
            full.truncate(full.len() - "_total".len());
        }
        if !self.unit.is_empty() && !full.ends_with(&format!("_{}", self.unit)) {
            full.push('_');
            full.push_str(self.unit);
        }
        full
    }

    /// The store the metric goes to, and the gauge mode its registry
    /// gives gauges made without `multiprocess_mode`. A `Store` is that
    /// store; a shmetrics `CollectorRegistry` is asked
    /// (`_shmetrics_attach`, which also refuses a name it already has);
    /// anything else (`None`, prometheus_client's `REGISTRY`) means the
    /// default store.
    fn store(&self, py: Python<'_>, kind: Kind, full: &str) -> PyResult<(Py<PyStore>, Hints)> {
        let r = &self.registry;
        if let Ok(s) = r.cast::<PyStore>() {
            return Ok((s.clone().unbind(), Hints::default()));
        }
        let Ok(attach) = r.getattr("_shmetrics_attach") else {
            return Ok((default_store(py)?, Hints::default()));
        };
        let labels = self.labelnames.clone().unwrap_or_default();
        let (store, mode): (Option<Bound<'_, PyStore>>, Option<String>) =
            attach.call1((full, kind.as_str(), labels))?.extract()?;
        let private = store.is_some();
        let store = match store {
            Some(s) => s.unbind(),
            None => default_store(py)?,
        };
        Ok((
            store,
            Hints {
                gauge_mode: mode,
                exemplars: private,
            },
        ))
    }
}

impl Common<'_, '_> {
    /// Tells a shmetrics registry that its metric `name` is now in `store`
    /// (`_shmetrics_registered`): a family its `unregister()` hid shows
    /// again.
    fn registered(&self, py: Python<'_>, name: &str, store: &Py<PyStore>) -> PyResult<()> {
        if let Ok(f) = self.registry.getattr("_shmetrics_registered") {
            f.call1((name, store.clone_ref(py)))?;
        }
        Ok(())
    }

    /// The store for a metric whose definition the store refused
    /// (`ConflictError`): a shmetrics registry from which a metric of that
    /// name was unregistered gives a store of its own for the new
    /// definition (`_shmetrics_redefine`), as prometheus_client takes any
    /// definition once the old metric is unregistered; `None` otherwise.
    fn redefined(&self, name: &str, kind: Kind) -> PyResult<Option<Py<PyStore>>> {
        let Ok(f) = self.registry.getattr("_shmetrics_redefine") else {
            return Ok(None);
        };
        let store: Option<Bound<'_, PyStore>> = f.call1((name, kind.as_str()))?.extract()?;
        Ok(store.map(Bound::unbind))
    }
}

/// The label names from any iterable of strings (a list, a tuple,
/// `dict.keys()`, a generator), as prometheus_client takes them
/// (`tuple(labelnames)`).
fn label_names(given: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    let Some(given) = given.filter(|g| !g.is_none()) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for name in given.try_iter()? {
        let name = name?;
        let s = name.cast::<PyString>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "label names must be strings, got {}",
                name.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        out.push(s.to_cow()?.into_owned());
    }
    Ok(Some(out))
}

/// Now by Python's `time.time()`, in nanoseconds: the creation time of a
/// series this process makes, as prometheus_client takes it for
/// `_created` (so a test that replaces `time.time` sees its time).
fn created_now(py: Python<'_>) -> PyResult<u64> {
    let t: f64 = py
        .import(pyo3::intern!(py, "time"))?
        .getattr(pyo3::intern!(py, "time"))?
        .call0()?
        .extract()?;
    // A float cast saturates: a negative or NaN time gives 0.
    Ok((t * 1e9).round() as u64)
}

impl Metric {
    fn new(
        py: Python<'_>,
        c: Common<'_, '_>,
        kind: Kind,
        tune: impl FnOnce(FamilyDesc, &Hints) -> PyResult<FamilyDesc>,
    ) -> PyResult<Metric> {
        let label_names = c.labelnames.clone().unwrap_or_default();
        let names: Vec<&str> = label_names.iter().map(String::as_str).collect();
        crate::names::check_given(c.name, &c.full_name(kind), &names)?;
        let (mut store_obj, hints) = c.store(py, kind, &c.full_name(kind))?;
        let mut desc = FamilyDesc::new(c.full_name(kind), kind)
            .name_rules(crate::names::rules())
            .help(c.documentation)
            .labels(&names)
            .unit(c.unit)
            .hints(exposition_hints());
        desc = tune(desc, &hints)?;
        if let Some(t) = c.ttl_seconds {
            let ttl = std::time::Duration::try_from_secs_f64(t).map_err(|_| {
                crate::errors::InvalidOptionsError::new_err(format!(
                    "ttl_seconds must be a positive number of seconds, got {t}"
                ))
            })?;
            desc = desc.ttl(ttl);
        }
        let family = match store_obj.get().store().register(&desc) {
            Err(e) if e.kind() == ErrorKind::Conflict => match c.redefined(&desc.name, kind)? {
                Some(other) => {
                    store_obj = other;
                    store_obj.get().store().register(&desc).map_err(to_py)?
                }
                None => return Err(to_py(e)),
            },
            r => r.map_err(to_py)?,
        };
        let generation = store_obj.get().generation();
        let store = store_obj.get().store();
        c.registered(py, &desc.name, &store_obj)?;
        let (series, children) = if label_names.is_empty() {
            let created = Some(created_now(py)?);
            (
                Some(PlacedSeries::new(
                    store.series_created(&family, &[], created).map_err(to_py)?,
                )),
                None,
            )
        } else {
            (None, Some(PyDict::new(py).unbind()))
        };
        Ok(Metric {
            def: Arc::new(Def {
                store_obj,
                name: desc.name.clone(),
                label_names,
                ttl: desc.ttl.is_some(),
                desc,
                again: Mutex::new(None),
            }),
            generation,
            store,
            family,
            series,
            children,
            label_values: None,
            renewed: Mutex::new(None),
            moved: Mutex::new(None),
        })
    }

    /// A child for `values` (already strings, in label-name order). A label
    /// set beyond the family's or the store's capacity gets the family's
    /// overflow series: the update is counted there, not lost, and the
    /// application keeps running.
    fn child(&self, py: Python<'_>, values: Vec<String>) -> PyResult<Metric> {
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let (generation, store, family) = self.def.family_now(self)?;
        let created = Some(created_now(py)?);
        let series = store
            .series_or_overflow_created(&family, &refs, created)
            .map_err(to_py)?;
        Ok(Metric {
            def: self.def.clone(),
            generation,
            store,
            family,
            series: Some(PlacedSeries::new(series)),
            children: None,
            label_values: Some(values),
            renewed: Mutex::new(None),
            moved: Mutex::new(None),
        })
    }

    #[inline]
    fn series(&self) -> PyResult<Series> {
        match &self.series {
            Some(_) if self.def.ttl => Ok(self.renewed_series()),
            Some(s) => Ok(s.get(&self.store)),
            None => Err(self.needs_labels()),
        }
    }

    /// A TTL family's current handle: the renewed one if there is one.
    fn renewed_series(&self) -> Series {
        let renewed = *self.renewed.lock().unwrap_or_else(|e| e.into_inner());
        let first = self.series.as_ref().expect("checked by the caller");
        renewed.unwrap_or_else(|| first.get(&self.store))
    }

    /// Runs an update. A series deleted (by `remove()` or `clear()` in any
    /// process) or expired (its family has a TTL) since its handle was made
    /// is looked up again (it comes back from zero), and the update
    /// applied to it.
    #[inline]
    fn update(&self, f: impl Fn(&Store, Series) -> shmetrics_core::Result<()>) -> PyResult<()> {
        if self.def.store_obj.get().generation() != self.generation {
            return self.update_moved(f);
        }
        match f(&self.store, self.series()?) {
            Err(e) if e.kind() == ErrorKind::StaleHandle => self.renew(f),
            r => r.map_err(to_py),
        }
    }

    /// An update once the store was opened again (`Store.check()`): the
    /// family is registered in the new file and the series looked up
    /// there, once per reopen; the update goes there.
    #[cold]
    fn update_moved(
        &self,
        f: impl Fn(&Store, Series) -> shmetrics_core::Result<()>,
    ) -> PyResult<()> {
        self.series()?;
        let mut moved = self.moved.lock().unwrap_or_else(|e| e.into_inner());
        let generation = self.def.store_obj.get().generation();
        let current = match moved.take().filter(|m| m.generation == generation) {
            Some(m) => moved.insert(m),
            None => {
                let (generation, store, family) = self.def.family_now(self)?;
                let series = store
                    .series_or_overflow(&family, &self.value_refs())
                    .map_err(to_py)?;
                moved.insert(Moved {
                    generation,
                    store,
                    family,
                    series,
                })
            }
        };
        match f(&current.store, current.series) {
            Err(e) if e.kind() == ErrorKind::StaleHandle => {
                let s = current
                    .store
                    .series_or_overflow(&current.family, &self.value_refs())
                    .map_err(to_py)?;
                current.series = s;
                f(&current.store, s).map_err(to_py)
            }
            r => r.map_err(to_py),
        }
    }

    #[cold]
    fn renew(&self, f: impl Fn(&Store, Series) -> shmetrics_core::Result<()>) -> PyResult<()> {
        // Without a TTL the hot path uses the first handle: try the one a
        // previous renewal found before looking the series up again.
        let renewed = *self.renewed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = renewed.filter(|_| !self.def.ttl) {
            match f(&self.store, s) {
                Err(e) if e.kind() == ErrorKind::StaleHandle => {}
                r => return r.map_err(to_py),
            }
        }
        let s = self.look_up_again()?;
        f(&self.store, s).map_err(to_py)
    }

    /// The label values of this child (none on a parent without labels).
    fn value_refs(&self) -> Vec<&str> {
        self.label_values
            .iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }

    /// Looks the series up again (making it if it is gone) and keeps the
    /// handle for the updates that follow.
    fn look_up_again(&self) -> PyResult<Series> {
        self.look_up_again_created(None)
    }

    /// [`Metric::look_up_again`], the series made with this creation time.
    fn look_up_again_created(&self, created: Option<u64>) -> PyResult<Series> {
        let s = self
            .store
            .series_or_overflow_created(&self.family, &self.value_refs(), created)
            .map_err(to_py)?;
        *self.renewed.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
        Ok(s)
    }

    /// Starts the series again from zero, with a new creation time: it is
    /// deleted (in every process) and made again at once.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.series()?;
        let (generation, store, family) = self.def.family_now(self)?;
        store.delete(&family, &self.value_refs()).map_err(to_py)?;
        let created = Some(created_now(py)?);
        if generation == self.generation {
            self.look_up_again_created(created)?;
        } else {
            let series = store
                .series_or_overflow_created(&family, &self.value_refs(), created)
                .map_err(to_py)?;
            *self.moved.lock().unwrap_or_else(|e| e.into_inner()) = Some(Moved {
                generation,
                store,
                family,
                series,
            });
        }
        Ok(())
    }

    /// Drops the metric's series in the store (every process's), so that
    /// it starts from zero: a metric created again after `unregister()`.
    fn start_afresh(&self, py: Python<'_>) -> PyResult<()> {
        if self.def.label_names.is_empty() {
            self.reset(py)
        } else {
            self.clear(py)
        }
    }

    #[cold]
    fn needs_labels(&self) -> PyErr {
        LabelError::new_err(format!(
            "{} is missing label values: it has label names {:?}, update a child from .labels(...) instead",
            self.def.name, self.def.label_names
        ))
    }

    fn children<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyDict>> {
        match &self.children {
            Some(c) => Ok(c.bind(py)),
            None if self.label_values.is_some() => Err(LabelError::new_err(format!(
                "{} is already a child with label values {:?}; call labels() on the parent",
                self.def.name,
                self.label_values.as_deref().unwrap_or_default()
            ))),
            None => Err(LabelError::new_err(format!(
                "{} was created without label names, so it takes no label values",
                self.def.name
            ))),
        }
    }

    /// The label values as a tuple in label-name order, from positional or
    /// keyword arguments (not both), as prometheus_client takes them.
    fn key<'py>(
        &self,
        values: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let py = values.py();
        let Some(kwargs) = kwargs.filter(|k| !k.is_empty()) else {
            return Ok(values.clone());
        };
        if !values.is_empty() {
            return Err(LabelError::new_err(format!(
                "{}: pass label values either by position or by name, not both",
                self.def.name
            )));
        }
        let mismatch = || {
            LabelError::new_err(format!(
                "{}: expected label names {:?}, got {:?}",
                self.def.name,
                self.def.label_names,
                kwargs
                    .keys()
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
            ))
        };
        if kwargs.len() != self.def.label_names.len() {
            return Err(mismatch());
        }
        let mut out = Vec::with_capacity(self.def.label_names.len());
        for name in &self.def.label_names {
            out.push(kwargs.get_item(name)?.ok_or_else(mismatch)?);
        }
        PyTuple::new(py, out)
    }

    /// The label values as strings (`str()` of each, as prometheus_client
    /// does), checked against the label names.
    fn strings(&self, key: &Bound<'_, PyTuple>) -> PyResult<Vec<String>> {
        if key.len() != self.def.label_names.len() {
            return Err(LabelError::new_err(format!(
                "{}: expected {} label values for {:?}, got {}",
                self.def.name,
                self.def.label_names.len(),
                self.def.label_names,
                key.len()
            )));
        }
        // to_cow: PyString::to_str needs Python 3.10's limited API, and the
        // module is built for the stable ABI of 3.9 (abi3-py39).
        key.iter()
            .map(|v| match v.cast::<PyString>() {
                Ok(s) => Ok(s.to_cow()?.into_owned()),
                Err(_) => Ok(v.str()?.to_cow()?.into_owned()),
            })
            .collect()
    }

    fn remove(&self, values: &Bound<'_, PyTuple>) -> PyResult<()> {
        let py = values.py();
        let children = self.children(py)?;
        let strings = self.strings(values)?;
        let refs: Vec<&str> = strings.iter().map(String::as_str).collect();
        let (_, store, family) = self.def.family_now(self)?;
        store.delete(&family, &refs).map_err(to_py)?;
        // Forget every cached child with these values, whatever types the
        // values were given as.
        let mut stale = Vec::new();
        for (k, _) in children.iter() {
            if self.strings(k.cast::<PyTuple>()?)? == strings {
                stale.push(k);
            }
        }
        for k in stale {
            children.del_item(k)?;
        }
        Ok(())
    }

    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        if self.def.label_names.is_empty() {
            // prometheus_client: nothing to clear on a metric without labels.
            return Ok(());
        }
        let children = self.children(py)?;
        let (_, store, family) = self.def.family_now(self)?;
        store.clear(&family).map_err(to_py)?;
        children.clear();
        Ok(())
    }

    fn label_values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.label_values.as_deref().unwrap_or_default())
    }
}

/// Generates a metric class: its constructor (the common arguments plus
/// `$extra`), and the methods every type has.
macro_rules! metric_class {
    (
        $(#[$doc:meta])*
        $ty:ident, $kind:expr,
        new($($extra:ident : $extra_ty:ty = $extra_default:tt),*) => $tune:expr,
        { $($methods:tt)* }
    ) => {
        $(#[$doc])*
        #[pyclass(frozen, module = "shmetrics._native")]
        pub(crate) struct $ty {
            m: Metric,
            /// The registry a new parent is to be listed in, until
            /// `__init__` hands the object to it.
            pending: Mutex<Option<Py<PyAny>>>,
        }

        #[pymethods]
        impl $ty {
            #[new]
            #[pyo3(signature = (name, documentation = "", labelnames = None, namespace = "",
                                subsystem = "", unit = "", registry = RegistryArg::NotGiven, _labelvalues = None,
                                ttl_seconds = None, $($extra = $extra_default,)*))]
            #[allow(clippy::too_many_arguments)]
            fn new(
                py: Python<'_>,
                name: &str,
                documentation: &str,
                labelnames: Option<&Bound<'_, PyAny>>,
                namespace: &str,
                subsystem: &str,
                unit: &str,
                registry: RegistryArg,
                _labelvalues: Option<Vec<String>>,
                ttl_seconds: Option<f64>,
                $($extra: $extra_ty,)*
            ) -> PyResult<Self> {
                if _labelvalues.is_some() {
                    return Err(PyValueError::new_err(
                        "_labelvalues is internal; use .labels(...)",
                    ));
                }
                let common = Common {
                    name,
                    documentation,
                    labelnames: label_names(labelnames)?,
                    namespace,
                    subsystem,
                    unit,
                    registry: registry_or_default(py, registry)?,
                    ttl_seconds,
                };
                let pending = Mutex::new(Some(common.registry.clone().unbind()));
                #[allow(clippy::redundant_closure_call)]
                let m = Metric::new(py, common, $kind, |d, hint| ($tune)(d, hint, $($extra),*))?;
                Ok($ty { m, pending })
            }

            /// Lists the new metric in its registry
            /// (`_shmetrics_track`), for what walks a registry's
            /// collectors (`_collector_to_names`) and unregisters them.
            #[pyo3(signature = (*_args, **_kwargs))]
            fn __init__(
                slf: &Bound<'_, Self>,
                _args: &Bound<'_, PyTuple>,
                _kwargs: Option<&Bound<'_, PyDict>>,
            ) -> PyResult<()> {
                let registry = slf.get().pending.lock().unwrap_or_else(|e| e.into_inner()).take();
                let Some(r) = registry else {
                    return Ok(());
                };
                let Ok(track) = r.bind(slf.py()).getattr("_shmetrics_track") else {
                    return Ok(());
                };
                // True: a metric of this name was unregistered from the
                // registry, and this one starts from zero, as in
                // prometheus_client (its series are dropped in the store).
                if track.call1((slf,))?.is_truthy()? {
                    slf.get().m.start_afresh(slf.py())?;
                }
                Ok(())
            }

            /// The child for these label values (positional, or by name).
            /// Children are cached: a repeated call is one dict lookup.
            #[pyo3(signature = (*values, **kwargs))]
            fn labels(
                slf: &Bound<'_, Self>,
                values: &Bound<'_, PyTuple>,
                kwargs: Option<&Bound<'_, PyDict>>,
            ) -> PyResult<Py<PyAny>> {
                let py = slf.py();
                let m = &slf.get().m;
                let children = m.children(py)?;
                let mut key = m.key(values, kwargs)?;
                match children.get_item(&key) {
                    Ok(Some(child)) => return Ok(child.unbind()),
                    Ok(None) => {}
                    // An unhashable value (a list, a dict): keyed by the
                    // strings, which the store keeps anyway.
                    Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                        key = PyTuple::new(py, m.strings(&key)?)?;
                        if let Some(child) = children.get_item(&key)? {
                            return Ok(child.unbind());
                        }
                    }
                    Err(e) => return Err(e),
                }
                let child = Py::new(
                    py,
                    $ty {
                        m: m.child(py, m.strings(&key)?)?,
                        pending: Mutex::new(None),
                    },
                )?;
                children.set_item(key, &child)?;
                Ok(child.into_any())
            }

            /// Deletes the child with these label values, in every process.
            #[pyo3(signature = (*values))]
            fn remove(&self, values: &Bound<'_, PyTuple>) -> PyResult<()> {
                self.m.remove(values)
            }

            /// Deletes every child, in every process.
            fn clear(&self, py: Python<'_>) -> PyResult<()> {
                self.m.clear(py)
            }

            /// Deletes every child whose labels include these (a dict of
            /// label names to values), in every process.
            fn remove_by_labels(slf: &Bound<'_, Self>, labels: &Bound<'_, PyAny>) -> PyResult<()> {
                helper(slf.py(), &REMOVE_BY_LABELS, (slf, labels))?;
                Ok(())
            }

            /// The metric's full name.
            #[getter]
            fn _name(&self) -> &str {
                &self.m.def.name
            }

            /// The label names.
            #[getter]
            fn _labelnames<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, &self.m.def.label_names)
            }

            /// A child's label values (empty on a parent).
            #[getter]
            fn _labelvalues<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                self.m.label_values(py)
            }

            /// The store the metric lives in.
            #[getter]
            fn _store(&self, py: Python<'_>) -> Py<PyStore> {
                self.m.def.store_obj.clone_ref(py)
            }

            /// As prometheus_client writes it: the module the class is
            /// imported from, the class and the name
            /// (`shmetrics.metrics.Counter(c)`).
            fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
                helper(slf.py(), &METRIC_REPR, (slf,))?.extract()
            }

            /// As prometheus_client writes it: `counter:c`.
            fn __str__(&self) -> String {
                format!("{}:{}", $kind.as_str(), self.m.def.name)
            }

            $($methods)*
        }
    };
}

metric_class! {
    /// A counter: a value that only goes up. With `exemplars=True` its
    /// `inc` takes prometheus_client's `exemplar=`.
    Counter, Kind::Counter,
    new(exemplars: Option<bool> = None) => |d: FamilyDesc, h: &Hints, exemplars: Option<bool>| -> PyResult<FamilyDesc> {
        Ok(d.exemplars(exemplars.unwrap_or(h.exemplars)))
    },
    {
        /// Adds `amount` (default 1; never negative, NaN or infinite), with an
        /// exemplar (a dict of label names to values) if given.
        #[pyo3(signature = (amount = 1.0, exemplar = None))]
        fn inc(&self, amount: f64, exemplar: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
            match exemplar {
                Some(e) => {
                    let labels = exemplar_labels(e)?;
                    let labels = label_refs(&labels);
                    self.m
                        .update(|st, s| st.counter_add_with_exemplar(s, amount, &labels))
                }
                None if amount == 1.0 => self.m.update(|st, s| st.counter_inc(s)),
                None => self.m.update(|st, s| st.counter_add(s, amount)),
            }
        }

        /// Starts the counter again from zero, with a new `_created`
        /// (`time.time()` now).
        fn reset(&self, py: Python<'_>) -> PyResult<()> {
            self.m.reset(py)
        }

        /// Counts exceptions of type `exception` (default `Exception`)
        /// raised in a `with` block or a decorated function.
        #[pyo3(signature = (exception = None))]
        fn count_exceptions<'py>(
            slf: &Bound<'py, Self>,
            exception: Option<&Bound<'py, PyAny>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let py = slf.py();
            slf.get().m.series()?;
            let exception = match exception {
                Some(e) => e.clone(),
                None => py.get_type::<pyo3::exceptions::PyException>().into_any(),
            };
            helper(py, &EXCEPTION_COUNTER, (slf, exception))
        }
    }
}

metric_class! {
    /// A gauge: a value that goes up and down. `multiprocess_mode` says how
    /// the processes' values combine, as in prometheus_client.
    Gauge, Kind::Gauge,
    new(multiprocess_mode: Option<&str> = None, _openmetrics_type: Option<&str> = None)
        => |d: FamilyDesc, h: &Hints, mode: Option<&str>, om_type: Option<&str>| -> PyResult<FamilyDesc> {
        // Unsaid, the registry's default (a private registry's `shared`),
        // else `all` as in prometheus_client's multiprocess mode.
        let mode = mode.or(h.gauge_mode.as_deref()).unwrap_or("all");
        let mode = GaugeMode::parse(mode).ok_or_else(|| {
            crate::errors::InvalidOptionsError::new_err(format!(
                "unknown multiprocess_mode {mode:?}; use one of {:?}",
                GaugeMode::ALL.map(GaugeMode::as_str)
            ))
        })?;
        // `info` or `stateset`: the gauge of an `Info` or `Enum`, which
        // the exporter's OpenMetrics pages type as prometheus_client's.
        let om_type = match om_type {
            None => None,
            Some("info") => Some(shmetrics_core::OpenMetricsType::Info),
            Some("stateset") => Some(shmetrics_core::OpenMetricsType::StateSet),
            Some(other) => {
                return Err(crate::errors::InvalidOptionsError::new_err(format!(
                    "_openmetrics_type must be \"info\" or \"stateset\", got {other:?}"
                )))
            }
        };
        let hints = shmetrics_core::Hints { openmetrics_type: om_type, ..d.hints };
        Ok(d.gauge_mode(mode).hints(hints))
    },
    {
        /// Adds `amount` (default 1).
        #[pyo3(signature = (amount = 1.0))]
        fn inc(&self, amount: f64) -> PyResult<()> {
            self.m.update(|st, s| st.gauge_add(s, amount))
        }

        /// Subtracts `amount` (default 1).
        #[pyo3(signature = (amount = 1.0))]
        fn dec(&self, amount: f64) -> PyResult<()> {
            self.m.update(|st, s| st.gauge_add(s, -amount))
        }

        /// Sets the value.
        fn set(&self, value: f64) -> PyResult<()> {
            self.m.update(|st, s| st.gauge_set(s, value))
        }

        /// Sets the value to the current Unix time in seconds.
        fn set_to_current_time(&self) -> PyResult<()> {
            self.m.update(|st, s| st.gauge_set_to_current_time(s))
        }

        /// Makes the gauge's value `f()`, called whenever this process
        /// collects the store and by the publisher
        /// (`shmetrics.publish`), which sets it into the store.
        fn set_function<'py>(slf: &Bound<'py, Self>, f: &Bound<'py, PyAny>) -> PyResult<()> {
            slf.get().m.series()?;
            helper(slf.py(), &SET_FUNCTION, (slf, f))?;
            Ok(())
        }

        /// Adds one while a `with` block or a decorated function runs.
        fn track_inprogress<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
            slf.get().m.series()?;
            helper(slf.py(), &INPROGRESS_TRACKER, (slf,))
        }

        /// Sets the gauge to the seconds a `with` block or a decorated
        /// function took.
        fn time<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
            helper(slf.py(), &TIMER, (slf, "set"))
        }
    }
}

metric_class! {
    /// A histogram: classic buckets, native (exponential) buckets, or both.
    /// Any `native_histogram_*` option turns native buckets on, with the
    /// store's defaults for the others (client_golang's names); without
    /// `buckets` the histogram is then native only.
    Histogram, Kind::Histogram,
    new(
        buckets: Option<Vec<f64>> = None,
        native_histogram_bucket_factor: Option<f64> = None,
        native_histogram_zero_threshold: Option<f64> = None,
        native_histogram_max_bucket_number: Option<u32> = None,
        exemplars: Option<bool> = None
    ) => |d: FamilyDesc,
          h: &Hints,
          buckets: Option<Vec<f64>>,
          factor: Option<f64>,
          zero_threshold: Option<f64>,
          max_buckets: Option<u32>,
          exemplars: Option<bool>|
          -> PyResult<FamilyDesc> {
        let native = factor.is_some() || zero_threshold.is_some() || max_buckets.is_some();
        // Without `buckets`: prometheus_client's defaults, or native only.
        let mut b = match buckets {
            Some(b) => b,
            None if native => Vec::new(),
            None => PROMETHEUS_CLIENT_BUCKETS.to_vec(),
        };
        // prometheus_client's buckets end in +Inf; the store adds it.
        if b.last() == Some(&f64::INFINITY) {
            b.pop();
        }
        let d = if b.is_empty() { d } else { d.buckets(&b) }.exemplars(exemplars.unwrap_or(h.exemplars));
        if !native {
            return Ok(d);
        }
        // The store checks the values and picks the schema.
        let default = NativeOpts::default();
        Ok(d.native(NativeOpts {
            bucket_factor: factor.unwrap_or(default.bucket_factor),
            zero_threshold: zero_threshold.unwrap_or(default.zero_threshold),
            max_buckets: max_buckets.unwrap_or(default.max_buckets),
        }))
    },
    {
        /// The buckets of a histogram made without `buckets`,
        /// prometheus_client's, `+Inf` included.
        #[classattr]
        #[pyo3(name = "DEFAULT_BUCKETS")]
        fn class_default_buckets(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
            default_buckets(py)
        }

        /// The classic bucket bounds, `+Inf` included, as
        /// prometheus_client's `_upper_bounds` (read by code that inspects
        /// a histogram's buckets).
        #[getter]
        fn _upper_bounds(&self) -> Vec<f64> {
            let mut b = self.m.def.desc.buckets.clone();
            b.push(f64::INFINITY);
            b
        }

        /// Records one observation, with an exemplar (a dict of label
        /// names to values) for its bucket if given.
        #[pyo3(signature = (amount, exemplar = None))]
        fn observe(&self, amount: f64, exemplar: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
            match exemplar {
                Some(e) => {
                    let labels = exemplar_labels(e)?;
                    let labels = label_refs(&labels);
                    self.m
                        .update(|st, s| st.observe_with_exemplar(s, amount, &labels))
                }
                None => self.m.update(|st, s| st.observe(s, amount)),
            }
        }

        /// Observes the seconds a `with` block or a decorated function
        /// took.
        fn time<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
            helper(slf.py(), &TIMER, (slf, "observe"))
        }
    }
}

/// An exemplar's labels from prometheus_client's `exemplar=` dict; values
/// are `str()`-ed, as label values are. The store checks names and the
/// 128-character limit.
fn exemplar_labels(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, String)>> {
    let labels: Vec<(String, String)> = d
        .iter()
        .map(|(k, v)| Ok((k.str()?.to_string(), v.str()?.to_string())))
        .collect::<PyResult<_>>()?;
    let names: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
    crate::names::check_legacy(&names)?;
    Ok(labels)
}

fn label_refs(labels: &[(String, String)]) -> Vec<(&str, &str)> {
    labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

metric_class! {
    /// A summary: the count and sum of observations and, with
    /// `quantiles`, their quantiles over a sliding window of
    /// `max_age_seconds` in `age_buckets` periods, merged across processes
    /// (exact while each period of each process saw at most 16
    /// observations, else within 0.99% relative error).
    Summary, Kind::Summary,
    new(quantiles: Option<Vec<f64>> = None, max_age_seconds: f64 = 600.0, age_buckets: u32 = 5)
        => |d: FamilyDesc, _: &Hints, quantiles: Option<Vec<f64>>, max_age: f64, age_buckets: u32| -> PyResult<FamilyDesc> {
        let max_age = std::time::Duration::try_from_secs_f64(max_age).map_err(|_| {
            crate::errors::InvalidOptionsError::new_err(format!(
                "max_age_seconds must be a positive number of seconds, got {max_age}"
            ))
        })?;
        Ok(d.quantiles(&quantiles.unwrap_or_default())
            .max_age(max_age, age_buckets))
    },
    {
        /// Records one observation.
        fn observe(&self, amount: f64) -> PyResult<()> {
            self.m.update(|st, s| st.observe(s, amount))
        }

        /// Observes the seconds a `with` block or a decorated function
        /// took.
        fn time<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
            helper(slf.py(), &TIMER, (slf, "observe"))
        }
    }
}

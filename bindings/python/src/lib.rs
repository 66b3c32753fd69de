//! The native part of the `shmetrics` Python package (`shmetrics._native`):
//! the store, the metric classes with their updates, and rendering. The
//! pure-Python package on top (`python/shmetrics`) adds timers, `Info`,
//! `Enum` and the WSGI/ASGI/HTTP exposition helpers; it holds no metric
//! logic of its own.
//!
//! Updates keep the GIL: they take nanoseconds, less than releasing and
//! re-taking it would. Opening a store and rendering release it.

mod collect;
mod errors;
mod metrics;
mod names;
mod provided;
mod render;
mod store;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    names::register(m)?;
    m.add_class::<store::PyStore>()?;
    m.add_class::<metrics::Counter>()?;
    m.add_class::<metrics::Gauge>()?;
    m.add_class::<metrics::Histogram>()?;
    m.add_class::<metrics::Summary>()?;
    m.add_function(wrap_pyfunction!(store::set_default_store, m)?)?;
    m.add_function(wrap_pyfunction!(store::default_store, m)?)?;
    m.add_function(wrap_pyfunction!(store::store_path_from_env, m)?)?;
    m.add_function(wrap_pyfunction!(store::content_type, m)?)?;
    m.add_function(wrap_pyfunction!(store::negotiate, m)?)?;
    m.add_function(wrap_pyfunction!(render::render_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(render::float_text, m)?)?;
    m.add_function(wrap_pyfunction!(render::escape_name, m)?)?;
    // Set, not added: `__all__` lists the public API only.
    m.setattr("_provide", wrap_pyfunction!(provided::_provide, m)?)?;
    m.add("DEFAULT_BUCKETS", metrics::default_buckets(m.py())?)?;
    m.add("LAYOUT_VERSION", shmetrics_core::LAYOUT_VERSION)?;
    m.add("STORE_ENV", store::STORE_ENV)?;
    m.add("MULTIPROC_STORE_FILE", store::MULTIPROC_STORE_FILE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

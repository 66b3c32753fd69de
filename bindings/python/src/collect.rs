//! `Store.collect()`: the store's contents, summed over all processes by
//! the core's snapshot, as plain Python values. `shmetrics.registry` shapes
//! them into prometheus_client's `Metric` and `Sample` objects.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use shmetrics_core::{FamilyView, SeriesView, Snapshot, Value};

/// Every family of `snap`, as a list of
/// `(name, help, unit, type, [(labels, value, created_unix_ns), ...])`.
///
/// `name` is the family's name without a counter's `_total`; `type` is
/// `"counter"`, `"gauge"`, `"histogram"` or `"summary"`; `labels` is a
/// list of `(name, value)` pairs, with the core's `pid` or
/// `shmetrics_overflow` label last when the series has one. `value` is a
/// float for counters and gauges, `(bounds, cumulative_counts, sum)` for
/// histograms (bounds without `+Inf`, one count more than bounds, the last
/// being the total) and `(count, sum, [(quantile, value), ...])` for
/// summaries.
pub(crate) fn families<'py>(py: Python<'py>, snap: &Snapshot) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for f in snap.families() {
        out.append(family(py, &f)?)?;
    }
    Ok(out)
}

fn family<'py>(py: Python<'py>, f: &FamilyView<'_>) -> PyResult<Bound<'py, PyTuple>> {
    let series = PyList::empty(py);
    for s in f.series() {
        series.append(series_tuple(py, &s)?)?;
    }
    (f.name(), f.help(), f.unit(), f.kind().as_str(), series).into_pyobject(py)
}

fn series_tuple<'py>(py: Python<'py>, s: &SeriesView<'_>) -> PyResult<Bound<'py, PyTuple>> {
    let labels: Vec<(&str, &str)> = s.labels().collect();
    let value = match s.value() {
        Value::Counter(v) | Value::Gauge(v) => v.into_pyobject(py)?.into_any(),
        Value::Histogram {
            bounds,
            cumulative,
            sum,
            ..
        } => (bounds.to_vec(), cumulative.to_vec(), sum)
            .into_pyobject(py)?
            .into_any(),
        Value::Summary {
            count,
            sum,
            quantiles,
        } => {
            let q: Vec<(f64, f64)> = quantiles.iter().map(|q| (q.quantile, q.value)).collect();
            (count, sum, q).into_pyobject(py)?.into_any()
        }
    };
    (labels, value, s.created_unix_ns()).into_pyobject(py)
}

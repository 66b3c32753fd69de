//! The in-process page as prometheus_client writes it, rendered by
//! `shmetrics_expo::client_python`: the store's families straight from a
//! snapshot (`Store.render_client_python`), and the `Metric` objects of
//! custom collectors (`render_metrics`), read here into the same writer.
//! Python holds no renderer of its own.

use pyo3::exceptions::PyAttributeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyString, PyTuple};
use shmetrics_expo::client_python::{
    encode_family, write_escaped_name, write_python_float, Escaping, Exemplar, Family, Page,
    Sample, SampleTime,
};

/// The page settings for a format flag and an escaping scheme's name (an
/// unknown scheme means `underscores`, as prometheus_client treats it).
pub(crate) fn page(openmetrics: bool, escaping: &str) -> Page {
    Page {
        openmetrics,
        escaping: Escaping::parse(escaping).unwrap_or_default(),
    }
}

/// A name or label value, which must be a `str`. Anything else raises
/// the `AttributeError` prometheus_client's writer meets (it calls
/// `.replace` on it).
fn string(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyAttributeError::new_err(format!(
            "'{}' object has no attribute 'replace'",
            obj.get_type().name()?
        ))),
    }
}

/// A value as Python's `float()` makes it (so `""` raises `ValueError`
/// and `None` `TypeError`, as in prometheus_client).
fn float(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    if let Ok(f) = obj.cast_exact::<PyFloat>() {
        return Ok(f.value());
    }
    obj.py().get_type::<PyFloat>().call1((obj,))?.extract()
}

fn labels(d: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let d = d.cast::<PyDict>()?;
    d.iter()
        .map(|(k, v)| Ok((string(&k)?, string(&v)?)))
        .collect()
}

/// A sample's timestamp: a `Timestamp` (seconds and nanoseconds) or a
/// number of seconds.
fn timestamp(ts: &Bound<'_, PyAny>) -> PyResult<SampleTime> {
    let py = ts.py();
    let openmetrics = ts.str()?.to_cow()?.into_owned();
    let millis = if ts.hasattr(intern!(py, "nsec"))? && ts.hasattr(intern!(py, "sec"))? {
        let sec: i64 = ts.getattr(intern!(py, "sec"))?.extract()?;
        let nsec: i64 = ts.getattr(intern!(py, "nsec"))?.extract()?;
        sec * 1000 + nsec.div_euclid(1_000_000)
    } else {
        let f = float(ts)?;
        // Python's int(): toward zero.
        (f * 1000.0).trunc() as i64
    };
    Ok(SampleTime {
        millis,
        openmetrics,
    })
}

fn sample(s: &Bound<'_, PyAny>) -> PyResult<Sample> {
    let py = s.py();
    let ts = s.getattr(intern!(py, "timestamp"))?;
    let ex = s.getattr(intern!(py, "exemplar"))?;
    Ok(Sample {
        name: string(&s.getattr(intern!(py, "name"))?)?,
        labels: labels(&s.getattr(intern!(py, "labels"))?)?,
        value: float(&s.getattr(intern!(py, "value"))?)?,
        timestamp: if ts.is_none() {
            None
        } else {
            Some(timestamp(&ts)?)
        },
        exemplar: if ex.is_none() {
            None
        } else {
            let t = ex.getattr(intern!(py, "timestamp"))?;
            Some(Exemplar {
                labels: labels(&ex.getattr(intern!(py, "labels"))?)?,
                value: float(&ex.getattr(intern!(py, "value"))?)?,
                timestamp: if t.is_none() { None } else { Some(float(&t)?) },
            })
        },
    })
}

fn family(m: &Bound<'_, PyAny>) -> PyResult<Family> {
    let py = m.py();
    let samples = m
        .getattr(intern!(py, "samples"))?
        .try_iter()?
        .map(|s| sample(&s?))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Family {
        name: string(&m.getattr(intern!(py, "name"))?)?,
        help: string(&m.getattr(intern!(py, "documentation"))?)?,
        unit: string(&m.getattr(intern!(py, "unit"))?)?,
        kind: string(&m.getattr(intern!(py, "type"))?)?,
        samples,
    })
}

/// The page of `metrics` (prometheus_client `Metric` objects) in the text
/// format or OpenMetrics (without `# EOF`). A family that cannot be
/// written raises with the family added to the exception's arguments, as
/// prometheus_client's writers do.
#[pyfunction]
#[pyo3(signature = (metrics, openmetrics, escaping = "underscores"))]
pub(crate) fn render_metrics<'py>(
    py: Python<'py>,
    metrics: &Bound<'py, PyAny>,
    openmetrics: bool,
    escaping: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let page = page(openmetrics, escaping);
    let mut out = Vec::new();
    for m in metrics.try_iter()? {
        let m = m?;
        match family(&m) {
            Ok(f) => encode_family(&f, page, &mut out),
            Err(e) => {
                let value = e.value(py);
                let args = value.getattr("args")?.cast_into::<PyTuple>()?;
                let mut items: Vec<Bound<'py, PyAny>> = args.iter().collect();
                if items.is_empty() {
                    items.push(PyString::new(py, "").into_any());
                }
                items.push(m);
                value.setattr("args", PyTuple::new(py, items)?)?;
                return Err(e);
            }
        }
    }
    Ok(PyBytes::new(py, &out))
}

/// A number as prometheus_client writes sample values and `le` and
/// `quantile` labels (`1.0`, `0.005`, `1e+06`, `+Inf`).
#[pyfunction]
pub(crate) fn float_text(v: f64) -> String {
    let mut out = Vec::with_capacity(24);
    write_python_float(&mut out, v);
    // UNWRAP: digits, signs, points and letters only.
    String::from_utf8(out).expect("ASCII")
}

/// A metric name (`metric`) or label name as `escaping` writes it
/// outside a quoted position (an unknown scheme: `underscores`).
#[pyfunction]
pub(crate) fn escape_name(name: &str, escaping: &str, metric: bool) -> String {
    let mut out = Vec::with_capacity(name.len());
    write_escaped_name(&mut out, name, page(false, escaping).escaping, metric);
    // UNWRAP: built from the chars of a str and ASCII.
    String::from_utf8(out).expect("UTF-8")
}

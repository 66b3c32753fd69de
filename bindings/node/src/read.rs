//! A family's series read back from a snapshot, as plain objects for
//! `lib/`, which shapes them as prom-client's `get()` does.

use napi_derive::napi;
use shmetrics_core::{FamilyView, SeriesView, Value};

/// An exemplar: its labels as `[name, value, ...]`, value and time.
#[napi(object)]
#[derive(Debug)]
pub struct ExemplarOut {
    /// Names and values, alternating.
    pub labels: Vec<String>,
    /// The observed value.
    pub value: f64,
    /// Seconds since the Unix epoch.
    pub timestamp: f64,
}

/// One series over all processes.
#[napi(object)]
#[derive(Debug)]
pub struct SeriesOut {
    /// The label values, in label-name order (a gauge family whose mode
    /// keeps one series per process has a last value, the `pid`).
    pub values: Vec<String>,
    /// A counter's or gauge's value; a histogram's or summary's sum.
    pub value: f64,
    /// A histogram's or summary's count.
    pub count: f64,
    /// A histogram's cumulative bucket counts, `+Inf` last.
    pub buckets: Option<Vec<f64>>,
    /// A summary's quantile estimates, in the family's order.
    pub quantiles: Option<Vec<f64>>,
    /// Per place (a counter: one; a histogram: one per bucket, `+Inf`
    /// last), the latest exemplar if any.
    pub exemplars: Vec<Option<ExemplarOut>>,
    /// Whether this is the family's overflow series.
    pub overflow: bool,
}

fn exemplars(s: &SeriesView<'_>) -> Vec<Option<ExemplarOut>> {
    s.exemplars()
        .map(|e| {
            e.map(|e| ExemplarOut {
                labels: e
                    .labels()
                    .flat_map(|(k, v)| [k.to_owned(), v.to_owned()])
                    .collect(),
                value: e.value(),
                timestamp: e.timestamp_unix_ns() as f64 / 1e9,
            })
        })
        .collect()
}

fn series(s: &SeriesView<'_>) -> SeriesOut {
    let mut out = SeriesOut {
        values: s.labels().map(|(_, v)| v.to_owned()).collect(),
        value: 0.0,
        count: 0.0,
        buckets: None,
        quantiles: None,
        exemplars: exemplars(s),
        overflow: s.is_overflow(),
    };
    match s.value() {
        Value::Counter(v) | Value::Gauge(v) => out.value = v,
        Value::Histogram {
            cumulative, sum, ..
        } => {
            out.value = sum;
            out.count = cumulative.last().copied().unwrap_or(0) as f64;
            out.buckets = Some(cumulative.iter().map(|c| *c as f64).collect());
        }
        Value::Summary {
            count,
            sum,
            quantiles,
        } => {
            out.value = sum;
            out.count = count as f64;
            out.quantiles = Some(quantiles.iter().map(|q| q.value).collect());
        }
    }
    out
}

/// Every series of `f`.
pub fn read_family(f: &FamilyView<'_>) -> Vec<SeriesOut> {
    f.series().map(|s| series(&s)).collect()
}

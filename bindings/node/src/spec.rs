//! What JavaScript passes to register a family, and the core's
//! description made of it.

use std::time::Duration;

use napi_derive::napi;
use shmetrics_core::{Created, FamilyDesc, GaugeMode, Hints, Kind};

use crate::errors::{invalid, JsResult};

/// A family as `lib/` describes it: prom-client's options, already
/// checked and defaulted there.
#[napi(object)]
#[derive(Debug)]
pub struct FamilySpec {
    /// The metric name, as given (a counter's `_total` is kept).
    pub name: String,
    /// The help text.
    pub help: String,
    /// `counter`, `gauge`, `histogram` or `summary`.
    pub kind: String,
    /// The label names, in the order given.
    pub label_names: Vec<String>,
    /// A histogram's bucket bounds, without `+Inf`.
    pub buckets: Option<Vec<f64>>,
    /// A summary's quantiles.
    pub percentiles: Option<Vec<f64>>,
    /// A summary's sliding window, in seconds; none keeps every
    /// observation (prom-client's default).
    pub max_age_seconds: Option<f64>,
    /// How many periods a summary's window is split into.
    pub age_buckets: Option<u32>,
    /// A gauge's aggregation over processes (a core mode name such as
    /// `livesum`).
    pub gauge_mode: Option<String>,
    /// Whether the family keeps exemplars.
    pub exemplars: Option<bool>,
}

/// A summary without a window (prom-client's default keeps every
/// observation) keeps them this long: near the longest window the core
/// takes (49 days).
const NO_WINDOW: Duration = Duration::from_secs(48 * 24 * 3600);

fn kind(name: &str) -> JsResult<Kind> {
    Ok(match name {
        "counter" => Kind::Counter,
        "gauge" => Kind::Gauge,
        "histogram" => Kind::Histogram,
        "summary" => Kind::Summary,
        other => return Err(invalid(format!("unknown metric type {other:?}"))),
    })
}

/// How prom-client's pages look, for the exporter: counters named as
/// given and the text format kept (prom-client's default registry
/// serves Prometheus text, where `_total` is not added), bounds written
/// as JavaScript writes numbers (`le="1"`), no `_created` series.
fn hints() -> Hints {
    Hints {
        short_bounds: true,
        created: Created::Never,
        text_only: true,
        ..Hints::default()
    }
}

impl FamilySpec {
    /// The core's description of this family.
    pub fn desc(&self) -> JsResult<FamilyDesc> {
        let kind = kind(&self.kind)?;
        let names: Vec<&str> = self.label_names.iter().map(String::as_str).collect();
        let mut desc = FamilyDesc::new(self.name.clone(), kind)
            .help(self.help.clone())
            .labels(&names)
            .hints(hints());
        if kind == Kind::Counter {
            desc = desc.name_as_given();
        }
        if let Some(b) = &self.buckets {
            desc = desc.buckets(b);
        }
        if let Some(q) = &self.percentiles {
            desc = desc.quantiles(q);
        }
        if kind == Kind::Summary {
            desc = self.window(desc)?;
        }
        if let Some(mode) = &self.gauge_mode {
            let mode = GaugeMode::parse(mode)
                .ok_or_else(|| invalid(format!("unknown gauge aggregation {mode:?}")))?;
            desc = desc.gauge_mode(mode);
        }
        Ok(desc.exemplars(self.exemplars.unwrap_or(false)))
    }

    fn window(&self, desc: FamilyDesc) -> JsResult<FamilyDesc> {
        let buckets = self.age_buckets.unwrap_or(1).max(1);
        let max_age = match self.max_age_seconds {
            None => NO_WINDOW,
            Some(s) => Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    invalid(format!("maxAgeSeconds must be a positive number, got {s}"))
                })?,
        };
        Ok(desc.max_age(max_age, buckets))
    }
}

//! Families that do not live in a store (an exporter's own metrics, a
//! pusher's counters), written after a store's on the same page.

use shmetrics_core::Kind;

/// A family that does not live in a store, such as an exporter's own
/// metrics. Only counters and gauges; each sample is one series.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraFamily<'a> {
    /// The name, without `_total` for counters.
    pub name: &'a str,
    /// The help text.
    pub help: &'a str,
    /// [`Kind::Counter`] or [`Kind::Gauge`]; other kinds are written as
    /// gauges.
    pub kind: Kind,
    /// The series.
    pub samples: Vec<ExtraSample<'a>>,
}

/// One series of an [`ExtraFamily`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraSample<'a> {
    /// Label names and values.
    pub labels: Vec<(&'a str, &'a str)>,
    /// The value.
    pub value: f64,
}

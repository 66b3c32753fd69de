//! A builder for [`ExtraFamily`] lists: the exporter's own metrics and
//! the pushers' counters are written as one call per family.

use shmetrics_core::Kind;

use crate::extra::{ExtraFamily, ExtraSample};

/// Builds the families of an exporter's own metrics, in order.
///
/// ```
/// use shmetrics_expo::Families;
/// let mut f = Families::default();
/// f.counter("exporter_scrapes", "Scrapes served.").value(3.0);
/// f.gauge("queue_batches", "Batches queued, and the capacity.")
///     .used_and_capacity(&[("url", "http://a/")], 1.0, 10.0);
/// let families = f.into_vec();
/// assert_eq!(families[1].samples[1].labels, [("url", "http://a/"), ("kind", "capacity")]);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Families<'a>(Vec<ExtraFamily<'a>>);

/// The family being built; each call adds a series.
#[derive(Debug)]
pub struct Family<'f, 'a>(&'f mut ExtraFamily<'a>);

impl<'a> Families<'a> {
    /// Starts a counter (named without `_total`).
    pub fn counter(&mut self, name: &'a str, help: &'a str) -> Family<'_, 'a> {
        self.family(name, help, Kind::Counter)
    }

    /// Starts a gauge.
    pub fn gauge(&mut self, name: &'a str, help: &'a str) -> Family<'_, 'a> {
        self.family(name, help, Kind::Gauge)
    }

    /// Starts a family of `kind` (a counter or a gauge).
    pub fn family(&mut self, name: &'a str, help: &'a str, kind: Kind) -> Family<'_, 'a> {
        self.0.push(ExtraFamily {
            name,
            help,
            kind,
            samples: Vec::new(),
        });
        // UNWRAP: pushed just above.
        Family(self.0.last_mut().expect("a family was pushed"))
    }

    /// Adds a counter per `(name, help, value)` row, each one series
    /// with `labels`: a table of counters read the same way.
    pub fn counters(&mut self, labels: &[(&'a str, &'a str)], rows: &[(&'a str, &'a str, f64)]) {
        for &(name, help, value) in rows {
            self.counter(name, help).sample(labels, value);
        }
    }

    /// Adds a gauge per `(name, help, used, capacity)` row, each two
    /// series as [`Family::used_and_capacity`] makes them.
    pub fn capacities(
        &mut self,
        labels: &[(&'a str, &'a str)],
        rows: &[(&'a str, &'a str, f64, f64)],
    ) {
        for &(name, help, used, capacity) in rows {
            self.gauge(name, help)
                .used_and_capacity(labels, used, capacity);
        }
    }

    /// Adds families built elsewhere.
    pub fn extend(&mut self, families: impl IntoIterator<Item = ExtraFamily<'a>>) {
        self.0.extend(families);
    }

    /// The families, in the order they were started.
    pub fn into_vec(self) -> Vec<ExtraFamily<'a>> {
        self.0
    }
}

impl<'a> Family<'_, 'a> {
    /// Adds a series with `labels`.
    pub fn sample(self, labels: &[(&'a str, &'a str)], value: f64) -> Self {
        self.0.samples.push(ExtraSample {
            labels: labels.to_vec(),
            value,
        });
        self
    }

    /// Adds a series without labels.
    pub fn value(self, value: f64) -> Self {
        self.sample(&[], value)
    }

    /// Adds a series for each of `values`, its labels `labels` and
    /// `(name, value)` (`kind="used"`, `state="live"`, ...).
    pub fn by(
        self,
        labels: &[(&'a str, &'a str)],
        name: &'a str,
        values: &[(&'a str, f64)],
    ) -> Self {
        for &(label, value) in values {
            let mut l = labels.to_vec();
            l.push((name, label));
            self.0.samples.push(ExtraSample { labels: l, value });
        }
        self
    }

    /// Adds two series, `kind="used"` and `kind="capacity"`, after
    /// `labels`.
    pub fn used_and_capacity(
        self,
        labels: &[(&'a str, &'a str)],
        used: f64,
        capacity: f64,
    ) -> Self {
        self.by(labels, "kind", &[("used", used), ("capacity", capacity)])
    }
}

//! Checks of a snapshot's self-consistency, and per-series monotonicity
//! between snapshots.

use std::collections::{HashMap, HashSet};

use shmetrics_core::{FamilyView, Kind, Snapshot, Value};

/// A series' identity in a snapshot: family name and all labels.
pub type SeriesKey = (String, Vec<(String, String)>);

/// The key of a series.
pub fn key(
    family: &str,
    labels: impl Iterator<Item = (impl Into<String>, impl Into<String>)>,
) -> SeriesKey {
    (
        family.to_string(),
        labels.map(|(n, v)| (n.into(), v.into())).collect(),
    )
}

/// Checks that a snapshot is self-consistent:
/// - every series has one value per label name (plus at most one extra
///   label: `pid` or `shmetrics_overflow`);
/// - no label set appears twice in a family;
/// - histogram buckets are cumulative (monotone), one per bound plus +Inf
///   (the count), and the sum is not NaN;
/// - counters are finite and not negative; summary sums are not NaN.
pub fn check_snapshot(snap: &Snapshot) -> Result<(), String> {
    let mut names = HashSet::new();
    for fam in snap.families() {
        if !names.insert(fam.name().to_string()) {
            return Err(format!("family {:?} appears twice", fam.name()));
        }
        check_family(&fam)?;
    }
    Ok(())
}

/// The label checks of [`check_snapshot`] for each series of `fam`, then
/// its value checks.
fn check_family(fam: &FamilyView<'_>) -> Result<(), String> {
    let n_labels = fam.label_names().len();
    let mut seen = HashSet::new();
    for s in fam.series() {
        let labels: Vec<(String, String)> = s
            .labels()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        if s.label_values().len() != n_labels {
            return Err(format!(
                "{}: series {labels:?} has {} values for {n_labels} label names",
                fam.name(),
                s.label_values().len()
            ));
        }
        if labels.len() != n_labels && labels.len() != n_labels + 1 {
            return Err(format!(
                "{}: series {labels:?}: wrong label count",
                fam.name()
            ));
        }
        if !seen.insert(labels.clone()) {
            return Err(format!(
                "{}: label set {labels:?} appears twice",
                fam.name()
            ));
        }
        check_value(fam, s.value()).map_err(|e| format!("{}{labels:?}: {e}", fam.name()))?;
    }
    Ok(())
}

/// The value checks of [`check_snapshot`] for one series of `fam`.
fn check_value(fam: &FamilyView<'_>, value: Value<'_>) -> Result<(), String> {
    match (fam.kind(), value) {
        (Kind::Counter, Value::Counter(v)) if !(v >= 0.0 && v.is_finite()) => {
            Err(format!("counter is {v}"))
        }
        (Kind::Counter, Value::Counter(_)) | (Kind::Gauge, Value::Gauge(_)) => Ok(()),
        (
            Kind::Histogram,
            Value::Histogram {
                bounds,
                cumulative,
                sum,
                ..
            },
        ) => {
            if bounds != fam.buckets() {
                return Err("bounds differ from the family's".into());
            }
            if cumulative.len() != bounds.len() + 1 {
                return Err(format!(
                    "{} cumulative counts for {} bounds",
                    cumulative.len(),
                    bounds.len()
                ));
            }
            if cumulative.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("buckets not monotone: {cumulative:?}"));
            }
            check_sum(sum)
        }
        (Kind::Summary, Value::Summary { sum, .. }) => check_sum(sum),
        (k, v) => Err(format!("a {k:?} family has value {v:?}")),
    }
}

fn check_sum(sum: f64) -> Result<(), String> {
    if sum.is_nan() {
        return Err("sum is NaN".into());
    }
    Ok(())
}

/// The monotone numbers of a series: a counter's value, or a histogram's
/// cumulative counts (the last one is the count), or a summary's count.
fn monotone_numbers(v: Value<'_>) -> Option<Vec<f64>> {
    match v {
        Value::Counter(c) => Some(vec![c]),
        Value::Histogram { cumulative, .. } => Some(cumulative.iter().map(|c| *c as f64).collect()),
        Value::Summary { count, .. } => Some(vec![count as f64]),
        Value::Gauge(_) => None,
    }
}

/// Remembers the counters and histogram counts of the last snapshot, to
/// check that none of them decreases in the next.
#[derive(Debug, Default)]
pub struct Monotone {
    last: HashMap<SeriesKey, Vec<f64>>,
}

impl Monotone {
    /// Compares `snap` with the snapshots seen before; returns an error
    /// naming the first series whose count went down. A series missing
    /// from `snap` keeps its last known values.
    pub fn check(&mut self, snap: &Snapshot) -> Result<(), String> {
        for fam in snap.families() {
            for s in fam.series() {
                let Some(now) = monotone_numbers(s.value()) else {
                    continue;
                };
                let k = key(fam.name(), s.labels());
                if let Some(before) = self.last.get(&k) {
                    if before.len() == now.len() && before.iter().zip(&now).any(|(b, n)| n < b) {
                        return Err(format!("{k:?} went down: {before:?} -> {now:?}"));
                    }
                }
                self.last.insert(k, now);
            }
        }
        Ok(())
    }
}

/// Totals of a family: the sum of its counters, or of its histograms'
/// counts and sums. Zero if the family is absent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    /// Series in the family.
    pub series: usize,
    /// Sum of counter values, or of histogram counts.
    pub count: f64,
    /// Sum of histogram sums.
    pub sum: f64,
}

/// Totals of the family `name` in `snap`.
pub fn totals(snap: &Snapshot, name: &str) -> Totals {
    let mut t = Totals::default();
    if let Some(fam) = snap.family(name) {
        for s in fam.series() {
            t.series += 1;
            match s.value() {
                Value::Counter(v) => t.count += v,
                Value::Histogram {
                    cumulative, sum, ..
                } => {
                    t.count += *cumulative.last().unwrap_or(&0) as f64;
                    t.sum += sum;
                }
                Value::Summary { count, sum, .. } => {
                    t.count += count as f64;
                    t.sum += sum;
                }
                Value::Gauge(v) => t.count += v,
            }
        }
    }
    t
}

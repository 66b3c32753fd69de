//! Where a snapshot's series are: families by series count, and for each
//! the label names whose values multiply them. What an operator reads on
//! the exporter's status page and in `shmetrics inspect --top`.

use std::cmp::Reverse;
use std::collections::HashSet;

use super::{FamilyView, Snapshot};
use crate::model::Kind;

/// One family's share of the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyCardinality {
    /// The family's name (a counter's without `_total`).
    pub name: String,
    /// Its type.
    pub kind: Kind,
    /// Its series, its overflow series included.
    pub series: usize,
    /// Whether its overflow series is in use (new label sets found no
    /// room and were counted there).
    pub overflow_series: bool,
    /// New label sets sent to the overflow series.
    pub overflows: u64,
    /// Its label names with the number of distinct values each has,
    /// most values first (ties in the family's order).
    pub labels: Vec<LabelCardinality>,
}

/// The distinct values of one label name in a family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelCardinality {
    /// The label name.
    pub name: String,
    /// Distinct values among the family's series (the overflow series'
    /// empty values not counted).
    pub values: usize,
}

impl Snapshot {
    /// The `n` families with the most series, most first (ties by name),
    /// with the distinct values of each of their label names. Costs a
    /// pass over those families' series.
    pub fn top_families(&self, n: usize) -> Vec<FamilyCardinality> {
        let mut fams: Vec<_> = self.families().collect();
        fams.sort_by(|a, b| {
            b.series()
                .len()
                .cmp(&a.series().len())
                .then_with(|| a.name().cmp(b.name()))
        });
        fams.truncate(n);
        fams.into_iter().map(cardinality).collect()
    }
}

/// A family's series, and its labels' distinct values.
fn cardinality(f: FamilyView<'_>) -> FamilyCardinality {
    let names: Vec<&str> = f.label_names().collect();
    let mut distinct: Vec<HashSet<&str>> = vec![HashSet::new(); names.len()];
    let mut overflow_series = false;
    for s in f.series() {
        if s.is_overflow() {
            overflow_series = true;
            continue;
        }
        for (set, v) in distinct.iter_mut().zip(s.label_values()) {
            set.insert(v);
        }
    }
    let mut labels: Vec<LabelCardinality> = names
        .iter()
        .zip(&distinct)
        .map(|(name, set)| LabelCardinality {
            name: (*name).to_owned(),
            values: set.len(),
        })
        .collect();
    // Stable: ties keep the family's order.
    labels.sort_by_key(|l| Reverse(l.values));
    FamilyCardinality {
        name: f.name().to_owned(),
        kind: f.kind(),
        series: f.series().len(),
        overflow_series,
        overflows: f.overflows(),
        labels,
    }
}

#[cfg(test)]
mod tests {
    use crate::{FamilyDesc, Kind, Options, Store};

    #[test]
    fn families_by_series_with_their_labels_values() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            max_series: 64,
            ..Options::default()
        };
        let store = Store::open(dir.path().join("s"), &opts).unwrap();
        let small = store
            .register(&FamilyDesc::new("small", Kind::Gauge).labels(&["a"]))
            .unwrap();
        let big = store
            .register(&FamilyDesc::new("big", Kind::Counter).labels(&["method", "route"]))
            .unwrap();
        store.series(&small, &["x"]).unwrap();
        for route in 0..10 {
            for method in ["GET", "POST"] {
                let s = store
                    .series(&big, &[method, &format!("/r{route}")])
                    .unwrap();
                store.counter_inc(s).unwrap();
            }
        }
        let snap = store.snapshot().unwrap();
        let top = snap.top_families(5);
        assert_eq!(top.len(), 2);
        assert_eq!((top[0].name.as_str(), top[0].series), ("big", 20));
        assert_eq!(top[0].kind, Kind::Counter);
        let labels: Vec<_> = top[0]
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.values))
            .collect();
        assert_eq!(labels, [("route", 10), ("method", 2)]);
        assert!(!top[0].overflow_series);
        assert_eq!((top[1].name.as_str(), top[1].series), ("small", 1));
        assert_eq!(snap.top_families(1).len(), 1);
    }

    #[test]
    fn an_overflow_series_in_use_is_reported_and_not_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            max_series: 4,
            ..Options::default()
        };
        let store = Store::open(dir.path().join("s"), &opts).unwrap();
        let f = store
            .register(&FamilyDesc::new("f", Kind::Counter).labels(&["id"]))
            .unwrap();
        for id in 0..20 {
            let s = store.series_or_overflow(&f, &[&id.to_string()]).unwrap();
            store.counter_inc(s).unwrap();
        }
        let snap = store.snapshot().unwrap();
        let top = snap.top_families(1);
        assert!(top[0].overflow_series, "{top:?}");
        assert!(top[0].overflows > 0, "{top:?}");
        // The overflow series' empty value is not one of the ids.
        assert_eq!(top[0].labels[0].values, top[0].series - 1);
    }
}

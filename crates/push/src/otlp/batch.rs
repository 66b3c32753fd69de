//! A snapshot as the data points of one export, each with the start of
//! its stream: when the series was created, or just after the last
//! snapshot that saw it before its values went down.

use std::collections::HashMap;

use shmetrics_core::{FamilyView, Kind, NativeBuckets, Snapshot, Value};

use crate::clock::unix_ns;
use crate::pipeline::Batcher;
use crate::queue;

/// One snapshot's data points, cumulative, in family order.
#[derive(Debug)]
pub(crate) struct Batch {
    /// Numbered in the order they were taken.
    pub id: u64,
    /// When the snapshot was taken, in nanoseconds since the Unix epoch.
    pub time_unix_ns: u64,
    /// Families with at least one series.
    pub families: Vec<FamilyPoints>,
    /// Data points in all families.
    pub points: usize,
}

impl queue::Batch for Batch {
    fn id(&self) -> u64 {
        self.id
    }

    fn units(&self) -> usize {
        self.points
    }

    fn request_end(&self, start: usize, max: usize) -> usize {
        self.points.min(start + max)
    }
}

/// Makes batches with a [`Tracker`] between them; with `native`, reads
/// histograms' native buckets too (see [`FamilyPoints::native`]).
#[derive(Debug)]
pub(crate) struct Tracking {
    pub native: bool,
}

impl Batcher for Tracking {
    type Batch = Batch;
    type State = Tracker;

    fn batch(&self, tracker: &mut Tracker, id: u64, snap: &Snapshot) -> Batch {
        tracker.native = self.native;
        tracker.batch(id, snap, unix_ns())
    }
}

/// A family's points.
#[derive(Debug)]
pub(crate) struct FamilyPoints {
    pub name: String,
    pub help: String,
    pub unit: String,
    pub kind: Kind,
    /// Histogram bucket bounds, without `+Inf`.
    pub bounds: Vec<f64>,
    /// Whether its histograms are read with their native buckets (native
    /// histograms asked for, and the family has them): they are then
    /// sent as exponential histograms.
    pub native: bool,
    pub series: Vec<SeriesPoint>,
}

/// One series' point, cumulative.
#[derive(Debug)]
pub(crate) struct SeriesPoint {
    /// Identifies the series across snapshots (family, kind and labels).
    pub key: Box<str>,
    /// Labels with a non-empty value, in the family's order (then `pid`
    /// or `shmetrics_overflow`).
    pub attributes: Vec<(String, String)>,
    /// When the current stream started: the series' creation, or (after
    /// its values went down) just after the last snapshot before.
    pub start_unix_ns: u64,
    pub reading: Reading,
}

/// A series' values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reading {
    /// A counter's total or a gauge's value.
    Number(f64),
    /// A histogram: observations per bucket (not cumulative; one more than
    /// the bounds) and their sum, and its native buckets when they are
    /// read.
    Histogram {
        buckets: Vec<u64>,
        sum: f64,
        native: Option<Native>,
    },
    /// A summary's count and sum, and its quantiles over its window
    /// (quantile, value).
    Summary {
        count: u64,
        sum: f64,
        quantiles: Vec<(f64, f64)>,
    },
}

/// A histogram's native buckets, owned.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Native {
    pub schema: i32,
    pub zero_threshold: f64,
    pub zero_count: u64,
    /// Positive buckets: the index of the first, and consecutive counts.
    pub positive: (i32, Vec<u64>),
    /// Negative buckets, the same way.
    pub negative: (i32, Vec<u64>),
}

impl Native {
    fn of(nb: NativeBuckets<'_>) -> Native {
        Native {
            schema: nb.schema,
            zero_threshold: nb.zero_threshold,
            zero_count: nb.zero_count,
            positive: (nb.positive.offset, nb.positive.counts.to_vec()),
            negative: (nb.negative.offset, nb.negative.counts.to_vec()),
        }
    }

    /// Every observation: the zero bucket's and every bucket's.
    pub(crate) fn count(&self) -> u64 {
        self.zero_count + self.positive.1.iter().sum::<u64>() + self.negative.1.iter().sum::<u64>()
    }

    /// Whether a count went down since `before`, or the schema changed.
    fn went_down_from(&self, before: &Native) -> bool {
        self.schema != before.schema
            || self.zero_count < before.zero_count
            || run_went_down(&self.positive, &before.positive)
            || run_went_down(&self.negative, &before.negative)
    }

    /// `self - before`, bucket by bucket (none went down).
    pub(crate) fn minus(&self, before: &Native) -> Native {
        Native {
            zero_count: self.zero_count.saturating_sub(before.zero_count),
            positive: run_minus(&self.positive, &before.positive),
            negative: run_minus(&self.negative, &before.negative),
            ..self.clone()
        }
    }
}

/// The count of bucket `index` in a run (0 outside it).
fn run_count(run: &(i32, Vec<u64>), index: i32) -> u64 {
    let k = i64::from(index) - i64::from(run.0);
    usize::try_from(k)
        .ok()
        .and_then(|k| run.1.get(k))
        .copied()
        .unwrap_or(0)
}

fn run_went_down(now: &(i32, Vec<u64>), before: &(i32, Vec<u64>)) -> bool {
    before
        .1
        .iter()
        .enumerate()
        .any(|(k, &b)| run_count(now, before.0 + k as i32) < b)
}

fn run_minus(now: &(i32, Vec<u64>), before: &(i32, Vec<u64>)) -> (i32, Vec<u64>) {
    let counts = now
        .1
        .iter()
        .enumerate()
        .map(|(k, &n)| n.saturating_sub(run_count(before, now.0 + k as i32)))
        .collect();
    (now.0, counts)
}

impl Reading {
    /// A series' value as a reading: a histogram's counts per bucket (not
    /// cumulative), and with `native` its native buckets.
    fn of(value: Value<'_>, native: bool) -> Reading {
        match value {
            Value::Counter(v) | Value::Gauge(v) => Reading::Number(v),
            Value::Histogram {
                cumulative,
                sum,
                native: nb,
                ..
            } => {
                let mut prev = 0;
                let buckets = cumulative
                    .iter()
                    .map(|c| {
                        // Cumulative counts are monotone; saturate all
                        // the same.
                        let b = c.saturating_sub(prev);
                        prev = *c;
                        b
                    })
                    .collect();
                let native = nb.filter(|_| native).map(Native::of);
                Reading::Histogram {
                    buckets,
                    sum,
                    native,
                }
            }
            Value::Summary {
                count,
                sum,
                quantiles,
            } => Reading::Summary {
                count,
                sum,
                quantiles: quantiles.iter().map(|q| (q.quantile, q.value)).collect(),
            },
        }
    }

    /// Whether a monotone part is lower than in `prev`: the series was
    /// reset (a histogram's sum may go down with negative observations, so
    /// only its counts are looked at).
    pub(crate) fn went_down_from(&self, prev: &Reading) -> bool {
        match (self, prev) {
            (Reading::Number(now), Reading::Number(before)) => now < before,
            (
                Reading::Histogram {
                    buckets: now,
                    native: now_native,
                    ..
                },
                Reading::Histogram {
                    buckets: before,
                    native: before_native,
                    ..
                },
            ) => {
                now.len() != before.len()
                    || now.iter().zip(before).any(|(n, b)| n < b)
                    || match (now_native, before_native) {
                        (Some(n), Some(b)) => n.went_down_from(b),
                        (None, None) => false,
                        _ => true,
                    }
            }
            (Reading::Summary { count: now, .. }, Reading::Summary { count: before, .. }) => {
                now < before
            }
            _ => true,
        }
    }
}

/// What [`Tracker`] remembers of a series.
#[derive(Debug)]
struct Track {
    created: u64,
    start: u64,
    /// The monotone value last seen (gauges have none).
    last: Option<Reading>,
    /// The snapshot that last saw it.
    seen: u64,
}

/// Remembers every series' stream start between snapshots, so that a
/// series whose values went down (a store reset, a re-created series)
/// starts a new stream, with a new start time, in every temporality.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    /// Whether histograms are read with their native buckets.
    pub native: bool,
    series: HashMap<Box<str>, Track>,
    snapshots: u64,
    last_time_unix_ns: u64,
}

/// The key of a series: each part with its length, so that no two label
/// sets share one.
fn series_key(kind: Kind, name: &str, labels: &[(String, String)]) -> Box<str> {
    use std::fmt::Write;
    let mut k = String::with_capacity(name.len() + 16 * labels.len() + 8);
    let _ = write!(k, "{}:{}:{name}", kind.as_str(), name.len());
    for (n, v) in labels {
        let _ = write!(k, "|{}:{n}={}:{v}", n.len(), v.len());
    }
    k.into_boxed_str()
}

impl Tracker {
    /// The points of `snap`, taken at `time_unix_ns`.
    pub(crate) fn batch(&mut self, id: u64, snap: &Snapshot, time_unix_ns: u64) -> Batch {
        self.snapshots += 1;
        let mut families = Vec::with_capacity(snap.families().len());
        let mut points = 0;
        for family in snap.families() {
            let f = self.family(&family, time_unix_ns);
            if f.series.is_empty() {
                continue;
            }
            points += f.series.len();
            families.push(f);
        }
        // Forget series this snapshot no longer has (deleted, or a wiped
        // store): memory follows the store.
        let gen = self.snapshots;
        self.series.retain(|_, t| t.seen == gen);
        self.last_time_unix_ns = time_unix_ns;
        Batch {
            id,
            time_unix_ns,
            families,
            points,
        }
    }

    /// A family's points, each with its stream's start.
    fn family(&mut self, family: &FamilyView<'_>, time_unix_ns: u64) -> FamilyPoints {
        let kind = family.kind();
        let native = self.native
            && family.series().next().is_some_and(|s| {
                matches!(
                    s.value(),
                    Value::Histogram {
                        native: Some(_),
                        ..
                    }
                )
            });
        let mut series = Vec::with_capacity(family.series().len());
        for s in family.series() {
            let attributes: Vec<(String, String)> = s
                .labels()
                .filter(|(_, v)| !v.is_empty())
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            let reading = Reading::of(s.value(), native);
            let key = series_key(kind, family.name(), &attributes);
            let created = s.created_unix_ns();
            let start = self.stream_start(&key, kind, created, &reading, time_unix_ns);
            series.push(SeriesPoint {
                key,
                attributes,
                start_unix_ns: start.min(time_unix_ns),
                reading,
            });
        }
        FamilyPoints {
            name: family.name().to_string(),
            help: family.help().to_string(),
            unit: family.unit().to_string(),
            kind,
            bounds: if kind == Kind::Histogram {
                family.buckets().to_vec()
            } else {
                Vec::new()
            },
            native,
            series,
        }
    }

    /// Updates what is known of series `key` and returns its stream's
    /// start.
    fn stream_start(
        &mut self,
        key: &str,
        kind: Kind,
        created: u64,
        reading: &Reading,
        now: u64,
    ) -> u64 {
        let gen = self.snapshots;
        let monotone = (kind != Kind::Gauge).then(|| reading.clone());
        let last_time = self.last_time_unix_ns;
        match self.series.get_mut(key) {
            Some(t) => {
                if t.created != created {
                    // Deleted and created again (or another store).
                    t.created = created;
                    t.start = created;
                } else if let (Some(now_v), Some(before)) = (&monotone, &t.last) {
                    if now_v.went_down_from(before) {
                        // Reset at some time after the last snapshot that
                        // saw the higher value; a new stream.
                        t.start = (last_time + 1).min(now).max(t.start);
                    }
                }
                t.last = monotone;
                t.seen = gen;
                t.start
            }
            None => {
                self.series.insert(
                    key.into(),
                    Track {
                        created,
                        start: created,
                        last: monotone,
                        seen: gen,
                    },
                );
                created
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shmetrics_core::{FamilyDesc, Options, Store};

    #[test]
    fn keys_do_not_collide() {
        let a = series_key(Kind::Counter, "a", &[("b".into(), "c|1:d=1:e".into())]);
        let b = series_key(
            Kind::Counter,
            "a",
            &[("b".into(), "c".into()), ("d".into(), "e".into())],
        );
        assert_ne!(a, b);
        assert_ne!(
            series_key(Kind::Counter, "a", &[]),
            series_key(Kind::Gauge, "a", &[])
        );
    }

    #[test]
    fn a_reset_or_a_new_series_starts_a_new_stream() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let c = store
            .register(&FamilyDesc::new("c", Kind::Counter).labels(&["x"]))
            .unwrap();
        let h = store
            .register(&FamilyDesc::new("h", Kind::Histogram).buckets(&[1.0]))
            .unwrap();
        let g = store.register(&FamilyDesc::new("g", Kind::Gauge)).unwrap();
        let cs = store.series(&c, &["a"]).unwrap();
        let hs = store.series(&h, &[]).unwrap();
        let gs = store.series(&g, &[]).unwrap();
        store.counter_add(cs, 5.0).unwrap();
        store.observe(hs, 0.5).unwrap();
        store.observe(hs, 3.0).unwrap();
        store.gauge_set(gs, 9.0).unwrap();
        let mut t = Tracker::default();
        let starts = |b: &Batch| -> Vec<u64> {
            b.families
                .iter()
                .flat_map(|f| f.series.iter().map(|s| s.start_unix_ns))
                .collect()
        };
        let snap = store.snapshot().unwrap();
        let created: Vec<u64> = snap
            .families()
            .flat_map(|f| f.series().map(|s| s.created_unix_ns()).collect::<Vec<_>>())
            .collect();
        let now = created.iter().max().unwrap() + 1_000_000;
        let b1 = t.batch(0, &snap, now);
        assert_eq!(b1.points, 3);
        assert_eq!(starts(&b1), created);
        assert_eq!(
            b1.families[1].series[0].reading,
            Reading::Histogram {
                buckets: vec![1, 1],
                sum: 3.5,
                native: None,
            }
        );

        // Growth and a lower gauge: the same streams.
        store.counter_add(cs, 1.0).unwrap();
        store.gauge_set(gs, 1.0).unwrap();
        let b2 = t.batch(1, &store.snapshot().unwrap(), now + 10);
        assert_eq!(starts(&b2), created);

        // A reset: counter and histogram start anew just after the last
        // snapshot; the gauge keeps its creation time.
        store.reset().unwrap();
        store.counter_add(cs, 2.0).unwrap();
        store.observe(hs, 0.5).unwrap();
        let b3 = t.batch(2, &store.snapshot().unwrap(), now + 20);
        assert_eq!(starts(&b3), [now + 11, now + 11, created[2]]);
        // And stay there.
        let b4 = t.batch(3, &store.snapshot().unwrap(), now + 30);
        assert_eq!(starts(&b4), starts(&b3));

        // Deleted and created again: its new creation time.
        store.delete(&c, &["a"]).unwrap();
        let b5 = t.batch(4, &store.snapshot().unwrap(), now + 40);
        assert_eq!(b5.points, 2);
        assert!(t.series.len() == 2);
        let cs = store.series(&c, &["a"]).unwrap();
        store.counter_add(cs, 1.0).unwrap();
        let snap = store.snapshot().unwrap();
        let recreated = snap
            .family("c")
            .unwrap()
            .series()
            .next()
            .unwrap()
            .created_unix_ns();
        let b6 = t.batch(5, &snap, recreated + 50);
        assert_eq!(b6.families[0].series[0].start_unix_ns, recreated);
    }
}

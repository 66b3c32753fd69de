//! A range of a batch's points as one `ExportMetricsServiceRequest`, with
//! cumulative or delta sums and histograms.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use bytes::Bytes;
use prost::Message;
use shmetrics_core::Kind;

use super::batch::{Batch, FamilyPoints, Native, Reading, SeriesPoint};
use super::proto::{
    metric, number_data_point, AggregationTemporality, ExponentialBuckets, ExponentialHistogram,
    ExponentialHistogramDataPoint, ExportMetricsServiceRequest, Gauge, Histogram,
    HistogramDataPoint, InstrumentationScope, KeyValue, Metric, NumberDataPoint, Resource,
    ResourceMetrics, ScopeMetrics, Sum, Summary, SummaryDataPoint, ValueAtQuantile,
};
use super::{ResourceAttributes, Temporality};

/// The instrumentation scope's name.
pub const SCOPE_NAME: &str = "shmetrics";

/// What delta temporality remembers of a series: what the receiver has
/// been sent of its stream so far.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Baseline {
    /// The stream's start ([`SeriesPoint::start_unix_ns`]).
    stream_start: u64,
    /// The time of the last point the receiver took.
    time: u64,
    /// The cumulative reading at that time.
    reading: Reading,
}

/// Delta state: per series key, the last successful export.
#[derive(Debug, Default)]
pub(crate) struct Baselines {
    map: HashMap<Box<str>, Baseline>,
}

impl Baselines {
    /// Forgets series that `batch` does not have (deleted, or a wiped
    /// store), so that memory follows the store.
    pub(crate) fn keep_only(&mut self, batch: &Batch) {
        if self.map.is_empty() {
            return;
        }
        let keys: HashSet<&str> = batch
            .families
            .iter()
            .flat_map(|f| f.series.iter().map(|s| &*s.key))
            .collect();
        self.map.retain(|k, _| keys.contains(&**k));
    }

    /// Records what a request the receiver took contained.
    pub(crate) fn apply(&mut self, updates: Vec<(Box<str>, Baseline)>) {
        self.map.extend(updates);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

/// A request body and what the baselines become once it is taken.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// The protobuf body (compressed by the sender, if asked to).
    pub body: Bytes,
    /// Data points in it.
    pub points: u64,
    /// For delta temporality: the new baselines of its sums and
    /// histograms.
    pub updates: Vec<(Box<str>, Baseline)>,
}

/// How points are encoded: the same for every request.
#[derive(Debug)]
pub(crate) struct Encoder {
    temporality: Temporality,
    resource: Vec<KeyValue>,
}

impl Encoder {
    pub(crate) fn new(temporality: Temporality, resource: &ResourceAttributes) -> Encoder {
        Encoder {
            temporality,
            resource: resource
                .iter()
                .map(|(k, v)| KeyValue::string(k, v))
                .collect(),
        }
    }

    /// The request for points `range` (in family order) of `batch`. In
    /// delta temporality, sums and histograms are the difference from
    /// `baselines`; a series that has none, or whose stream started again,
    /// is sent whole, from its stream's start.
    pub(crate) fn encode(
        &self,
        batch: &Batch,
        range: Range<usize>,
        baselines: &Baselines,
    ) -> Encoded {
        let request = self.request(batch, range, baselines);
        Encoded {
            body: Bytes::from(request.0.encode_to_vec()),
            points: request.1,
            updates: request.2,
        }
    }

    /// [`Encoder::encode`] before encoding: the request, its points and
    /// the baselines it makes.
    pub(crate) fn request(
        &self,
        batch: &Batch,
        range: Range<usize>,
        baselines: &Baselines,
    ) -> (ExportMetricsServiceRequest, u64, Vec<(Box<str>, Baseline)>) {
        let mut points = Points {
            encoder: self,
            time: batch.time_unix_ns,
            baselines,
            updates: Vec::new(),
        };
        let mut metrics = Vec::new();
        let mut count = 0u64;
        let mut offset = 0usize;
        for f in &batch.families {
            let here = offset..offset + f.series.len();
            offset = here.end;
            let from = range.start.max(here.start);
            let to = range.end.min(here.end);
            if from >= to {
                continue;
            }
            let series = &f.series[from - here.start..to - here.start];
            count += series.len() as u64;
            metrics.push(Metric {
                name: f.name.clone(),
                description: f.help.clone(),
                unit: f.unit.clone(),
                data: Some(points.data(f, series)),
            });
        }
        (self.wrap(metrics), count, points.updates)
    }

    /// The request around `metrics`: the resource and the scope.
    fn wrap(&self, metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: self.resource.clone(),
                    dropped_attributes_count: 0,
                }),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(InstrumentationScope {
                        name: SCOPE_NAME.into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    }),
                    metrics,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        }
    }

    fn temporality(&self) -> i32 {
        match self.temporality {
            Temporality::Cumulative => AggregationTemporality::Cumulative as i32,
            Temporality::Delta => AggregationTemporality::Delta as i32,
        }
    }
}

/// The points of one request, and (delta) the baselines they make.
struct Points<'a> {
    encoder: &'a Encoder,
    time: u64,
    baselines: &'a Baselines,
    updates: Vec<(Box<str>, Baseline)>,
}

impl Points<'_> {
    /// A family's points in `series`.
    fn data(&mut self, f: &FamilyPoints, series: &[SeriesPoint]) -> metric::Data {
        let time = self.time;
        let temporality = self.encoder.temporality();
        match f.kind {
            Kind::Gauge => metric::Data::Gauge(Gauge {
                data_points: series
                    .iter()
                    .map(|s| number_point(s, s.start_unix_ns, time, number(&s.reading)))
                    .collect(),
            }),
            Kind::Counter => metric::Data::Sum(Sum {
                data_points: series
                    .iter()
                    .map(|s| {
                        let (start, reading) = self.since(s);
                        number_point(s, start, time, number(&reading))
                    })
                    .collect(),
                aggregation_temporality: temporality,
                is_monotonic: true,
            }),
            Kind::Histogram if f.native => {
                metric::Data::ExponentialHistogram(ExponentialHistogram {
                    data_points: series.iter().map(|s| self.exponential(s)).collect(),
                    aggregation_temporality: temporality,
                })
            }
            Kind::Histogram => metric::Data::Histogram(Histogram {
                data_points: series.iter().map(|s| self.histogram(f, s)).collect(),
                aggregation_temporality: temporality,
            }),
            // A summary has no temporality: its count and sum are always
            // cumulative.
            Kind::Summary => metric::Data::Summary(Summary {
                data_points: series.iter().map(|s| summary_point(s, time)).collect(),
            }),
        }
    }

    fn histogram(&mut self, f: &FamilyPoints, s: &SeriesPoint) -> HistogramDataPoint {
        let (start, reading) = self.since(s);
        let (buckets, sum) = match reading {
            Reading::Histogram { buckets, sum, .. } => (buckets, sum),
            _ => (Vec::new(), 0.0),
        };
        HistogramDataPoint {
            start_time_unix_nano: start,
            time_unix_nano: self.time,
            count: buckets.iter().sum(),
            sum: Some(sum),
            bucket_counts: buckets,
            explicit_bounds: f.bounds.clone(),
            attributes: attributes(s),
            flags: 0,
        }
    }

    /// A histogram's point from its native buckets. A native bucket
    /// `i` counts `(base^(i-1), base^i]`, an OTLP bucket `k`
    /// `(base^k, base^(k+1)]`: OTLP's offset is the native one minus 1.
    fn exponential(&mut self, s: &SeriesPoint) -> ExponentialHistogramDataPoint {
        let (start, reading) = self.since(s);
        let (native, sum) = match reading {
            Reading::Histogram {
                native: Some(n),
                sum,
                ..
            } => (n, sum),
            // Read with native buckets, as the family's first series was
            // (a family's series all have them).
            _ => (
                Native {
                    schema: 0,
                    zero_threshold: 0.0,
                    zero_count: 0,
                    positive: (0, Vec::new()),
                    negative: (0, Vec::new()),
                },
                0.0,
            ),
        };
        let buckets = |run: &(i32, Vec<u64>)| {
            (!run.1.is_empty()).then(|| ExponentialBuckets {
                offset: run.0 - 1,
                bucket_counts: run.1.clone(),
            })
        };
        ExponentialHistogramDataPoint {
            attributes: attributes(s),
            start_time_unix_nano: start,
            time_unix_nano: self.time,
            count: native.count(),
            sum: Some(sum),
            scale: native.schema,
            zero_count: native.zero_count,
            positive: buckets(&native.positive),
            negative: buckets(&native.negative),
            flags: 0,
            zero_threshold: native.zero_threshold,
        }
    }

    /// A sum's or histogram's start time and reading: cumulative as they
    /// are; delta from the baseline, when it belongs to the same stream.
    fn since(&mut self, s: &SeriesPoint) -> (u64, Reading) {
        let time = self.time;
        if self.encoder.temporality != Temporality::Delta {
            return (s.start_unix_ns, s.reading.clone());
        }
        self.updates.push((
            s.key.clone(),
            Baseline {
                stream_start: s.start_unix_ns,
                time,
                reading: s.reading.clone(),
            },
        ));
        match self.baselines.map.get(&s.key) {
            Some(b)
                if b.stream_start == s.start_unix_ns && !s.reading.went_down_from(&b.reading) =>
            {
                (b.time, difference(&s.reading, &b.reading))
            }
            // The same stream start, yet lower: cannot happen with the
            // tracker's starts, but never send a negative delta. A new
            // stream, starting after the last point sent.
            Some(b) if b.stream_start == s.start_unix_ns => {
                ((b.time + 1).min(time), s.reading.clone())
            }
            // No point of this stream taken yet: all of it since its start.
            _ => (s.start_unix_ns, s.reading.clone()),
        }
    }
}

/// `now - before`, part by part (neither went down).
fn difference(now: &Reading, before: &Reading) -> Reading {
    match (now, before) {
        (Reading::Number(n), Reading::Number(b)) => Reading::Number((n - b).max(0.0)),
        (
            Reading::Histogram {
                buckets,
                sum,
                native,
            },
            Reading::Histogram {
                buckets: b_buckets,
                sum: b_sum,
                native: b_native,
            },
        ) => Reading::Histogram {
            buckets: buckets
                .iter()
                .zip(b_buckets)
                .map(|(n, b)| n.saturating_sub(*b))
                .collect(),
            sum: sum - b_sum,
            native: match (native, b_native) {
                (Some(n), Some(b)) => Some(n.minus(b)),
                (n, _) => n.clone(),
            },
        },
        _ => now.clone(),
    }
}

fn number(r: &Reading) -> f64 {
    match r {
        Reading::Number(v) => *v,
        _ => 0.0,
    }
}

fn attributes(s: &SeriesPoint) -> Vec<KeyValue> {
    s.attributes
        .iter()
        .map(|(k, v)| KeyValue::string(k, v))
        .collect()
}

fn summary_point(s: &SeriesPoint, time: u64) -> SummaryDataPoint {
    let (count, sum, quantiles) = match &s.reading {
        Reading::Summary {
            count,
            sum,
            quantiles,
        } => (*count, *sum, &quantiles[..]),
        _ => (0, 0.0, &[][..]),
    };
    SummaryDataPoint {
        start_time_unix_nano: s.start_unix_ns,
        time_unix_nano: time,
        count,
        sum,
        quantile_values: quantiles
            .iter()
            .map(|&(quantile, value)| ValueAtQuantile { quantile, value })
            .collect(),
        attributes: attributes(s),
        flags: 0,
    }
}

fn number_point(s: &SeriesPoint, start: u64, time: u64, value: f64) -> NumberDataPoint {
    NumberDataPoint {
        start_time_unix_nano: start,
        time_unix_nano: time,
        value: Some(number_data_point::Value::AsDouble(value)),
        attributes: attributes(s),
        flags: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::batch::Tracker;
    use super::*;
    use shmetrics_core::{FamilyDesc, Options, Store};

    fn point(key: &str, start: u64, reading: Reading) -> SeriesPoint {
        SeriesPoint {
            key: key.into(),
            attributes: vec![("k".into(), key.into())],
            start_unix_ns: start,
            reading,
        }
    }

    fn batch(time: u64, counter: Vec<SeriesPoint>, hist: Vec<SeriesPoint>) -> Batch {
        let points = counter.len() + hist.len();
        Batch {
            id: time,
            time_unix_ns: time,
            families: vec![
                FamilyPoints {
                    name: "c".into(),
                    help: "C.".into(),
                    unit: String::new(),
                    kind: Kind::Counter,
                    bounds: vec![],
                    native: false,
                    series: counter,
                },
                FamilyPoints {
                    name: "h".into(),
                    help: String::new(),
                    unit: "seconds".into(),
                    kind: Kind::Histogram,
                    bounds: vec![1.0],
                    native: false,
                    series: hist,
                },
            ],
            points,
        }
    }

    fn sums(r: &ExportMetricsServiceRequest) -> Vec<(u64, u64, f64)> {
        let mut out = Vec::new();
        for m in &r.resource_metrics[0].scope_metrics[0].metrics {
            if let Some(metric::Data::Sum(s)) = &m.data {
                for p in &s.data_points {
                    let Some(number_data_point::Value::AsDouble(v)) = p.value else {
                        panic!()
                    };
                    out.push((p.start_time_unix_nano, p.time_unix_nano, v));
                }
            }
        }
        out
    }

    fn hists(r: &ExportMetricsServiceRequest) -> Vec<(u64, Vec<u64>, u64, Option<f64>)> {
        let mut out = Vec::new();
        for m in &r.resource_metrics[0].scope_metrics[0].metrics {
            if let Some(metric::Data::Histogram(h)) = &m.data {
                for p in &h.data_points {
                    out.push((
                        p.start_time_unix_nano,
                        p.bucket_counts.clone(),
                        p.count,
                        p.sum,
                    ));
                }
            }
        }
        out
    }

    fn h(buckets: &[u64], sum: f64) -> Reading {
        Reading::Histogram {
            buckets: buckets.to_vec(),
            sum,
            native: None,
        }
    }

    #[test]
    fn delta_follows_successful_exports_and_never_goes_negative() {
        let enc = Encoder::new(Temporality::Delta, &ResourceAttributes::default());
        let mut base = Baselines::default();

        // First export: everything since the stream's start.
        let b1 = batch(
            100,
            vec![point("a", 10, Reading::Number(5.0))],
            vec![point("x", 10, h(&[1, 2], 4.0))],
        );
        let (r, n, up) = enc.request(&b1, 0..2, &base);
        assert_eq!(n, 2);
        assert_eq!(sums(&r), [(10, 100, 5.0)]);
        assert_eq!(hists(&r), [(10, vec![1, 2], 3, Some(4.0))]);
        base.apply(up);

        // Second: the difference, from the last point's time.
        let b2 = batch(
            200,
            vec![point("a", 10, Reading::Number(8.0))],
            vec![point("x", 10, h(&[1, 3], 3.0))],
        );
        let (r, _, up2) = enc.request(&b2, 0..2, &base);
        assert_eq!(sums(&r), [(100, 200, 3.0)]);
        assert_eq!(hists(&r), [(100, vec![0, 1], 1, Some(-1.0))]);
        // Refused: the baselines stay, and the next covers both.
        drop(up2);
        let b3 = batch(
            300,
            vec![point("a", 10, Reading::Number(9.0))],
            vec![point("x", 10, h(&[1, 3], 3.0))],
        );
        let (r, _, up) = enc.request(&b3, 0..2, &base);
        assert_eq!(sums(&r), [(100, 300, 4.0)]);
        assert_eq!(hists(&r), [(100, vec![0, 1], 1, Some(-1.0))]);
        base.apply(up);

        // A new stream (the tracker moved the start): the new value whole,
        // from the new start; never 2 - 9.
        let b4 = batch(
            400,
            vec![point("a", 301, Reading::Number(2.0))],
            vec![point("x", 301, h(&[1, 0], 0.5))],
        );
        let (r, _, up) = enc.request(&b4, 0..2, &base);
        assert_eq!(sums(&r), [(301, 400, 2.0)]);
        assert_eq!(hists(&r), [(301, vec![1, 0], 1, Some(0.5))]);
        base.apply(up);

        // Lower with the same start (not from the tracker): still no
        // negative delta.
        let b5 = batch(500, vec![point("a", 301, Reading::Number(1.0))], vec![]);
        let (r, _, _) = enc.request(&b5, 0..1, &base);
        assert_eq!(sums(&r), [(401, 500, 1.0)]);

        // Series gone from the store are forgotten.
        assert_eq!(base.len(), 2);
        base.keep_only(&b5);
        assert_eq!(base.len(), 1);
    }

    #[test]
    fn cumulative_and_ranges() {
        let enc = Encoder::new(
            Temporality::Cumulative,
            &ResourceAttributes::parse(&["service.name=s"]).unwrap(),
        );
        let base = Baselines::default();
        let b = batch(
            100,
            vec![
                point("a", 10, Reading::Number(5.0)),
                point("b", 20, Reading::Number(6.0)),
            ],
            vec![point("x", 30, h(&[1, 2], 4.0))],
        );
        let (r, n, up) = enc.request(&b, 1..3, &base);
        assert!(up.is_empty());
        assert_eq!(n, 2);
        assert_eq!(sums(&r), [(20, 100, 6.0)]);
        assert_eq!(hists(&r), [(30, vec![1, 2], 3, Some(4.0))]);
        let rm = &r.resource_metrics[0];
        assert_eq!(rm.resource.as_ref().unwrap().attributes.len(), 1);
        let m = &rm.scope_metrics[0].metrics;
        assert_eq!(m[0].name, "c");
        assert_eq!(m[1].unit, "seconds");
        let (r, n, _) = enc.request(&b, 3..3, &base);
        assert_eq!(n, 0);
        assert!(r.resource_metrics[0].scope_metrics[0].metrics.is_empty());
    }

    #[test]
    fn from_a_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let f = store
            .register(&FamilyDesc::new("s", Kind::Summary).labels(&["a", "b"]))
            .unwrap();
        let s = store.series(&f, &["x", ""]).unwrap();
        store.observe(s, 2.0).unwrap();
        store.observe(s, 3.0).unwrap();
        let snap = store.snapshot().unwrap();
        let b = Tracker::default().batch(7, &snap, u64::MAX / 2);
        let enc = Encoder::new(Temporality::Delta, &ResourceAttributes::default());
        let e = enc.encode(&b, 0..1, &Baselines::default());
        assert!(e.updates.is_empty(), "a summary has no delta");
        let r = ExportMetricsServiceRequest::decode(e.body).unwrap();
        let m = &r.resource_metrics[0].scope_metrics[0].metrics[0];
        let Some(metric::Data::Summary(sm)) = &m.data else {
            panic!("{m:?}")
        };
        let p = &sm.data_points[0];
        assert_eq!((p.count, p.sum), (2, 5.0));
        assert_eq!(p.attributes, [KeyValue::string("a", "x")]);
        assert_eq!(
            p.start_time_unix_nano,
            snap.family("s")
                .unwrap()
                .series()
                .next()
                .unwrap()
                .created_unix_ns()
        );
    }
}

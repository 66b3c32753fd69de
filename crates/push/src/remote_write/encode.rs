//! A snapshot as remote_write requests: the series the text exposition
//! would show, one sample each, protobuf-encoded and snappy-compressed.

use std::cmp::Reverse;

use bytes::Bytes;
use prost::Message;
use rustc_hash::FxHashMap;
use shmetrics_core::{
    Created, Exemplar, FamilyView, Kind, NativeBuckets, SeriesView, Snapshot, Value,
};
use shmetrics_expo::protobuf::spans_and_deltas;

use super::proto::{histogram, Histogram, Label, Sample, TimeSeries, WriteRequest};
use super::proto2::MetricType;
use super::ExternalLabels;

/// One request body: a snappy-compressed (block format) `WriteRequest`.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// The compressed body.
    pub body: Bytes,
    /// Samples in it (native histogram samples included).
    pub samples: u64,
    /// Exemplars in it (remote write 2.0; 0 in 1.0).
    pub exemplars: u64,
}

/// The series of `snap` with one sample each at `timestamp_ms`, named as
/// the text exposition names them:
///
/// - a counter `name_total` (`name` if named as given, as on the text page);
/// - a gauge `name`;
/// - a histogram `name_bucket` with an `le` label (one per bound and
///   `+Inf`, rendered as the exposition renders them: `0.5`, `1.0`,
///   `+Inf`), `name_sum` and `name_count`;
/// - a summary `name` with a `quantile` label per quantile (if it has
///   quantiles), `name_sum` and `name_count`;
/// - with `native_histograms`, a histogram with native buckets also as a
///   native histogram sample named `name` (as Prometheus stores a scraped
///   one and sends it with `send_native_histograms`); a native-only
///   histogram then only so, without the `_bucket{le="+Inf"}`, `_sum` and
///   `_count` series of the text formats.
///
/// Each series carries its labels (`pid` and `shmetrics_overflow` where
/// the exposition has them) and the external labels it does not already
/// have, as Prometheus adds its `external_labels`. Labels with an empty
/// value are left out (an empty value means no label). Labels are sorted
/// by name in byte order, as the specification requires, which puts
/// `__name__` first unless a label name starts with an upper-case letter.
pub fn timeseries(
    snap: &Snapshot,
    external: &ExternalLabels,
    timestamp_ms: i64,
    native_histograms: bool,
) -> Vec<TimeSeries> {
    let shape = Shape {
        native_histograms,
        custom_buckets: false,
        grouped: false,
    };
    let mut rows = Rows::new(snap.series_count(), false);
    walk(snap, external, timestamp_ms, shape, &mut rows);
    rows.out
}

/// As [`timeseries`], with each series' [`SeriesMeta`] (remote write
/// 2.0's metadata, start time and exemplar), in the same order; with
/// `custom_buckets`, a histogram without native buckets is one
/// custom-bucket native histogram sample named `name` (schema -53, its
/// bounds as `custom_values`), as Prometheus's
/// `convert_classic_histograms_to_nhcb` stores it, instead of its
/// `_bucket`, `_sum` and `_count` series.
pub fn timeseries_with_meta<'a>(
    snap: &'a Snapshot,
    external: &'a ExternalLabels,
    timestamp_ms: i64,
    native_histograms: bool,
    custom_buckets: bool,
) -> (Vec<TimeSeries>, Vec<SeriesMeta<'a>>) {
    let shape = Shape {
        native_histograms,
        custom_buckets,
        grouped: false,
    };
    let mut rows = Rows::new(snap.series_count(), true);
    walk(snap, external, timestamp_ms, shape, &mut rows);
    (rows.out, rows.meta.unwrap_or_default())
}

/// How a walk writes the snapshot.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    /// Native buckets as native histogram samples.
    pub native_histograms: bool,
    /// Classic histograms as custom-bucket native histogram samples.
    pub custom_buckets: bool,
    /// The store series of all families in one order, grouped by their
    /// label values, those of the label with the most distinct values
    /// first ([`group`]): the series that share them (a route's
    /// request counters and duration histograms) come one after the
    /// other, so a run of them (a 2.0 request) interns fewer strings.
    /// Else family by family, in the store's order, as the exposition
    /// shows them.
    pub grouped: bool,
}

/// What remote write 2.0 sends with a series besides its labels and
/// sample: its metric's type, help and unit, when it was created (0:
/// not sent), and its exemplar.
#[derive(Clone, Debug)]
pub struct SeriesMeta<'a> {
    /// The metric type.
    pub typ: MetricType,
    /// The family's help text.
    pub help: &'a str,
    /// The family's unit.
    pub unit: &'a str,
    /// The series' creation, milliseconds since the Unix epoch, for
    /// counters, histograms and summaries whose family shows `_created`
    /// in some format; else 0.
    pub start_ms: i64,
    /// The latest exemplar of the sample's place (a counter's, or a
    /// bucket's).
    pub exemplar: Option<Exemplar<'a>>,
}

/// Where a walk writes its series.
pub(super) trait Sink<'a> {
    /// A store series begins: its labels with a value and the external
    /// labels it lacks, sorted by name. The series [`push`](Sink::push)ed
    /// until the next call carry them.
    fn begin(&mut self, base: &[(&'a str, &'a str)]);

    /// One series: named `name`, with the labels of the last
    /// [`begin`](Sink::begin) and `extra` (a bucket's `le`, a quantile's
    /// `quantile`), its point and its metadata.
    fn push(&mut self, name: &str, extra: Option<(&str, &str)>, point: Point, meta: SeriesMeta<'a>);
}

/// A series' one point.
#[derive(Debug)]
pub(super) enum Point {
    /// A float sample.
    Sample(Sample),
    /// A native histogram sample.
    Histogram(Histogram),
}

/// Writes the series of `snap` into `sink`, as [`timeseries`] describes
/// them.
pub(super) fn walk<'a>(
    snap: &'a Snapshot,
    external: &'a ExternalLabels,
    timestamp_ms: i64,
    shape: Shape,
    sink: &mut impl Sink<'a>,
) {
    let families: Vec<FamilyView<'a>> = snap.families().collect();
    let mut out = Series {
        sink,
        custom_buckets: shape.custom_buckets,
        strings: families.iter().map(FamilyStrings::of).collect(),
        family: 0,
        base: Vec::new(),
        timestamp_ms,
        short_bounds: false,
        current: SeriesMeta {
            typ: MetricType::Unspecified,
            help: "",
            unit: "",
            start_ms: 0,
            exemplar: None,
        },
    };
    let mut order: Vec<(usize, SeriesView<'a>)> = families
        .iter()
        .enumerate()
        .flat_map(|(f, family)| family.series().map(move |s| (f, s)))
        .collect();
    if shape.grouped {
        group(&mut order);
    }
    let (mut entered, mut starts) = (None, false);
    for (f, series) in &order {
        let family = &families[*f];
        if entered != Some(*f) {
            starts = out.enter(*f, family);
            entered = Some(*f);
        }
        out.current.start_ms = if starts {
            (series.created_unix_ns() / 1_000_000) as i64
        } else {
            0
        };
        out.set_base(series, external);
        out.value(family, series, shape.native_histograms);
    }
}

/// Orders `series` (of any families) by their label values, those of
/// the label name with the most distinct values first, so that the series
/// that share such a value come one after the other. Values compare by
/// when they were first met, not by their bytes: only the grouping
/// matters. The sort is stable: the same labels in several families
/// keep the families' order, and each family its series' order.
fn group(series: &mut Vec<(usize, SeriesView<'_>)>) {
    // Each label as (name, value) numbers, numbered as first met; each
    // name's values.
    let mut name_numbers: FxHashMap<&str, u32> = FxHashMap::default();
    let mut values: Vec<FxHashMap<&str, u32>> = Vec::new();
    let mut labels: Vec<(u32, u32)> = Vec::new();
    let mut ends = Vec::with_capacity(series.len());
    for (_, s) in series.iter() {
        for (name, value) in s.labels().filter(|(_, v)| !v.is_empty()) {
            let n = *name_numbers.entry(name).or_insert_with(|| {
                values.push(FxHashMap::default());
                values.len() as u32 - 1
            });
            let of_name = &mut values[n as usize];
            let next = of_name.len() as u32;
            labels.push((n, *of_name.entry(value).or_insert(next)));
        }
        ends.push(labels.len());
    }
    // The names by their count of values, most first (ties as first met).
    let mut by_count: Vec<usize> = (0..values.len()).collect();
    by_count.sort_by_key(|&n| Reverse(values[n].len()));
    let mut rank = vec![0u64; values.len()];
    for (r, &n) in by_count.iter().enumerate() {
        rank[n] = r as u64;
    }
    // A series' key: its (name rank, value) pairs, sorted.
    let mut keys: Vec<u64> = labels
        .iter()
        .map(|&(n, v)| rank[n as usize] << 32 | u64::from(v))
        .collect();
    let mut start = 0;
    for &end in &ends {
        keys[start..end].sort_unstable();
        start = end;
    }
    let key = |i: usize| &keys[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by(|&a, &b| key(a).cmp(key(b)));
    *series = order.iter().map(|&i| series[i]).collect();
}

/// A bound or quantile as the exposition renders it (`0.5`, `1.0`, `+Inf`;
/// `1` for a family with the `short_bounds` hint).
fn bound(v: f64, short: bool) -> String {
    let mut text = Vec::new();
    if short {
        shmetrics_expo::write_float(&mut text, v);
    } else {
        shmetrics_expo::write_canonical_float(&mut text, v);
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The series of a remote write 1.0 (or 2.0 with custom buckets) push,
/// with their metadata when asked for.
struct Rows<'a> {
    out: Vec<TimeSeries>,
    meta: Option<Vec<SeriesMeta<'a>>>,
    /// The labels of the store series being written.
    base: Vec<(&'a str, &'a str)>,
}

impl<'a> Rows<'a> {
    fn new(series: usize, meta: bool) -> Rows<'a> {
        Rows {
            out: Vec::with_capacity(series),
            meta: meta.then(|| Vec::with_capacity(series)),
            base: Vec::new(),
        }
    }
}

impl<'a> Sink<'a> for Rows<'a> {
    fn begin(&mut self, base: &[(&'a str, &'a str)]) {
        self.base.clear();
        self.base.extend_from_slice(base);
    }

    fn push(
        &mut self,
        name: &str,
        extra: Option<(&str, &str)>,
        point: Point,
        meta: SeriesMeta<'a>,
    ) {
        let label = |name: &str, value: &str| Label {
            name: name.to_string(),
            value: value.to_string(),
        };
        let mut labels = Vec::with_capacity(self.base.len() + 2);
        labels.push(label("__name__", name));
        labels.extend(self.base.iter().map(|(n, v)| label(n, v)));
        labels.extend(extra.map(|(n, v)| label(n, v)));
        labels.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        let (samples, histograms) = match point {
            Point::Sample(s) => (vec![s], Vec::new()),
            Point::Histogram(h) => (Vec::new(), vec![h]),
        };
        self.out.push(TimeSeries {
            labels,
            samples,
            histograms,
        });
        if let Some(all) = &mut self.meta {
            all.push(meta);
        }
    }
}

/// What a walk makes once per family: a grouped walk enters a family
/// again at each of its series.
struct FamilyStrings {
    names: Names,
    les: Les,
}

impl FamilyStrings {
    fn of(family: &FamilyView<'_>) -> FamilyStrings {
        FamilyStrings {
            names: Names::of(family.name()),
            les: Les::default(),
        }
    }
}

/// A family's name with each suffix.
struct Names {
    /// `name`, `name_total`, `name_bucket`, `name_sum`, `name_count`.
    with: [String; 5],
}

/// A suffix of [`Names`].
#[derive(Clone, Copy)]
enum Suffix {
    None = 0,
    Total = 1,
    Bucket = 2,
    Sum = 3,
    Count = 4,
}

impl Names {
    fn of(name: &str) -> Names {
        let with =
            ["", "_total", "_bucket", "_sum", "_count"].map(|suffix| format!("{name}{suffix}"));
        Names { with }
    }
}

/// The `le` values of the last bounds seen, as the exposition renders
/// them, made once per family (its series share their bounds).
#[derive(Default)]
struct Les {
    bounds: Vec<f64>,
    short: bool,
    /// One per bound, then `+Inf`.
    text: Vec<String>,
}

impl Les {
    fn of(&mut self, bounds: &[f64], short: bool) -> &[String] {
        let same = self.short == short
            && self.bounds.len() == bounds.len()
            && self
                .bounds
                .iter()
                .zip(bounds)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        if !same || self.text.is_empty() {
            self.bounds = bounds.to_vec();
            self.short = short;
            self.text = bounds
                .iter()
                .chain([&f64::INFINITY])
                .map(|b| bound(*b, short))
                .collect();
        }
        &self.text
    }
}

/// A walk's state: the family and labels of the store series being
/// written, and where the series go.
struct Series<'a, 's, S> {
    sink: &'s mut S,
    /// The metadata of the store series being written (its exemplar is
    /// taken by the next sample).
    current: SeriesMeta<'a>,
    /// Classic histograms as custom-bucket native histograms.
    custom_buckets: bool,
    /// Each family's strings, by its index in the snapshot.
    strings: Vec<FamilyStrings>,
    /// The index of the family being written.
    family: usize,
    /// The series' labels and the external ones it lacks, sorted.
    base: Vec<(&'a str, &'a str)>,
    timestamp_ms: i64,
    /// The family's `short_bounds` hint.
    short_bounds: bool,
}

impl<'a, S: Sink<'a>> Series<'a, '_, S> {
    /// Starts writing the series of `family`, the snapshot's `index`th;
    /// returns whether they carry their start (created) time: counters,
    /// histograms and summaries, unless the family never shows
    /// `_created`.
    fn enter(&mut self, index: usize, family: &FamilyView<'a>) -> bool {
        self.family = index;
        self.short_bounds = family.hints().short_bounds;
        self.current.typ = match family.kind() {
            Kind::Counter => MetricType::Counter,
            Kind::Gauge => MetricType::Gauge,
            Kind::Histogram => MetricType::Histogram,
            Kind::Summary => MetricType::Summary,
        };
        self.current.help = family.help();
        self.current.unit = family.unit();
        family.kind() != Kind::Gauge && family.hints().created != Created::Never
    }

    /// The labels of `series` (empty values left out) and the external
    /// labels it lacks, sorted by name, for the sink.
    fn set_base(&mut self, series: &SeriesView<'a>, external: &'a ExternalLabels) {
        self.base.clear();
        self.base
            .extend(series.labels().filter(|(_, v)| !v.is_empty()));
        let own = self.base.len();
        for (n, v) in external.iter() {
            if !self.base[..own].iter().any(|(name, _)| *name == n) {
                self.base.push((n, v));
            }
        }
        self.base.sort_unstable_by(|a, b| a.0.cmp(b.0));
        self.sink.begin(&self.base);
    }

    /// The series of one store series' value.
    fn value(&mut self, family: &FamilyView<'a>, series: &SeriesView<'a>, native_histograms: bool) {
        match series.value() {
            // As the Prometheus text page names it.
            Value::Counter(v) => {
                let suffix = if family.name_as_given() {
                    Suffix::None
                } else {
                    Suffix::Total
                };
                self.current.exemplar = series.exemplar(0);
                self.sample(suffix, None, v);
            }
            Value::Gauge(v) => self.sample(Suffix::None, None, v),
            Value::Histogram {
                bounds,
                cumulative,
                sum,
                native,
                ..
            } => self.histogram(
                series,
                bounds,
                cumulative,
                sum,
                native.filter(|_| native_histograms),
            ),
            Value::Summary {
                count,
                sum,
                quantiles,
            } => {
                for q in quantiles {
                    let quantile = bound(q.quantile, self.short_bounds);
                    self.sample(Suffix::None, Some(("quantile", &quantile)), q.value);
                }
                self.sample(Suffix::Sum, None, sum);
                self.sample(Suffix::Count, None, count as f64);
            }
        }
    }

    fn sample(&mut self, suffix: Suffix, extra: Option<(&str, &str)>, value: f64) {
        let point = Point::Sample(Sample {
            value,
            timestamp: self.timestamp_ms,
        });
        self.push(suffix, extra, point);
    }

    /// Hands one series to the sink, with the current metadata (whose
    /// exemplar it takes).
    fn push(&mut self, suffix: Suffix, extra: Option<(&str, &str)>, point: Point) {
        let meta = SeriesMeta {
            exemplar: self.current.exemplar.take(),
            ..self.current.clone()
        };
        let name = &self.strings[self.family].names.with[suffix as usize];
        self.sink.push(name, extra, point, meta);
    }

    /// A histogram's series: with `native` buckets (and native histograms
    /// asked for) a native sample, then the classic series unless it has
    /// no bounds.
    fn histogram(
        &mut self,
        series: &SeriesView<'a>,
        bounds: &[f64],
        cumulative: &[u64],
        sum: f64,
        native: Option<NativeBuckets<'_>>,
    ) {
        // With native buckets, the snapshot's count is theirs (the zero
        // bucket's included).
        let count = cumulative.last().copied().unwrap_or(0);
        if let Some(nb) = native {
            let h = native_histogram(nb, count, sum, self.timestamp_ms);
            self.push(Suffix::None, None, Point::Histogram(h));
            if bounds.is_empty() {
                return; // native only
            }
        } else if self.custom_buckets {
            let h = custom_bucket_histogram(bounds, cumulative, sum, self.timestamp_ms);
            self.push(Suffix::None, None, Point::Histogram(h));
            return;
        }
        let short = self.short_bounds;
        let strings = &mut self.strings[self.family];
        let les = strings.les.of(bounds, short);
        let name = &strings.names.with[Suffix::Bucket as usize];
        for (i, count) in cumulative.iter().enumerate() {
            let meta = SeriesMeta {
                exemplar: series.exemplar(i),
                ..self.current.clone()
            };
            let le = les.get(i).map_or("+Inf", String::as_str);
            let point = Point::Sample(Sample {
                value: *count as f64,
                timestamp: self.timestamp_ms,
            });
            self.sink.push(name, Some(("le", le)), point, meta);
        }
        self.sample(Suffix::Sum, None, sum);
        self.sample(Suffix::Count, None, count as f64);
    }
}

/// A classic histogram as a custom-bucket native histogram sample
/// (schema -53): its finite bounds as `custom_values`, its per-bucket
/// counts (the last one `+Inf`'s) as spans and deltas from bucket 0.
fn custom_bucket_histogram(
    bounds: &[f64],
    cumulative: &[u64],
    sum: f64,
    timestamp_ms: i64,
) -> Histogram {
    let mut prev = 0;
    let per_bucket: Vec<u64> = cumulative
        .iter()
        .map(|c| {
            let b = c.saturating_sub(prev);
            prev = *c;
            b
        })
        .collect();
    let mut h = Histogram {
        count: Some(histogram::Count::CountInt(prev)),
        sum,
        schema: CUSTOM_BUCKETS_SCHEMA,
        zero_threshold: 0.0,
        zero_count: Some(histogram::ZeroCount::ZeroCountInt(0)),
        negative_spans: Vec::new(),
        negative_deltas: Vec::new(),
        positive_spans: Vec::new(),
        positive_deltas: Vec::new(),
        reset_hint: 0,
        timestamp: timestamp_ms,
        custom_values: bounds.to_vec(),
        start_timestamp: 0,
    };
    let run = shmetrics_core::BucketRun {
        offset: 0,
        counts: &per_bucket,
    };
    spans_and_deltas(run, &mut h.positive_spans, &mut h.positive_deltas);
    h
}

/// The schema of a native histogram with custom buckets (Prometheus's
/// `CustomBucketsSchema`).
const CUSTOM_BUCKETS_SCHEMA: i32 = -53;

/// A native histogram sample.
fn native_histogram(nb: NativeBuckets<'_>, count: u64, sum: f64, timestamp_ms: i64) -> Histogram {
    let mut h = Histogram {
        count: Some(histogram::Count::CountInt(count)),
        sum,
        schema: nb.schema,
        zero_threshold: nb.zero_threshold,
        zero_count: Some(histogram::ZeroCount::ZeroCountInt(nb.zero_count)),
        negative_spans: Vec::new(),
        negative_deltas: Vec::new(),
        positive_spans: Vec::new(),
        positive_deltas: Vec::new(),
        reset_hint: 0,
        timestamp: timestamp_ms,
        custom_values: Vec::new(),
        start_timestamp: 0,
    };
    spans_and_deltas(nb.negative, &mut h.negative_spans, &mut h.negative_deltas);
    spans_and_deltas(nb.positive, &mut h.positive_spans, &mut h.positive_deltas);
    h
}

/// Encodes `series` as requests of at most `max_samples` series each
/// (one sample per series), protobuf then snappy (block format).
pub fn encode(series: Vec<TimeSeries>, max_samples: usize) -> Vec<Chunk> {
    let mut rest = series.into_iter();
    let mut chunks = Vec::new();
    loop {
        let part: Vec<TimeSeries> = rest.by_ref().take(max_samples.max(1)).collect();
        if part.is_empty() {
            return chunks;
        }
        let samples = part
            .iter()
            .map(|s| (s.samples.len() + s.histograms.len()) as u64)
            .sum();
        chunks.push(Chunk {
            body: encode_request(&WriteRequest { timeseries: part }),
            samples,
            exemplars: 0,
        });
    }
}

/// A `WriteRequest`, protobuf-encoded and compressed with snappy's block
/// format (what remote_write calls `snappy`).
pub fn encode_request(request: &WriteRequest) -> Bytes {
    compress(&request.encode_to_vec())
}

/// snappy's block format, what remote write calls `snappy`.
pub(super) fn compress(raw: &[u8]) -> Bytes {
    // UNWRAP: compressing fails only for inputs over ~4 GiB, and a
    // request is at most a few megabytes.
    let compressed = snap::raw::Encoder::new()
        .compress_vec(raw)
        .expect("a request small enough for snappy");
    Bytes::from(compressed)
}

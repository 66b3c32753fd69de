//! A snapshot as remote_write requests: the series the text exposition
//! would show, one sample each, protobuf-encoded and snappy-compressed.

use bytes::Bytes;
use prost::Message;
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
    walk(
        snap,
        external,
        timestamp_ms,
        Shape {
            native_histograms,
            custom_buckets: false,
            meta: false,
        },
    )
    .0
}

/// As [`timeseries`], with each series' [`SeriesMeta`] (remote write
/// 2.0's metadata, start time and exemplar), in the same order; with
/// `custom_buckets`, a histogram without native buckets is one
/// custom-bucket native histogram sample named `name` (schema -53, its
/// bounds as `custom_values`), as Prometheus's
/// `convert_classic_histograms_to_nhcb` stores it, instead of its
/// `_bucket`, `_sum` and `_count` series. Each family's series come
/// sorted by their labels (a store series' `_bucket`, `_sum` and `_count`
/// series together), so neighbours share bytes that snappy finds.
pub fn timeseries_with_meta<'a>(
    snap: &'a Snapshot,
    external: &ExternalLabels,
    timestamp_ms: i64,
    native_histograms: bool,
    custom_buckets: bool,
) -> (Vec<TimeSeries>, Vec<SeriesMeta<'a>>) {
    walk(
        snap,
        external,
        timestamp_ms,
        Shape {
            native_histograms,
            custom_buckets,
            meta: true,
        },
    )
}

/// How a walk writes the snapshot.
#[derive(Clone, Copy)]
struct Shape {
    /// Native buckets as native histogram samples.
    native_histograms: bool,
    /// Classic histograms as custom-bucket native histogram samples.
    custom_buckets: bool,
    /// Each series' [`SeriesMeta`] too.
    meta: bool,
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

fn walk<'a>(
    snap: &'a Snapshot,
    external: &ExternalLabels,
    timestamp_ms: i64,
    shape: Shape,
) -> (Vec<TimeSeries>, Vec<SeriesMeta<'a>>) {
    let native_histograms = shape.native_histograms;
    let mut out = Series {
        out: Vec::with_capacity(snap.series_count()),
        meta: shape.meta.then(|| Vec::with_capacity(snap.series_count())),
        custom_buckets: shape.custom_buckets,
        name: "",
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
    for family in snap.families() {
        let starts = out.enter(&family);
        let mut order: Vec<SeriesView<'a>> = family.series().collect();
        if shape.meta {
            // Neighbours that share labels share bytes, which snappy
            // finds (remote write 2.0 only: 1.0 keeps the exposition's
            // order).
            order.sort_by_cached_key(sorted_labels);
        }
        for series in order {
            out.current.start_ms = if starts {
                (series.created_unix_ns() / 1_000_000) as i64
            } else {
                0
            };
            out.set_base(&series, external);
            match series.value() {
                // As the Prometheus text page names it.
                Value::Counter(v) => {
                    let suffix = if family.name_as_given() { "" } else { "_total" };
                    out.current.exemplar = series.exemplar(0);
                    out.sample(suffix, None, v);
                }
                Value::Gauge(v) => out.sample("", None, v),
                Value::Histogram {
                    bounds,
                    cumulative,
                    sum,
                    native,
                    ..
                } => out.histogram(
                    &series,
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
                        let quantile = bound(q.quantile, out.short_bounds);
                        out.sample("", Some(("quantile", quantile)), q.value);
                    }
                    out.sample("_sum", None, sum);
                    out.sample("_count", None, count as f64);
                }
            }
        }
    }
    (out.out, out.meta.unwrap_or_default())
}

/// The labels of `series` with a value, sorted by name (as a series'
/// labels are sent).
fn sorted_labels<'a>(series: &SeriesView<'a>) -> Vec<(&'a str, &'a str)> {
    let mut labels: Vec<_> = series.labels().filter(|(_, v)| !v.is_empty()).collect();
    labels.sort_unstable();
    labels
}

fn label(name: &str, value: &str) -> Label {
    Label {
        name: name.to_string(),
        value: value.to_string(),
    }
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

/// The series written so far, and the family and labels of the store
/// series being written.
struct Series<'a> {
    out: Vec<TimeSeries>,
    /// Each series' metadata, when asked for.
    meta: Option<Vec<SeriesMeta<'a>>>,
    /// The metadata of the store series being written (its exemplar is
    /// taken by the next sample).
    current: SeriesMeta<'a>,
    /// Classic histograms as custom-bucket native histograms.
    custom_buckets: bool,
    name: &'a str,
    /// The series' labels and the external ones it lacks.
    base: Vec<Label>,
    timestamp_ms: i64,
    /// The family's `short_bounds` hint.
    short_bounds: bool,
}

impl<'a> Series<'a> {
    /// Starts writing `family`'s series; returns whether they carry their
    /// start (created) time: counters, histograms and summaries, unless
    /// the family never shows `_created`.
    fn enter(&mut self, family: &FamilyView<'a>) -> bool {
        self.name = family.name();
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
    /// labels it lacks.
    fn set_base(&mut self, series: &SeriesView<'_>, external: &ExternalLabels) {
        self.base.clear();
        self.base.extend(
            series
                .labels()
                .filter(|(_, v)| !v.is_empty())
                .map(|(n, v)| label(n, v)),
        );
        for (n, v) in external.iter() {
            if !self.base.iter().any(|l| l.name == n) {
                self.base.push(label(n, v));
            }
        }
    }

    /// The labels of one series: the name with `suffix`, the store
    /// series' labels, and `extra` (the `le` of a bucket, or the
    /// `quantile` of a summary's quantile), sorted by name.
    fn labels(&self, suffix: &str, extra: Option<(&str, String)>) -> Vec<Label> {
        let mut labels = Vec::with_capacity(self.base.len() + 2);
        labels.push(Label {
            name: "__name__".into(),
            value: format!("{}{suffix}", self.name),
        });
        labels.extend(self.base.iter().cloned());
        if let Some((name, value)) = extra {
            labels.push(Label {
                name: name.into(),
                value,
            });
        }
        labels.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        labels
    }

    fn sample(&mut self, suffix: &str, extra: Option<(&str, String)>, value: f64) {
        let labels = self.labels(suffix, extra);
        self.push(TimeSeries {
            labels,
            samples: vec![Sample {
                value,
                timestamp: self.timestamp_ms,
            }],
            histograms: Vec::new(),
        });
    }

    /// Adds `series`, with the current metadata (whose exemplar it takes).
    fn push(&mut self, series: TimeSeries) {
        self.out.push(series);
        let exemplar = self.current.exemplar.take();
        if let Some(meta) = &mut self.meta {
            meta.push(SeriesMeta {
                exemplar,
                ..self.current.clone()
            });
        }
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
            let labels = self.labels("", None);
            let native = native_series(labels, nb, count, sum, self.timestamp_ms);
            self.push(native);
            if bounds.is_empty() {
                return; // native only
            }
        } else if self.custom_buckets {
            let labels = self.labels("", None);
            let h = custom_bucket_series(labels, bounds, cumulative, sum, self.timestamp_ms);
            self.push(h);
            return;
        }
        for (i, count) in cumulative.iter().enumerate() {
            let le = bound(
                bounds.get(i).copied().unwrap_or(f64::INFINITY),
                self.short_bounds,
            );
            self.current.exemplar = series.exemplar(i);
            self.sample("_bucket", Some(("le", le)), *count as f64);
        }
        self.sample("_sum", None, sum);
        self.sample("_count", None, count as f64);
    }
}

/// A classic histogram as a custom-bucket native histogram sample
/// (schema -53): its finite bounds as `custom_values`, its per-bucket
/// counts (the last one `+Inf`'s) as spans and deltas from bucket 0.
fn custom_bucket_series(
    labels: Vec<Label>,
    bounds: &[f64],
    cumulative: &[u64],
    sum: f64,
    timestamp_ms: i64,
) -> TimeSeries {
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
    TimeSeries {
        labels,
        samples: Vec::new(),
        histograms: vec![h],
    }
}

/// The schema of a native histogram with custom buckets (Prometheus's
/// `CustomBucketsSchema`).
const CUSTOM_BUCKETS_SCHEMA: i32 = -53;

/// A native histogram sample as a series of its own.
fn native_series(
    labels: Vec<Label>,
    nb: NativeBuckets<'_>,
    count: u64,
    sum: f64,
    timestamp_ms: i64,
) -> TimeSeries {
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
    TimeSeries {
        labels,
        samples: Vec::new(),
        histograms: vec![h],
    }
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

//! A snapshot as remote_write requests: the series the text exposition
//! would show, one sample each, protobuf-encoded and snappy-compressed.

use bytes::Bytes;
use prost::Message;
use shmetrics_core::{NativeBuckets, Snapshot, Value};
use shmetrics_expo::protobuf::spans_and_deltas;

use super::proto::{histogram, Histogram, Label, Sample, TimeSeries, WriteRequest};
use super::ExternalLabels;

/// One request body: a snappy-compressed (block format) `WriteRequest`.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// The compressed body.
    pub body: Bytes,
    /// Samples in it.
    pub samples: u64,
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
    let mut out = Series {
        out: Vec::with_capacity(snap.series_count()),
        name: "",
        base: Vec::new(),
        timestamp_ms,
        short_bounds: false,
    };
    for family in snap.families() {
        out.name = family.name();
        out.short_bounds = family.hints().short_bounds;
        for series in family.series() {
            out.base.clear();
            out.base.extend(
                series
                    .labels()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(n, v)| label(n, v)),
            );
            for (n, v) in external.iter() {
                if !out.base.iter().any(|l| l.name == n) {
                    out.base.push(label(n, v));
                }
            }
            match series.value() {
                // As the Prometheus text page names it.
                Value::Counter(v) if family.name_as_given() => out.sample("", None, v),
                Value::Counter(v) => out.sample("_total", None, v),
                Value::Gauge(v) => out.sample("", None, v),
                Value::Histogram {
                    bounds,
                    cumulative,
                    sum,
                    native,
                    ..
                } => out.histogram(
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
    out.out
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
    name: &'a str,
    /// The series' labels and the external ones it lacks.
    base: Vec<Label>,
    timestamp_ms: i64,
    /// The family's `short_bounds` hint.
    short_bounds: bool,
}

impl Series<'_> {
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
        self.out.push(TimeSeries {
            labels,
            samples: vec![Sample {
                value,
                timestamp: self.timestamp_ms,
            }],
            histograms: Vec::new(),
        });
    }

    /// A histogram's series: with `native` buckets (and native histograms
    /// asked for) a native sample, then the classic series unless it has
    /// no bounds.
    fn histogram(
        &mut self,
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
            self.out.push(native);
            if bounds.is_empty() {
                return; // native only
            }
        }
        for (i, count) in cumulative.iter().enumerate() {
            let le = bound(
                bounds.get(i).copied().unwrap_or(f64::INFINITY),
                self.short_bounds,
            );
            self.sample("_bucket", Some(("le", le)), *count as f64);
        }
        self.sample("_sum", None, sum);
        self.sample("_count", None, count as f64);
    }
}

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
        });
    }
}

/// A `WriteRequest`, protobuf-encoded and compressed with snappy's block
/// format (what remote_write calls `snappy`).
pub fn encode_request(request: &WriteRequest) -> Bytes {
    let raw = request.encode_to_vec();
    // UNWRAP: compressing fails only for inputs over ~4 GiB, and a
    // request is at most a few megabytes.
    let compressed = snap::raw::Encoder::new()
        .compress_vec(&raw)
        .expect("a request small enough for snappy");
    Bytes::from(compressed)
}

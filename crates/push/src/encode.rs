//! A snapshot as remote_write requests: the series the text exposition
//! would show, one sample each, protobuf-encoded and snappy-compressed.

use bytes::Bytes;
use prost::Message;
use shmetrics_core::{NativeBuckets, Snapshot, Value};
use shmetrics_expo::protobuf::spans_and_deltas;

use crate::proto::{histogram, Histogram, Label, Sample, TimeSeries, WriteRequest};
use crate::ExternalLabels;

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
/// - a counter `name_total`;
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
    let mut out = Vec::with_capacity(snap.series_count());
    let mut base: Vec<Label> = Vec::new();
    let mut le = Vec::new();
    for family in snap.families() {
        let name = family.name();
        for series in family.series() {
            base.clear();
            base.extend(
                series
                    .labels()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(n, v)| Label {
                        name: n.to_string(),
                        value: v.to_string(),
                    }),
            );
            for (n, v) in external.iter() {
                if !base.iter().any(|l| l.name == n) {
                    base.push(Label {
                        name: n.to_string(),
                        value: v.to_string(),
                    });
                }
            }
            // The labels of one series: `name` with `suffix`, the
            // series' labels, and `extra` (the `le` of a bucket, or the
            // `quantile` of a summary's quantile).
            let labels = |suffix: &str, extra: Option<(&str, String)>| {
                let mut labels = Vec::with_capacity(base.len() + 2);
                labels.push(Label {
                    name: "__name__".into(),
                    value: format!("{name}{suffix}"),
                });
                labels.extend(base.iter().cloned());
                if let Some((name, value)) = extra {
                    labels.push(Label {
                        name: name.into(),
                        value,
                    });
                }
                labels.sort_unstable_by(|a, b| a.name.cmp(&b.name));
                labels
            };
            let sample = |suffix: &str, extra: Option<(&str, String)>, value: f64| TimeSeries {
                labels: labels(suffix, extra),
                samples: vec![Sample {
                    value,
                    timestamp: timestamp_ms,
                }],
                histograms: Vec::new(),
            };
            match series.value() {
                Value::Counter(v) => out.push(sample("_total", None, v)),
                Value::Gauge(v) => out.push(sample("", None, v)),
                Value::Histogram {
                    bounds,
                    cumulative,
                    sum,
                    native,
                    ..
                } => {
                    // With native buckets, the snapshot's count is theirs
                    // (the zero bucket's included).
                    let count = cumulative.last().copied().unwrap_or(0);
                    if let (true, Some(nb)) = (native_histograms, native) {
                        out.push(native_series(
                            labels("", None),
                            nb,
                            count,
                            sum,
                            timestamp_ms,
                        ));
                        if bounds.is_empty() {
                            continue; // native only
                        }
                    }
                    for (i, count) in cumulative.iter().enumerate() {
                        le.clear();
                        let bound = bounds.get(i).copied().unwrap_or(f64::INFINITY);
                        shmetrics_expo::write_canonical_float(&mut le, bound);
                        let le = String::from_utf8_lossy(&le).into_owned();
                        out.push(sample("_bucket", Some(("le", le)), *count as f64));
                    }
                    out.push(sample("_sum", None, sum));
                    out.push(sample("_count", None, count as f64));
                }
                Value::Summary {
                    count,
                    sum,
                    quantiles,
                } => {
                    for q in quantiles {
                        le.clear();
                        shmetrics_expo::write_canonical_float(&mut le, q.quantile);
                        let quantile = String::from_utf8_lossy(&le).into_owned();
                        out.push(sample("", Some(("quantile", quantile)), q.value));
                    }
                    out.push(sample("_sum", None, sum));
                    out.push(sample("_count", None, count as f64));
                }
            }
        }
    }
    out
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

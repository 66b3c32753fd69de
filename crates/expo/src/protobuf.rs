//! The Prometheus protobuf exposition format: varint-length-delimited
//! `io.prometheus.client.MetricFamily` messages (see [`proto`]), served as
//! `application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited`.
//!
//! It is the only format that carries native histograms, so Prometheus
//! asks for it first when native histograms are enabled. [`crate::encode`]
//! with [`crate::Format::Protobuf`] writes a whole snapshot;
//! [`fill_metric`] builds the message of one series, from a
//! [`Value`] the caller may build by hand.
//!
//! Where the format leaves room, the output follows client_golang:
//!
//! - A counter family is named with `_total` (`jobs_total`, type
//!   `COUNTER`): Prometheus' parser (`model/textparse/protobufparse.go`)
//!   takes a counter's sample name to be the family name as it is, and
//!   strips `_total` from a counter's name before checking its unit
//!   suffix; client_golang exposes counters under their full `_total`
//!   name.
//! - `help` and `type` are always set (`help` may be empty); `unit` is
//!   set when the family has one.
//! - A family without series is left out, as client_golang's gatherer
//!   leaves it out (Prometheus would skip it anyway).
//! - Labels come in the family's order, then `pid` (gauge modes `all` and
//!   `liveall`) or `shmetrics_overflow`; they are not sorted (Prometheus
//!   sorts them).
//! - Counters, histograms and summaries carry `created_timestamp`, the
//!   series' creation time, unless the family's hints say it has no
//!   `_created` (`Created::Never`); no sample has a timestamp. A family
//!   hinted `Created::EveryFormat` (prometheus_client in one process) is
//!   followed by a gauge family `name_created` holding those times in
//!   seconds, as that library's text format writes them: Prometheus
//!   stores `name_created` series from its text and OpenMetrics pages,
//!   and would not from `created_timestamp`.
//! - A gauge hinted as an OpenMetrics `info` or `stateset` stays a
//!   `GAUGE` (the format has neither type), named as stored
//!   (`build_info`), as prometheus_client's text format writes it. Bucket
//!   bounds and quantiles are doubles: the `short_bounds` hint is moot.
//! - A histogram's classic buckets are cumulative, one per bound, without
//!   a `+Inf` bucket (`sample_count` is the `+Inf` count).
//! - Native buckets are written as spans and deltas the way
//!   client_golang's `makeBuckets` writes them: empty buckets at either
//!   end are skipped, a gap of one or two empty buckets stays inside a
//!   span as zero counts, and a longer gap starts a new span; the counts
//!   are delta-encoded across all the spans of a side. `schema`,
//!   `zero_threshold` and `zero_count` are always set on a native
//!   histogram, and one with no bucket, no zero count and a zero
//!   threshold of 0 gets a no-op span (offset 0, length 0) so that a
//!   parser sees it is native.
//! - A summary's quantiles are written as they are, NaN included (an
//!   empty window).
//! - Exemplars (families that keep them) go in `Counter.exemplar` and
//!   `Bucket.exemplar`, with their labels, value and timestamp. When the
//!   `+Inf` bucket has one, a `+Inf` bucket (its count the sample count)
//!   is written to hold it, as client_golang does; otherwise there is no
//!   `+Inf` bucket. Native histograms' `exemplars` stays empty.

pub mod proto;

use prost::Message;
use shmetrics_core::{
    escape_label_name, escape_metric_name, is_legacy_label_name, is_legacy_metric_name, BucketRun,
    Created, Escaping, Exemplar, FamilyView, Kind, NativeBuckets, Quantile, SeriesView, Value,
};

use crate::extra::ExtraFamily;
use crate::spill::Spill;
use proto::{BucketSpan, LabelPair, Metric, MetricFamily, MetricType, Timestamp};

/// The [`MetricType`] of a family of this kind.
pub fn metric_type(kind: Kind) -> MetricType {
    match kind {
        Kind::Counter => MetricType::Counter,
        Kind::Gauge => MetricType::Gauge,
        Kind::Histogram => MetricType::Histogram,
        Kind::Summary => MetricType::Summary,
    }
}

/// Fills `metric` with one series: its `labels`, its `value` and its
/// creation time (`created_unix_ns`, nanoseconds since the Unix epoch; 0
/// for unknown, which writes no `created_timestamp`).
///
/// `metric` is overwritten, not appended to, and its buffers are reused,
/// so filling the same `Metric` for series after series allocates nothing
/// once it has grown to the largest of them.
///
/// ```
/// use shmetrics_core::{BucketRun, NativeBuckets, Value};
/// use shmetrics_expo::protobuf::{fill_metric, proto};
///
/// let mut m = proto::Metric::default();
/// let native = NativeBuckets {
///     schema: 0,
///     zero_threshold: 0.0,
///     zero_count: 0,
///     // Buckets 1 and 2 hold 3 and 1 observations; 3 to 5 are empty; 6 holds 2.
///     positive: BucketRun { offset: 1, counts: &[3, 1, 0, 0, 0, 2] },
///     negative: BucketRun::default(),
/// };
/// let value = Value::Histogram { bounds: &[], cumulative: &[6], sum: 90.0, native: Some(native) };
/// fill_metric(&mut m, [("route", "/")], value, 0);
/// let h = m.histogram.unwrap();
/// let span = |o, l| proto::BucketSpan { offset: Some(o), length: Some(l) };
/// // A gap of three empty buckets starts a new span.
/// assert_eq!(h.positive_span, [span(1, 2), span(3, 1)]);
/// assert_eq!(h.positive_delta, [3, -2, 1]);
/// ```
pub fn fill_metric<'a>(
    metric: &mut Metric,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    value: Value<'_>,
    created_unix_ns: u64,
) {
    set_labels(&mut metric.label, labels);
    metric.timestamp_ms = None;
    metric.untyped = None;
    let created = timestamp(created_unix_ns);
    match value {
        Value::Counter(v) => {
            metric.gauge = None;
            metric.summary = None;
            metric.histogram = None;
            let c = metric.counter.get_or_insert_with(Default::default);
            c.value = Some(v);
            c.exemplar = None;
            c.created_timestamp = created;
        }
        Value::Gauge(v) => {
            metric.counter = None;
            metric.summary = None;
            metric.histogram = None;
            let g = metric.gauge.get_or_insert_with(Default::default);
            g.value = Some(v);
        }
        Value::Histogram {
            bounds,
            cumulative,
            sum,
            native,
        } => {
            metric.gauge = None;
            metric.counter = None;
            metric.summary = None;
            let h = metric.histogram.get_or_insert_with(Default::default);
            fill_histogram(h, bounds, cumulative, sum, native);
            h.created_timestamp = created;
        }
        Value::Summary {
            count,
            sum,
            quantiles,
        } => {
            metric.gauge = None;
            metric.counter = None;
            metric.histogram = None;
            let s = metric.summary.get_or_insert_with(Default::default);
            fill_summary(s, count, sum, quantiles);
            s.created_timestamp = created;
        }
    }
}

fn set_labels<'a>(dst: &mut Vec<LabelPair>, labels: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut n = 0;
    for (name, value) in labels {
        if n == dst.len() {
            dst.push(LabelPair::default());
        }
        let pair = &mut dst[n];
        set_str(&mut pair.name, name);
        set_str(&mut pair.value, value);
        n += 1;
    }
    dst.truncate(n);
}

/// Escapes the label names outside the legacy set.
fn escape_label_names(pairs: &mut [LabelPair], escaping: Escaping) {
    for name in pairs.iter_mut().flat_map(|p| p.name.as_mut()) {
        if !is_legacy_label_name(name) {
            *name = escape_label_name(name, escaping).into_owned();
        }
    }
}

/// Sets an optional string field, reusing its buffer.
fn set_str(dst: &mut Option<String>, s: &str) {
    let d = dst.get_or_insert_with(String::new);
    d.clear();
    d.push_str(s);
}

fn timestamp(unix_ns: u64) -> Option<Timestamp> {
    (unix_ns != 0).then_some(Timestamp {
        seconds: (unix_ns / 1_000_000_000) as i64,
        nanos: (unix_ns % 1_000_000_000) as i32,
    })
}

fn fill_histogram(
    h: &mut proto::Histogram,
    bounds: &[f64],
    cumulative: &[u64],
    sum: f64,
    native: Option<NativeBuckets<'_>>,
) {
    h.sample_count = Some(cumulative.last().copied().unwrap_or(0));
    h.sample_count_float = None;
    h.sample_sum = Some(sum);
    // One bucket per bound; `+Inf` is `sample_count`. (`cumulative` has
    // one more count than `bounds`, the `+Inf` one, which the zip drops.)
    let n = bounds.len().min(cumulative.len());
    h.bucket.resize_with(n, Default::default);
    for ((b, &bound), &count) in h.bucket.iter_mut().zip(bounds).zip(cumulative) {
        b.cumulative_count = Some(count);
        b.upper_bound = Some(bound);
        b.exemplar = None;
        b.cumulative_count_float = None;
    }
    h.zero_count_float = None;
    h.negative_count.clear();
    h.positive_count.clear();
    h.exemplars.clear();
    match native {
        None => {
            h.schema = None;
            h.zero_threshold = None;
            h.zero_count = None;
            h.negative_span.clear();
            h.negative_delta.clear();
            h.positive_span.clear();
            h.positive_delta.clear();
        }
        Some(nb) => {
            h.schema = Some(nb.schema);
            h.zero_threshold = Some(nb.zero_threshold);
            h.zero_count = Some(nb.zero_count);
            spans_and_deltas(nb.negative, &mut h.negative_span, &mut h.negative_delta);
            spans_and_deltas(nb.positive, &mut h.positive_span, &mut h.positive_delta);
            // As metrics.proto asks (and client_golang does): without it,
            // an empty native histogram would parse as a classic one.
            if nb.zero_threshold == 0.0
                && nb.zero_count == 0
                && h.positive_span.is_empty()
                && h.negative_span.is_empty()
            {
                h.positive_span.push(BucketSpan {
                    offset: Some(0),
                    length: Some(0),
                });
            }
        }
    }
}

/// A span of consecutive native buckets as a protobuf message carries it:
/// `io.prometheus.client.BucketSpan` here, remote_write's
/// `prometheus.BucketSpan` in the push crate.
pub trait NativeSpan {
    /// A span of no bucket yet, `offset` after the previous one's end (or,
    /// for the first, starting at bucket index `offset`).
    fn starting(offset: i32) -> Self;
    /// Adds one bucket to the span.
    fn grow(&mut self);
}

impl NativeSpan for BucketSpan {
    fn starting(offset: i32) -> Self {
        BucketSpan {
            offset: Some(offset),
            length: Some(0),
        }
    }
    fn grow(&mut self) {
        *self.length.get_or_insert(0) += 1;
    }
}

/// The spans and delta-encoded counts of one side's buckets, as
/// client_golang's `makeBuckets` makes them from its populated buckets
/// (here: the non-zero counts of `run`). A gap of one or two empty
/// buckets costs less as zero counts inside a span than as a new span.
/// Clears `spans` and `deltas` first.
pub fn spans_and_deltas<S: NativeSpan>(
    run: BucketRun<'_>,
    spans: &mut Vec<S>,
    deltas: &mut Vec<i64>,
) {
    spans.clear();
    deltas.clear();
    let mut prev: i64 = 0;
    let mut next_index: i64 = 0;
    let mut push = |spans: &mut Vec<S>, count: i64| {
        if let Some(span) = spans.last_mut() {
            span.grow();
        }
        deltas.push(count.wrapping_sub(prev));
        prev = count;
    };
    for (k, &count) in run.counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let index = i64::from(run.offset) + k as i64;
        let gap = index - next_index;
        if spans.is_empty() || gap > 2 {
            spans.push(S::starting(gap as i32));
        } else {
            for _ in 0..gap {
                push(spans, 0);
            }
        }
        push(spans, count as i64);
        next_index = index + 1;
    }
}

fn fill_summary(s: &mut proto::Summary, count: u64, sum: f64, quantiles: &[Quantile]) {
    s.sample_count = Some(count);
    s.sample_sum = Some(sum);
    s.quantile.resize_with(quantiles.len(), Default::default);
    for (dst, q) in s.quantile.iter_mut().zip(quantiles) {
        dst.quantile = Some(q.quantile);
        dst.value = Some(q.value);
    }
}

/// Appends `families` (a snapshot's), then `extra`, each as one
/// length-delimited `MetricFamily`.
pub(crate) fn encode<'s>(
    families: impl Iterator<Item = FamilyView<'s>>,
    extra: &[ExtraFamily<'_>],
    escaping: Escaping,
    out: &mut Vec<u8>,
    mut spill: Option<&mut Spill<'_>>,
) {
    let mut enc = Encoder {
        escaping,
        ..Encoder::default()
    };
    for f in families {
        if f.series().len() == 0 {
            continue;
        }
        let kind = f.kind();
        enc.begin(f.name(), kind, f.help(), f.unit(), f.name_as_given());
        // A family registered without `_created` has no creation time
        // here either (0 writes none).
        let created = f.hints().created;
        for s in f.series() {
            let ns = if created == Created::Never {
                0
            } else {
                s.created_unix_ns()
            };
            enc.series(s.labels(), s.value(), ns, Some(&s));
        }
        enc.finish(out);
        if created == Created::EveryFormat && kind != Kind::Gauge {
            enc.created_gauges(&f, out);
        }
        // A family is one message: pieces end between families.
        if let Some(s) = spill.as_deref_mut() {
            s.check(out);
        }
    }
    for f in extra {
        if f.samples.is_empty() {
            continue;
        }
        let kind = match f.kind {
            Kind::Counter => Kind::Counter,
            _ => Kind::Gauge,
        };
        enc.begin(f.name, kind, f.help, "", false);
        for s in &f.samples {
            let value = match kind {
                Kind::Counter => Value::Counter(s.value),
                _ => Value::Gauge(s.value),
            };
            enc.series(s.labels.iter().copied(), value, 0, None);
        }
        enc.finish(out);
    }
}

/// Writes a family a series at a time, without holding its series as
/// messages.
///
/// A message's encoding is the concatenation of its fields' encodings, so
/// a `MetricFamily` with only name, help and type, then one holding just
/// one series per series, then one with only the unit, concatenated, are
/// byte for byte prost's encoding of the whole family (in tag order, as
/// prost writes it); the tests check that.
#[derive(Default)]
struct Encoder {
    /// Name, help and type of the current family.
    head: MetricFamily,
    /// Exactly one `Metric`, refilled for every series.
    one: MetricFamily,
    /// The unit of the current family, if any.
    tail: MetricFamily,
    /// The current family's series, encoded.
    body: Vec<u8>,
    /// How names outside the legacy set are written (as they are with
    /// `allow-utf-8`).
    escaping: Escaping,
}

impl Encoder {
    /// Starts a family; a counter's name gets `_total` unless it is
    /// named as given (`FamilyDesc::name_as_given`).
    fn begin(&mut self, name: &str, kind: Kind, help: &str, unit: &str, as_given: bool) {
        let n = self.head.name.get_or_insert_with(String::new);
        n.clear();
        // The name escaped, then its suffix as it is, as the text formats
        // write it (`U__a_2e_b_total`, not `U__a_2e_b__total`).
        if self.escaping != Escaping::AllowUtf8 && !is_legacy_metric_name(name) {
            n.push_str(&escape_metric_name(name, self.escaping));
        } else {
            n.push_str(name);
        }
        if kind == Kind::Counter && !as_given {
            n.push_str("_total");
        }
        set_str(&mut self.head.help, help);
        self.head.r#type = Some(metric_type(kind) as i32);
        if unit.is_empty() {
            self.tail.unit = None;
        } else {
            set_str(&mut self.tail.unit, unit);
        }
        if self.one.metric.is_empty() {
            self.one.metric.push(Metric::default());
        }
        self.body.clear();
    }

    fn series<'a>(
        &mut self,
        labels: impl Iterator<Item = (&'a str, &'a str)>,
        value: Value<'_>,
        created_unix_ns: u64,
        exemplars_of: Option<&SeriesView<'_>>,
    ) {
        let m = &mut self.one.metric[0];
        fill_metric(m, labels, value, created_unix_ns);
        if let Some(s) = exemplars_of.filter(|s| s.exemplars().len() > 0) {
            set_exemplars(m, s);
        }
        if self.escaping != Escaping::AllowUtf8 {
            escape_label_names(&mut m.label, self.escaping);
            let exemplars = m
                .counter
                .iter_mut()
                .flat_map(|c| c.exemplar.as_mut())
                .chain(
                    m.histogram
                        .iter_mut()
                        .flat_map(|h| h.bucket.iter_mut().flat_map(|b| b.exemplar.as_mut())),
                );
            for e in exemplars {
                escape_label_names(&mut e.label, self.escaping);
            }
        }
        put(&self.one, &mut self.body);
    }

    /// The `name_created` gauge family of a family hinted
    /// [`Created::EveryFormat`]: each series' creation time in seconds,
    /// as prometheus_client's text format writes it. Prometheus stores
    /// that series from the text format (and OpenMetrics) but ignores
    /// `created_timestamp` (before 2.50, and later unless asked to), so
    /// this is what keeps the series it stores from the library's own
    /// page. None if no series has a creation time.
    fn created_gauges(&mut self, f: &FamilyView<'_>, out: &mut Vec<u8>) {
        if f.series().all(|s| s.created_unix_ns() == 0) {
            return;
        }
        self.begin(f.name(), Kind::Gauge, f.help(), "", false);
        // UNWRAP: `begin` sets the name.
        self.head.name.as_mut().expect("named").push_str("_created");
        for s in f.series() {
            let ns = s.created_unix_ns();
            if ns != 0 {
                let secs = (ns / 1_000_000_000) as f64 + (ns % 1_000_000_000) as f64 / 1e9;
                self.series(s.labels(), Value::Gauge(secs), 0, None);
            }
        }
        self.finish(out);
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        let len = self.head.encoded_len() + self.body.len() + self.tail.encoded_len();
        // UNWRAP: encoding into a `Vec` cannot run out of room.
        prost::encode_length_delimiter(len, out).expect("a Vec grows");
        put(&self.head, out);
        out.extend_from_slice(&self.body);
        put(&self.tail, out);
    }
}

/// Sets the exemplars of a metric that [`fill_metric`] filled from `s`.
fn set_exemplars(metric: &mut Metric, s: &SeriesView<'_>) {
    if let Some(c) = metric.counter.as_mut() {
        set_exemplar(&mut c.exemplar, s.exemplar(0));
    } else if let Some(h) = metric.histogram.as_mut() {
        let finite = h.bucket.len();
        for (b, e) in h.bucket.iter_mut().zip(s.exemplars()) {
            set_exemplar(&mut b.exemplar, e);
        }
        if let Some(inf) = s.exemplars().nth(finite).flatten() {
            let mut b = proto::Bucket {
                cumulative_count: h.sample_count,
                upper_bound: Some(f64::INFINITY),
                ..Default::default()
            };
            set_exemplar(&mut b.exemplar, Some(inf));
            h.bucket.push(b);
        }
    }
}

fn set_exemplar(dst: &mut Option<proto::Exemplar>, e: Option<Exemplar<'_>>) {
    *dst = e.map(|e| {
        let mut x = proto::Exemplar {
            value: Some(e.value()),
            timestamp: timestamp(e.timestamp_unix_ns()),
            ..Default::default()
        };
        set_labels(&mut x.label, e.labels());
        x
    });
}

/// Appends `msg`'s encoding.
fn put(msg: &MetricFamily, out: &mut Vec<u8>) {
    // UNWRAP: encoding into a `Vec` cannot run out of room.
    msg.encode(out).expect("a Vec grows");
}

#[cfg(test)]
mod tests;

//! The messages of the Prometheus protobuf exposition format, from
//! prometheus/client_model's `io/prometheus/client/metrics.proto`
//! (package `io.prometheus.client`, proto2), derived with prost by hand,
//! with the tags and types of that file. Prometheus keeps a proto3 copy of
//! it (`prompb/io/prometheus/client/metrics.proto`); both give the same
//! wire format.
//!
//! Why by hand rather than a build script: no `protoc` at build time, and
//! these dozen small structs are all there is (the same choice as
//! `shmetrics-push`'s remote_write and OTLP messages).
//!
//! The file is proto2, so a scalar field that the encoder sets is present
//! on the wire even when it holds its default value (`Counter.value` of 0
//! is written, as client_golang writes it); that is what the `Option`s
//! model. Repeated scalars are not packed (proto2's default, so the same
//! bytes as client_golang's); prost decodes both forms. Every field of
//! the file is declared, so decoding keeps what another producer sends.
//! Fields are declared in tag order (prost writes them in tag order
//! anyway, as protoc-generated encoders do).

/// `io.prometheus.client.LabelPair`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    /// The label name.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// The label value.
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// `io.prometheus.client.MetricType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    /// Uses [`Metric::counter`].
    Counter = 0,
    /// Uses [`Metric::gauge`].
    Gauge = 1,
    /// Uses [`Metric::summary`].
    Summary = 2,
    /// Uses [`Metric::untyped`].
    Untyped = 3,
    /// Uses [`Metric::histogram`].
    Histogram = 4,
    /// Uses [`Metric::histogram`].
    GaugeHistogram = 5,
}

/// `io.prometheus.client.Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// The value.
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Counter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Counter {
    /// The value.
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
    /// An exemplar (never set by this crate).
    #[prost(message, optional, tag = "2")]
    pub exemplar: Option<Exemplar>,
    /// When the counter was created.
    #[prost(message, optional, tag = "3")]
    pub created_timestamp: Option<Timestamp>,
}

/// `io.prometheus.client.Quantile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Quantile {
    /// The quantile, in `[0, 1]`.
    #[prost(double, optional, tag = "1")]
    pub quantile: Option<f64>,
    /// Its value.
    #[prost(double, optional, tag = "2")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Summary`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    /// Observations.
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    /// Their sum.
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    /// The quantiles.
    #[prost(message, repeated, tag = "3")]
    pub quantile: Vec<Quantile>,
    /// When the summary was created.
    #[prost(message, optional, tag = "4")]
    pub created_timestamp: Option<Timestamp>,
}

/// `io.prometheus.client.Untyped` (never written by this crate).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Untyped {
    /// The value.
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Histogram`: classic buckets, native buckets, or
/// both (they share the count and sum).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// Observations.
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    /// Their sum.
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    /// Classic buckets, in increasing order of `upper_bound`; the `+Inf`
    /// bucket is optional.
    #[prost(message, repeated, tag = "3")]
    pub bucket: Vec<Bucket>,
    /// Overrides `sample_count` if > 0 (float histograms; not written).
    #[prost(double, optional, tag = "4")]
    pub sample_count_float: Option<f64>,
    /// The native buckets' schema, from -4 to 8.
    #[prost(sint32, optional, tag = "5")]
    pub schema: Option<i32>,
    /// The breadth of the zero bucket.
    #[prost(double, optional, tag = "6")]
    pub zero_threshold: Option<f64>,
    /// Observations in the zero bucket.
    #[prost(uint64, optional, tag = "7")]
    pub zero_count: Option<u64>,
    /// Overrides `zero_count` if > 0 (float histograms; not written).
    #[prost(double, optional, tag = "8")]
    pub zero_count_float: Option<f64>,
    /// Spans of negative native buckets.
    #[prost(message, repeated, tag = "9")]
    pub negative_span: Vec<BucketSpan>,
    /// Each negative bucket's count minus the previous bucket's (the
    /// first one's minus zero), across all spans.
    #[prost(sint64, repeated, packed = "false", tag = "10")]
    pub negative_delta: Vec<i64>,
    /// Absolute counts of negative buckets (float histograms; not
    /// written).
    #[prost(double, repeated, packed = "false", tag = "11")]
    pub negative_count: Vec<f64>,
    /// Spans of positive native buckets. A native histogram with no
    /// observation and a zero threshold of 0 has one no-op span (offset 0,
    /// length 0), or it would look like a classic histogram.
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    /// As `negative_delta`, for the positive buckets.
    #[prost(sint64, repeated, packed = "false", tag = "13")]
    pub positive_delta: Vec<i64>,
    /// As `negative_count`, for the positive buckets.
    #[prost(double, repeated, packed = "false", tag = "14")]
    pub positive_count: Vec<f64>,
    /// When the histogram was created.
    #[prost(message, optional, tag = "15")]
    pub created_timestamp: Option<Timestamp>,
    /// Exemplars of native histograms (never set by this crate).
    #[prost(message, repeated, tag = "16")]
    pub exemplars: Vec<Exemplar>,
}

/// `io.prometheus.client.Bucket`: a classic bucket.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Bucket {
    /// Observations up to `upper_bound`, cumulative.
    #[prost(uint64, optional, tag = "1")]
    pub cumulative_count: Option<u64>,
    /// The upper bound, inclusive.
    #[prost(double, optional, tag = "2")]
    pub upper_bound: Option<f64>,
    /// An exemplar (never set by this crate).
    #[prost(message, optional, tag = "3")]
    pub exemplar: Option<Exemplar>,
    /// Overrides `cumulative_count` if > 0 (float histograms; not
    /// written).
    #[prost(double, optional, tag = "4")]
    pub cumulative_count_float: Option<f64>,
}

/// `io.prometheus.client.BucketSpan`: consecutive native buckets.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    /// The gap to the previous span, or the first span's starting index
    /// (which can be negative).
    #[prost(sint32, optional, tag = "1")]
    pub offset: Option<i32>,
    /// How many consecutive buckets.
    #[prost(uint32, optional, tag = "2")]
    pub length: Option<u32>,
}

/// `io.prometheus.client.Exemplar` (never written by this crate).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    /// Its labels.
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    /// Its value.
    #[prost(double, optional, tag = "2")]
    pub value: Option<f64>,
    /// When it was observed.
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<Timestamp>,
}

/// `io.prometheus.client.Metric`: one series.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// Its labels.
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    /// Set in a `GAUGE` family.
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Gauge>,
    /// Set in a `COUNTER` family.
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Counter>,
    /// Set in a `SUMMARY` family.
    #[prost(message, optional, tag = "4")]
    pub summary: Option<Summary>,
    /// Set in an `UNTYPED` family.
    #[prost(message, optional, tag = "5")]
    pub untyped: Option<Untyped>,
    /// A sample timestamp in milliseconds (never set by this crate: the
    /// scrape time is the sample time).
    #[prost(int64, optional, tag = "6")]
    pub timestamp_ms: Option<i64>,
    /// Set in a `HISTOGRAM` or `GAUGE_HISTOGRAM` family.
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
}

/// `io.prometheus.client.MetricFamily`: a family and its series.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricFamily {
    /// The name; a counter's includes `_total`.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// The help text.
    #[prost(string, optional, tag = "2")]
    pub help: Option<String>,
    /// The type, a [`MetricType`].
    #[prost(enumeration = "MetricType", optional, tag = "3")]
    pub r#type: Option<i32>,
    /// The series.
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
    /// The unit (as in OpenMetrics: a suffix of the name, before a
    /// counter's `_total`). Parsers that predate the field (Prometheus
    /// 2.42's, for one) skip it as an unknown field.
    #[prost(string, optional, tag = "5")]
    pub unit: Option<String>,
}

/// `google.protobuf.Timestamp` (proto3: zero fields are not written).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Timestamp {
    /// Seconds since the Unix epoch.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds within the second, `0..1_000_000_000`.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

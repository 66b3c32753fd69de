//! The OTLP messages an OTLP/HTTP metrics exporter sends and reads, from
//! opentelemetry-proto's `collector/metrics/v1/metrics_service.proto`,
//! `metrics/v1/metrics.proto`, `common/v1/common.proto` and
//! `resource/v1/resource.proto`, derived with prost by hand, with the tags
//! of the official definitions.
//!
//! Why by hand rather than the `opentelemetry-proto` crate: its prost
//! messages (`gen-tonic-messages`) come only with its non-optional
//! dependencies on `opentelemetry` and `opentelemetry_sdk` (and their
//! futures and SDK machinery), a whole tracing and metrics SDK this crate
//! never calls, to get some fifteen small structs. The remote_write
//! messages (`crate::proto`) are written the same way. The fields left out
//! are ones this exporter never sets (exemplars, exponential histograms,
//! min and max, quantiles, metadata, entity references, string-table
//! indexes); prost skips them when decoding. The tests decode every body
//! with the official Python definitions, and refuse any unknown field.
//!
//! Fields are declared in tag order (prost writes them in tag order
//! anyway, as protoc-generated encoders do).

/// `opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    /// One per resource; this exporter sends one.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceResponse {
    /// Set when the receiver took some data points and refused others.
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportMetricsPartialSuccess>,
}

/// `opentelemetry.proto.collector.metrics.v1.ExportMetricsPartialSuccess`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsPartialSuccess {
    /// Data points refused.
    #[prost(int64, tag = "1")]
    pub rejected_data_points: i64,
    /// Why, or a warning.
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `google.rpc.Status`, the body of an OTLP/HTTP error response (its
/// `details`, field 3, are not read).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    /// A `google.rpc.Code`.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// What went wrong.
    #[prost(string, tag = "2")]
    pub message: String,
}

/// `opentelemetry.proto.metrics.v1.ResourceMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    /// The resource (its attributes).
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// Metrics by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
    /// The resource's schema URL; empty.
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.resource.v1.Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// `service.name`, `host.name` and the like.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// Always 0.
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

/// `opentelemetry.proto.metrics.v1.ScopeMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    /// Who produced the metrics.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The metrics.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
    /// Empty.
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.common.v1.InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// The scope's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `opentelemetry.proto.metrics.v1.Metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The help text.
    #[prost(string, tag = "2")]
    pub description: String,
    /// The unit, as the family declares it.
    #[prost(string, tag = "3")]
    pub unit: String,
    /// The points.
    #[prost(oneof = "metric::Data", tags = "5, 7, 9, 11")]
    pub data: Option<metric::Data>,
}

/// `Metric`'s `data` oneof.
pub mod metric {
    /// What kind of metric, with its points. Tag 10 (exponential
    /// histogram) is not used.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Data {
        /// A gauge.
        #[prost(message, tag = "5")]
        Gauge(super::Gauge),
        /// A sum (a counter is a monotonic one).
        #[prost(message, tag = "7")]
        Sum(super::Sum),
        /// An explicit-bucket histogram.
        #[prost(message, tag = "9")]
        Histogram(super::Histogram),
        /// An exponential histogram.
        #[prost(message, tag = "10")]
        ExponentialHistogram(super::ExponentialHistogram),
        /// A summary (count and sum).
        #[prost(message, tag = "11")]
        Summary(super::Summary),
    }
}

/// `opentelemetry.proto.metrics.v1.AggregationTemporality`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum AggregationTemporality {
    /// Not to be sent.
    Unspecified = 0,
    /// Each point covers the time since the previous one.
    Delta = 1,
    /// Each point covers the time since the stream's start.
    Cumulative = 2,
}

/// `opentelemetry.proto.metrics.v1.Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `opentelemetry.proto.metrics.v1.Sum`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// Delta or cumulative.
    #[prost(enumeration = "AggregationTemporality", tag = "2")]
    pub aggregation_temporality: i32,
    /// True for a counter.
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// `opentelemetry.proto.metrics.v1.Histogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// Delta or cumulative.
    #[prost(enumeration = "AggregationTemporality", tag = "2")]
    pub aggregation_temporality: i32,
}

/// `opentelemetry.proto.metrics.v1.Summary` (always cumulative: it has no
/// temporality field).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<SummaryDataPoint>,
}

/// `opentelemetry.proto.metrics.v1.NumberDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    /// The stream's start (cumulative) or the previous point's time
    /// (delta), in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When the value was read.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// The value (`as_int`, tag 6, is not used).
    #[prost(oneof = "number_data_point::Value", tags = "4")]
    pub value: Option<number_data_point::Value>,
    /// The series' labels.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// Always 0.
    #[prost(uint32, tag = "8")]
    pub flags: u32,
}

/// `NumberDataPoint`'s `value` oneof.
pub mod number_data_point {
    /// The value.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Value {
        /// A double.
        #[prost(double, tag = "4")]
        AsDouble(f64),
    }
}

/// `opentelemetry.proto.metrics.v1.HistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramDataPoint {
    /// As [`NumberDataPoint::start_time_unix_nano`].
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When the value was read.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Observations.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Observations per bucket (not cumulative), one more than
    /// `explicit_bounds`.
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    /// The buckets' upper bounds, without `+Inf`.
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
    /// The series' labels.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Always 0.
    #[prost(uint32, tag = "10")]
    pub flags: u32,
}

/// `opentelemetry.proto.metrics.v1.ExponentialHistogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogram {
    /// One point per series.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<ExponentialHistogramDataPoint>,
    /// An [`AggregationTemporality`].
    #[prost(enumeration = "AggregationTemporality", tag = "2")]
    pub aggregation_temporality: i32,
}

/// `opentelemetry.proto.metrics.v1.ExponentialHistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogramDataPoint {
    /// The series' labels.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// As [`NumberDataPoint::start_time_unix_nano`].
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When the value was read.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Observations: the zero bucket's and every bucket's.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// The resolution: bucket bounds are powers of `2^(2^-scale)`, as a
    /// native histogram's schema.
    #[prost(sint32, tag = "6")]
    pub scale: i32,
    /// Observations in the zero bucket.
    #[prost(fixed64, tag = "7")]
    pub zero_count: u64,
    /// Buckets of positive values.
    #[prost(message, optional, tag = "8")]
    pub positive: Option<ExponentialBuckets>,
    /// Buckets of negative values (by magnitude).
    #[prost(message, optional, tag = "9")]
    pub negative: Option<ExponentialBuckets>,
    /// Always 0.
    #[prost(uint32, tag = "10")]
    pub flags: u32,
    /// The zero bucket's width: `[-zero_threshold, zero_threshold]`.
    #[prost(double, tag = "14")]
    pub zero_threshold: f64,
}

/// `ExponentialHistogramDataPoint.Buckets`: consecutive buckets,
/// `bucket_counts[k]` counting `(base^(offset+k), base^(offset+k+1)]`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct ExponentialBuckets {
    /// The index of the first bucket.
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    /// Counts (not cumulative).
    #[prost(uint64, repeated, tag = "2")]
    pub bucket_counts: Vec<u64>,
}

/// `opentelemetry.proto.metrics.v1.SummaryDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SummaryDataPoint {
    /// The stream's start.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When the value was read.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Observations.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, tag = "5")]
    pub sum: f64,
    /// The quantiles, over the summary's window.
    #[prost(message, repeated, tag = "6")]
    pub quantile_values: Vec<ValueAtQuantile>,
    /// The series' labels.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// Always 0.
    #[prost(uint32, tag = "8")]
    pub flags: u32,
}

/// `opentelemetry.proto.metrics.v1.SummaryDataPoint.ValueAtQuantile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueAtQuantile {
    /// The quantile, in [0, 1].
    #[prost(double, tag = "1")]
    pub quantile: f64,
    /// Its value.
    #[prost(double, tag = "2")]
    pub value: f64,
}

/// `opentelemetry.proto.common.v1.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `opentelemetry.proto.common.v1.AnyValue` (strings only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The value.
    #[prost(oneof = "any_value::Value", tags = "1")]
    pub value: Option<any_value::Value>,
}

/// `AnyValue`'s `value` oneof.
pub mod any_value {
    /// The value.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// A string.
        #[prost(string, tag = "1")]
        StringValue(String),
    }
}

impl KeyValue {
    /// A string attribute.
    pub fn string(key: &str, value: &str) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.to_string())),
            }),
        }
    }
}

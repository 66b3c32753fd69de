//! The remote write 2.0 messages (`io.prometheus.write.v2`, as
//! Prometheus's `prompb/io/prometheus/write/v2/types.proto` defines them),
//! derived with prost. Strings are interned: a request's `symbols` hold
//! every label name and value, help text and unit once, the empty string
//! first, and series refer to them by index. The native histogram message
//! is remote write 1.0's ([`super::proto::Histogram`]), whose fields are
//! the same, with its start timestamp.

pub use super::proto::{BucketSpan, Histogram};

/// `io.prometheus.write.v2.Request`. Fields 1 to 3 are reserved (1.0's).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    /// The interned strings; `symbols[0]` is `""`.
    #[prost(string, repeated, tag = "4")]
    pub symbols: Vec<String>,
    /// The series.
    #[prost(message, repeated, tag = "5")]
    pub timeseries: Vec<TimeSeries>,
}

/// `io.prometheus.write.v2.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Pairs of symbol references, name then value, sorted by name,
    /// `__name__` included.
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    /// Samples in timestamp order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Native histogram samples (a series has these or `samples`).
    #[prost(message, repeated, tag = "3")]
    pub histograms: Vec<Histogram>,
    /// Exemplars.
    #[prost(message, repeated, tag = "4")]
    pub exemplars: Vec<Exemplar>,
    /// The metric's type, help and unit.
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Metadata>,
}

/// `io.prometheus.write.v2.Sample`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
    /// When the series (a counter, a histogram's or a summary's) was
    /// created, milliseconds since the Unix epoch; 0 is unknown.
    #[prost(int64, tag = "3")]
    pub start_timestamp: i64,
}

/// `io.prometheus.write.v2.Exemplar`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    /// Pairs of symbol references, as [`TimeSeries::labels_refs`].
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    /// The observed value.
    #[prost(double, tag = "2")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// `io.prometheus.write.v2.Metadata`.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Metadata {
    /// A [`MetricType`].
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    /// The help text's symbol.
    #[prost(uint32, tag = "3")]
    pub help_ref: u32,
    /// The unit's symbol.
    #[prost(uint32, tag = "4")]
    pub unit_ref: u32,
}

/// `io.prometheus.write.v2.Metadata.MetricType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum MetricType {
    /// Unknown.
    Unspecified = 0,
    /// A counter.
    Counter = 1,
    /// A gauge.
    Gauge = 2,
    /// A histogram (classic series or native).
    Histogram = 3,
    /// A summary.
    Summary = 5,
}

//! The remote_write 1.0 messages (`prometheus/prompb/remote.proto` and
//! `types.proto`, as the 1.0 specification lists them), derived with
//! prost, and native histograms (`TimeSeries.histograms`, which the 1.0
//! specification leaves out but Prometheus's sender and receiver use
//! since 2.40). Fields the specification reserves or leaves out and this
//! crate never sends (metadata, exemplars) are not declared. The
//! histogram is shared with remote write 2.0 ([`super::proto2`]), which
//! has the same fields and a start timestamp (unset, so not encoded, in
//! 1.0).

/// `prometheus.WriteRequest`. Field 2 is reserved (Cortex), field 3
/// (metadata) is experimental and left out of 1.0.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series, each with its full label set.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Every label, `__name__` included, sorted by name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Samples in timestamp order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Native histogram samples in timestamp order (a series has these or
    /// `samples`, not both).
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// `prometheus.Histogram`: one native histogram sample, with integer
/// counts (the float variants are for float histograms, which a store
/// never has).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// `oneof count`: the count of observations.
    #[prost(oneof = "histogram::Count", tags = "1, 2")]
    pub count: Option<histogram::Count>,
    /// The sum of observations.
    #[prost(double, tag = "3")]
    pub sum: f64,
    /// The resolution, from -4 to 8.
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    /// The width of the zero bucket.
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    /// `oneof zero_count`: observations in the zero bucket.
    #[prost(oneof = "histogram::ZeroCount", tags = "6, 7")]
    pub zero_count: Option<histogram::ZeroCount>,
    /// Spans of negative buckets.
    #[prost(message, repeated, tag = "8")]
    pub negative_spans: Vec<BucketSpan>,
    /// Negative bucket counts, each as the difference to the previous.
    #[prost(sint64, repeated, tag = "9")]
    pub negative_deltas: Vec<i64>,
    /// Spans of positive buckets.
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    /// Positive bucket counts, each as the difference to the previous.
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// `ResetHint`: 0, UNKNOWN (the receiver detects counter resets).
    #[prost(int32, tag = "14")]
    pub reset_hint: i32,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
    /// A custom-bucket histogram's (schema -53) finite upper bounds; its
    /// bucket `i` is `(custom_values[i-1], custom_values[i]]`, the last
    /// one `+Inf`. Empty (and not encoded) for an exponential histogram.
    #[prost(double, repeated, tag = "16")]
    pub custom_values: Vec<f64>,
    /// remote write 2.0 only: when the series was created (its start),
    /// milliseconds since the Unix epoch; 0 is unknown (and not encoded).
    #[prost(int64, tag = "17")]
    pub start_timestamp: i64,
}

/// The `oneof`s of [`Histogram`].
pub mod histogram {
    /// `oneof count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Count {
        /// An integer histogram's count.
        #[prost(uint64, tag = "1")]
        CountInt(u64),
        /// A float histogram's count.
        #[prost(double, tag = "2")]
        CountFloat(f64),
    }

    /// `oneof zero_count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum ZeroCount {
        /// An integer histogram's zero bucket count.
        #[prost(uint64, tag = "6")]
        ZeroCountInt(u64),
        /// A float histogram's zero bucket count.
        #[prost(double, tag = "7")]
        ZeroCountFloat(f64),
    }
}

/// `prometheus.BucketSpan`: consecutive native buckets.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BucketSpan {
    /// The gap to the previous span, or the first span's starting index.
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    /// How many consecutive buckets.
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

impl shmetrics_expo::protobuf::NativeSpan for BucketSpan {
    fn starting(offset: i32) -> Self {
        BucketSpan { offset, length: 0 }
    }
    fn grow(&mut self) {
        self.length += 1;
    }
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Label {
    /// The label name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The value; never empty (an empty value means no label).
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

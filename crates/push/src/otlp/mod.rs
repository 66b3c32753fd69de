//! OTLP/HTTP metrics export (protobuf) from a shmetrics store.
//!
//! [`OtlpExporter`] takes a snapshot of the store every interval and POSTs
//! it as an `ExportMetricsServiceRequest` (opentelemetry-proto's
//! `collector/metrics/v1`, [`proto`]) with `Content-Type:
//! application/x-protobuf`, gzip-compressed unless
//! [`Compression::None`] is asked for, retrying as the OTLP/HTTP specification says
//! and holding a bounded queue as remote_write does.
//!
//! The mapping:
//! - a counter is a monotonic Sum;
//! - a gauge is a Gauge;
//! - a histogram is a Histogram with `explicit_bounds`, per-bucket (not
//!   cumulative) `bucket_counts`, `sum` and `count`;
//! - a summary is a Summary with `count` and `sum` (no quantiles);
//! - labels with a value are data point attributes (`pid` and
//!   `shmetrics_overflow` included, as in the exposition);
//! - `start_time_unix_nano` is the series' creation time, or, once its
//!   values went down (a store reset), just after the last snapshot that
//!   saw the higher values: a new stream; `time_unix_nano` is when the
//!   snapshot was taken.
//!
//! With [`Temporality::Delta`], sums and histograms carry what was added
//! since the last export the receiver took, from that export's time. A
//! series whose stream started again is sent whole from its new start:
//! never a negative delta. Summaries have no temporality in OTLP and stay
//! cumulative.

mod batch;
mod config;
mod encode;
pub mod proto;
mod send;
mod stats;

pub use crate::config::{ConfigError, DEFAULT_QUEUE_BATCHES};
pub use crate::http::{parse_retry_after, HttpSettings, SendError};
pub use config::{
    host_name, Compression, Config, ResourceAttributes, Temporality, DEFAULT_INTERVAL_SECS,
    DEFAULT_PATH, HOST_NAME,
};
pub use encode::SCOPE_NAME;
pub use send::{is_retryable_status, Otlp, OtlpExporter, PROTOBUF};
pub use stats::Stats;

/// The request bodies of one cumulative export of `snap`, as
/// [`OtlpExporter`] sends them for its first export with these settings
/// (at most `max_points` data points a request, compressed with
/// `compression`): for tools and benchmarks that measure or inspect what
/// goes on the wire.
pub fn encode_snapshot(
    snap: &shmetrics_core::Snapshot,
    resource: &ResourceAttributes,
    native_histograms: bool,
    max_points: usize,
    compression: Compression,
) -> Vec<bytes::Bytes> {
    let mut tracker = batch::Tracker::default();
    tracker.native = native_histograms;
    let batch = tracker.batch(0, snap, crate::clock::unix_ns());
    let encoder = encode::Encoder::new(Temporality::Cumulative, resource);
    let baselines = encode::Baselines::default();
    let max = max_points.max(1);
    (0..batch.points)
        .step_by(max)
        .map(|start| {
            let end = (start + max).min(batch.points);
            send::compress(
                encoder.encode(&batch, start..end, &baselines).body,
                compression,
            )
        })
        .collect()
}

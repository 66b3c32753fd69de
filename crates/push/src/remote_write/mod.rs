//! Prometheus remote_write 1.0 and 2.0.
//!
//! [`RemoteWriter`] takes a snapshot of the store every interval, turns it
//! into the series the text exposition shows ([`timeseries`]), encodes them
//! as remote_write `WriteRequest`s (protobuf, snappy block format;
//! `encode`; 2.0's `io.prometheus.write.v2.Request`s with [`encode_v2`]),
//! and POSTs them to one or more receivers with the headers the
//! specification requires; a receiver that turns 2.0 down is sent 1.0
//! from then on (`downgrade`). Each URL has its own bounded queue and
//! sender; see [`RemoteWriter`] for retries and drops, and [`Stats`] for
//! the counters the exporter shows under `shmetrics_remote_write_`.

mod config;
mod downgrade;
mod encode;
mod encode_v2;
pub mod proto;
pub mod proto2;
mod send;
mod stats;

pub use crate::config::DEFAULT_QUEUE_BATCHES;
pub use config::{Config, ExternalLabels, Version, DEFAULT_INTERVAL_SECS};
pub use encode::{encode, encode_request, timeseries, timeseries_with_meta, Chunk, SeriesMeta};
pub use encode_v2::{encode_v2, requests_v2};
pub use send::{RemoteWrite, RemoteWriter};
pub use stats::{EndpointStats, Stats};

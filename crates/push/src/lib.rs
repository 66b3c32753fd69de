//! Pushing a shmetrics store: Prometheus remote_write 1.0, StatsD or
//! DogStatsD ([`statsd`]), and OTLP/HTTP ([`otlp`]).
//!
//! [`RemoteWriter`] takes a snapshot of the store every interval, turns it
//! into the series the text exposition shows ([`timeseries`]), encodes them
//! as remote_write `WriteRequest`s (protobuf, snappy block format;
//! [`encode`]), and POSTs them to one or more receivers with the headers
//! the specification requires. Each URL has its own bounded queue and
//! sender; see [`RemoteWriter`] for retries and drops, and [`Stats`] for
//! the counters the exporter shows under `shmetrics_remote_write_`.
//!
//! The exporter (`shmetrics serve --remote-write.url ...`) runs it next to
//! its HTTP server; see `docs/exporter.md`. The [`statsd`] module's
//! [`statsd::Flusher`] is run the same way (`--statsd.address ...`).
//!
//! [`otlp`] exports the store over OTLP/HTTP (protobuf) the same way
//! (`shmetrics serve --otlp.url ...`).

#![forbid(unsafe_code)]

mod config;
mod encode;
pub mod otlp;
pub mod proto;
mod send;
mod stats;
pub mod statsd;

pub use config::{
    Config, ConfigError, Endpoint, ExternalLabels, DEFAULT_INTERVAL_SECS, DEFAULT_QUEUE_BATCHES,
};
pub use encode::{encode, encode_request, timeseries, Chunk};
pub use send::{RemoteWriter, SendError, USER_AGENT_VALUE};
pub use stats::{EndpointStats, Stats};

use shmetrics_core::{Snapshot, Store};

/// Where snapshots come from.
pub trait Source: Send + Sync + 'static {
    /// Refreshes `snap` to the store's current contents. `Ok(false)` if
    /// there is no store to read yet (nothing is pushed then). Called from
    /// a blocking thread.
    fn refresh(&self, snap: &mut Snapshot) -> Result<bool, shmetrics_core::Error>;
}

impl Source for Store {
    fn refresh(&self, snap: &mut Snapshot) -> Result<bool, shmetrics_core::Error> {
        self.snapshot_into(snap).map(|()| true)
    }
}

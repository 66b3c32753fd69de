//! Pushing a shmetrics store: Prometheus remote_write 1.0
//! ([`remote_write`]), OTLP/HTTP ([`otlp`]), and StatsD or DogStatsD
//! ([`statsd`]).
//!
//! The exporter (`shmetrics serve --remote-write.url ...`,
//! `--otlp.url ...`, `--statsd.address ...`) runs them next to its HTTP
//! server; see `docs/exporter.md`. Each protocol is a module with the
//! same files: `config` (settings, checked when made), `encode` (a
//! snapshot on the wire), `send` (the loop) and `stats` (the counters the
//! exporter shows). The two that POST share the rest:
//!
//! - `url`: the receiver's URL, checked, and [`ConfigError`];
//! - `http`: the client, one request with its time limit, [`SendError`],
//!   the backoff;
//! - `queue`: a receiver's bounded queue of batches and its counters;
//! - `pipeline`: the producer taking snapshots and the sender per
//!   receiver;
//! - `clock` and `log`: the wall clock, and where problems are said.
//!
//! Every protocol's pusher is a [`Pusher`]: made from its settings, it
//! shows its counters and runs until told to stop.
//!
//! The remote_write names are also at the crate root, where they were
//! first ([`RemoteWriter`], [`Config`], ...).

#![forbid(unsafe_code)]

mod clock;
mod config;
mod http;
mod log;
pub mod otlp;
mod pipeline;
mod pusher;
mod queue;
pub mod remote_write;
mod security;
mod source;
pub mod statsd;
mod url;

pub use config::{ConfigError, Protocol};
pub use http::{HttpSettings, SendError, USER_AGENT_VALUE};
pub use pusher::{Push, Pusher};
pub use queue::{FailureReason, QueueStats, SnapshotStats};
pub use remote_write::{
    encode, encode_request, encode_v2, proto, proto2, requests_v2, timeseries,
    timeseries_with_meta, Chunk, Config, EndpointStats, ExternalLabels, RemoteWriter, SeriesMeta,
    Stats, Version, DEFAULT_INTERVAL_SECS, DEFAULT_QUEUE_BATCHES,
};
pub use security::{parse_header, Auth, Secret, TlsSettings};
pub use source::Source;
pub use url::Endpoint;

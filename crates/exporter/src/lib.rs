//! The shmetrics exporter: a small HTTP server that maps a store read-only
//! and serves it to Prometheus, so that scrapes never run inside a worker.
//!
//! Routes: `/metrics` ([`Config::telemetry_path`]: the exposition in
//! Prometheus text, OpenMetrics or the Prometheus protobuf format,
//! negotiated from `Accept`, gzip when accepted), `/exporter-metrics`
//! ([`EXPORTER_METRICS_PATH`]: the exporter's own metrics, which are not
//! on `/metrics` unless [`Config::exporter_metrics`]), `/healthz`,
//! `/-/healthy` and `/-/ready` (as Prometheus and its exporters), and `/`
//! (a landing page linking them, with the store's status).
//!
//! Behaviour worth knowing:
//! - It binds loopback by default ([`DEFAULT_LISTEN`]).
//! - It holds at most [`Config::max_connections`] connections at once.
//!   At the limit, a new connection closes the oldest idle one (one that
//!   has not sent its request head yet), so idle or half-sent connections
//!   can never starve a scrape; only when every place serves a request is
//!   a new connection closed at once and counted.
//! - A client has [`Config::header_timeout`] to send its request head and
//!   [`Config::request_timeout`] for the whole exchange. Connections serve
//!   one request each (no keep-alive), so neither an idle client nor a
//!   slow reader holds a connection longer than that. Request heads over
//!   [`Config::max_header_bytes`] are refused. Request bodies are not read.
//! - Concurrent scrapes for the same format share one render: a scrape
//!   waits for a render that started after it arrived, and reuses it.
//! - SIGTERM and SIGINT close the listener at once, let requests in flight
//!   finish (for up to [`Config::request_timeout`]) and exit.
//! - The store may not exist yet when the exporter starts (a sidecar may
//!   start before the application). Until it can be opened, `/healthz`
//!   answers 503 saying why, `/metrics` serves an empty page (and
//!   `/exporter-metrics` says `shmetrics_store_attached 0`), and every
//!   request tries again.
//! - The store path is followed: a store removed and created again, or
//!   replaced by a rename, is opened and served from the next request on;
//!   one removed and not re-created is served stale, `/healthz` answering
//!   503 (see `attach`).
//! - An optional [`WebConfig`] (`--web.config.file`, in exporter-toolkit's
//!   format) adds TLS, client certificates, basic auth and headers.
//! - An optional remote-write configuration ([`Config::remote_write`])
//!   pushes the store to Prometheus remote_write receivers as well (see
//!   [`shmetrics_push`]); its counters join the exporter's own metrics.
//! - So does an optional StatsD/DogStatsD configuration
//!   ([`Config::statsd`], see [`shmetrics_push::statsd`]): deltas,
//!   gauges and distributions flushed to an agent at an interval, and a
//!   last time on SIGTERM.
//! - An optional OTLP configuration ([`Config::otlp`]) exports the store
//!   over OTLP/HTTP too (see [`shmetrics_push::otlp`]), likewise.

#![forbid(unsafe_code)]

mod attach;
mod config;
mod conns;
mod error;
mod http;
mod landing;
mod page;
mod render;
mod status;
pub mod web_config;

pub use attach::Attached;
pub use config::{
    check_telemetry_path, BuildInfo, Config, BUILD_INFO, DEFAULT_LISTEN, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_TELEMETRY_PATH, EXPORTER_METRICS_PATH, RESERVED_PATHS,
};
pub use error::Error;
pub use http::{serve, Server};
pub use page::{Page, PageBody};
pub use render::{Rendered, Renderer, SelfStats};
pub use web_config::{WebConfig, WebConfigError};

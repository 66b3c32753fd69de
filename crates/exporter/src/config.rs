//! The exporter's settings ([`Config`]), its defaults and fixed paths,
//! and what it reports of its own build ([`BUILD_INFO`]): what the server,
//! its pages and the command line all read, kept apart from them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::web_config::WebConfig;

/// The default listen address. Port 9816 lies in the 9100–9999 range that
/// Prometheus set aside for exporters; we could not check it against the
/// project's port allocation list from here, so it is not registered there.
/// Loopback, because a metrics endpoint should not be reachable from other
/// hosts unless the operator says so.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9816";

/// The default connection limit. An idle connection costs about 15 KiB
/// (its task, socket and read buffer), so a full table costs about
/// 60 MiB.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// The default telemetry path.
pub const DEFAULT_TELEMETRY_PATH: &str = "/metrics";

/// The path of the exporter's own metrics (`shmetrics_*`: scrapes,
/// renders, the store's capacity and writers), kept off the telemetry
/// page so that switching an application to shmetrics adds no series to
/// what Prometheus stores; `--web.exporter-metrics` puts them on the
/// telemetry page too ([`Config::exporter_metrics`]).
pub const EXPORTER_METRICS_PATH: &str = "/exporter-metrics";

/// The paths the exporter serves besides the telemetry path.
pub const RESERVED_PATHS: [&str; 5] = [
    "/",
    "/healthz",
    "/-/healthy",
    "/-/ready",
    EXPORTER_METRICS_PATH,
];

/// Checks a telemetry path: it starts with `/` and is none of
/// [`RESERVED_PATHS`]. Returns what is wrong.
pub fn check_telemetry_path(path: &str) -> Result<(), &'static str> {
    if !path.starts_with('/') {
        return Err("it must start with /");
    }
    if RESERVED_PATHS.contains(&path) {
        return Err("the exporter serves another page there");
    }
    if path.contains(['?', '#']) || path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it must be a plain path (no query, fragment or spaces)");
    }
    Ok(())
}

/// The exporter's version, the git revision it was built from (`unknown`
/// outside a git checkout, unless `SHMETRICS_REVISION` was set at build
/// time) and the compiler that built it: `shmetrics_build_info`'s labels.
pub const BUILD_INFO: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    revision: env!("SHMETRICS_REVISION"),
    rustc: env!("SHMETRICS_RUSTC"),
};

/// What [`BUILD_INFO`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// The crate version.
    pub version: &'static str,
    /// The git commit (short hash, `-dirty` if the tree had changes).
    pub revision: &'static str,
    /// The compiler version (`rustc --version`'s number).
    pub rustc: &'static str,
}

/// Exporter settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The store file, opened read-only. It need not exist yet: the
    /// exporter attaches to it once it can be opened.
    pub store: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// The path of the exposition (`--web.telemetry-path`), `/metrics` by
    /// default; see [`check_telemetry_path`].
    pub telemetry_path: String,
    /// Connections open at once. At the limit, the oldest idle connection
    /// (no request head received yet) is closed to make room for a new
    /// one; a new connection is refused only when every place serves a
    /// request. Lowered at bind to what the limit on open files allows.
    pub max_connections: usize,
    /// Time allowed to receive a request head.
    pub header_timeout: Duration,
    /// Time allowed for a whole request, from accept to the last byte sent
    /// (each connection serves one request).
    pub request_timeout: Duration,
    /// Largest request head accepted, in bytes.
    pub max_header_bytes: usize,
    /// TLS, basic auth and extra headers (`--web.config.file`); `None`
    /// serves plain HTTP to anyone who can connect.
    pub web: Option<Arc<WebConfig>>,
    /// Push the store to remote_write receivers too; `None` pushes
    /// nothing.
    pub remote_write: Option<shmetrics_push::Config>,
    /// Flush the store to a StatsD or DogStatsD agent too; `None` sends
    /// nothing.
    pub statsd: Option<shmetrics_push::statsd::Config>,
    /// Export the store over OTLP/HTTP too; `None` exports nothing.
    pub otlp: Option<shmetrics_push::otlp::Config>,
    /// The user expected to own the store, besides the exporter's own
    /// user and root (see [`shmetrics_core::Options::owner`]).
    pub store_owner: Option<u32>,
    /// The group expected to own the store: a store of this group is
    /// served whoever owns it (see [`shmetrics_core::Options::group`]).
    pub store_group: Option<u32>,
    /// Whether the exporter's own metrics are on the telemetry page too
    /// (`--web.exporter-metrics`); off by default. They are always served
    /// on [`EXPORTER_METRICS_PATH`].
    pub exporter_metrics: bool,
    /// Whether the exporter's own metrics include a series count per
    /// family (`shmetrics_family_series{family=...}`,
    /// `--web.family-metrics`); off by default, since it adds a series
    /// per family and a read of the store to each request for them.
    pub family_metrics: bool,
}

impl Config {
    /// Defaults for a store path.
    pub fn new(store: PathBuf) -> Config {
        Config {
            store,
            listen: DEFAULT_LISTEN.parse().expect("a valid default address"),
            telemetry_path: DEFAULT_TELEMETRY_PATH.to_string(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_header_bytes: 16 * 1024,
            web: None,
            remote_write: None,
            statsd: None,
            otlp: None,
            store_owner: None,
            store_group: None,
            exporter_metrics: false,
            family_metrics: false,
        }
    }
}

//! The exporter's error type.

use std::net::SocketAddr;

use crate::WebConfigError;

/// What can stop the exporter, each with a message that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listen address cannot be bound.
    #[error("cannot listen on {address}: {source} (is another process listening there? pass another --web.listen-address)")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The web configuration file (`--web.config.file`) is wrong; the
    /// message names the file and the key.
    #[error(transparent)]
    WebConfig(#[from] WebConfigError),
    /// The async runtime cannot start (out of threads or memory).
    #[error("cannot start the exporter's runtime: {0}")]
    Runtime(std::io::Error),
    /// The store cannot be read for a scrape (it answers 503 with this
    /// message; the next scrape tries again).
    #[error("cannot read the store: {0}")]
    Render(#[from] shmetrics_core::Error),
    /// A remote_write or OTLP flag cannot be used; the message names the
    /// flag's value and what is wrong with it.
    #[error(transparent)]
    PushConfig(#[from] shmetrics_push::ConfigError),
    /// A StatsD flag cannot be used; the message names the value and the
    /// values that are accepted.
    #[error(transparent)]
    StatsdConfig(#[from] shmetrics_push::statsd::ConfigError),
    /// A flag is given without the flag it depends on.
    #[error("{flag} is given but {needs} is not: add {needs}, or drop {flag}")]
    FlagWithout {
        /// The flag given.
        flag: &'static str,
        /// The flag it needs.
        needs: &'static str,
    },
}

//! The exporter's error type.

use std::net::SocketAddr;

use crate::WebConfigError;

/// What can stop the exporter, each with a message that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listen address cannot be bound.
    #[error("cannot listen on {address}: {source} (is another process listening there? pass another --listen)")]
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
}

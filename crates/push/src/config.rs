//! What the HTTP protocols (remote_write and OTLP) share in their
//! settings: one error type, and the checks of the interval and the
//! queue.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The default number of batches a queue holds (`queue_batches`).
pub const DEFAULT_QUEUE_BATCHES: usize = 10;

/// Which HTTP protocol a setting is for; it names the setting in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protocol {
    /// Prometheus remote_write (`--remote-write.*`).
    RemoteWrite,
    /// OTLP/HTTP (`--otlp.*`).
    Otlp,
}

impl Protocol {
    /// The interval, from seconds (a fraction is allowed; at least 1 ms).
    pub(crate) fn interval(self, secs: f64) -> Result<Duration, ConfigError> {
        if !(secs.is_finite() && secs >= 0.001) {
            return Err(ConfigError::OutOfRange {
                protocol: self,
                what: "interval",
                expected: "a number of seconds of at least 0.001",
                got: secs.to_string(),
            });
        }
        Ok(Duration::from_secs_f64(secs))
    }

    /// The queue size in batches (at least 1).
    pub(crate) fn queue_batches(self, n: usize) -> Result<usize, ConfigError> {
        if n == 0 {
            return Err(ConfigError::OutOfRange {
                protocol: self,
                what: "queue size",
                expected: "at least 1 batch",
                got: n.to_string(),
            });
        }
        Ok(n)
    }
}

/// `with_interval_secs` and `with_queue_batches` for a protocol's
/// `Config` (which has `interval` and `queue_batches` fields), checked by
/// [`Protocol::interval`] and [`Protocol::queue_batches`].
macro_rules! schedule_setters {
    ($protocol:expr) => {
        /// Sets the interval from seconds (a fraction is allowed; at least
        /// 1 ms).
        pub fn with_interval_secs(self, secs: f64) -> Result<Config, ConfigError> {
            let interval = $protocol.interval(secs)?;
            Ok(Config { interval, ..self })
        }

        /// Sets the queue size in batches (at least 1).
        pub fn with_queue_batches(self, n: usize) -> Result<Config, ConfigError> {
            let queue_batches = $protocol.queue_batches(n)?;
            Ok(Config {
                queue_batches,
                ..self
            })
        }
    };
}
pub(crate) use schedule_setters;

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::RemoteWrite => "remote-write",
            Protocol::Otlp => "OTLP",
        })
    }
}

/// A remote_write or OTLP setting that cannot be used.
///
/// The URL variants are checked by [`Endpoint::parse`](crate::Endpoint);
/// the TLS, authentication and header variants by
/// [`HttpSettings::check`](crate::HttpSettings::check).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL does not parse.
    #[error("{protocol} URL {url:?} is not a valid URL: {reason}")]
    BadUrl {
        /// What the URL is for.
        protocol: Protocol,
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Neither `http://` nor `https://`.
    #[error("{protocol} URL {url:?}: only http:// and https:// URLs are supported")]
    UnsupportedScheme {
        /// What the URL is for.
        protocol: Protocol,
        /// The URL as given.
        url: String,
    },
    /// `user:password@` in the URL, which would end up in logs and in the
    /// `url` label of the exporter's own metrics.
    #[error("{protocol} URL {url:?}: credentials in the URL are not supported")]
    CredentialsInUrl {
        /// What the URL is for.
        protocol: Protocol,
        /// The URL as given, credentials removed.
        url: String,
    },
    /// A TLS file (CA, client certificate or key) that cannot be used.
    #[error("{protocol} TLS file {path:?}: {reason}")]
    TlsFile {
        /// What it is for.
        protocol: Protocol,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// TLS settings that do not go together.
    #[error("{protocol} TLS: {reason}")]
    Tls {
        /// What they are for.
        protocol: Protocol,
        /// What is wrong.
        reason: String,
    },
    /// Credentials that cannot be used (a password or token file that
    /// cannot be read or is empty, both basic auth and a bearer token, a
    /// password without a user name).
    #[error("{protocol} credentials: {reason}")]
    Credentials {
        /// What they are for.
        protocol: Protocol,
        /// What is wrong.
        reason: String,
    },
    /// An extra header that is not `NAME:VALUE`, or that would replace
    /// one the protocol sets.
    #[error("header {arg:?}: {reason}")]
    BadHeader {
        /// The header's name as given (never its value).
        arg: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The same URL twice.
    #[error("{protocol} URL {url:?} is given more than once")]
    DuplicateUrl {
        /// What the URL is for.
        protocol: Protocol,
        /// The URL.
        url: String,
    },
    /// remote_write: a protocol version other than 1.0 and 2.0.
    #[error("remote write protocol {given:?}: expected 1.0 or 2.0")]
    BadRemoteWriteVersion {
        /// The version as given.
        given: String,
    },
    /// remote_write: not `NAME=VALUE`, a bad name, or an empty value.
    #[error("external label {arg:?}: {reason}")]
    BadExternalLabel {
        /// The argument as given.
        arg: String,
        /// What is wrong with it.
        reason: String,
    },
    /// remote_write: the same external label name twice.
    #[error("external label {name:?} is given more than once")]
    DuplicateExternalLabel {
        /// The name.
        name: String,
    },
    /// OTLP: not `KEY=VALUE`, or an empty key or value.
    #[error("resource attribute {arg:?}: {reason}")]
    BadResourceAttribute {
        /// The argument as given.
        arg: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// OTLP: the same resource attribute twice.
    #[error("resource attribute {key:?} is given more than once")]
    DuplicateResourceAttribute {
        /// The key.
        key: String,
    },
    /// OTLP: neither `cumulative` nor `delta`.
    #[error("OTLP temporality {got:?}: expected cumulative or delta")]
    BadTemporality {
        /// What was given.
        got: String,
    },
    /// OTLP: neither `gzip` nor `none`.
    #[error("OTLP compression {got:?}: expected gzip or none")]
    BadCompression {
        /// What was given.
        got: String,
    },
    /// An interval or size that is zero, negative or not finite.
    #[error("the {protocol} {what} must be {expected}, got {got}")]
    OutOfRange {
        /// Which protocol.
        protocol: Protocol,
        /// Which setting.
        what: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What it was.
        got: String,
    },
}

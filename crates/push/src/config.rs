//! What to push where, and how often; checked when it is made.

use std::fmt;
use std::time::Duration;

use hyper::Uri;

/// A remote_write setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL does not parse.
    #[error("remote-write URL {url:?} is not a valid URL: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Not `http://`.
    #[error("remote-write URL {url:?}: only http:// URLs are supported (TLS is not implemented yet; send through a local proxy or agent for https)")]
    UnsupportedScheme {
        /// The URL as given.
        url: String,
    },
    /// `user:password@` in the URL, which would end up in logs and in the
    /// `url` label of the exporter's own metrics.
    #[error("remote-write URL {url:?}: credentials in the URL are not supported")]
    CredentialsInUrl {
        /// The URL as given, credentials removed.
        url: String,
    },
    /// The same URL twice.
    #[error("remote-write URL {url:?} is given more than once")]
    DuplicateUrl {
        /// The URL.
        url: String,
    },
    /// Not `NAME=VALUE`, a bad name, or an empty value.
    #[error("external label {arg:?}: {reason}")]
    BadExternalLabel {
        /// The argument as given.
        arg: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The same external label name twice.
    #[error("external label {name:?} is given more than once")]
    DuplicateExternalLabel {
        /// The name.
        name: String,
    },
    /// An interval, timeout or size that is zero, negative or not finite.
    #[error("{what} must be {expected}, got {got}")]
    OutOfRange {
        /// Which setting.
        what: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What it was.
        got: String,
    },
}

/// A receiver's URL, checked: `http://host[:port]/path`.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    uri: Uri,
    text: String,
}

impl Endpoint {
    /// Parses and checks a URL.
    pub fn parse(url: &str) -> Result<Endpoint, ConfigError> {
        let uri: Uri =
            url.parse()
                .map_err(|e: hyper::http::uri::InvalidUri| ConfigError::BadUrl {
                    url: url.to_string(),
                    reason: e.to_string(),
                })?;
        let Some(authority) = uri.authority() else {
            return Err(ConfigError::BadUrl {
                url: url.to_string(),
                reason: "it has no host".into(),
            });
        };
        if let Some((_, host)) = authority.as_str().rsplit_once('@') {
            return Err(ConfigError::CredentialsInUrl {
                url: format!("http://{host}{}", uri.path()),
            });
        }
        if uri.scheme_str() != Some("http") {
            return Err(ConfigError::UnsupportedScheme {
                url: url.to_string(),
            });
        }
        if authority.host().is_empty() {
            return Err(ConfigError::BadUrl {
                url: url.to_string(),
                reason: "it has no host".into(),
            });
        }
        Ok(Endpoint {
            text: uri.to_string(),
            uri,
        })
    }

    /// The URI to POST to.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The URL as text (the `url` label of the exporter's own metrics).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({})", self.text)
    }
}

/// Labels added to every pushed series that does not already have a label
/// of that name (as Prometheus' `external_labels`). Sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalLabels(Vec<(String, String)>);

impl ExternalLabels {
    /// From `NAME=VALUE` arguments. A name must be a valid label name not
    /// starting with `__`, and not `le` (which histogram buckets use); a
    /// value must not be empty.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<ExternalLabels, ConfigError> {
        let mut labels: Vec<(String, String)> = Vec::with_capacity(args.len());
        for arg in args {
            let arg = arg.as_ref();
            let bad = |reason: String| ConfigError::BadExternalLabel {
                arg: arg.to_string(),
                reason,
            };
            let (name, value) = arg
                .split_once('=')
                .ok_or_else(|| bad("expected NAME=VALUE".into()))?;
            shmetrics_core::check_label_name(name).map_err(|e| bad(e.to_string()))?;
            if name == "le" {
                return Err(bad("`le` is the histogram bucket label".into()));
            }
            if value.is_empty() {
                return Err(bad(
                    "the value is empty (an empty value means no label)".into()
                ));
            }
            if labels.iter().any(|(n, _)| n == name) {
                return Err(ConfigError::DuplicateExternalLabel {
                    name: name.to_string(),
                });
            }
            labels.push((name.to_string(), value.to_string()));
        }
        labels.sort();
        Ok(ExternalLabels(labels))
    }

    /// `(name, value)` pairs, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Remote-write settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to push; each URL gets its own queue and sender.
    pub endpoints: Vec<Endpoint>,
    /// How often a snapshot is taken and queued for every URL.
    pub interval: Duration,
    /// Added to every series.
    pub external_labels: ExternalLabels,
    /// Batches (snapshots) each URL holds, the one being sent included.
    /// When a new one arrives and the queue is full, the oldest is dropped.
    pub queue_batches: usize,
    /// Most series (samples) in one request; a larger snapshot is sent as
    /// several requests, in order.
    pub max_samples_per_request: usize,
    /// Time allowed for one request, connecting included.
    pub timeout: Duration,
    /// The first wait before retrying; it doubles on every failure, up to
    /// `max_backoff`, and starts over after a success.
    pub min_backoff: Duration,
    /// The longest wait between retries.
    pub max_backoff: Duration,
    /// Also send histograms with native buckets as native histogram
    /// samples (Prometheus's `send_native_histograms`); see
    /// [`crate::encode::timeseries`]. Off by default: a receiver without
    /// native histograms enabled refuses them.
    pub native_histograms: bool,
}

/// The default of [`Config::interval`], in seconds.
pub const DEFAULT_INTERVAL_SECS: f64 = 15.0;
/// The default of [`Config::queue_batches`].
pub const DEFAULT_QUEUE_BATCHES: usize = 10;

impl Config {
    /// Checked settings with the defaults: a 15 s interval, 10 batches a
    /// queue, 5,000 samples a request, a 30 s request timeout and a
    /// backoff from 100 ms to 5 s.
    pub fn new<S: AsRef<str>>(urls: &[S]) -> Result<Config, ConfigError> {
        let mut endpoints: Vec<Endpoint> = Vec::with_capacity(urls.len());
        for url in urls {
            let e = Endpoint::parse(url.as_ref())?;
            if endpoints.contains(&e) {
                return Err(ConfigError::DuplicateUrl { url: e.to_string() });
            }
            endpoints.push(e);
        }
        Ok(Config {
            endpoints,
            interval: Duration::from_secs_f64(DEFAULT_INTERVAL_SECS),
            external_labels: ExternalLabels::default(),
            queue_batches: DEFAULT_QUEUE_BATCHES,
            max_samples_per_request: 5000,
            timeout: Duration::from_secs(30),
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            native_histograms: false,
        })
    }

    /// Sets the interval from seconds (a fraction is allowed; at least
    /// 1 ms).
    pub fn with_interval_secs(mut self, secs: f64) -> Result<Config, ConfigError> {
        if !(secs.is_finite() && secs >= 0.001) {
            return Err(ConfigError::OutOfRange {
                what: "the remote-write interval",
                expected: "a number of seconds of at least 0.001",
                got: secs.to_string(),
            });
        }
        self.interval = Duration::from_secs_f64(secs);
        Ok(self)
    }

    /// Sets the queue size in batches (at least 1).
    pub fn with_queue_batches(mut self, n: usize) -> Result<Config, ConfigError> {
        if n == 0 {
            return Err(ConfigError::OutOfRange {
                what: "the remote-write queue size",
                expected: "at least 1 batch",
                got: n.to_string(),
            });
        }
        self.queue_batches = n;
        Ok(self)
    }
}

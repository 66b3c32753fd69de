//! What to push where, and how often; checked when it is made.

use std::time::Duration;

use crate::config::{ConfigError, Protocol, DEFAULT_QUEUE_BATCHES};
use crate::{Endpoint, HttpSettings};

/// Labels added to every pushed series that does not already have a label
/// of that name (as Prometheus' `external_labels`). Sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalLabels(Vec<(String, String)>);

impl ExternalLabels {
    /// From `NAME=VALUE` arguments. A name must be a legacy label name
    /// (`[a-zA-Z_][a-zA-Z0-9_]*`, which remote write 1.0 requires of every
    /// label name) not starting with `__`, and not `le` (which histogram
    /// buckets use); a value must not be empty.
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
            shmetrics_core::NameRules::Legacy
                .check_label_name(name)
                .map_err(|e| bad(e.to_string()))?;
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
    /// Request time limit and retries.
    pub http: HttpSettings,
    /// Also send histograms with native buckets as native histogram
    /// samples (Prometheus's `send_native_histograms`); see
    /// [`timeseries`](super::timeseries). Off by default: a receiver without
    /// native histograms enabled refuses them.
    pub native_histograms: bool,
    /// Send a histogram without native buckets as one custom-bucket
    /// native histogram sample (schema -53, its bounds as custom values),
    /// as Prometheus's `convert_classic_histograms_to_nhcb` stores it,
    /// instead of its `_bucket`, `_sum` and `_count` series. Off by
    /// default: the receiver then stores a native histogram, not the
    /// classic series.
    pub custom_buckets: bool,
    /// The protocol version: 1.0 (the default, which every receiver
    /// takes) or 2.0.
    pub version: Version,
}

/// A remote write protocol version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Version {
    /// remote write 1.0: `prometheus.WriteRequest`, labels as strings,
    /// no metadata.
    #[default]
    V1,
    /// remote write 2.0: `io.prometheus.write.v2.Request`, strings
    /// interned per request, with each series' metadata (type, help,
    /// unit), start (created) time and exemplar.
    V2,
}

impl std::str::FromStr for Version {
    type Err = ConfigError;

    /// `1.0` or `2.0`.
    fn from_str(s: &str) -> Result<Version, ConfigError> {
        match s {
            "1.0" | "1" => Ok(Version::V1),
            "2.0" | "2" => Ok(Version::V2),
            _ => Err(ConfigError::BadRemoteWriteVersion {
                given: s.to_string(),
            }),
        }
    }
}

/// The default of [`Config::interval`], in seconds.
pub const DEFAULT_INTERVAL_SECS: f64 = 15.0;

impl Config {
    /// Checked settings with the defaults: a 15 s interval, 10 batches a
    /// queue, 5,000 samples a request, a 30 s request timeout and a
    /// backoff from 100 ms to 5 s.
    pub fn new<S: AsRef<str>>(urls: &[S]) -> Result<Config, ConfigError> {
        let mut endpoints: Vec<Endpoint> = Vec::with_capacity(urls.len());
        for url in urls {
            let e = Endpoint::parse(url.as_ref())?;
            if endpoints.contains(&e) {
                return Err(ConfigError::DuplicateUrl {
                    protocol: Protocol::RemoteWrite,
                    url: e.to_string(),
                });
            }
            endpoints.push(e);
        }
        Ok(Config {
            endpoints,
            interval: Duration::from_secs_f64(DEFAULT_INTERVAL_SECS),
            external_labels: ExternalLabels::default(),
            queue_batches: DEFAULT_QUEUE_BATCHES,
            max_samples_per_request: 5000,
            http: HttpSettings::with_timeout(Duration::from_secs(30)),
            native_histograms: false,
            custom_buckets: false,
            version: Version::V1,
        })
    }

    crate::config::schedule_setters!(Protocol::RemoteWrite);
}

//! What to export where, and how; checked when it is made.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::config::{ConfigError, Protocol, DEFAULT_QUEUE_BATCHES};
use crate::{Endpoint, HttpSettings};

/// How counters and histograms are reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Temporality {
    /// Totals since the series' creation (or its last reset), the same
    /// start time on every export.
    #[default]
    Cumulative,
    /// What was added since the last successful export.
    Delta,
}

impl Temporality {
    /// `cumulative` or `delta`.
    pub fn as_str(self) -> &'static str {
        match self {
            Temporality::Cumulative => "cumulative",
            Temporality::Delta => "delta",
        }
    }
}

impl FromStr for Temporality {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Temporality, ConfigError> {
        match s {
            "cumulative" => Ok(Temporality::Cumulative),
            "delta" => Ok(Temporality::Delta),
            _ => Err(ConfigError::BadTemporality { got: s.to_string() }),
        }
    }
}

impl fmt::Display for Temporality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a request body is compressed (`Content-Encoding`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// gzip, as the OpenTelemetry Collector's OTLP/HTTP exporter sends by
    /// default (the Collector and Prometheus 3 take it, as tested).
    #[default]
    Gzip,
    /// None.
    None,
}

impl FromStr for Compression {
    type Err = ConfigError;

    /// `gzip` or `none`.
    fn from_str(s: &str) -> Result<Compression, ConfigError> {
        match s {
            "gzip" => Ok(Compression::Gzip),
            "none" => Ok(Compression::None),
            _ => Err(ConfigError::BadCompression { got: s.to_string() }),
        }
    }
}

/// The resource's attributes (`service.name`, `host.name`, ...), in the
/// order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes(Vec<(String, String)>);

/// The resource attribute added by default.
pub const HOST_NAME: &str = "host.name";

impl ResourceAttributes {
    /// From `KEY=VALUE` arguments: a key and a value must not be empty,
    /// and a key must not be given twice. The value is everything after
    /// the first `=`.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<ResourceAttributes, ConfigError> {
        let mut attrs: Vec<(String, String)> = Vec::with_capacity(args.len() + 1);
        for arg in args {
            let arg = arg.as_ref();
            let bad = |reason| ConfigError::BadResourceAttribute {
                arg: arg.to_string(),
                reason,
            };
            let (key, value) = arg.split_once('=').ok_or(bad("expected KEY=VALUE"))?;
            if key.is_empty() {
                return Err(bad("the key is empty"));
            }
            if value.is_empty() {
                return Err(bad("the value is empty"));
            }
            if attrs.iter().any(|(k, _)| k == key) {
                return Err(ConfigError::DuplicateResourceAttribute {
                    key: key.to_string(),
                });
            }
            attrs.push((key.to_string(), value.to_string()));
        }
        Ok(ResourceAttributes(attrs))
    }

    /// Adds `key=value` unless `key` is there already.
    pub fn with_default(mut self, key: &str, value: &str) -> ResourceAttributes {
        if !value.is_empty() && !self.0.iter().any(|(k, _)| k == key) {
            self.0.push((key.to_string(), value.to_string()));
        }
        self
    }

    /// Adds `host.name` (this machine's host name) unless it is there
    /// already.
    pub fn with_default_host_name(self) -> ResourceAttributes {
        match host_name() {
            Some(h) => self.with_default(HOST_NAME, &h),
            None => self,
        }
    }

    /// `(key, value)` pairs, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// The kernel's host name (`/proc/sys/kernel/hostname`, as `uname -n`).
pub fn host_name() -> Option<String> {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let h = h.trim();
    (!h.is_empty()).then(|| h.to_string())
}

/// OTLP settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to POST (`.../v1/metrics`).
    pub endpoint: Endpoint,
    /// How often a snapshot is taken and queued.
    pub interval: Duration,
    /// Cumulative or delta sums and histograms.
    pub temporality: Temporality,
    /// The resource's attributes.
    pub resource: ResourceAttributes,
    /// Batches (snapshots) the queue holds, the one being sent included.
    /// When a new one arrives and the queue is full, the oldest is
    /// dropped.
    pub queue_batches: usize,
    /// Most data points in one request; a larger snapshot is sent as
    /// several requests, in order.
    pub max_points_per_request: usize,
    /// Request time limit and retries (with jitter).
    pub http: HttpSettings,
    /// The longest `Retry-After` honoured; a longer one is cut to this.
    pub max_retry_after: Duration,
    /// Send a histogram with native buckets as an OTLP exponential
    /// histogram (its native buckets: scale, zero bucket, positive and
    /// negative buckets), not as an explicit-bucket one. Off by default,
    /// as remote write's `native_histograms`.
    pub native_histograms: bool,
    /// How request bodies are compressed (gzip by default).
    pub compression: Compression,
}

/// The default of [`Config::interval`], in seconds: the OpenTelemetry
/// SDKs' default export interval.
pub const DEFAULT_INTERVAL_SECS: f64 = 60.0;
/// The path appended to a URL that has none.
pub const DEFAULT_PATH: &str = "/v1/metrics";

impl Config {
    /// Checked settings with the defaults: a 60 s interval, cumulative
    /// temporality, gzip, no resource attributes, 10 batches in the queue, 5,000
    /// data points a request, a 10 s request timeout, a backoff from
    /// 100 ms to 5 s, and `Retry-After` honoured up to 5 minutes.
    ///
    /// A URL without a path (`http://collector:4318`) gets
    /// [`DEFAULT_PATH`], as `OTEL_EXPORTER_OTLP_ENDPOINT` does.
    pub fn new(url: &str) -> Result<Config, ConfigError> {
        Ok(Config {
            endpoint: parse_endpoint(url)?,
            interval: Duration::from_secs_f64(DEFAULT_INTERVAL_SECS),
            temporality: Temporality::Cumulative,
            resource: ResourceAttributes::default(),
            queue_batches: DEFAULT_QUEUE_BATCHES,
            max_points_per_request: 5000,
            http: HttpSettings::with_timeout(Duration::from_secs(10)),
            max_retry_after: Duration::from_secs(300),
            native_histograms: false,
            compression: Compression::Gzip,
        })
    }

    crate::config::schedule_setters!(Protocol::Otlp);
}

fn parse_endpoint(url: &str) -> Result<Endpoint, ConfigError> {
    let e = Endpoint::parse_for(Protocol::Otlp, url)?;
    if e.uri().path() == "/" && e.uri().query().is_none() {
        return parse_endpoint(&format!("{}{DEFAULT_PATH}", url.trim_end_matches('/')));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let c = Config::new("http://127.0.0.1:4318").unwrap();
        assert_eq!(c.endpoint.as_str(), "http://127.0.0.1:4318/v1/metrics");
        let c = Config::new("http://127.0.0.1:4318/").unwrap();
        assert_eq!(c.endpoint.as_str(), "http://127.0.0.1:4318/v1/metrics");
        let c = Config::new("http://h:1/otlp/v1/metrics").unwrap();
        assert_eq!(c.endpoint.as_str(), "http://h:1/otlp/v1/metrics");
        assert!(matches!(
            Config::new("ftp://h/v1/metrics"),
            Err(ConfigError::UnsupportedScheme { .. })
        ));
        assert!(matches!(
            Config::new("http://u:p@h/v1/metrics"),
            Err(ConfigError::CredentialsInUrl { .. })
        ));
        assert!(matches!(
            Config::new("not a url"),
            Err(ConfigError::BadUrl { .. })
        ));
        let e = Config::new("ftp://h/x").unwrap_err().to_string();
        assert!(e.starts_with("OTLP URL"), "{e}");
    }

    #[test]
    fn resource_attributes() {
        let r = ResourceAttributes::parse(&["service.name=checkout", "k=a=b"])
            .unwrap()
            .with_default("host.name", "h1")
            .with_default("service.name", "other");
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            [
                ("service.name", "checkout"),
                ("k", "a=b"),
                ("host.name", "h1")
            ]
        );
        let r = ResourceAttributes::parse(&["host.name=mine"])
            .unwrap()
            .with_default_host_name();
        assert_eq!(r.get("host.name"), Some("mine"));
        assert!(ResourceAttributes::parse(&[] as &[&str])
            .unwrap()
            .with_default_host_name()
            .get(HOST_NAME)
            .is_some());
        for bad in ["novalue", "=v", "k="] {
            assert!(
                matches!(
                    ResourceAttributes::parse(&[bad]),
                    Err(ConfigError::BadResourceAttribute { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(
            ResourceAttributes::parse(&["a=1", "a=2"]),
            Err(ConfigError::DuplicateResourceAttribute { key: "a".into() })
        );
    }

    #[test]
    fn temporality_and_ranges() {
        assert_eq!("delta".parse::<Temporality>(), Ok(Temporality::Delta));
        assert_eq!(
            "cumulative".parse::<Temporality>(),
            Ok(Temporality::Cumulative)
        );
        assert!("Delta".parse::<Temporality>().is_err());
        let c = Config::new("http://h/v1/metrics").unwrap();
        assert!(c.clone().with_interval_secs(0.0).is_err());
        assert!(c.clone().with_interval_secs(f64::NAN).is_err());
        assert!(c.clone().with_queue_batches(0).is_err());
        assert_eq!(c.with_interval_secs(0.5).unwrap().interval.as_millis(), 500);
    }
}

//! Where to send StatsD lines, in which dialect, and how often; checked
//! when it is made.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A StatsD setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Neither `HOST:PORT` nor `unix:///path`.
    #[error("statsd address {address:?}: {reason}")]
    BadAddress {
        /// The address as given.
        address: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Not `statsd` or `dogstatsd`.
    #[error("statsd flavor {0:?}: use statsd or dogstatsd")]
    UnknownFlavor(String),
    /// An interval that does not divide the agent's 10 s window.
    #[error(
        "statsd interval {0}: it must divide 10 seconds (1, 2, 5, 10, or 0.5, 0.25, ...; at least 0.1), \
         so that every 10 s window of the agent gets the same number of flushes"
    )]
    BadInterval(String),
    /// A datagram size out of range.
    #[error("statsd max datagram {0}: it must be between {MIN_DATAGRAM} and {MAX_DATAGRAM} bytes")]
    BadDatagramSize(usize),
    /// A prefix that would not survive the wire format.
    #[error("statsd prefix {prefix:?}: {reason}")]
    BadPrefix {
        /// The prefix as given.
        prefix: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// The smallest `--statsd.max-datagram`.
pub const MIN_DATAGRAM: usize = 64;
/// The largest `--statsd.max-datagram`: the most a UDP datagram over IPv4
/// carries.
pub const MAX_DATAGRAM: usize = 65_507;
/// The default `--statsd.max-datagram`: fits an Ethernet MTU of 1500 with
/// room for IP and UDP headers and tunnel overhead (DogStatsD's own
/// recommendation for UDP).
pub const DEFAULT_MAX_DATAGRAM: usize = 1432;
/// The default `--statsd.interval`, in seconds: the agent's window.
pub const DEFAULT_INTERVAL_SECS: f64 = 10.0;

/// Which dialect of the line protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Etsy StatsD: no tags (labels are folded into the name), no
    /// distributions (histograms go as `_count` and `_sum` counters).
    Statsd,
    /// DogStatsD: labels as `|#k:v` tags, histograms and summaries as
    /// distributions (`|d`) with value packing and sample rates.
    Dogstatsd,
}

impl Flavor {
    /// `statsd` or `dogstatsd`.
    pub fn parse(s: &str) -> Result<Flavor, ConfigError> {
        match s {
            "statsd" => Ok(Flavor::Statsd),
            "dogstatsd" => Ok(Flavor::Dogstatsd),
            _ => Err(ConfigError::UnknownFlavor(s.to_string())),
        }
    }

    /// The name as the flag takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Statsd => "statsd",
            Flavor::Dogstatsd => "dogstatsd",
        }
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where datagrams go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// UDP to `host:port`; the host is resolved when the socket is
    /// (re)opened, so a name that does not resolve yet is a send error,
    /// not a start-up error.
    Udp {
        /// A host name or address (IPv6 without brackets).
        host: String,
        /// The port.
        port: u16,
    },
    /// A Unix datagram socket (DogStatsD's `dogstatsd_socket`).
    Unix(PathBuf),
}

impl Address {
    /// `HOST:PORT` (`[::1]:8125` for IPv6) or `unix:///absolute/path`.
    pub fn parse(s: &str) -> Result<Address, ConfigError> {
        let bad = |reason| ConfigError::BadAddress {
            address: s.to_string(),
            reason,
        };
        if let Some(path) = s.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(bad("a Unix socket path must be absolute: unix:///path"));
            }
            if path.len() < 2 {
                return Err(bad("the Unix socket path is empty"));
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        if s.contains("://") {
            return Err(bad("only HOST:PORT (UDP) and unix:///path are supported"));
        }
        let (host, port) = s
            .rsplit_once(':')
            .ok_or_else(|| bad("expected HOST:PORT"))?;
        let host = match host.strip_prefix('[') {
            Some(h) => h.strip_suffix(']').ok_or_else(|| bad("unclosed '['"))?,
            None if host.contains(':') => {
                return Err(bad("write an IPv6 address in brackets: [::1]:8125"))
            }
            None => host,
        };
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| bad("the port is not a number from 1 to 65535"))?;
        if port == 0 {
            return Err(bad("the port is not a number from 1 to 65535"));
        }
        Ok(Address::Udp {
            host: host.to_string(),
            port,
        })
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Udp { host, port } if host.contains(':') => write!(f, "udp://[{host}]:{port}"),
            Address::Udp { host, port } => write!(f, "udp://{host}:{port}"),
            Address::Unix(p) => write!(f, "unix://{}", p.display()),
        }
    }
}

/// StatsD settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to send.
    pub address: Address,
    /// The dialect.
    pub flavor: Flavor,
    /// Time between flushes; divides 10 s (see [`Config::with_interval_secs`]).
    pub interval: Duration,
    /// Most bytes in one datagram.
    pub max_datagram: usize,
    /// Put before every name, ending in `.` (empty for none).
    pub prefix: String,
    /// Send a `:` of a family name as `.` rather than `_`, so a family
    /// named `app:requests` (as the Ruby StatsD facade names
    /// `app.requests`) goes out as `app.requests`.
    pub colons_as_dots: bool,
    /// How long one send may block (a Unix socket whose reader is behind);
    /// after a send times out, the rest of that flush is not sent.
    pub send_timeout: Duration,
}

impl Config {
    /// Settings for `address` with the defaults: a 10 s interval, 1432-byte
    /// datagrams, no prefix.
    pub fn new(address: Address, flavor: Flavor) -> Config {
        Config {
            address,
            flavor,
            interval: Duration::from_secs_f64(DEFAULT_INTERVAL_SECS),
            max_datagram: DEFAULT_MAX_DATAGRAM,
            prefix: String::new(),
            colons_as_dots: false,
            send_timeout: Duration::from_millis(100),
        }
    }

    /// Sets the interval. It must divide 10 seconds a whole number of
    /// times (10, 5, 2.5, 2, 1, 0.5, ...) and be at least 0.1 s: a
    /// DogStatsD agent sums what it gets into 10 s windows aligned to the
    /// clock, and flushes (which are aligned to the clock too) must split
    /// those windows evenly, or one window gets one flush's worth more
    /// than the next. 3 is refused.
    pub fn with_interval_secs(mut self, secs: f64) -> Result<Config, ConfigError> {
        let n = 10.0 / secs;
        let whole = n.round();
        if !(secs.is_finite() && secs > 0.0 && whole <= 100.0 && (n - whole).abs() < 1e-9) {
            return Err(ConfigError::BadInterval(secs.to_string()));
        }
        // 10 / n exactly, so that 0.1 is not 0.1000000000000000055 s.
        self.interval = Duration::from_nanos(10_000_000_000 / whole as u64);
        Ok(self)
    }

    /// Sets the largest datagram, from [`MIN_DATAGRAM`] to
    /// [`MAX_DATAGRAM`] bytes.
    pub fn with_max_datagram(mut self, bytes: usize) -> Result<Config, ConfigError> {
        if !(MIN_DATAGRAM..=MAX_DATAGRAM).contains(&bytes) {
            return Err(ConfigError::BadDatagramSize(bytes));
        }
        self.max_datagram = bytes;
        Ok(self)
    }

    /// Sends a `:` in a family name as `.` (see
    /// [`Config::colons_as_dots`]).
    pub fn with_colons_as_dots(mut self, on: bool) -> Config {
        self.colons_as_dots = on;
        self
    }

    /// Sets the prefix: ASCII letters, digits, `_`, `-` and `.`, not
    /// starting with `.` and without `..`. A `.` is added at the end if it
    /// has none, so `myapp` makes `myapp.http_requests`.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Config, ConfigError> {
        let bad = |reason| ConfigError::BadPrefix {
            prefix: prefix.to_string(),
            reason,
        };
        if prefix.is_empty() {
            self.prefix.clear();
            return Ok(self);
        }
        if !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        {
            return Err(bad(
                "only ASCII letters, digits, '_', '-' and '.' are allowed",
            ));
        }
        if prefix.starts_with('.') || prefix.contains("..") {
            return Err(bad("it must not start with '.' or contain '..'"));
        }
        self.prefix = prefix.to_string();
        if !self.prefix.ends_with('.') {
            self.prefix.push('.');
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            Address::parse("127.0.0.1:8125").unwrap(),
            Address::Udp {
                host: "127.0.0.1".into(),
                port: 8125
            }
        );
        assert_eq!(
            Address::parse("[::1]:8125").unwrap(),
            Address::Udp {
                host: "::1".into(),
                port: 8125
            }
        );
        assert_eq!(
            Address::parse("unix:///var/run/datadog/dsd.socket").unwrap(),
            Address::Unix("/var/run/datadog/dsd.socket".into())
        );
        for bad in [
            "localhost",
            "localhost:0",
            "localhost:99999",
            ":8125",
            "::1:8125",
            "unix://relative",
            "unix:///",
            "udp://localhost:8125",
        ] {
            assert!(
                matches!(Address::parse(bad), Err(ConfigError::BadAddress { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn intervals_divide_ten_seconds() {
        let c = || Config::new(Address::parse("localhost:8125").unwrap(), Flavor::Statsd);
        for (secs, nanos) in [
            (10.0, 10_000_000_000),
            (5.0, 5_000_000_000),
            (2.5, 2_500_000_000),
            (2.0, 2_000_000_000),
            (1.0, 1_000_000_000),
            (0.5, 500_000_000),
            (0.1, 100_000_000),
        ] {
            assert_eq!(
                c().with_interval_secs(secs).unwrap().interval,
                Duration::from_nanos(nanos)
            );
        }
        for bad in [3.0, 4.0, 7.0, 20.0, 0.0, -1.0, 0.05, 0.3, f64::NAN, 1.1] {
            assert_eq!(
                c().with_interval_secs(bad).unwrap_err(),
                ConfigError::BadInterval(bad.to_string())
            );
        }
    }

    #[test]
    fn prefixes_and_sizes() {
        let c = || Config::new(Address::parse("localhost:8125").unwrap(), Flavor::Statsd);
        assert_eq!(c().with_prefix("myapp").unwrap().prefix, "myapp.");
        assert_eq!(
            c().with_prefix("my-app.web.").unwrap().prefix,
            "my-app.web."
        );
        assert_eq!(c().with_prefix("").unwrap().prefix, "");
        for bad in [".x", "a..b", "a:b", "a b", "a|b", "é"] {
            assert!(c().with_prefix(bad).is_err(), "{bad}");
        }
        assert!(c().with_max_datagram(63).is_err());
        assert!(c().with_max_datagram(65_508).is_err());
        assert_eq!(c().with_max_datagram(8192).unwrap().max_datagram, 8192);
    }
}

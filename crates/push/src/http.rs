//! HTTP for the protocols that POST (remote_write and OTLP): the client
//! (TLS for `https://`, authentication and extra headers from
//! [`crate::security`]), one request with its time limit, what can go
//! wrong, and how long to wait before trying again.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, USER_AGENT};
use hyper::{Request, StatusCode};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::clock::unix_ns;
use crate::config::{ConfigError, Protocol};
use crate::security::{Auth, Credentials, TlsSettings};
use crate::Endpoint;

/// The `User-Agent` sent with every request.
pub const USER_AGENT_VALUE: &str = concat!("shmetrics/", env!("CARGO_PKG_VERSION"));

/// How requests are made: the same settings for remote_write and OTLP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// Time allowed for one request, connecting included.
    pub timeout: Duration,
    /// The first wait before retrying (without a `Retry-After`); it
    /// doubles on every failure, up to `max_backoff` (OTLP: with jitter),
    /// and starts over after a success.
    pub min_backoff: Duration,
    /// The longest wait between retries (without a `Retry-After`).
    pub max_backoff: Duration,
    /// TLS for `https://` URLs.
    pub tls: TlsSettings,
    /// How requests authenticate.
    pub auth: Auth,
    /// Extra headers sent with every request (values marked sensitive).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl HttpSettings {
    /// A `timeout` for each request, and a backoff from 100 ms to 5 s.
    pub fn with_timeout(timeout: Duration) -> HttpSettings {
        HttpSettings {
            timeout,
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            tls: TlsSettings::default(),
            auth: Auth::None,
            headers: Vec::new(),
        }
    }

    /// Checks that the TLS files and the credentials can be used now (the
    /// pusher reads them again when it starts, and secret files for every
    /// request).
    pub fn check(&self, protocol: Protocol) -> Result<(), ConfigError> {
        self.tls.client_config(protocol)?;
        self.auth.check(protocol)
    }
}

/// Why a request did not succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// No connection, or it broke.
    #[error("cannot reach the receiver: {0}")]
    Transport(String),
    /// No complete answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The TLS handshake failed: most often the receiver's certificate
    /// does not chain to a trusted CA or does not name the host.
    #[error("TLS with the receiver failed: {0} (is its certificate signed by a CA in the system trust store or in the tls.ca-file, and for this host name?)")]
    Tls(String),
    /// The credentials could not be read (a password or token file).
    #[error("cannot read the credentials: {0}")]
    Credentials(String),
    /// The receiver refused the credentials (401) or the access (403).
    #[error("the receiver refused the credentials ({status}): {message}")]
    Unauthorized {
        /// 401 or 403.
        status: StatusCode,
        /// What the receiver said.
        message: String,
    },
    /// The receiver answered with a status other than 2xx.
    #[error("the receiver answered {status}: {message}")]
    Status {
        /// The status.
        status: StatusCode,
        /// What the receiver said: the start of the body, or (OTLP) the
        /// message of its `google.rpc.Status`.
        message: String,
        /// How long the receiver asked to wait (`Retry-After`; OTLP only).
        retry_after: Option<Duration>,
    },
}

impl SendError {
    /// Whether the request is tried again: always when the receiver
    /// cannot be reached or does not answer in time; on a status when
    /// `retried(status)` (each protocol has its list).
    pub fn is_retryable_with(&self, retried: fn(StatusCode) -> bool) -> bool {
        match self {
            SendError::Transport(_)
            | SendError::Timeout(_)
            | SendError::Tls(_)
            | SendError::Credentials(_) => true,
            SendError::Status { status, .. } | SendError::Unauthorized { status, .. } => {
                retried(*status)
            }
        }
    }

    /// The `Retry-After` the receiver sent, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            SendError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A `Retry-After` value: delay-seconds or an HTTP date (a date in the
/// past is no wait). `None` if it is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An answer: its status, headers and (a bounded part of) its body.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Empty if the body was longer than the limit.
    pub body: Bytes,
    /// The credentials the request carried, hidden from what the
    /// receiver said before it goes into an error.
    pub credentials: Option<Credentials>,
}

impl Response {
    /// The start of the body as text, for an error message.
    pub(crate) fn body_text(&self) -> String {
        let end = self.body.len().min(1024);
        String::from_utf8_lossy(&self.body[..end])
            .trim()
            .to_string()
    }

    /// The error for a status other than 2xx, with what the receiver said
    /// (the request's credentials hidden from it).
    pub(crate) fn refused(&self, message: String, retry_after: Option<Duration>) -> SendError {
        let message = match &self.credentials {
            Some(c) => c.hide(&message),
            None => message,
        };
        if matches!(
            self.status,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            return SendError::Unauthorized {
                status: self.status,
                message,
            };
        }
        SendError::Status {
            status: self.status,
            message,
            retry_after,
        }
    }
}

/// The HTTP client every sender of a pusher shares (its connections are
/// pooled).
#[derive(Clone, Debug)]
pub(crate) struct Client {
    inner: hyper_util::client::legacy::Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    auth: Auth,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Client {
    /// A client for `http://` and `https://` URLs, with the TLS files
    /// read now.
    pub(crate) fn new(settings: &HttpSettings, protocol: Protocol) -> Result<Client, ConfigError> {
        let tls = settings.tls.client_config(protocol)?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Client {
            inner: hyper_util::client::legacy::Client::builder(TokioExecutor::new())
                .build(connector),
            auth: settings.auth.clone(),
            headers: settings.headers.clone(),
        })
    }

    /// POSTs `body` to `endpoint` with `headers` (lower-case names) and
    /// the `User-Agent`, and reads at most `limit` bytes of the answer
    /// (so that the connection can be reused and an error can say what
    /// the receiver said), all within `timeout`.
    pub(crate) async fn post(
        &self,
        endpoint: &Endpoint,
        headers: &[(&'static str, &'static str)],
        body: Bytes,
        limit: usize,
        timeout: Duration,
    ) -> Result<Response, SendError> {
        let mut req = Request::post(endpoint.uri().clone())
            .body(Full::new(body))
            .map_err(|e| SendError::Transport(e.to_string()))?;
        let h = req.headers_mut();
        for (name, value) in &self.headers {
            h.insert(name.clone(), value.clone());
        }
        for &(name, value) in headers {
            h.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        h.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
        let credentials = self.auth.credentials().map_err(SendError::Credentials)?;
        if let Some(c) = &credentials {
            h.insert(AUTHORIZATION, c.header.clone());
        }
        let exchange = async {
            let resp = self
                .inner
                .request(req)
                .await
                .map_err(|e| match tls_error(&e) {
                    Some(tls) => SendError::Tls(tls),
                    None => SendError::Transport(error_chain(&e)),
                })?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = Limited::new(resp.into_body(), limit)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            Ok(Response {
                status,
                headers,
                body,
                credentials,
            })
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Err(SendError::Timeout(timeout)))
    }
}

/// The TLS error among `e`'s sources, if any. (An `io::Error` does not
/// list the error it wraps among its sources, only that error's sources;
/// and the TLS connector wraps rustls' error in two of them.)
fn tls_error(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(t) = c.downcast_ref::<rustls::Error>() {
            return Some(t.to_string());
        }
        cur = match c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => c.source(),
        };
    }
    None
}

/// An error with its sources: hyper's own messages are terse ("client
/// error (Connect)").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The wait before the next try: from `min`, doubling on every failure up
/// to `max`, back to `min` after a success; with jitter, each wait is
/// scaled by a factor in [0.5, 1.0).
#[derive(Debug)]
pub(crate) struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
    jitter: Option<Jitter>,
}

impl Backoff {
    pub(crate) fn new(min: Duration, max: Duration, jitter: bool) -> Backoff {
        Backoff {
            min,
            max,
            next: min,
            jitter: jitter.then(Jitter::new),
        }
    }

    /// The wait after a failure.
    pub(crate) fn wait(&mut self) -> Duration {
        let d = match &mut self.jitter {
            Some(j) => j.apply(self.next),
            None => self.next,
        };
        self.next = (self.next * 2).min(self.max);
        d
    }

    /// After a success.
    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }
}

/// A small xorshift for the backoff's jitter (no need for a good one).
#[derive(Debug)]
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        Jitter(unix_ns() ^ (u64::from(std::process::id()) << 32) | 1)
    }

    /// `d` scaled by a factor in [0.5, 1.0).
    fn apply(&mut self, d: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let f = 0.5 + (self.0 >> 11) as f64 / (1u64 << 53) as f64 / 2.0;
        d.mul_f64(f)
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    #[test]
    fn retry_after() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        // 2015-10-21 07:28:00 UTC is `now`; 90 s later.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:29:30 GMT", now),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn jitter_stays_in_range() {
        let mut j = Jitter::new();
        for _ in 0..1000 {
            let d = j.apply(Duration::from_millis(1000));
            assert!(d >= Duration::from_millis(500) && d < Duration::from_millis(1000));
        }
    }
}

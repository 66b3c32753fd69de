//! Receiver URLs, checked the same way for every HTTP protocol.

use std::fmt;

use hyper::Uri;

use crate::config::{ConfigError, Protocol};

/// A receiver's URL, checked: `http[s]://host[:port]/path`.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    uri: Uri,
    text: String,
}

impl Endpoint {
    /// Parses and checks a remote_write URL.
    pub fn parse(url: &str) -> Result<Endpoint, ConfigError> {
        Endpoint::parse_for(Protocol::RemoteWrite, url)
    }

    /// Parses and checks a URL for `protocol` (which the errors name).
    pub fn parse_for(protocol: Protocol, url: &str) -> Result<Endpoint, ConfigError> {
        let bad = |reason: String| ConfigError::BadUrl {
            protocol,
            url: url.to_string(),
            reason,
        };
        let uri: Uri = url
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| bad(e.to_string()))?;
        let Some(authority) = uri.authority() else {
            return Err(bad("it has no host".into()));
        };
        if let Some((_, host)) = authority.as_str().rsplit_once('@') {
            return Err(ConfigError::CredentialsInUrl {
                protocol,
                url: format!(
                    "{}://{host}{}",
                    uri.scheme_str().unwrap_or("http"),
                    uri.path()
                ),
            });
        }
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err(ConfigError::UnsupportedScheme {
                protocol,
                url: url.to_string(),
            });
        }
        if authority.host().is_empty() {
            return Err(bad("it has no host".into()));
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

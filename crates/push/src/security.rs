//! What reaching a secured receiver takes, for remote_write and OTLP
//! alike: TLS for `https://` URLs (the system trust store, or a CA file;
//! optionally a client certificate), authentication (basic auth or a
//! bearer token, the secret inline or in a file read again for every
//! request, so that a rotated token is picked up), and extra headers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use hyper::header::{HeaderName, HeaderValue};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::{ConfigError, Protocol};

/// TLS settings for `https://` URLs. Without a CA file, the receiver's
/// certificate must chain to the system trust store (as OpenSSL finds it:
/// `/etc/ssl/certs`, `SSL_CERT_FILE`, `SSL_CERT_DIR`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM certificates trusted instead of the system store (as
    /// Prometheus' `tls_config.ca_file`).
    pub ca_file: Option<PathBuf>,
    /// A PEM client certificate (chain) to present, with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The PEM private key of `cert_file`.
    pub key_file: Option<PathBuf>,
}

impl TlsSettings {
    /// The rustls client configuration: the roots, the client certificate
    /// if any. Reads the files now.
    pub fn client_config(&self, protocol: Protocol) -> Result<rustls::ClientConfig, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls_err = |path: &Path, reason: String| ConfigError::TlsFile {
            protocol,
            path: path.to_path_buf(),
            reason,
        };
        let mut roots = rustls::RootCertStore::empty();
        match &self.ca_file {
            Some(ca) => {
                for cert in read_certs(ca).map_err(|r| tls_err(ca, r))? {
                    roots
                        .add(cert)
                        .map_err(|e| tls_err(ca, format!("not a CA certificate: {e}")))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                for e in &found.errors {
                    tracing::warn!(
                        "{protocol}: a certificate of the system trust store cannot be read: {e}"
                    );
                }
                let (added, _ignored) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    tracing::warn!(
                        "{protocol}: the system trust store has no certificates: https:// receivers need a CA file"
                    );
                }
            }
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError::Tls {
                protocol,
                reason: e.to_string(),
            })?
            .with_root_certificates(roots);
        match (&self.cert_file, &self.key_file) {
            (None, None) => Ok(builder.with_no_client_auth()),
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert).map_err(|r| tls_err(cert, r))?;
                let key_der = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| tls_err(key, format!("no PEM private key: {e}")))?;
                builder
                    .with_client_auth_cert(chain, key_der)
                    .map_err(|e| tls_err(key, e.to_string()))
            }
            _ => Err(ConfigError::Tls {
                protocol,
                reason: "a client certificate needs both a certificate file and a key file".into(),
            }),
        }
    }
}

/// Every PEM certificate in `path` (at least one).
fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read it: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not PEM certificates: {e}"))?;
    if certs.is_empty() {
        return Err("it holds no PEM certificate".into());
    }
    Ok(certs)
}

/// A password or token: given inline or read from a file (for every
/// request; surrounding white space, such as the final newline, is
/// trimmed). Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// The secret itself.
    Inline(String),
    /// A file holding it.
    File(PathBuf),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Inline(_) => f.write_str("Inline(<hidden>)"),
            Secret::File(p) => write!(f, "File({})", p.display()),
        }
    }
}

impl Secret {
    /// The secret, read now.
    pub fn read(&self) -> Result<String, String> {
        match self {
            Secret::Inline(s) => Ok(s.clone()),
            Secret::File(p) => match std::fs::read_to_string(p) {
                Ok(s) if s.trim().is_empty() => Err(format!("{} is empty", p.display())),
                Ok(s) => Ok(s.trim().to_string()),
                Err(e) => Err(format!("cannot read {}: {e}", p.display())),
            },
        }
    }
}

/// An `Authorization` header, and the strings a receiver's answer must
/// not repeat into a log: the encoded credentials, the bare password.
pub(crate) struct Credentials {
    /// The header's value (marked sensitive).
    pub header: HeaderValue,
    /// The encoded credentials and the bare secret (empty when it is the
    /// same: a bearer token).
    secret: [String; 2],
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<hidden>)")
    }
}

impl Credentials {
    /// `text` with every occurrence of the credentials replaced by
    /// `<hidden>`. Some receivers quote the `Authorization` header they
    /// refuse in their answer (vmauth before 1.91 answers "cannot find
    /// the provided auth token \"Bearer ...\" in config"), which the
    /// error, and so the log, would otherwise carry.
    pub fn hide(&self, text: &str) -> String {
        let mut text = text.to_string();
        for s in self.secret.iter().filter(|s| !s.is_empty()) {
            if text.contains(s.as_str()) {
                text = text.replace(s.as_str(), "<hidden>");
            }
        }
        text
    }
}

/// How requests authenticate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Auth {
    /// They do not.
    #[default]
    None,
    /// HTTP basic auth.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
    /// `Authorization: Bearer TOKEN`.
    Bearer(Secret),
}

impl Auth {
    /// The `Authorization` header, reading a secret file now; `None`
    /// without authentication.
    pub(crate) fn header(&self) -> Result<Option<HeaderValue>, String> {
        Ok(self.credentials()?.map(|c| c.header))
    }

    /// The `Authorization` header with what it reveals, reading a secret
    /// file now; `None` without authentication.
    pub(crate) fn credentials(&self) -> Result<Option<Credentials>, String> {
        let (value, secret) = match self {
            Auth::None => return Ok(None),
            Auth::Basic { username, password } => {
                let password = password.read()?;
                let pair = base64::engine::general_purpose::STANDARD
                    .encode(format!("{username}:{password}"));
                (format!("Basic {pair}"), [pair, password])
            }
            Auth::Bearer(token) => {
                let token = token.read()?;
                (format!("Bearer {token}"), [token, String::new()])
            }
        };
        let mut header = HeaderValue::try_from(value)
            .map_err(|_| "the credentials hold a character not allowed in a header".to_string())?;
        header.set_sensitive(true);
        Ok(Some(Credentials { header, secret }))
    }

    /// Checks that the secret can be read now (a file that exists and is
    /// not empty) and makes a valid header.
    pub fn check(&self, protocol: Protocol) -> Result<(), ConfigError> {
        self.header()
            .map(|_| ())
            .map_err(|reason| ConfigError::Credentials { protocol, reason })
    }
}

/// Headers that the protocol or the authentication settings set, which an
/// extra header may not replace.
const RESERVED: [&str; 9] = [
    "authorization",
    "content-type",
    "content-encoding",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "x-prometheus-remote-write-version",
    "user-agent",
];

/// An extra header from `NAME:VALUE` (the value's surrounding spaces
/// trimmed). The value is marked sensitive (never shown by `Debug`): it
/// may hold a tenant key.
pub fn parse_header(arg: &str) -> Result<(HeaderName, HeaderValue), ConfigError> {
    let bad = |reason: &str| ConfigError::BadHeader {
        arg: arg.split(':').next().unwrap_or("").to_string(),
        reason: reason.to_string(),
    };
    let (name, value) = arg
        .split_once(':')
        .ok_or_else(|| bad("expected NAME:VALUE"))?;
    let name = HeaderName::try_from(name.trim()).map_err(|_| bad("not a header name"))?;
    if RESERVED.contains(&name.as_str()) {
        return Err(bad(
            "set by the protocol or by the authentication flags; it cannot be replaced",
        ));
    }
    let mut value =
        HeaderValue::try_from(value.trim()).map_err(|_| bad("not a valid header value"))?;
    value.set_sensitive(true);
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let (n, v) = parse_header("X-Scope-OrgID: tenant-1").unwrap();
        assert_eq!(n.as_str(), "x-scope-orgid");
        assert_eq!(v.to_str().unwrap(), "tenant-1");
        assert!(!format!("{v:?}").contains("tenant"));
        for bad in [
            "nocolon",
            "Authorization: Bearer x",
            "bad name: v",
            "X: a\nb",
        ] {
            assert!(
                matches!(parse_header(bad), Err(ConfigError::BadHeader { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn auth_headers_and_secret_files() {
        let basic = Auth::Basic {
            username: "Aladdin".into(),
            password: Secret::Inline("open sesame".into()),
        };
        assert_eq!(
            basic.header().unwrap().unwrap().to_str().unwrap(),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "abc\n").unwrap();
        let bearer = Auth::Bearer(Secret::File(token.clone()));
        assert_eq!(
            bearer.header().unwrap().unwrap().to_str().unwrap(),
            "Bearer abc"
        );
        // Read again: a rotated token is used at once.
        std::fs::write(&token, "def").unwrap();
        assert_eq!(
            bearer.header().unwrap().unwrap().to_str().unwrap(),
            "Bearer def"
        );
        std::fs::remove_file(&token).unwrap();
        assert!(matches!(
            bearer.check(Protocol::Otlp),
            Err(ConfigError::Credentials { .. })
        ));
        assert!(!format!("{basic:?}").contains("sesame"));
    }

    /// What a receiver repeats of the credentials is hidden: the encoded
    /// pair and the bare password of basic auth, a bearer token.
    #[test]
    fn credentials_are_hidden_from_an_answer() {
        let basic = Auth::Basic {
            username: "Aladdin".into(),
            password: Secret::Inline("open sesame".into()),
        };
        let c = basic.credentials().unwrap().unwrap();
        assert_eq!(
            c.hide(r#"cannot find the provided auth token "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==" in config"#),
            r#"cannot find the provided auth token "Basic <hidden>" in config"#
        );
        assert_eq!(
            c.hide("user Aladdin, password open sesame"),
            "user Aladdin, password <hidden>"
        );
        assert_eq!(c.hide("Unauthorized"), "Unauthorized");
        assert!(!format!("{c:?}").contains("QWxh"));
        let bearer = Auth::Bearer(Secret::Inline("tok-1".into()));
        let c = bearer.credentials().unwrap().unwrap();
        assert_eq!(
            c.hide("token tok-1, again tok-1"),
            "token <hidden>, again <hidden>"
        );
        assert!(Auth::None.credentials().unwrap().is_none());
    }
}

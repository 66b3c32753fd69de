//! `--web.config.file`: TLS, client certificates, basic auth and extra
//! response headers, in the format of Prometheus' exporter-toolkit, so that
//! one file serves every exporter of a host.
//!
//! The file is read once, when the exporter starts; every problem is an
//! error naming the file. Like exporter-toolkit, unknown keys are errors.
//! Keys that exporter-toolkit knows but this exporter does not implement
//! (`cipher_suites`, `curve_preferences`, `client_allowed_sans`,
//! `rate_limit`) are errors too, rather than silently ignored.
//! Relative paths are resolved against the file's directory.
//!
//! TLS is rustls with the ring provider, TLS 1.2 and 1.3. Passwords are
//! bcrypt hashes. A successful check is cached (keyed by a salted SHA-256
//! of user and password, never the password itself), so a scrape pays the
//! bcrypt cost once, not on every request; so is a failed one, so that a
//! wrong password sent again is refused without bcrypt. bcrypt runs one
//! check at a time, each client address has at most one check pending,
//! and at most `MAX_PENDING` are pending in all: a check past either
//! bound is refused at once (`Verdict::Throttled`, `429`), so a flood of
//! guesses cannot keep a correct scrape waiting.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

// ----- the file's shape --------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    tls_server_config: Option<RawTls>,
    http_server_config: Option<RawHttp>,
    basic_auth_users: Option<BTreeMap<String, String>>,
    rate_limit: Option<serde_norway::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert: Option<String>,
    key: Option<String>,
    client_ca: Option<String>,
    cert_file: Option<String>,
    key_file: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    prefer_server_cipher_suites: Option<bool>,
    cipher_suites: Option<serde_norway::Value>,
    curve_preferences: Option<serde_norway::Value>,
    client_allowed_sans: Option<serde_norway::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

// ----- errors --------------------------------------------------------------------

/// A web configuration file that cannot be used: the file, and what is
/// wrong with it.
#[derive(Debug)]
pub struct WebConfigError {
    path: PathBuf,
    problem: Problem,
}

impl WebConfigError {
    /// The configuration file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }
}

/// What is wrong with a web configuration file.
#[derive(Debug)]
#[non_exhaustive]
pub enum Problem {
    /// The file cannot be read.
    Read(std::io::Error),
    /// It is not valid YAML of the expected shape (unknown keys included);
    /// the message gives the line and column.
    Syntax(String),
    /// A key exporter-toolkit knows that this exporter does not implement.
    Unsupported {
        /// The key.
        key: &'static str,
        /// Why, and what to do instead.
        why: &'static str,
    },
    /// `tls_server_config` is set without a certificate.
    MissingCert,
    /// `tls_server_config` is set without a private key.
    MissingKey,
    /// Both the inline and the file form of the same item are set.
    InlineAndFile {
        /// The inline key (`cert`, `key`, `client_ca`).
        inline: &'static str,
        /// The file key (`cert_file`, ...).
        file: &'static str,
    },
    /// A file named by the configuration cannot be read.
    ReadFile {
        /// The key that names it.
        key: &'static str,
        /// The file, resolved against the configuration's directory.
        file: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A certificate or key is not valid PEM, or holds nothing usable.
    Pem {
        /// The key that gives it.
        key: &'static str,
        /// The file it came from, if not inline.
        file: Option<PathBuf>,
        /// What is wrong.
        message: String,
    },
    /// `client_auth_type` is not one of exporter-toolkit's values.
    UnknownClientAuth(String),
    /// `client_auth_type` is a value rustls cannot implement.
    UnsupportedClientAuth(String),
    /// A client CA is set but `client_auth_type` does not ask for a
    /// certificate (exporter-toolkit refuses this too).
    ClientCaWithoutClientAuth,
    /// `client_auth_type` verifies certificates but no client CA is set.
    ClientAuthWithoutCa(String),
    /// `min_version` or `max_version` is not a TLS version rustls speaks.
    TlsVersion {
        /// `min_version` or `max_version`.
        key: &'static str,
        /// The value found.
        value: String,
    },
    /// `min_version` is above `max_version`.
    TlsVersionRange,
    /// rustls refused the certificate, key or client CA (for example a key
    /// that does not match the certificate).
    Tls(String),
    /// A header under `http_server_config.headers` that cannot be set, or
    /// a value it does not accept.
    Header {
        /// The header.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The system's random number generator failed (for the cache salt).
    Randomness,
    /// A `basic_auth_users` entry whose password is not a bcrypt hash.
    BadHash {
        /// The user.
        user: String,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = |file: &Option<PathBuf>| match file {
            Some(p) => format!(" ({})", p.display()),
            None => " (inline)".to_string(),
        };
        match self {
            Problem::Read(e) => write!(f, "cannot read it: {e}"),
            Problem::Syntax(m) => write!(f, "{m}"),
            Problem::Unsupported { key, why } => write!(f, "{key} is not supported: {why}"),
            Problem::MissingCert => write!(
                f,
                "tls_server_config: missing one of cert_file or cert (the server's certificate)"
            ),
            Problem::MissingKey => write!(
                f,
                "tls_server_config: missing one of key_file or key (the server's private key)"
            ),
            Problem::InlineAndFile { inline, file } => {
                write!(f, "tls_server_config: set {inline} or {file}, not both")
            }
            Problem::ReadFile { key, file, source } => write!(
                f,
                "tls_server_config.{key}: cannot read {}: {source}",
                file.display()
            ),
            Problem::Pem { key, file, message } => {
                write!(f, "tls_server_config.{key}{}: {message}", from(file))
            }
            Problem::UnknownClientAuth(v) => write!(
                f,
                "tls_server_config.client_auth_type: unknown value {v:?}; use NoClientCert, \
                 VerifyClientCertIfGiven or RequireAndVerifyClientCert"
            ),
            Problem::UnsupportedClientAuth(v) => write!(
                f,
                "tls_server_config.client_auth_type: {v} (a client certificate accepted \
                 without verification) is not supported; use RequireAndVerifyClientCert \
                 with client_ca_file"
            ),
            Problem::ClientCaWithoutClientAuth => write!(
                f,
                "tls_server_config: a client CA is set but client_auth_type does not ask for \
                 client certificates; set client_auth_type: RequireAndVerifyClientCert"
            ),
            Problem::ClientAuthWithoutCa(v) => write!(
                f,
                "tls_server_config.client_auth_type: {v} needs client_ca_file (or client_ca) \
                 to verify client certificates against"
            ),
            Problem::TlsVersion { key, value } => write!(
                f,
                "tls_server_config.{key}: {value:?} is not supported; use TLS12 or TLS13"
            ),
            Problem::TlsVersionRange => {
                write!(f, "tls_server_config: min_version is above max_version")
            }
            Problem::Tls(m) => write!(f, "tls_server_config: {m}"),
            Problem::Header { name, message } => {
                write!(f, "http_server_config.headers.{name}: {message}")
            }
            Problem::Randomness => {
                write!(f, "basic_auth_users: the system's random generator failed")
            }
            Problem::BadHash { user, message } => write!(
                f,
                "basic_auth_users.{user}: not a bcrypt hash ({message}); make one with \
                 `htpasswd -nBC 10 \"\" | tr -d ':\\n'`"
            ),
        }
    }
}

impl fmt::Display for WebConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "web config file {}: {}",
            self.path.display(),
            self.problem
        )
    }
}

impl std::error::Error for WebConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.problem {
            Problem::Read(e) | Problem::ReadFile { source: e, .. } => Some(e),
            _ => None,
        }
    }
}

// ----- the loaded configuration ----------------------------------------------------

/// A loaded and checked web configuration.
pub struct WebConfig {
    path: PathBuf,
    tls: Option<Arc<rustls::ServerConfig>>,
    auth: Option<BasicAuth>,
    headers: HeaderMap,
}

impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // No hashes, keys or cached digests.
        f.debug_struct("WebConfig")
            .field("path", &self.path)
            .field("tls", &self.tls.is_some())
            .field(
                "basic_auth_users",
                &self.auth.as_ref().map_or(0, |a| a.users.len()),
            )
            .field("headers", &self.headers.len())
            .finish()
    }
}

/// Headers that `http_server_config.headers` may set, and the values each
/// accepts (empty: any), as in exporter-toolkit.
const EXTRA_HEADERS: [(&str, &[&str]); 5] = [
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

impl WebConfig {
    /// Reads and checks the file: its YAML, the certificates and keys it
    /// names, and its password hashes.
    pub fn load(path: impl AsRef<Path>) -> Result<WebConfig, WebConfigError> {
        let path = path.as_ref();
        let fail = |problem| WebConfigError {
            path: path.to_path_buf(),
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(Problem::Read(e)))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Self::parse(path, &text, &dir).map_err(fail)
    }

    fn parse(path: &Path, text: &str, dir: &Path) -> Result<WebConfig, Problem> {
        // An empty file (or only comments) configures nothing, as in
        // exporter-toolkit: plain HTTP without authentication.
        let raw: RawConfig = serde_norway::from_str::<Option<RawConfig>>(text)
            .map_err(|e| Problem::Syntax(e.to_string()))?
            .unwrap_or_default();
        if raw.rate_limit.is_some() {
            return Err(Problem::Unsupported {
                key: "rate_limit",
                why: "the exporter already bounds connections (--web.max-connections) and shares one render between concurrent scrapes",
            });
        }
        let tls = match raw.tls_server_config {
            Some(t) => tls_config(t, dir)?,
            None => None,
        };
        let mut headers = HeaderMap::new();
        if let Some(http) = raw.http_server_config {
            // `http2` is accepted for compatibility; the exporter speaks
            // HTTP/1.1 only, so it changes nothing.
            let _ = http.http2;
            for (name, value) in http.headers.unwrap_or_default() {
                let bad = |message: String| Problem::Header {
                    name: name.clone(),
                    message,
                };
                let Some((_, allowed)) = EXTRA_HEADERS.iter().find(|(n, _)| *n == name) else {
                    return Err(bad(format!(
                        "this header cannot be configured; allowed: {}",
                        EXTRA_HEADERS.map(|(n, _)| n).join(", ")
                    )));
                };
                if value.is_empty() {
                    continue; // "unset if blank"
                }
                if !allowed.is_empty() && !allowed.contains(&value.as_str()) {
                    return Err(bad(format!(
                        "{value:?} is not allowed; expected one of {allowed:?}"
                    )));
                }
                let v = HeaderValue::from_str(&value)
                    .map_err(|_| bad(format!("{value:?} is not a valid header value")))?;
                // UNWRAP: the allowed names are valid header names.
                let n = HeaderName::from_bytes(name.as_bytes()).expect("a valid header name");
                headers.insert(n, v);
            }
        }
        let auth = match raw.basic_auth_users {
            Some(users) if !users.is_empty() => Some(BasicAuth::new(users)?),
            _ => None,
        };
        Ok(WebConfig {
            path: path.to_path_buf(),
            tls,
            auth,
            headers,
        })
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it serves HTTPS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether requests need basic auth.
    pub fn requires_basic_auth(&self) -> bool {
        self.auth.is_some()
    }

    /// The TLS acceptor, if it serves HTTPS.
    pub(crate) fn acceptor(&self) -> Option<tokio_rustls::TlsAcceptor> {
        self.tls.clone().map(tokio_rustls::TlsAcceptor::from)
    }

    /// Headers added to every response.
    pub(crate) fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// Whether a request from `peer` with this `Authorization` header may
    /// proceed. Without `basic_auth_users`, every request may.
    pub(crate) async fn authorize(&self, header: Option<&HeaderValue>, peer: IpAddr) -> Verdict {
        match &self.auth {
            None => Verdict::Allowed,
            Some(auth) => auth.check(header, peer).await,
        }
    }
}

fn tls_version(key: &'static str, value: Option<String>, default: u8) -> Result<u8, Problem> {
    match value.as_deref() {
        None | Some("") => Ok(default),
        Some("TLS12") => Ok(12),
        Some("TLS13") => Ok(13),
        Some(other) => Err(Problem::TlsVersion {
            key,
            value: other.to_string(),
        }),
    }
}

/// Resolves a path from the file against the file's directory.
fn resolve(dir: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

/// PEM bytes, and where they came from.
struct PemSource {
    /// The key that gave them.
    key: &'static str,
    /// The file, unless inline.
    file: Option<PathBuf>,
    bytes: Vec<u8>,
}

/// The PEM bytes of an item given inline (`inline`) or as a file
/// (`file`), with where they came from.
fn pem_source(
    inline_key: &'static str,
    inline: Option<String>,
    file_key: &'static str,
    file: Option<String>,
    dir: &Path,
) -> Result<Option<PemSource>, Problem> {
    let inline = inline.filter(|s| !s.is_empty());
    let file = file.filter(|s| !s.is_empty());
    match (inline, file) {
        (Some(_), Some(_)) => Err(Problem::InlineAndFile {
            inline: inline_key,
            file: file_key,
        }),
        (Some(text), None) => Ok(Some(PemSource {
            key: inline_key,
            file: None,
            bytes: text.into_bytes(),
        })),
        (None, Some(f)) => {
            let file = resolve(dir, &f);
            let bytes = std::fs::read(&file).map_err(|source| Problem::ReadFile {
                key: file_key,
                file: file.clone(),
                source,
            })?;
            Ok(Some(PemSource {
                key: file_key,
                file: Some(file),
                bytes,
            }))
        }
        (None, None) => Ok(None),
    }
}

fn certificates(
    PemSource { key, file, bytes }: PemSource,
) -> Result<Vec<CertificateDer<'static>>, Problem> {
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Problem::Pem {
            key,
            file: file.clone(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(Problem::Pem {
            key,
            file,
            message: "no PEM certificate found".into(),
        });
    }
    Ok(certs)
}

fn tls_config(t: RawTls, dir: &Path) -> Result<Option<Arc<rustls::ServerConfig>>, Problem> {
    refuse_unsupported(&t)?;
    let min = tls_version("min_version", t.min_version, 12)?;
    let max = tls_version("max_version", t.max_version, 13)?;
    if min > max {
        return Err(Problem::TlsVersionRange);
    }
    let set = |o: &Option<String>| o.as_ref().is_some_and(|s| !s.is_empty());
    let client_auth = t.client_auth_type.filter(|s| !s.is_empty());
    if !(set(&t.cert)
        || set(&t.cert_file)
        || set(&t.key)
        || set(&t.key_file)
        || set(&t.client_ca)
        || set(&t.client_ca_file)
        || client_auth.is_some())
    {
        // An empty section, or versions alone: no TLS (as exporter-toolkit).
        return Ok(None);
    }
    if !set(&t.cert) && !set(&t.cert_file) {
        return Err(Problem::MissingCert);
    }
    if !set(&t.key) && !set(&t.key_file) {
        return Err(Problem::MissingKey);
    }
    let cert = pem_source("cert", t.cert, "cert_file", t.cert_file, dir)?;
    let key = pem_source("key", t.key, "key_file", t.key_file, dir)?;
    let client_ca = pem_source(
        "client_ca",
        t.client_ca,
        "client_ca_file",
        t.client_ca_file,
        dir,
    )?;
    // UNWRAP (both): checked just above.
    let certs = certificates(cert.expect("a certificate"))?;
    let private_key = private_key(key.expect("a key"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = client_verifier(client_auth, client_ca, &provider)?;
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
            .into_iter()
            .filter(|(v, _)| (min..=max).contains(v))
            .map(|(_, p)| p)
            .collect();
    let builder = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| Problem::Tls(e.to_string()))?;
    let builder = match verifier {
        Some(v) => builder.with_client_cert_verifier(v),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(certs, private_key)
        .map_err(|e| Problem::Tls(format!("the certificate and key do not go together: {e}")))?;
    // exporter-toolkit's default: the server's cipher suite order wins.
    config.ignore_client_order = t.prefer_server_cipher_suites.unwrap_or(true);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// Refuses the keys exporter-toolkit has and this exporter does not
/// implement.
fn refuse_unsupported(t: &RawTls) -> Result<(), Problem> {
    for (key, set) in [
        ("tls_server_config.cipher_suites", t.cipher_suites.is_some()),
        (
            "tls_server_config.curve_preferences",
            t.curve_preferences.is_some(),
        ),
        (
            "tls_server_config.client_allowed_sans",
            t.client_allowed_sans.is_some(),
        ),
    ] {
        if set {
            return Err(Problem::Unsupported {
                key,
                why: "rustls' defaults apply (cipher suites and curves), and client certificates are verified against client_ca_file",
            });
        }
    }
    Ok(())
}

/// The server's private key, from its PEM source.
fn private_key(key: PemSource) -> Result<PrivateKeyDer<'static>, Problem> {
    let PemSource {
        key: key_key,
        file: key_file,
        bytes: key_bytes,
    } = key;
    PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| Problem::Pem {
        key: key_key,
        file: key_file,
        message: match e {
            rustls::pki_types::pem::Error::NoItemsFound => "no PEM private key found".into(),
            e => e.to_string(),
        },
    })
}

/// The client certificate verifier that `client_auth_type` and
/// `client_ca` ask for; `None` without client certificates.
fn client_verifier(
    client_auth: Option<String>,
    client_ca: Option<PemSource>,
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>, Problem> {
    let verify = match client_auth.as_deref() {
        None | Some("NoClientCert") => None,
        Some("RequireAndVerifyClientCert") => Some(false),
        Some("VerifyClientCertIfGiven") => Some(true),
        Some(v @ ("RequestClientCert" | "RequireAnyClientCert" | "RequireClientCert")) => {
            return Err(Problem::UnsupportedClientAuth(v.to_string()))
        }
        Some(other) => return Err(Problem::UnknownClientAuth(other.to_string())),
    };
    match (verify, client_ca) {
        (None, Some(_)) => Err(Problem::ClientCaWithoutClientAuth),
        (None, None) => Ok(None),
        (Some(_), None) => Err(Problem::ClientAuthWithoutCa(
            client_auth.unwrap_or_default(),
        )),
        (Some(optional), Some(ca)) => {
            let (ca_key, ca_file) = (ca.key, ca.file.clone());
            let mut roots = rustls::RootCertStore::empty();
            for c in certificates(ca)? {
                roots.add(c).map_err(|e| Problem::Pem {
                    key: ca_key,
                    file: ca_file.clone(),
                    message: format!("not a usable CA certificate: {e}"),
                })?;
            }
            let mut b = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            );
            if optional {
                b = b.allow_unauthenticated();
            }
            Ok(Some(b.build().map_err(|e| Problem::Tls(e.to_string()))?))
        }
    }
}

// ----- basic auth ------------------------------------------------------------------

/// Successful checks kept, at most; past that an arbitrary one is evicted.
/// Failures are kept apart, so a client guessing passwords cannot push
/// the legitimate entries out.
const MAX_CACHED: usize = 256;
/// Failed checks kept, at most; past that the oldest is forgotten.
const MAX_FAILED_CACHED: usize = 4096;
/// bcrypt checks pending at once (one runs, the others wait); past this,
/// a check is refused at once.
pub(crate) const MAX_PENDING: usize = 4;

/// What basic auth says of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The credentials are right (or none are needed).
    Allowed,
    /// Missing, malformed or wrong credentials: `401`.
    Denied,
    /// Not checked: too many checks are pending, or one from the same
    /// client address is: `429`, at once and without bcrypt.
    Throttled,
}

/// Salted digests of failed (user, password) pairs, oldest first. The
/// users and hashes never change while the process runs, so a pair that
/// failed once always fails.
#[derive(Default)]
struct Failed {
    set: HashSet<[u8; 32]>,
    order: VecDeque<[u8; 32]>,
}

impl Failed {
    fn insert(&mut self, key: [u8; 32]) {
        if self.set.insert(key) {
            self.order.push_back(key);
            if self.order.len() > MAX_FAILED_CACHED {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }
}

/// The client addresses with a check pending; a [`Ticket`] holds one.
type Pending = Arc<Mutex<HashSet<IpAddr>>>;

/// A pending check's place: removed when the check ends, or when the
/// request is dropped while it waits.
struct Ticket {
    pending: Pending,
    peer: IpAddr,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        lock(&self.pending).remove(&self.peer);
    }
}

/// Locks a mutex; a panic elsewhere does not make its set unusable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct BasicAuth {
    /// User → bcrypt hash.
    users: HashMap<String, String>,
    /// A hash of a random password at the highest cost among the users:
    /// an unknown user costs as much as a known one, so response times do
    /// not tell which users exist.
    decoy: String,
    /// A random salt for the cache keys, new in each process.
    salt: [u8; 32],
    /// Salted SHA-256 digests of (user, password) pairs that passed.
    verified: Arc<Mutex<HashSet<[u8; 32]>>>,
    /// Likewise of pairs that failed.
    failed: Arc<Mutex<Failed>>,
    /// The client addresses with a check pending.
    pending: Pending,
    /// One bcrypt at a time, as exporter-toolkit does: it is CPU-bound by
    /// design, and this machine's cores also render scrapes.
    bcrypt_gate: Arc<tokio::sync::Semaphore>,
}

impl BasicAuth {
    fn new(users: BTreeMap<String, String>) -> Result<BasicAuth, Problem> {
        let mut max_cost = 4;
        for (user, hash) in &users {
            let parts: bcrypt::HashParts =
                hash.parse()
                    .map_err(|e: bcrypt::BcryptError| Problem::BadHash {
                        user: user.clone(),
                        message: e.to_string(),
                    })?;
            let cost = parts.get_cost();
            if !(4..=31).contains(&cost) {
                return Err(Problem::BadHash {
                    user: user.clone(),
                    message: format!("cost {cost} is outside 4 to 31"),
                });
            }
            max_cost = max_cost.max(cost);
        }
        use ring::rand::SecureRandom as _;
        let rng = ring::rand::SystemRandom::new();
        let (mut salt, mut decoy_password) = ([0u8; 32], [0u8; 32]);
        rng.fill(&mut salt)
            .and_then(|()| rng.fill(&mut decoy_password))
            .map_err(|_| Problem::Randomness)?;
        let decoy = bcrypt::hash(decoy_password, max_cost).map_err(|e| Problem::BadHash {
            user: String::new(),
            message: e.to_string(),
        })?;
        Ok(BasicAuth {
            users: users.into_iter().collect(),
            decoy,
            salt,
            verified: Arc::new(Mutex::new(HashSet::new())),
            failed: Arc::new(Mutex::new(Failed::default())),
            pending: Arc::new(Mutex::new(HashSet::new())),
            bcrypt_gate: Arc::new(tokio::sync::Semaphore::new(1)),
        })
    }

    fn cache_key(&self, user: &[u8], password: &[u8]) -> [u8; 32] {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(&self.salt);
        ctx.update(&(user.len() as u64).to_le_bytes());
        ctx.update(user);
        ctx.update(&(password.len() as u64).to_le_bytes());
        ctx.update(password);
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.finish().as_ref());
        out
    }

    /// A place for a check from `peer`, unless that address has one
    /// pending or [`MAX_PENDING`] are.
    fn admit(&self, peer: IpAddr) -> Option<Ticket> {
        let peer = peer.to_canonical();
        let mut pending = lock(&self.pending);
        if pending.len() >= MAX_PENDING || !pending.insert(peer) {
            return None;
        }
        Some(Ticket {
            pending: self.pending.clone(),
            peer,
        })
    }

    async fn check(&self, header: Option<&HeaderValue>, peer: IpAddr) -> Verdict {
        let Some((user, password)) = header.and_then(parse_basic) else {
            return Verdict::Denied;
        };
        let key = self.cache_key(&user, &password);
        // The digests are of secret-salted input, so comparing them (in
        // the sets' lookups) reveals nothing about the password.
        if lock(&self.verified).contains(&key) {
            return Verdict::Allowed;
        }
        if lock(&self.failed).set.contains(&key) {
            return Verdict::Denied;
        }
        let Some(ticket) = self.admit(peer) else {
            return Verdict::Throttled;
        };
        let known = std::str::from_utf8(&user)
            .ok()
            .and_then(|u| self.users.get(u));
        let hash = known.unwrap_or(&self.decoy).clone();
        let Ok(permit) = self.bcrypt_gate.clone().acquire_owned().await else {
            return Verdict::Denied;
        };
        // bcrypt takes tens of milliseconds by design: off the async
        // workers. `verify` compares the hashes in constant time. The
        // outcome is cached by the blocking task itself, which holds the
        // gate and the ticket until bcrypt is done, so a client that gave
        // up meanwhile (a scrape timeout) still spares the next one and
        // lets no second bcrypt run beside it.
        let (verified, failed) = (self.verified.clone(), self.failed.clone());
        let valid_user = known.is_some();
        let ok = tokio::task::spawn_blocking(move || {
            let _held = (permit, ticket);
            let ok = bcrypt::verify(password, &hash).unwrap_or(false) && valid_user;
            if ok {
                let mut verified = lock(&verified);
                if verified.len() >= MAX_CACHED {
                    if let Some(evict) = verified.iter().next().copied() {
                        verified.remove(&evict);
                    }
                }
                verified.insert(key);
            } else {
                lock(&failed).insert(key);
            }
            ok
        })
        .await
        .unwrap_or(false);
        if ok {
            Verdict::Allowed
        } else {
            Verdict::Denied
        }
    }
}

/// `Basic <base64(user:password)>`, the scheme case-insensitive.
fn parse_basic(h: &HeaderValue) -> Option<(Vec<u8>, Vec<u8>)> {
    let v = h.as_bytes();
    let (scheme, rest) = v.split_at(v.iter().position(|b| *b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim_ascii())
        .ok()?;
    let colon = decoded.iter().position(|b| *b == b':')?;
    Some((decoded[..colon].to_vec(), decoded[colon + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<WebConfig, Problem> {
        WebConfig::parse(Path::new("/x/web.yml"), yaml, Path::new("/x"))
    }

    #[test]
    fn empty_files_configure_nothing() {
        for y in [
            "",
            "# nothing\n",
            "tls_server_config:\n",
            "basic_auth_users: {}\n",
        ] {
            let c = parse(y).unwrap_or_else(|e| panic!("{y:?}: {e}"));
            assert!(!c.is_tls() && !c.requires_basic_auth(), "{y:?}");
        }
    }

    #[test]
    fn unknown_and_unsupported_keys_are_errors() {
        let e = parse("tls_server_config:\n  cert_fil: a\n").err().unwrap();
        assert!(matches!(e, Problem::Syntax(_)), "{e}");
        assert!(e.to_string().contains("cert_fil"), "{e}");
        let e = parse("basic_auth: {}\n").err().unwrap();
        assert!(e.to_string().contains("basic_auth"), "{e}");
        let e = parse("rate_limit:\n  burst: 2\n").err().unwrap();
        assert!(
            matches!(
                e,
                Problem::Unsupported {
                    key: "rate_limit",
                    ..
                }
            ),
            "{e}"
        );
        let e = parse("tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n")
            .err()
            .unwrap();
        assert!(e.to_string().contains("cipher_suites"), "{e}");
    }

    #[test]
    fn tls_needs_cert_and_key() {
        let e = parse("tls_server_config:\n  key_file: k\n").err().unwrap();
        assert!(matches!(e, Problem::MissingCert), "{e}");
        let e = parse("tls_server_config:\n  cert: x\n  cert_file: y\n  key: z\n")
            .err()
            .unwrap();
        assert!(matches!(e, Problem::InlineAndFile { .. }), "{e}");
        let e = parse("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n")
            .err()
            .unwrap();
        match e {
            Problem::ReadFile { key, file, .. } => {
                assert_eq!(key, "cert_file");
                assert_eq!(
                    file,
                    Path::new("/x/nope.crt"),
                    "resolved against the file's dir"
                );
            }
            e => panic!("{e}"),
        }
        let e = parse("tls_server_config:\n  min_version: TLS11\n  cert: x\n")
            .err()
            .unwrap();
        assert!(matches!(e, Problem::TlsVersion { .. }), "{e}");
    }

    #[test]
    fn headers_follow_exporter_toolkit() {
        let c = parse(
            "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n    Strict-Transport-Security: max-age=60\n    X-XSS-Protection: ''\n",
        )
        .unwrap();
        assert_eq!(c.headers().get("x-frame-options").unwrap(), "deny");
        assert_eq!(c.headers().len(), 2);
        let e = parse("http_server_config:\n  headers:\n    X-Frame-Options: allow\n")
            .err()
            .unwrap();
        assert!(matches!(e, Problem::Header { .. }), "{e}");
        let e = parse("http_server_config:\n  headers:\n    Server: me\n")
            .err()
            .unwrap();
        assert!(matches!(e, Problem::Header { .. }), "{e}");
    }

    #[test]
    fn bad_hashes_are_errors() {
        let e = parse("basic_auth_users:\n  alice: secret\n").err().unwrap();
        assert!(
            matches!(&e, Problem::BadHash { user, .. } if user == "alice"),
            "{e}"
        );
    }

    fn b64(s: &str) -> HeaderValue {
        HeaderValue::from_str(&format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(s)
        ))
        .unwrap()
    }

    fn alice() -> WebConfig {
        let hash = bcrypt::hash("pw", 4).unwrap();
        parse(&format!("basic_auth_users:\n  alice: '{hash}'\n")).unwrap()
    }

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[tokio::test]
    async fn basic_auth_checks_and_caches() {
        use Verdict::*;
        let c = alice();
        let check = |h: Option<HeaderValue>| {
            let c = &c;
            async move { c.authorize(h.as_ref(), PEER).await }
        };
        assert_eq!(check(None).await, Denied);
        assert_eq!(check(Some(b64("alice:wrong"))).await, Denied);
        assert_eq!(check(Some(b64("bob:pw"))).await, Denied);
        assert_eq!(
            check(Some(HeaderValue::from_static("Bearer x"))).await,
            Denied
        );
        assert_eq!(check(Some(b64("alice:pw"))).await, Allowed);
        let auth = c.auth.as_ref().unwrap();
        assert_eq!(lock(&auth.verified).len(), 1, "the success is cached");
        assert_eq!(lock(&auth.failed).set.len(), 2, "so are the failures");
        // Served from the caches now: still right, and wrong ones still fail.
        assert_eq!(check(Some(b64("alice:pw"))).await, Allowed);
        assert_eq!(check(Some(b64("alice:wrong"))).await, Denied);
        assert_eq!(check(Some(b64("alice:pw2"))).await, Denied);
        let spaced = format!(
            "basic  {}",
            base64::engine::general_purpose::STANDARD.encode("alice:pw")
        );
        assert_eq!(
            check(Some(HeaderValue::from_str(&spaced).unwrap())).await,
            Allowed
        );
        assert_eq!(lock(&auth.verified).len(), 1);
        assert_eq!(lock(&auth.failed).set.len(), 3);
        assert!(lock(&auth.pending).is_empty(), "no check left pending");
    }

    #[tokio::test]
    async fn pending_checks_are_bounded_per_address_and_in_all() {
        use Verdict::*;
        let c = alice();
        let auth = c.auth.as_ref().unwrap();
        assert_eq!(c.authorize(Some(&b64("alice:pw")), PEER).await, Allowed);
        // A check pending from PEER: another from PEER is refused at once,
        // one from elsewhere is checked.
        let held = auth.admit(PEER).unwrap();
        assert_eq!(c.authorize(Some(&b64("alice:x1")), PEER).await, Throttled);
        let other = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(c.authorize(Some(&b64("alice:x1")), other).await, Denied);
        // The same address as IPv4-mapped IPv6 is the same client.
        let mapped = IpAddr::V6(std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert_eq!(c.authorize(Some(&b64("alice:x2")), mapped).await, Throttled);
        // MAX_PENDING pending: every new check is refused, from anywhere;
        // cached answers still come at once.
        let more: Vec<Ticket> = (1..MAX_PENDING as u8)
            .map(|i| auth.admit(IpAddr::V4([10, 0, 0, i].into())).unwrap())
            .collect();
        assert_eq!(c.authorize(Some(&b64("alice:x3")), other).await, Throttled);
        assert_eq!(c.authorize(Some(&b64("alice:pw")), PEER).await, Allowed);
        assert_eq!(c.authorize(Some(&b64("alice:x1")), PEER).await, Denied);
        drop((held, more));
        assert!(lock(&auth.pending).is_empty());
        assert_eq!(c.authorize(Some(&b64("alice:x3")), PEER).await, Denied);
    }
}

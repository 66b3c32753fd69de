//! `--remote-write.*` and `--otlp.*` flags for a secured receiver: TLS,
//! basic auth, a bearer token, extra headers (see docs/exporter.md). The
//! two sets differ only in their prefix, so one macro makes both.

use shmetrics_push::{parse_header, Auth, ConfigError, HttpSettings, Protocol, Secret};

/// The flags' values, whichever the prefix.
struct Values<'a> {
    ca_file: &'a Option<std::path::PathBuf>,
    cert_file: &'a Option<std::path::PathBuf>,
    key_file: &'a Option<std::path::PathBuf>,
    username: &'a Option<String>,
    password: &'a Option<String>,
    password_file: &'a Option<std::path::PathBuf>,
    bearer_token_file: &'a Option<std::path::PathBuf>,
    headers: &'a [String],
}

impl Values<'_> {
    /// Whether any is given.
    fn any(&self) -> bool {
        self.ca_file.is_some()
            || self.cert_file.is_some()
            || self.key_file.is_some()
            || self.username.is_some()
            || self.password.is_some()
            || self.password_file.is_some()
            || self.bearer_token_file.is_some()
            || !self.headers.is_empty()
    }

    /// `http` with the TLS files, the credentials and the headers, all
    /// checked (files read once now).
    fn apply(&self, protocol: Protocol, http: &mut HttpSettings) -> Result<(), ConfigError> {
        let creds = |reason: &str| ConfigError::Credentials {
            protocol,
            reason: reason.into(),
        };
        http.tls.ca_file = self.ca_file.clone();
        http.tls.cert_file = self.cert_file.clone();
        http.tls.key_file = self.key_file.clone();
        let password = match (self.password, self.password_file) {
            (Some(_), Some(_)) => {
                return Err(creds("give a password or a password file, not both"))
            }
            (Some(p), None) => Some(Secret::Inline(p.clone())),
            (None, Some(f)) => Some(Secret::File(f.clone())),
            (None, None) => None,
        };
        http.auth = match (self.username, password, self.bearer_token_file) {
            (Some(_), _, Some(_)) => {
                return Err(creds("give basic auth or a bearer token, not both"))
            }
            (Some(u), Some(p), None) => Auth::Basic {
                username: u.clone(),
                password: p,
            },
            (Some(u), None, None) => Auth::Basic {
                username: u.clone(),
                password: Secret::Inline(String::new()),
            },
            (None, Some(_), _) => return Err(creds("a password needs a user name")),
            (None, None, Some(t)) => Auth::Bearer(Secret::File(t.clone())),
            (None, None, None) => Auth::None,
        };
        http.headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?;
        http.check(protocol)
    }
}

macro_rules! security_args {
    ($name:ident, $prefix:literal, $protocol:expr, $what:literal) => {
        #[doc = concat!("TLS, authentication and headers for ", $what, ".")]
        #[derive(clap::Args, Debug)]
        pub struct $name {
            /// PEM CA certificates trusted for https:// URLs instead of the
            /// system trust store.
            #[arg(long = concat!($prefix, ".tls.ca-file"), id = concat!($prefix, ".tls.ca-file"), value_name = "FILE")]
            ca_file: Option<std::path::PathBuf>,
            /// A PEM client certificate to present (with the key file).
            #[arg(long = concat!($prefix, ".tls.cert-file"), id = concat!($prefix, ".tls.cert-file"), value_name = "FILE")]
            cert_file: Option<std::path::PathBuf>,
            /// The client certificate's PEM private key.
            #[arg(long = concat!($prefix, ".tls.key-file"), id = concat!($prefix, ".tls.key-file"), value_name = "FILE")]
            key_file: Option<std::path::PathBuf>,
            /// Basic auth: the user name.
            #[arg(long = concat!($prefix, ".basic-auth.username"), id = concat!($prefix, ".basic-auth.username"), value_name = "USER")]
            username: Option<String>,
            /// Basic auth: the password (visible to other local users in
            /// the process list; prefer the password file).
            #[arg(long = concat!($prefix, ".basic-auth.password"), id = concat!($prefix, ".basic-auth.password"), value_name = "PASSWORD")]
            password: Option<String>,
            /// Basic auth: a file holding the password, read again for
            /// every request.
            #[arg(long = concat!($prefix, ".basic-auth.password-file"), id = concat!($prefix, ".basic-auth.password-file"), value_name = "FILE")]
            password_file: Option<std::path::PathBuf>,
            /// A file holding a bearer token (`Authorization: Bearer`),
            /// read again for every request.
            #[arg(long = concat!($prefix, ".bearer-token-file"), id = concat!($prefix, ".bearer-token-file"), value_name = "FILE")]
            bearer_token_file: Option<std::path::PathBuf>,
            /// A header sent with every request, NAME:VALUE (such as
            /// X-Scope-OrgID:tenant-1). Repeatable.
            #[arg(long = concat!($prefix, ".header"), id = concat!($prefix, ".header"), value_name = "NAME:VALUE")]
            headers: Vec<String>,
        }

        impl $name {
            fn values(&self) -> Values<'_> {
                Values {
                    ca_file: &self.ca_file,
                    cert_file: &self.cert_file,
                    key_file: &self.key_file,
                    username: &self.username,
                    password: &self.password,
                    password_file: &self.password_file,
                    bearer_token_file: &self.bearer_token_file,
                    headers: &self.headers,
                }
            }

            /// Whether any of these flags is given.
            pub fn any(&self) -> bool {
                self.values().any()
            }

            /// Sets and checks `http`'s TLS, authentication and headers.
            pub fn apply(&self, http: &mut HttpSettings) -> Result<(), ConfigError> {
                self.values().apply($protocol, http)
            }
        }
    };
}

security_args!(
    RemoteWriteSecurity,
    "remote-write",
    Protocol::RemoteWrite,
    "remote_write"
);
security_args!(OtlpSecurity, "otlp", Protocol::Otlp, "OTLP");

//! Push that reaches a secured receiver: HTTPS with a CA file, basic auth,
//! a bearer token from a file, extra headers; and a clear failure, in the
//! log and in the exporter's own metrics, with a CA that did not sign the
//! receiver's certificate, with the system trust store (which does not
//! hold the test CA), and with wrong credentials.
//!
//! remote_write goes to a real VictoriaMetrics (Debian's
//! `victoria-metrics`) started with `-tls` and `-httpAuth.*`. Debian's
//! VictoriaMetrics (1.79) has no OTLP receiver, so OTLP goes to the test
//! receiver (`otlp_receiver.py`, the official OpenTelemetry definitions)
//! serving HTTPS and checking a bearer token. The certificates are made
//! here (rcgen); curl (with the test CA) reads VictoriaMetrics' API.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rcgen::ExtendedKeyUsagePurpose;
use shmetrics_testkit::pki::{ca, leaf};

use crate::prometheus::write_store;
use crate::util::*;

/// The files of a test PKI: the CA that signed the server's certificate,
/// another CA, and the server's certificate (127.0.0.1, localhost) and
/// key.
pub struct Pki {
    pub ca: PathBuf,
    pub other_ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Pki {
    pub fn write(dir: &Path) -> Pki {
        let issuer = ca("shmetrics push test CA");
        let other = ca("another CA");
        let (cert, key) = leaf(
            &issuer,
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let pki = Pki {
            ca: dir.join("ca.pem"),
            other_ca: dir.join("other-ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        };
        std::fs::write(&pki.ca, issuer.pem()).unwrap();
        std::fs::write(&pki.other_ca, other.pem()).unwrap();
        std::fs::write(&pki.cert, cert).unwrap();
        std::fs::write(&pki.key, key).unwrap();
        pki
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A VictoriaMetrics serving HTTPS only, with basic auth; killed when
/// dropped.
struct SecureVictoria {
    _process: KillOnDrop,
    addr: SocketAddr,
    ca: PathBuf,
    user: &'static str,
    password: &'static str,
}

impl SecureVictoria {
    fn start(dir: &Path, pki: &Pki) -> SecureVictoria {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let log = dir.join("victoria.log");
        let process = spawn_logged(
            Command::new("/usr/bin/victoria-metrics")
                .arg(format!("-httpListenAddr={addr}"))
                .arg(format!(
                    "-storageDataPath={}",
                    dir.join("vm-data").display()
                ))
                .arg("-search.latencyOffset=0s")
                .arg("-search.disableCache")
                .arg("-tls")
                .arg(format!("-tlsCertFile={}", pki.cert.display()))
                .arg(format!("-tlsKeyFile={}", pki.key.display()))
                .arg("-httpAuth.username=pusher")
                .arg("-httpAuth.password=s3cret"),
            &log,
            "the Debian package `victoria-metrics`",
        );
        let vm = SecureVictoria {
            _process: process,
            addr,
            ca: pki.ca.clone(),
            user: "pusher",
            password: "s3cret",
        };
        wait_for(
            "VictoriaMetrics answers over HTTPS",
            Duration::from_secs(120),
            Duration::from_millis(200),
            || match vm.curl("/health") {
                Ok((200, _)) => Ok(()),
                other => Err(format!(
                    "{other:?}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )),
            },
        );
        vm
    }

    fn write_url(&self) -> String {
        format!("https://{}/api/v1/write", self.addr)
    }

    /// GET `path` with curl, trusting the test CA, with the credentials:
    /// (status, body).
    fn curl(&self, path: &str) -> Result<(u16, String), String> {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "10", "--cacert"])
            .arg(&self.ca)
            .args(["-u", &format!("{}:{}", self.user, self.password)])
            .args(["-w", "\n%{http_code}"])
            .arg(format!("https://{}{path}", self.addr))
            .output()
            .map_err(|e| format!("cannot run curl: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "curl: {}{text}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        Ok((code.trim().parse().unwrap_or(0), body.to_string()))
    }

    /// The value of a query that returns exactly one sample.
    fn value(&self, q: &str) -> Result<f64, String> {
        self.curl("/internal/force_flush")?;
        let (code, body) = self.curl(&format!("/api/v1/query?query={}", url_encode(q)))?;
        if code != 200 {
            return Err(format!("{code} {body}"));
        }
        let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let r = v["data"]["result"].as_array().cloned().unwrap_or_default();
        if r.len() != 1 {
            return Err(format!("{} series: {body}", r.len()));
        }
        r[0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| body.clone())
    }
}

/// Waits until `serve`'s own metric `series` is at least 1, then checks
/// that its log says `says`.
fn wait_failure(serve: &Serve, series: &str, says: &[&str]) {
    wait_for(
        &format!("{series} >= 1"),
        ARRIVAL,
        Duration::from_millis(200),
        || {
            let body = serve.exporter_metrics();
            match find_metric(&body, series) {
                Some(v) if v >= 1.0 => Ok(()),
                v => Err(format!("{v:?}\n{}", serve.stderr())),
            }
        },
    );
    let log = serve.stderr();
    for s in says {
        assert!(log.contains(s), "the log does not say {s:?}:\n{log}");
    }
}

#[test]
fn remote_write_over_https_with_basic_auth_to_victoria_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let vm = SecureVictoria::start(dir.path(), &pki);
    let store_path = dir.path().join("store");
    let _store = write_store(&store_path);
    let password_file = dir.path().join("password");
    std::fs::write(&password_file, "s3cret\n").unwrap();
    let wrong_password = dir.path().join("wrong-password");
    std::fs::write(&wrong_password, "guess").unwrap();
    let url = vm.write_url();
    let serve = |who: &str, extra: &[&str]| {
        let mut args = vec![
            "--store",
            s(&store_path),
            "--remote-write.url",
            &url,
            "--remote-write.interval",
            "0.5",
        ];
        let label = format!("who={who}");
        args.extend(["--remote-write.external-label", &label]);
        args.extend(extra);
        Serve::start(&args)
    };
    let started = Instant::now();
    let good = serve(
        "good",
        &[
            "--remote-write.tls.ca-file",
            s(&pki.ca),
            "--remote-write.basic-auth.username",
            "pusher",
            "--remote-write.basic-auth.password-file",
            s(&password_file),
        ],
    );
    let wrong_ca = serve(
        "wrong_ca",
        &[
            "--remote-write.tls.ca-file",
            s(&pki.other_ca),
            "--remote-write.basic-auth.username",
            "pusher",
            "--remote-write.basic-auth.password",
            "s3cret",
        ],
    );
    let system_store = serve(
        "system_store",
        &[
            "--remote-write.basic-auth.username",
            "pusher",
            "--remote-write.basic-auth.password",
            "s3cret",
        ],
    );
    let wrong_password = serve(
        "wrong_password",
        &[
            "--remote-write.tls.ca-file",
            s(&pki.ca),
            "--remote-write.basic-auth.username",
            "pusher",
            "--remote-write.basic-auth.password-file",
            s(&wrong_password),
        ],
    );

    // The right CA and credentials: the values arrive.
    wait_for(
        "the pushed value in VictoriaMetrics",
        ARRIVAL,
        Duration::from_millis(250),
        || match vm.value(r#"jobs_processed_total{queue="email",who="good"}"#) {
            Ok(7.0) => Ok(()),
            other => Err(format!("{other:?}\n{}", good.stderr())),
        },
    );
    eprintln!("arrived after {:?}", started.elapsed());
    let sent = format!("shmetrics_remote_write_samples_sent_total{{url=\"{url}\"}}");
    assert!(good.metric(&sent) > 0.0);
    for reason in ["tls", "auth"] {
        let f = format!(
            "shmetrics_remote_write_request_failures_total{{url=\"{url}\",reason=\"{reason}\"}}"
        );
        assert_eq!(good.metric(&f), 0.0, "{reason}");
    }

    // A CA that did not sign the receiver's certificate, and the system
    // trust store (which does not hold the test CA): a TLS failure,
    // retried, said once in the log and counted.
    let tls =
        format!("shmetrics_remote_write_request_failures_total{{url=\"{url}\",reason=\"tls\"}}");
    for serve in [&wrong_ca, &system_store] {
        wait_failure(
            serve,
            &tls,
            &["TLS with the receiver failed", "UnknownIssuer", "retrying"],
        );
    }
    // Wrong credentials: VictoriaMetrics answers 401; the batch is
    // dropped and counted.
    let auth =
        format!("shmetrics_remote_write_request_failures_total{{url=\"{url}\",reason=\"auth\"}}");
    wait_failure(
        &wrong_password,
        &auth,
        &["refused the credentials (401 Unauthorized)", "dropped"],
    );
    let failed = format!("shmetrics_remote_write_samples_failed_total{{url=\"{url}\"}}");
    assert!(wrong_password.metric(&failed) > 0.0);
    // Nothing from them arrived.
    for who in ["wrong_ca", "system_store", "wrong_password"] {
        let q = format!("count({{who=\"{who}\"}}) or vector(0)");
        assert_eq!(vm.value(&q), Ok(0.0), "{who}");
    }
}

/// Debian's `vmauth` (VictoriaMetrics' authenticating proxy, 1.79)
/// serving HTTPS, which lets a bearer token through to a VictoriaMetrics
/// behind it; killed when dropped.
struct VmAuth {
    _process: KillOnDrop,
    addr: SocketAddr,
}

impl VmAuth {
    /// vmauth on a free port with the test PKI's certificate, letting
    /// `Authorization: Bearer <token>` through to `backend`.
    fn start(dir: &Path, pki: &Pki, token: &str, backend: &str) -> VmAuth {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let config = dir.join("vmauth.yml");
        std::fs::write(
            &config,
            format!("users:\n- bearer_token: \"{token}\"\n  url_prefix: \"{backend}\"\n"),
        )
        .unwrap();
        let log = dir.join("vmauth.log");
        let process = spawn_logged(
            Command::new("/usr/bin/vmauth")
                .arg(format!("-auth.config={}", config.display()))
                .arg(format!("-httpListenAddr={addr}"))
                .arg("-tls")
                .arg(format!("-tlsCertFile={}", pki.cert.display()))
                .arg(format!("-tlsKeyFile={}", pki.key.display())),
            &log,
            "the Debian package `victoria-metrics` (it has vmauth)",
        );
        wait_for(
            "vmauth answers over HTTPS",
            Duration::from_secs(60),
            Duration::from_millis(200),
            || {
                let out = Command::new("curl")
                    .args(["-sS", "--max-time", "5", "--cacert"])
                    .arg(&pki.ca)
                    .arg(format!("https://{addr}/health"))
                    .output()
                    .map_err(|e| format!("cannot run curl: {e}"))?;
                match String::from_utf8_lossy(&out.stdout).trim() {
                    "OK" => Ok(()),
                    other => Err(format!(
                        "{other} {}\n{}",
                        String::from_utf8_lossy(&out.stderr),
                        std::fs::read_to_string(&log).unwrap_or_default()
                    )),
                }
            },
        );
        VmAuth {
            _process: process,
            addr,
        }
    }

    fn write_url(&self) -> String {
        format!("https://{}/api/v1/write", self.addr)
    }
}

/// remote_write with a bearer token from a file, over HTTPS, through a
/// real authenticating proxy (vmauth) into VictoriaMetrics. vmauth 1.79
/// answers an unknown token with 400 and quotes the `Authorization`
/// header it refused (from 1.91 on it answers 401 without it): the batch
/// is dropped and counted as `reason="status"`, and the token is hidden
/// from the log. A request without credentials gets 401, counted as
/// `reason="auth"`.
#[test]
fn remote_write_with_a_bearer_token_through_vmauth() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let vm = Receiver::start(Peer::Victoria, &dir.path().join("vm"));
    let vmauth = VmAuth::start(
        dir.path(),
        &pki,
        "tok-rw-5c1e",
        &format!("http://{}", vm.addr),
    );
    let store_path = dir.path().join("store");
    let _store = write_store(&store_path);
    let token = dir.path().join("token");
    std::fs::write(&token, "tok-rw-5c1e\n").unwrap();
    let wrong_token = dir.path().join("wrong-token");
    std::fs::write(&wrong_token, "tok-guess-77a0\n").unwrap();
    let url = vmauth.write_url();
    let serve = |who: &str, extra: &[&str]| {
        let label = format!("who={who}");
        let mut args = vec![
            "--store",
            s(&store_path),
            "--remote-write.url",
            &url,
            "--remote-write.interval",
            "0.5",
            "--remote-write.external-label",
            &label,
            "--remote-write.tls.ca-file",
            s(&pki.ca),
        ];
        args.extend(extra);
        Serve::start(&args)
    };
    let good = serve("good", &["--remote-write.bearer-token-file", s(&token)]);
    let wrong = serve(
        "wrong",
        &["--remote-write.bearer-token-file", s(&wrong_token)],
    );
    let none = serve("none", &[]);
    let started = Instant::now();

    // The right token: the values arrive in VictoriaMetrics.
    wait_for(
        "the pushed value in VictoriaMetrics, through vmauth",
        ARRIVAL,
        Duration::from_millis(250),
        || match vm.value(r#"jobs_processed_total{queue="email",who="good"}"#) {
            Ok(7.0) => Ok(()),
            other => Err(format!("{other:?}\n{}", good.stderr())),
        },
    );
    eprintln!("arrived through vmauth after {:?}", started.elapsed());
    let sent = format!("shmetrics_remote_write_samples_sent_total{{url=\"{url}\"}}");
    assert!(good.metric(&sent) > 0.0);
    let failures = |reason: &str| {
        format!(
            "shmetrics_remote_write_request_failures_total{{url=\"{url}\",reason=\"{reason}\"}}"
        )
    };
    for reason in ["tls", "auth", "status"] {
        assert_eq!(good.metric(&failures(reason)), 0.0, "{reason}");
    }

    // A wrong token: vmauth 1.79 answers 400, quoting the header; the log
    // says so with the token hidden.
    wait_failure(
        &wrong,
        &failures("status"),
        &[
            "the receiver answered 400 Bad Request",
            r#"cannot find the provided auth token \"Bearer <hidden>\""#,
            "dropped",
        ],
    );
    let log = wrong.stderr();
    assert!(
        !log.contains("tok-guess"),
        "the log shows the token:\n{log}"
    );
    let failed = format!("shmetrics_remote_write_samples_failed_total{{url=\"{url}\"}}");
    assert!(wrong.metric(&failed) > 0.0);
    // No credentials: 401, an authentication failure.
    wait_failure(
        &none,
        &failures("auth"),
        &[
            "refused the credentials (401 Unauthorized)",
            "missing `Authorization` request header",
        ],
    );
    eprintln!("both failures counted after {:?}", started.elapsed());
    // Nothing from them arrived.
    for who in ["wrong", "none"] {
        let q = format!("count({{who=\"{who}\"}}) or vector(0)");
        assert_eq!(vm.value(&q), Ok(0.0), "{who}");
    }
}

#[test]
fn otlp_over_https_with_a_bearer_token_file_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let receiver = crate::otlp::Receiver::start_with(
        &dir.path().join("otlp"),
        &[
            ("OTLP_TLS_CERT", pki.cert.as_os_str()),
            ("OTLP_TLS_KEY", pki.key.as_os_str()),
            ("OTLP_AUTHORIZATION", OsStr::new("Bearer tok-123")),
        ],
    );
    let url = receiver.url();
    assert!(url.starts_with("https://"), "{url}");
    let store_path = dir.path().join("store");
    let _store = write_store(&store_path);
    let token = dir.path().join("token");
    std::fs::write(&token, "tok-123\n").unwrap();
    let wrong_token = dir.path().join("wrong-token");
    std::fs::write(&wrong_token, "tok-000\n").unwrap();
    let serve = |extra: &[&str]| {
        let mut args = vec![
            "--store",
            s(&store_path),
            "--otlp.url",
            &url,
            "--otlp.interval",
            "0.5",
        ];
        args.extend(extra);
        Serve::start(&args)
    };
    let good = serve(&[
        "--otlp.tls.ca-file",
        s(&pki.ca),
        "--otlp.bearer-token-file",
        s(&token),
        "--otlp.header",
        "X-Scope-OrgID: tenant-1",
    ]);
    let bad_token = serve(&[
        "--otlp.tls.ca-file",
        s(&pki.ca),
        "--otlp.bearer-token-file",
        s(&wrong_token),
    ]);
    let bad_ca = serve(&[
        "--otlp.tls.ca-file",
        s(&pki.other_ca),
        "--otlp.bearer-token-file",
        s(&token),
    ]);

    // The right CA and token: requests arrive, with the extra header.
    let got = wait_got(&receiver, &good);
    assert_eq!(got["headers"]["x-scope-orgid"], "tenant-1", "{got}");
    assert!(got["request"]["resource_metrics"].is_array(), "{got}");

    let f = |reason: &str| {
        format!("shmetrics_otlp_request_failures_total{{url=\"{url}\",reason=\"{reason}\"}}")
    };
    wait_failure(
        &bad_token,
        &f("auth"),
        &["refused the credentials (401 Unauthorized)"],
    );
    wait_failure(
        &bad_ca,
        &f("tls"),
        &["TLS with the receiver failed", "UnknownIssuer"],
    );
    assert_eq!(good.metric(&f("auth")), 0.0);
    assert_eq!(good.metric(&f("tls")), 0.0);
}

/// The first request the receiver recorded (only authorized ones are).
fn wait_got(receiver: &crate::otlp::Receiver, serve: &Serve) -> serde_json::Value {
    wait_for(
        "an OTLP request over HTTPS",
        ARRIVAL,
        Duration::from_millis(200),
        || match receiver.received().into_iter().next() {
            Some(r) => Ok(r),
            None => Err(serve.stderr()),
        },
    )
}

/// Flags that cannot be used are refused before serving, naming what is
/// wrong (and never a secret).
#[test]
fn unusable_security_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--remote-write.tls.ca-file", s(&missing)],
            "cannot read it",
        ),
        (
            &["--remote-write.tls.ca-file", s(&not_pem)],
            "no PEM certificate",
        ),
        (
            &["--remote-write.bearer-token-file", s(&missing)],
            "cannot read",
        ),
        (
            &[
                "--remote-write.basic-auth.username",
                "u",
                "--remote-write.bearer-token-file",
                s(&not_pem),
            ],
            "not both",
        ),
        (
            &["--remote-write.header", "Authorization: Bearer hush"],
            "cannot be replaced",
        ),
        (&["--remote-write.tls.cert-file", s(&not_pem)], "both"),
    ];
    for (extra, says) in cases {
        let out = Command::new(shmetrics_bin())
            .args(["serve", "--store", s(&dir.path().join("st"))])
            .args(["--remote-write.url", "https://127.0.0.1:1/api/v1/write"])
            .args(*extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!err.contains("hush"), "{err}");
    }
    // Without a URL they are a mistake too.
    let out = Command::new(shmetrics_bin())
        .args(["serve", "--store", "/nonexistent"])
        .args(["--otlp.bearer-token-file", s(&not_pem)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--otlp.url"));
}

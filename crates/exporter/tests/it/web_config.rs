//! `--web.config.file`: TLS, client certificates, basic auth and headers,
//! against real peers: a rustls client, a real Prometheus scraping over
//! HTTPS with basic auth, and the `shmetrics` binary. The certificates are
//! made here (rcgen); the main configuration is the example in
//! docs/exporter.md, read from the page, so the two cannot drift apart.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rcgen::{CertifiedIssuer, ExtendedKeyUsagePurpose, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use shmetrics_core::{FamilyDesc, Kind, Store};
use shmetrics_exporter::WebConfig;
use shmetrics_testkit::pki::{ca, leaf};

use crate::prometheus::Prometheus;
use crate::util::*;

/// The example's user and password (the hash in the doc is of this).
const USER: &str = "prometheus";
const PASSWORD: &str = "scrape-me";

// ----- the doc's snippets ----------------------------------------------------------

/// The fenced block after `<!-- snippet: NAME -->` in docs/exporter.md.
fn doc_snippet(name: &str) -> String {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/exporter.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    let marker = format!("<!-- snippet: {name} -->");
    let after = &text[text
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker} in {}", doc.display()))..];
    let start = after
        .find("```yaml\n")
        .expect("a ```yaml block after the marker")
        + 8;
    let len = after[start..].find("```").expect("the block's end");
    after[start..start + len].to_string()
}

// ----- certificates ------------------------------------------------------------------

/// A CA with a server certificate (127.0.0.1, localhost) and a client
/// certificate, written as PEM files into a directory.
struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    /// Writes ca.crt, server.crt, server.key, client.crt and client.key
    /// into `dir`.
    fn write(dir: &Path) -> Pki {
        let ca = ca("shmetrics test CA");
        std::fs::write(dir.join("ca.crt"), ca.pem()).unwrap();
        let (c, k) = leaf(
            &ca,
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        std::fs::write(dir.join("server.crt"), c).unwrap();
        std::fs::write(dir.join("server.key"), k).unwrap();
        let (c, k) = leaf(&ca, &["scraper"], ExtendedKeyUsagePurpose::ClientAuth);
        std::fs::write(dir.join("client.crt"), c).unwrap();
        std::fs::write(dir.join("client.key"), k).unwrap();
        Pki { ca }
    }
}

// ----- a rustls client -----------------------------------------------------------------

/// A client identity: certificate chain and key, PEM.
struct Identity {
    cert: String,
    key: String,
}

impl Identity {
    fn from_files(dir: &Path, cert: &str, key: &str) -> Identity {
        Identity {
            cert: std::fs::read_to_string(dir.join(cert)).unwrap(),
            key: std::fs::read_to_string(dir.join(key)).unwrap(),
        }
    }
}

/// What a TLS client may ask for.
#[derive(Default)]
struct ClientOpts<'a> {
    identity: Option<&'a Identity>,
    /// Offer only this version (12 or 13).
    only_version: Option<u8>,
}

fn client_config(ca_pem: &str, opts: &ClientOpts) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = match opts.only_version {
        Some(12) => vec![&rustls::version::TLS12],
        Some(13) => vec![&rustls::version::TLS13],
        _ => vec![&rustls::version::TLS12, &rustls::version::TLS13],
    };
    let b = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&versions)
    .unwrap()
    .with_root_certificates(roots);
    Arc::new(match opts.identity {
        None => b.with_no_client_auth(),
        Some(id) => b
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(id.cert.as_bytes())
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_slice(id.key.as_bytes()).unwrap(),
            )
            .unwrap(),
    })
}

/// One request over TLS (`Connection: close`); returns the response and
/// the negotiated TLS version, or the I/O (or TLS) error.
fn tls_request(
    addr: SocketAddr,
    ca_pem: &str,
    opts: &ClientOpts,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<(Response, rustls::ProtocolVersion)> {
    let config = client_config(ca_pem, opts);
    let conn =
        rustls::ClientConnection::new(config, ServerName::try_from("127.0.0.1").unwrap()).unwrap();
    let sock = try_connect(addr)?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(&request_head("GET", path, headers, true))?;
    tls.flush()?;
    let version = tls.conn.protocol_version();
    let mut r = BufReader::new(tls);
    let resp = read_response(&mut r, false)?;
    Ok((resp, version.expect("a finished handshake")))
}

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

// ----- fixtures ------------------------------------------------------------------------

/// A store with `scrapes_seen_total{kind="tls"} 42`.
fn store_with_a_value(dir: &Path) -> (PathBuf, Store) {
    let path = dir.join("store");
    let store = store_with_counter(
        &path,
        &FamilyDesc::new("scrapes_seen_total", Kind::Counter)
            .help("A value to find.")
            .labels(&["kind"]),
        &["tls"],
        42.0,
    );
    (path, store)
}

fn server_with(
    store: &Path,
    web_config: &Path,
    tweak: impl FnOnce(&mut shmetrics_exporter::Config),
) -> TestServer {
    let web = WebConfig::load(web_config).unwrap_or_else(|e| panic!("{e}"));
    TestServer::start(store, |c| {
        c.exporter_metrics = true;
        c.web = Some(Arc::new(web));
        tweak(c);
    })
}

// ----- tests ---------------------------------------------------------------------------

/// The doc's example: HTTPS, basic auth on every path, the header.
#[test]
fn doc_example_serves_https_with_basic_auth() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let ca_pem = pki.ca.pem();
    let config = dir.path().join("web-config.yml");
    std::fs::write(&config, doc_snippet("web-config.yml")).unwrap();
    let (path, _store) = store_with_a_value(dir.path());
    let server = server_with(&path, &config, |_| {});
    let opts = ClientOpts::default();
    let auth = basic(USER, PASSWORD);

    // Right password: the metrics, over TLS, with the configured header.
    let (r, _) = tls_request(
        server.addr,
        &ca_pem,
        &opts,
        "/metrics",
        &[("Authorization", &auth)],
    )
    .expect("an HTTPS scrape");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains("\nscrapes_seen_total{kind=\"tls\"} 42\n"),
        "{}",
        r.text()
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    // The second one is served from the verification cache; still right.
    let t = Instant::now();
    let (r, _) = tls_request(
        server.addr,
        &ca_pem,
        &opts,
        "/metrics",
        &[("Authorization", &auth)],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    eprintln!("a cached-auth scrape took {:?}", t.elapsed());

    // No, wrong or unknown credentials: 401 with a Basic challenge, on
    // every path (/healthz too, as exporter-toolkit does).
    for (path, creds) in [
        ("/metrics", None),
        ("/metrics", Some(basic(USER, "scrape-me!"))),
        ("/metrics", Some(basic("nobody", PASSWORD))),
        ("/metrics", Some("Bearer scrape-me".to_string())),
        ("/metrics", Some("Basic not-base64!".to_string())),
        ("/healthz", None),
        ("/", None),
        ("/nowhere", None),
    ] {
        let headers: Vec<(&str, &str)> = creds
            .as_deref()
            .map(|c| vec![("Authorization", c)])
            .unwrap_or_default();
        let (r, _) = tls_request(server.addr, &ca_pem, &opts, path, &headers).unwrap();
        assert_eq!(r.status, 401, "{path} with {creds:?}: {}", r.text());
        assert_eq!(r.header("www-authenticate"), Some("Basic"), "{path}");
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert!(!r.text().contains("scrapes_seen_total"), "{path}");
    }
    for path in ["/healthz", "/"] {
        let (r, _) = tls_request(
            server.addr,
            &ca_pem,
            &opts,
            path,
            &[("Authorization", &auth)],
        )
        .unwrap();
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }

    // Plain HTTP on the HTTPS port gets no HTTP answer, and the failed
    // handshake is counted.
    let before = server.renderer.stats.tls_handshake_failures.load(Relaxed);
    if let Ok(r) = request(server.addr, "GET", "/metrics", &[]) {
        panic!("plain HTTP got an HTTP response: {}", r.status);
    }
    wait_for(
        "the failed handshake to be counted",
        IO_TIMEOUT,
        Duration::from_millis(20),
        || (server.renderer.stats.tls_handshake_failures.load(Relaxed) > before).then_some(()),
    );
    server.stop();
}

/// `RequireAndVerifyClientCert`: a client certificate from the CA gets in;
/// none, or one from another CA, does not.
#[test]
fn client_certificate_required() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let ca_pem = pki.ca.pem();
    // A client certificate from a CA the server does not trust.
    let rogue = ca("rogue CA");
    let (c, k) = leaf(&rogue, &["intruder"], ExtendedKeyUsagePurpose::ClientAuth);
    let rogue_id = Identity { cert: c, key: k };
    let good_id = Identity::from_files(dir.path(), "client.crt", "client.key");

    let config = dir.path().join("mtls.yml");
    std::fs::write(
        &config,
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  \
         client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n",
    )
    .unwrap();
    let (path, _store) = store_with_a_value(dir.path());
    let server = server_with(&path, &config, |_| {});

    for version in [12, 13] {
        let (r, v) = tls_request(
            server.addr,
            &ca_pem,
            &ClientOpts {
                identity: Some(&good_id),
                only_version: Some(version),
            },
            "/metrics",
            &[],
        )
        .unwrap_or_else(|e| panic!("TLS1.{} with a good client certificate: {e}", version - 10));
        assert_eq!(r.status, 200);
        assert!(r.text().contains("scrapes_seen_total{kind=\"tls\"} 42"));
        let want = if version == 12 {
            rustls::ProtocolVersion::TLSv1_2
        } else {
            rustls::ProtocolVersion::TLSv1_3
        };
        assert_eq!(v, want);
    }

    let before = server.renderer.stats.tls_handshake_failures.load(Relaxed);
    for (what, id) in [
        ("no certificate", None),
        ("a rogue CA's certificate", Some(&rogue_id)),
    ] {
        for version in [12, 13] {
            let got = tls_request(
                server.addr,
                &ca_pem,
                &ClientOpts {
                    identity: id,
                    only_version: Some(version),
                },
                "/metrics",
                &[],
            );
            // With TLS 1.3 the client may finish its side of the handshake
            // before the server refuses; either way it gets no response.
            assert!(
                got.is_err(),
                "a client with {what} (TLS1.{}) was served: {:?}",
                version - 10,
                got.map(|(r, _)| r.status)
            );
        }
    }
    wait_for(
        "the refused handshakes to be counted",
        IO_TIMEOUT,
        Duration::from_millis(20),
        || (server.renderer.stats.tls_handshake_failures.load(Relaxed) >= before + 4).then_some(()),
    );
    server.stop();
}

/// `min_version` / `max_version` limit what is negotiated.
#[test]
fn tls_versions_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let ca_pem = pki.ca.pem();
    let (path, _store) = store_with_a_value(dir.path());
    for (min, max, ok, refused) in [("TLS13", "TLS13", 13, 12), ("TLS12", "TLS12", 12, 13)] {
        let config = dir.path().join(format!("v-{min}-{max}.yml"));
        std::fs::write(
            &config,
            format!(
                "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  \
                 min_version: {min}\n  max_version: {max}\n"
            ),
        )
        .unwrap();
        let server = server_with(&path, &config, |_| {});
        let only = |v| ClientOpts {
            identity: None,
            only_version: Some(v),
        };
        let (r, _) = tls_request(server.addr, &ca_pem, &only(ok), "/healthz", &[]).unwrap();
        assert_eq!(r.status, 200);
        assert!(
            tls_request(server.addr, &ca_pem, &only(refused), "/healthz", &[]).is_err(),
            "{min}..{max} accepted TLS1.{}",
            refused - 10
        );
        server.stop();
    }
}

/// A client that connects and never handshakes holds a place only until
/// the header timeout, and the connection limit covers TLS connections.
#[test]
fn tls_handshake_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let ca_pem = pki.ca.pem();
    let config = dir.path().join("web.yml");
    std::fs::write(
        &config,
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n",
    )
    .unwrap();
    let (path, _store) = store_with_a_value(dir.path());
    let server = server_with(&path, &config, |c| {
        c.max_connections = 2;
        c.header_timeout = Duration::from_secs(1);
        c.request_timeout = Duration::from_secs(30);
    });
    // Two silent clients take both places (one after the other: the
    // pause lets the server find each waiting in its handshake).
    let pause = || std::thread::sleep(Duration::from_millis(100));
    let mut idle: Vec<TcpStream> = (0..2).map(|_| (connect(server.addr), pause()).0).collect();
    // A third connection takes the place of the one that waited longest
    // in its handshake: the limit covers them.
    let mut third = connect(server.addr);
    assert!(wait_closed(&mut idle[0], Duration::from_secs(5)).is_some());
    wait_for(
        "the oldest connection to be closed to make room",
        IO_TIMEOUT,
        Duration::from_millis(10),
        || (server.renderer.stats.evicted_connections.load(Relaxed) == 1).then_some(()),
    );
    assert!(wait_closed(&mut third, Duration::from_secs(5)).is_some());
    // The header timeout (1 s) ends their handshakes, well before the
    // request timeout (30 s).
    let start = Instant::now();
    for s in &mut idle {
        assert!(
            wait_closed(s, Duration::from_secs(10)).is_some(),
            "a client that never handshook was not cut off"
        );
    }
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The client may see the close a moment before the server counts it.
    wait_for(
        "both failed handshakes to be counted",
        IO_TIMEOUT,
        Duration::from_millis(10),
        || (server.renderer.stats.tls_handshake_failures.load(Relaxed) >= 2).then_some(()),
    );
    // The places are free again.
    let (r, _) = tls_request(
        server.addr,
        &ca_pem,
        &ClientOpts::default(),
        "/healthz",
        &[],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    server.stop();
}

/// A real Prometheus scrapes the doc's example over HTTPS with the doc's
/// scrape configuration (tls_config.ca_file and basic_auth): the target is
/// up. A second job, the same but with a wrong password, is down with the
/// exporter's 401 as its last error.
#[test]
fn prometheus_scrapes_over_https_with_basic_auth() {
    let dir = tempfile::tempdir().unwrap();
    let _pki = Pki::write(dir.path());
    let config = dir.path().join("web-config.yml");
    std::fs::write(&config, doc_snippet("web-config.yml")).unwrap();
    let (path, _store) = store_with_a_value(dir.path());
    let written_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let server = server_with(&path, &config, |_| {});

    let scrape = doc_snippet("prometheus.yml");
    assert!(scrape.contains("127.0.0.1:9816"), "{scrape}");
    let scrape = scrape.replace("127.0.0.1:9816", &server.addr.to_string());
    let wrong = scrape
        .replace("scrape_configs:\n", "")
        // A wrong password costs the exporter a bcrypt verification (a
        // second or more in a debug build on a busy machine), which 1 s
        // would not allow.
        .replace(
            "job_name: shmetrics",
            "job_name: shmetrics_wrong_password\n    scrape_interval: 10s\n    scrape_timeout: 10s",
        )
        .replace("password: scrape-me", "password: not-the-password");
    assert!(wrong.contains("not-the-password"), "{wrong}");
    let scrape = format!("{scrape}{wrong}");
    // prometheus.yml goes into the same directory, so `ca_file: ca.crt`
    // resolves to the CA written there.
    let prom = Prometheus::start_scraping(dir.path(), &scrape);
    wait_for(
        "Prometheus to scrape the exporter over HTTPS",
        Duration::from_secs(90),
        Duration::from_millis(250),
        || {
            let r = prom.query("timestamp(up{job=\"shmetrics\"} == 1)");
            let t = r
                .first()
                .and_then(|r| r["value"][1].as_str()?.parse::<f64>().ok());
            match t {
                Some(t) if t > written_at => Ok(()),
                _ => Err(get(prom.addr, "/api/v1/targets", &[]).text()),
            }
        },
    );
    let target = |job: &str| {
        let r = get(prom.addr, "/api/v1/targets", &[]);
        let targets: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
        let found = targets["data"]["activeTargets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["labels"]["job"] == job)
            .cloned();
        found.unwrap_or_else(|| panic!("no target for job {job}: {targets}"))
    };
    let active = target("shmetrics");
    assert_eq!(active["health"], "up", "{active}\n{}", prom.log_text());
    assert!(
        active["scrapeUrl"]
            .as_str()
            .unwrap()
            .starts_with("https://"),
        "{active}"
    );
    // The wrong password: down, and Prometheus says why.
    let wrong = wait_for(
        "the job with the wrong password to be scraped",
        Duration::from_secs(90),
        Duration::from_millis(250),
        || {
            let t = target("shmetrics_wrong_password");
            match t["lastError"].as_str() {
                Some(e) if e.contains("401") => Ok(t),
                _ => Err(t.to_string()),
            }
        },
    );
    assert_eq!(wrong["health"], "down", "{wrong}");
    assert_eq!(prom.value("up{job=\"shmetrics_wrong_password\"}"), 0.0);
    assert_eq!(
        prom.value("scrapes_seen_total{job=\"shmetrics\",kind=\"tls\"}"),
        42.0
    );
    assert_eq!(
        prom.value("shmetrics_store_attached{job=\"shmetrics\"}"),
        1.0
    );
    drop(prom);
    server.stop();
}

/// Starts `shmetrics serve --web.config.file FILE` and returns its exit
/// status and stderr (it is killed if it does not exit within the bound).
fn serve_with_config(store: &Path, config: &Path) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(shmetrics_bin())
        .arg("serve")
        .arg("--store")
        .arg(store)
        .args(["--listen", "127.0.0.1:0", "--web.config.file"])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let status = wait_exit(&mut child, Duration::from_secs(30), "shmetrics serve");
    (status, reader.join().unwrap())
}

/// Bad files stop `shmetrics serve` with a message naming the file and the
/// problem; a good one serves HTTPS.
#[test]
fn serve_reports_bad_web_configs() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let (path, _store) = store_with_a_value(dir.path());
    std::fs::write(
        dir.path().join("other.key"),
        KeyPair::generate().unwrap().serialize_pem(),
    )
    .unwrap();
    let good_tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
    let cases: [(&str, String, &[&str]); 8] = [
        (
            "unknown-key.yml",
            format!("{good_tls}  client_auth: RequireAndVerifyClientCert\n"),
            &["unknown field `client_auth`", "line 4"],
        ),
        (
            "unknown-top.yml",
            "basic_auth_user:\n  a: b\n".to_string(),
            &["unknown field `basic_auth_user`"],
        ),
        (
            "missing-cert.yml",
            "tls_server_config:\n  cert_file: absent.crt\n  key_file: server.key\n".to_string(),
            &[
                "tls_server_config.cert_file: cannot read",
                "absent.crt",
                "No such file",
            ],
        ),
        (
            "bad-hash.yml",
            "basic_auth_users:\n  alice: plain-text-password\n".to_string(),
            &["basic_auth_users.alice: not a bcrypt hash", "htpasswd"],
        ),
        (
            "key-mismatch.yml",
            "tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n".to_string(),
            &["certificate and key do not go together"],
        ),
        (
            "no-key.yml",
            "tls_server_config:\n  cert_file: server.crt\n".to_string(),
            &["missing one of key_file or key"],
        ),
        (
            "ca-without-auth.yml",
            format!("{good_tls}  client_ca_file: ca.crt\n"),
            &["client_auth_type does not ask for client certificates"],
        ),
        (
            "not-yaml.yml",
            "tls_server_config: [\n".to_string(),
            &["line"],
        ),
    ];
    for (name, text, wants) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let (status, stderr) = serve_with_config(&path, &file);
        assert!(!status.success(), "{name}: serve started anyway:\n{stderr}");
        let want_file = format!("web config file {}:", file.display());
        assert!(
            stderr.contains(&want_file),
            "{name}: the file is not named:\n{stderr}"
        );
        for w in wants {
            assert!(stderr.contains(w), "{name}: no {w:?} in:\n{stderr}");
        }
    }
    let (status, stderr) = serve_with_config(&path, &dir.path().join("absent.yml"));
    assert!(!status.success());
    assert!(
        stderr.contains("absent.yml: cannot read it: No such file"),
        "{stderr}"
    );

    // A good file: the binary serves HTTPS and says so.
    let file = dir.path().join("good.yml");
    std::fs::write(&file, doc_snippet("web-config.yml")).unwrap();
    let serve = Serve::on_store(
        &path,
        &[
            "--web.exporter-metrics",
            "--web.config.file",
            file.to_str().unwrap(),
        ],
    );
    assert!(
        serve
            .stderr()
            .contains(&format!("https://{}/metrics", serve.addr)),
        "{}",
        serve.stderr()
    );
    let (r, _) = tls_request(
        serve.addr,
        &pki.ca.pem(),
        &ClientOpts::default(),
        "/metrics",
        &[("Authorization", &basic(USER, PASSWORD))],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("scrapes_seen_total{kind=\"tls\"} 42"));
}

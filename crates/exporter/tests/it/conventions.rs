//! The exporter follows Prometheus exporters' conventions (node_exporter,
//! exporter-toolkit): `--web.listen-address`, `--web.telemetry-path`,
//! `--web.max-connections` (the old `--listen` and `--max-connections`
//! still work), `--version` on every subcommand, `shmetrics_build_info`,
//! a landing page at `/`, `/-/healthy` and `/-/ready`.

use std::process::Command;

use shmetrics_core::{FamilyDesc, Kind};

use crate::util::*;

#[test]
fn telemetry_path_health_ready_and_build_info() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conv.metrics");
    let serve = Serve::on_store(
        &path,
        &[
            "--web.telemetry-path",
            "/x/metrics",
            "--web.max-connections",
            "64",
            "--web.exporter-metrics",
        ],
    );
    let addr = serve.addr;
    // No store yet: healthy (the process answers), not ready.
    let r = get(addr, "/-/healthy", &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = get(addr, "/-/ready", &[]);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("not ready"), "{}", r.text());

    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("conv_jobs_total", Kind::Counter).help("Jobs."),
        &[],
        3.0,
    );
    let r = get(addr, "/-/ready", &[]);
    assert_eq!(r.status, 200, "{}", r.text());

    // The exposition is at the telemetry path only.
    let r = get(addr, "/metrics", &[]);
    assert_eq!(r.status, 404, "{}", r.text());
    let r = get(addr, "/x/metrics", &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.text();
    assert!(body.contains("\nconv_jobs_total 3\n"), "{body}");
    assert!(
        body.contains("shmetrics_exporter_connections{state=\"capacity\"} 64\n"),
        "{body}"
    );
    let (code, out) = promtool_check(&body);
    assert_eq!(code, 0, "promtool: {out}\n{body}");

    // shmetrics_build_info: the crate version, a revision (from git here:
    // the tests run in a checkout) and the compiler's version.
    let info = body
        .lines()
        .find(|l| l.starts_with("shmetrics_build_info{"))
        .unwrap_or_else(|| panic!("no shmetrics_build_info:\n{body}"));
    assert!(info.ends_with("} 1"), "{info}");
    let version = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(info.contains(&version), "{info}");
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap();
    assert!(
        info.contains(&format!("revision=\"{}", head.trim())),
        "{info} (HEAD is {head})"
    );
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("--version")
        .output()
        .unwrap();
    let rustc = String::from_utf8(rustc.stdout).unwrap();
    let rustc = rustc.split_whitespace().nth(1).unwrap();
    assert!(info.contains(&format!("rustc=\"{rustc}\"")), "{info}");

    // The landing page links the telemetry path and the health pages.
    let r = get(addr, "/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let page = r.text();
    for link in ["/x/metrics", "/-/healthy", "/-/ready", "/healthz"] {
        assert!(
            page.contains(&format!("<a href=\"{link}\">")),
            "no link to {link}:\n{page}"
        );
    }
    assert!(page.contains(&path.display().to_string()), "{page}");
    let r = get(addr, "/nope", &[]);
    assert_eq!(r.status, 404);
    assert!(r.text().contains("/x/metrics"), "{}", r.text());
}

/// The old flag names still work.
#[test]
fn old_flag_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.metrics");
    let mut p = Command::new(shmetrics_bin())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-connections",
            "7",
            "--web.exporter-metrics",
        ])
        .arg("--store")
        .arg(&path)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It serves (the address is in its `serving` line).
    let mut stderr = std::io::BufReader::new(p.stderr.take().unwrap());
    let _kill = KillOnDrop(p);
    let mut line = String::new();
    while !line.contains("serving ") {
        line.clear();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "the exporter exited without serving");
    }
    assert!(line.contains("serving "), "{line}");
    let addr: std::net::SocketAddr = line
        .split("://")
        .nth(1)
        .and_then(|r| r.split_once('/'))
        .map(|(a, _)| a.parse().unwrap())
        .unwrap();
    let body = get(addr, "/metrics", &[]).text();
    assert!(
        body.contains("shmetrics_exporter_connections{state=\"capacity\"} 7\n"),
        "{body}"
    );
}

/// `--version` works on every subcommand, and a telemetry path that
/// would hide another page is refused.
#[test]
fn version_everywhere_and_bad_telemetry_path() {
    for sub in [&[][..], &["serve"], &["dump"], &["inspect"], &["demo"]] {
        let out = Command::new(shmetrics_bin())
            .args(sub)
            .arg("--version")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{sub:?} --version: {out:?}");
        assert!(
            text.contains(env!("CARGO_PKG_VERSION")),
            "{sub:?} --version: {text}"
        );
    }
    for bad in ["/", "/-/ready", "metrics", "/a b"] {
        let out = Command::new(shmetrics_bin())
            .args([
                "serve",
                "--store",
                "/nonexistent",
                "--web.telemetry-path",
                bad,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--web.telemetry-path"), "{bad}: {err}");
    }
}

/// By default the telemetry page holds only the store's families: no
/// `shmetrics_*` series (they are on /exporter-metrics) and, for families
/// registered without `_created`, no `_created` in any format.
#[test]
fn default_page_adds_no_series() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.metrics");
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("plain_jobs_total", Kind::Counter)
            .help("Jobs.")
            .created(false),
        &[],
        3.0,
    );
    let serve = Serve::on_store(&path, &[]);
    for accept in ["text/plain;version=0.0.4", OM, PROMETHEUS_2] {
        let body = get(serve.addr, "/metrics", &[("Accept", accept)]).text();
        assert!(body.contains("plain_jobs_total 3"), "{accept}: {body}");
        assert!(!body.contains("shmetrics_"), "{accept}: {body}");
        assert!(!body.contains("_created"), "{accept}: {body}");
    }
    let own = get(serve.addr, "/exporter-metrics", &[]).text();
    assert!(own.contains("\nshmetrics_store_attached 1\n"), "{own}");
    assert!(
        own.contains("shmetrics_exporter_scrapes_total 3\n"),
        "{own}"
    );
    assert!(!own.contains("plain_jobs"), "{own}");
}

const OM: &str = "application/openmetrics-text;version=1.0.0";
const PROMETHEUS_2: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
const PROMETHEUS_3: &str = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
const NATIVE: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// A page holding a family of a library that served the text format
/// 0.0.4 only (the `text_only` hint, as the PHP, Lua and Ruby bindings
/// register) is served in that format to every scraper that accepts it,
/// whatever it prefers; a scraper that accepts only OpenMetrics gets
/// OpenMetrics.
#[test]
fn text_only_families_hold_the_page_to_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.metrics");
    let hints = shmetrics_core::Hints {
        short_bounds: true,
        created: shmetrics_core::Created::Never,
        text_only: true,
        ..shmetrics_core::Hints::default()
    };
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("apisix_http_status", Kind::Counter)
            .name_as_given()
            .hints(hints),
        &[],
        3.0,
    );
    let serve = Serve::on_store(&path, &[]);
    for accept in [PROMETHEUS_2, PROMETHEUS_3, NATIVE, "*/*"] {
        let r = get(serve.addr, "/metrics", &[("Accept", accept)]);
        let ct = r.header("content-type").unwrap().to_string();
        assert!(
            ct.starts_with("text/plain; version=0.0.4"),
            "{accept}: {ct}"
        );
        let body = r.text();
        assert!(
            body.contains("\napisix_http_status 3\n"),
            "{accept}: {body}"
        );
    }
    let r = get(serve.addr, "/metrics", &[("Accept", OM)]);
    let ct = r.header("content-type").unwrap().to_string();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let body = r.text();
    assert!(body.contains("\napisix_http_status_total 3\n"), "{body}");
    assert!(!body.contains("_created"), "{body}");
}

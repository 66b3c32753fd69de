//! The exporter starts before the store exists (a sidecar's start-up order
//! is not guaranteed), and a file that is not a store is reported, not
//! fatal. It attaches, read-only, once a valid store is there.

use std::path::Path;
use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Store};

use crate::util::*;

/// Creates a store at `path` (through a temporary name and a rename, as a
/// replaced file would appear) holding `late_jobs_total 5`.
fn create_store(path: &Path) -> Store {
    let tmp = path.with_extension("new");
    let store = store_with_counter(
        &tmp,
        &FamilyDesc::new("late_jobs_total", Kind::Counter).help("Jobs."),
        &[],
        5.0,
    );
    std::fs::rename(&tmp, path).unwrap();
    store
}

/// What an unattached exporter serves on /metrics: its own metrics only,
/// valid for promtool (text) and prometheus_client (OpenMetrics), with
/// `shmetrics_store_attached 0`.
fn assert_detached_metrics(addr: std::net::SocketAddr, scratch: &Path) {
    for accept in [ACCEPT_PROM2, "text/plain"] {
        let r = get(addr, "/metrics", &[("Accept", accept)]);
        assert_eq!(r.status, 200);
        let body = r.text();
        assert!(body.contains("\nshmetrics_store_attached 0\n"), "{body}");
        assert!(body.contains("shmetrics_exporter_scrapes_total"), "{body}");
        assert!(!body.contains("shmetrics_store_series"), "{body}");
        assert!(!body.contains("late_jobs_total"), "{body}");
        if accept == "text/plain" {
            let (code, out) = promtool_check(&body);
            assert_eq!(code, 0, "promtool: {out}\n{body}");
        } else {
            assert!(body.ends_with("# EOF\n"), "{body}");
            python_parse(&body, "openmetrics", scratch);
        }
    }
}

#[test]
fn exporter_starts_before_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
    });
    assert!(server.renderer.store().is_none());

    let r = get(server.addr, "/healthz", &[]);
    assert_eq!(r.status, 503);
    let body = r.text();
    assert!(body.starts_with("not ready: "), "{body}");
    assert!(body.contains(&path.display().to_string()), "{body}");
    assert!(body.contains("does not exist yet"), "{body}");
    assert_detached_metrics(server.addr, dir.path());
    let page = get(server.addr, "/", &[]).text();
    assert!(page.contains("NOT ATTACHED"), "{page}");
    assert!(page.contains("does not exist yet"), "{page}");

    // The application starts: the next request attaches.
    let _store = create_store(&path);
    let r = get(server.addr, "/metrics", &[("Accept", "text/plain")]);
    assert_eq!(r.status, 200);
    let body = r.text();
    assert!(body.contains("\nlate_jobs_total 5\n"), "{body}");
    assert!(body.contains("\nshmetrics_store_attached 1\n"), "{body}");
    assert!(
        body.contains("\nshmetrics_store_series{kind=\"capacity\"} 64\n"),
        "{body}"
    );
    let r = get(server.addr, "/healthz", &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(server.renderer.store().unwrap().is_read_only());
    let page = get(server.addr, "/", &[]).text();
    assert!(page.contains("attached (read-only)"), "{page}");
    server.stop();
}

/// The real binary, started on a file that is not a store: it keeps
/// running, says what is wrong in its log, /healthz and /, and attaches
/// once a valid store replaces the file.
#[test]
fn foreign_file_is_reported_then_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    std::fs::write(&path, vec![b'x'; 8192]).unwrap();
    let mut serve = Serve::on_store(&path, &["--web.exporter-metrics"]);

    let r = get(serve.addr, "/healthz", &[]);
    assert_eq!(r.status, 503);
    let body = r.text();
    assert!(body.contains(&path.display().to_string()), "{body}");
    assert!(body.contains("not a shmetrics store"), "{body}");
    let page = get(serve.addr, "/", &[]).text();
    assert!(page.contains("NOT ATTACHED"), "{page}");
    assert!(page.contains("not a shmetrics store"), "{page}");
    assert_detached_metrics(serve.addr, dir.path());
    let log = serve.stderr();
    assert!(
        log.contains(&format!("{}: not a shmetrics store", path.display())),
        "{log}"
    );
    // The same reason is logged once, not on every request.
    assert_eq!(log.matches("not a shmetrics store").count(), 1, "{log}");
    assert!(serve.process.0.try_wait().unwrap().is_none(), "it exited");

    let _store = create_store(&path);
    let r = get(serve.addr, "/metrics", &[("Accept", "text/plain")]);
    assert_eq!(r.status, 200);
    let body = r.text();
    assert!(body.contains("\nlate_jobs_total 5\n"), "{body}");
    assert!(body.contains("\nshmetrics_store_attached 1\n"), "{body}");
    assert_eq!(get(serve.addr, "/healthz", &[]).status, 200);
    wait_for(
        "the log to say it attached",
        IO_TIMEOUT,
        Duration::from_millis(20),
        || {
            serve
                .stderr()
                .contains("attached to the store")
                .then_some(())
        },
    );

    signal(&serve.process.0, libc::SIGTERM);
    let status = wait_exit(
        &mut serve.process.0,
        Duration::from_secs(30),
        "shmetrics serve",
    );
    assert!(status.success(), "{status}: {}", serve.stderr());
}

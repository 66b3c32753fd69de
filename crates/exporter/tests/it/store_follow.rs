//! A store removed and created again, or replaced by a rename, under a
//! running `shmetrics serve` is followed (issue 23, item 3): the exporter
//! notices that the path names another file and serves it, and /healthz
//! and its own metrics say which file and since when. A store removed and
//! not re-created goes on being served, marked stale (503 on /healthz).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Store};

use shmetrics_testkit::serve::find_metric;

use crate::util::*;

/// A store at `path` holding `follow_jobs_total` at `value`.
fn store_at(path: &Path, value: f64) -> Store {
    let desc = FamilyDesc::new("follow_jobs_total", Kind::Counter).help("Jobs.");
    store_with_counter(path, &desc, &[], value)
}

/// The file at `path`: (device, inode).
fn file_id(path: &Path) -> (u64, u64) {
    let m = std::fs::metadata(path).unwrap();
    (m.dev(), m.ino())
}

/// Waits (bounded) until the exporter serves the file now at `path`, with
/// `follow_jobs_total` at `value`; checks /healthz, the own metrics
/// (identity, a since-time later than `since_before`, `attaches` files
/// opened so far) and that promtool accepts the page. Returns the
/// since-time.
fn assert_serves(serve: &Serve, path: &Path, value: f64, since_before: f64, attaches: f64) -> f64 {
    let (dev, ino) = file_id(path);
    let info = format!("shmetrics_store_file_info{{device=\"{dev}\",inode=\"{ino}\"}}");
    let body = wait_for(
        "the exporter to serve the new file",
        IO_TIMEOUT,
        Duration::from_millis(20),
        || {
            let body = serve.metrics();
            (find_metric(&body, "follow_jobs_total") == Some(value)).then_some(body)
        },
    );
    assert_eq!(find_metric(&body, &info), Some(1.0), "{body}");
    assert_eq!(
        body.matches("shmetrics_store_file_info{").count(),
        1,
        "{body}"
    );
    assert_eq!(
        find_metric(&body, "shmetrics_store_file_removed"),
        Some(0.0)
    );
    assert_eq!(find_metric(&body, "shmetrics_store_attached"), Some(1.0));
    assert_eq!(
        find_metric(&body, "shmetrics_store_attaches_total"),
        Some(attaches),
        "{body}"
    );
    let since = find_metric(&body, "shmetrics_store_attached_since_seconds").unwrap();
    assert!(since > since_before, "since {since} <= {since_before}");
    let (code, out) = promtool_check(&body);
    assert_eq!(code, 0, "promtool: {out}\n{body}");

    let r = get(serve.addr, "/healthz", &[]);
    let health = r.text();
    assert_eq!(r.status, 200, "{health}");
    assert!(health.starts_with("ok: "), "{health}");
    assert!(health.contains(&format!("inode {ino}")), "{health}");
    since
}

/// A running exporter on a store at `DIR/store` holding 7, checked; its
/// since-time.
fn serving_first_store() -> (tempfile::TempDir, Store, Serve, f64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let first = store_at(&path, 7.0);
    let serve = Serve::on_store(&path, &["--web.exporter-metrics"]);
    let since = assert_serves(&serve, &path, 7.0, 0.0, 1.0);
    (dir, first, serve, since)
}

#[test]
fn removed_and_recreated_store_is_followed() {
    let (dir, first, serve, since) = serving_first_store();
    let path = dir.path().join("store");
    let old = file_id(&path);

    // `rm` and create again (the old writer still has it open).
    std::fs::remove_file(&path).unwrap();
    let second = store_at(&path, 3.0);
    assert_ne!(file_id(&path), old);
    let since = assert_serves(&serve, &path, 3.0, since, 2.0);
    let log = serve.stderr();
    assert!(log.contains("names another file now"), "{log}");
    drop((first, second));

    // Replaced by a rename, as an atomic deploy does.
    let tmp = path.with_extension("new");
    let third = store_at(&tmp, 11.0);
    std::fs::rename(&tmp, &path).unwrap();
    let since = assert_serves(&serve, &path, 11.0, since, 3.0);

    // Several scrapes of the same file do not reopen it.
    for _ in 0..3 {
        assert_eq!(serve.metric("follow_jobs_total"), 11.0);
    }
    assert_eq!(
        serve.metric("shmetrics_store_attached_since_seconds"),
        since
    );
    assert_eq!(serve.metric("shmetrics_store_attaches_total"), 3.0);
    drop(third);
}

#[test]
fn removed_store_is_served_stale_until_recreated() {
    let (dir, first, serve, since) = serving_first_store();
    let path = dir.path().join("store");
    let (_, ino) = file_id(&path);
    std::fs::remove_file(&path).unwrap();

    let r = get(serve.addr, "/healthz", &[]);
    let health = r.text();
    assert_eq!(r.status, 503, "{health}");
    assert!(health.starts_with("stale: "), "{health}");
    assert!(health.contains("was removed"), "{health}");
    assert!(health.contains(&format!("inode {ino}")), "{health}");
    // /metrics goes on with the removed file's last values, flagged.
    let body = serve.metrics();
    assert_eq!(find_metric(&body, "follow_jobs_total"), Some(7.0), "{body}");
    assert_eq!(
        find_metric(&body, "shmetrics_store_file_removed"),
        Some(1.0)
    );
    assert_eq!(find_metric(&body, "shmetrics_store_attached"), Some(1.0));
    let (code, out) = promtool_check(&body);
    assert_eq!(code, 0, "promtool: {out}\n{body}");
    let page = get(serve.addr, "/", &[]).text();
    assert!(page.contains("STALE: "), "{page}");
    // Said once in the log, not at every request.
    let log = serve.stderr();
    assert_eq!(log.matches("was removed").count(), 1, "{log}");

    let second = store_at(&path, 3.0);
    assert_serves(&serve, &path, 3.0, since, 2.0);
    assert!(!get(serve.addr, "/", &[]).text().contains("STALE"));
    drop((first, second));
}

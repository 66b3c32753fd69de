//! No SIGBUS under a running exporter (issue 23, item 2): a store whose
//! tmpfs fills up under a writer process, and a store truncated under a
//! writer process and a running `shmetrics serve`. The writer stops with
//! a clear error (never a signal), the exporter lives on and says what is
//! wrong, and what was stored is still served.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use shmetrics_core::{Options, Store};
use shmetrics_testkit::proto::{self, word};
use shmetrics_testkit::{Tmpfs, Worker, PATIENCE};

use crate::util::*;

/// The sum of the samples of counter family `name` (`NAME_total{...}`
/// lines) in a text exposition, and how many there are.
fn counter_total(body: &str, name: &str) -> (f64, usize) {
    let prefix = format!("{name}_total{{");
    body.lines()
        .filter(|l| l.starts_with(&prefix))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .fold((0.0, 0), |(s, n), v| (s + v, n + 1))
}

/// A worker's stderr so far.
fn log_of(w: &Worker) -> String {
    std::fs::read_to_string(&w.log).unwrap_or_default()
}

fn create_store(path: &Path, opts: &Options) {
    drop(Store::open(path, opts).unwrap());
}

#[test]
fn a_tmpfs_that_fills_under_a_writer_process_stops_it_cleanly_and_serve_renders() {
    let fs = Tmpfs::mount("1m");
    let path = fs.path().join("store");
    create_store(
        &path,
        &Options {
            max_series: 65_536,
            max_writers: 4,
            ..Options::default()
        },
    );
    let serve = Serve::on_store(&path, &[]);
    // The writer creates series (and counts each once) until the store
    // has taken the whole file system.
    // Its ack file and log elsewhere, off the full file system.
    let work = shmetrics_testkit::tempdir();
    let mut w = Worker::spawn(
        "create",
        &path,
        &work.path().join("ack"),
        false,
        &["id=1".into(), "max=1000000".into()],
    );
    let st = w.wait(PATIENCE);
    let log = log_of(&w);
    assert_eq!(st.signal(), None, "the writer died of a signal: {log}");
    assert_eq!(st.code(), Some(3), "{log}");
    assert!(log.contains("No space left"), "{log}");
    let created = w.ack.get(word::CREATED);
    assert!(
        created > 100,
        "only {created} series before the file system was full"
    );
    let free = free_bytes(fs.path());
    assert!(free < 64 << 10, "{free} bytes still free");

    // The exporter serves every series counted, and keeps serving.
    for _ in 0..3 {
        let body = serve.metrics();
        let (sum, n) = counter_total(&body, proto::CREATE_COUNTER);
        assert_eq!(sum, created as f64, "{n} series");
        // The test kit's family has no help text, which promtool's lint
        // notes; anything else is an error.
        let (code, out) = promtool_check(&body);
        let lint_only = out
            .lines()
            .all(|l| l.trim().is_empty() || l.contains("no help text"));
        assert!(code == 0 || lint_only, "promtool: {out}");
    }
    let r = get(serve.addr, "/healthz", &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    drop(w);
}

/// Free bytes of the file system holding `dir`.
fn free_bytes(dir: &Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().nth(1).unwrap().trim().parse().unwrap()
}

#[test]
fn a_store_truncated_under_a_writer_and_serve_gives_errors_not_crashes() {
    let dir = shmetrics_testkit::tempdir();
    let path = dir.path().join("store");
    create_store(
        &path,
        &Options {
            max_writers: 4,
            ..Options::default()
        },
    );
    let serve = Serve::on_store(&path, &[]);
    let mut w = Worker::spawn("churn", &path, &dir.path().join("ack"), false, &[]);
    w.wait_word(word::READY, 1);
    w.wait_word(word::COUNTER, 1000);
    let name = proto::CHURN_COUNTER;
    assert!(counter_total(&serve.metrics(), name).0 >= 1000.0);

    // Cut to its header page under both.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(4096).unwrap();

    // The writer's next update meets the lost pages: its update fails
    // (stale handle), and it exits with a store error, not a signal.
    let st = w.wait(PATIENCE);
    let log = log_of(&w);
    assert_eq!(st.signal(), None, "the writer died of a signal: {log}");
    assert_eq!(st.code(), Some(3), "{log}");

    // The exporter lives, and says what is wrong.
    for _ in 0..3 {
        let r = get(serve.addr, "/metrics", &[]);
        let body = r.text();
        assert_ne!(r.status, 200, "{body}");
        assert!(body.contains("cut to 4096 bytes"), "{body}");
    }
    // /healthz and the status page answer too.
    for page in ["/healthz", "/"] {
        let r = get(serve.addr, page, &[]);
        assert!(r.status == 200 || r.status == 503, "{}", r.text());
    }

    // Removed and created again, the store is served again.
    std::fs::remove_file(&path).unwrap();
    let desc = proto::create_counter();
    let _store = store_with_counter(&path, &desc, &["again"], 4.0);
    let body = wait_for(
        "the exporter to serve the new store",
        PATIENCE,
        std::time::Duration::from_millis(20),
        || {
            let r = get(serve.addr, "/metrics", &[]);
            (r.status == 200).then(|| r.text())
        },
    );
    assert_eq!(counter_total(&body, proto::CREATE_COUNTER).0, 4.0, "{body}");
}

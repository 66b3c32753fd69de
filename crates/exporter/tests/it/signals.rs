//! The real `shmetrics serve` binary: SIGTERM and SIGINT stop it cleanly
//! (exit 0, port released), and on a missing or foreign store file it
//! waits (503 on /healthz, naming the file and the problem) without
//! creating or touching the file. An idle keep-alive connection must
//! neither hold up the exit nor leave new connections hanging during the
//! drain.

use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::util::*;

/// A generous bound for the exporter to exit.
const EXIT_BOUND: Duration = Duration::from_secs(30);

#[test]
fn serve_stops_cleanly_on_sigterm_and_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("signals_total", Kind::Counter).help("Signals."),
        &[],
        2.0,
    );

    for (name, sig) in [("SIGTERM", libc::SIGTERM), ("SIGINT", libc::SIGINT)] {
        let mut serve = Serve::on_store(&path, &[]);
        let addr = serve.addr;
        let r = get(addr, "/metrics", &[]);
        assert_eq!(r.status, 200);
        assert!(r.text().contains("\nsignals_total 2\n"), "{}", r.text());

        signal(&serve.process.0, sig);
        let status = wait_exit(&mut serve.process.0, EXIT_BOUND, "shmetrics serve");
        assert!(
            status.success(),
            "{name}: shmetrics serve exited with {status}:\n{}",
            serve.stderr()
        );
        // The port is free: nothing accepts on it, and it can be bound.
        assert!(
            std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).is_err(),
            "{name}: something still accepts on {addr}"
        );
        std::net::TcpListener::bind(addr)
            .unwrap_or_else(|e| panic!("{name}: {addr} is not free after exit: {e}"));
    }
}

/// Prometheus keeps its connection to a target open between scrapes. Such
/// an idle keep-alive connection has no request in flight, so it must not
/// hold up the shutdown: the exporter documents that SIGTERM "lets
/// requests in flight finish" and exits. With long timeouts configured
/// (as an operator may for big stores) it must still exit promptly; the
/// bound here is generous, far below the configured timeouts.
#[test]
fn sigterm_is_not_held_up_by_idle_keepalive_connections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("idle_total", Kind::Counter).help("Idle."),
        &[],
        1.0,
    );

    let mut serve = Serve::on_store(
        &path,
        &["--header-timeout", "600", "--request-timeout", "600"],
    );
    // A scrape on a kept-alive connection, answered; then the connection
    // idles, as Prometheus' does between scrapes.
    let mut conn = connect(serve.addr);
    std::io::Write::write_all(&mut conn, &request_head("GET", "/metrics", &[], false)).unwrap();
    let mut conn = std::io::BufReader::new(conn);
    let r = read_response(&mut conn, false).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("\nidle_total 1\n"));

    signal(&serve.process.0, libc::SIGTERM);
    let status = wait_exit(
        &mut serve.process.0,
        EXIT_BOUND,
        "shmetrics serve, with an idle keep-alive connection open, after SIGTERM",
    );
    assert!(status.success(), "{status}: {}", serve.stderr());
}

/// After SIGTERM, while the exporter drains, a new connection must be
/// refused (or served): never accepted by the kernel and then left without
/// an answer, which is what a listener kept open but no longer accepted on
/// does. An idle keep-alive connection keeps the drain going here.
#[test]
fn connections_during_shutdown_are_not_left_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("drain_total", Kind::Counter).help("Drain."),
        &[],
        0.0,
    );
    let mut serve = Serve::on_store(
        &path,
        &["--header-timeout", "600", "--request-timeout", "600"],
    );
    let addr = serve.addr;
    let mut conn = connect(addr);
    std::io::Write::write_all(&mut conn, &request_head("GET", "/healthz", &[], false)).unwrap();
    let mut conn = std::io::BufReader::new(conn);
    assert_eq!(read_response(&mut conn, false).unwrap().status, 200);

    signal(&serve.process.0, libc::SIGTERM);
    // Until the port refuses connections, every connection that gets in
    // is answered or closed within the bound.
    let start = std::time::Instant::now();
    loop {
        let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
            break; // refused: the listener is closed
        };
        std::io::Write::write_all(&mut s, &request_head("GET", "/healthz", &[], true)).unwrap();
        assert!(
            wait_closed(&mut s, Duration::from_secs(10)).is_some(),
            "a connection made after SIGTERM was accepted and left hanging; stderr:\n{}",
            serve.stderr()
        );
        assert!(
            start.elapsed() < EXIT_BOUND,
            "the port still accepts {EXIT_BOUND:?} after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(conn);
    let status = wait_exit(
        &mut serve.process.0,
        EXIT_BOUND,
        "shmetrics serve after SIGTERM",
    );
    assert!(status.success(), "{status}: {}", serve.stderr());
}

/// Runs `shmetrics serve` on a store it cannot open: it must run anyway,
/// answer /healthz with 503 naming the file, and stop cleanly on SIGTERM.
/// Returns the /healthz body and the log.
fn waiting(store: &std::path::Path) -> String {
    let mut serve = Serve::on_store(store, &[]);
    let r = get(serve.addr, "/healthz", &[]);
    let body = r.text();
    assert_eq!(r.status, 503, "{body}");
    assert!(
        body.contains(&store.display().to_string()),
        "/healthz does not name {}: {body}",
        store.display()
    );
    assert_eq!(get(serve.addr, "/metrics", &[]).status, 200);
    signal(&serve.process.0, libc::SIGTERM);
    let status = wait_exit(&mut serve.process.0, EXIT_BOUND, "shmetrics serve");
    let log = serve.stderr();
    assert!(status.success(), "{status}: {log}");
    assert!(
        log.contains(&store.display().to_string()),
        "the log does not name {}: {log}",
        store.display()
    );
    format!("{body}\n{log}")
}

#[test]
fn serve_waits_on_missing_and_foreign_stores_without_touching_them() {
    let dir = tempfile::tempdir().unwrap();

    let missing = dir.path().join("no-such-store");
    let err = waiting(&missing);
    assert!(
        !missing.exists(),
        "the exporter created {}",
        missing.display()
    );
    assert!(err.contains("does not exist yet"), "{err}");

    let foreign = dir.path().join("foreign");
    let content: Vec<u8> = b"this is not a shmetrics store\n"
        .iter()
        .copied()
        .cycle()
        .take(64 * 1024)
        .collect();
    std::fs::write(&foreign, &content).unwrap();
    let err = waiting(&foreign);
    assert!(
        err.contains("not a shmetrics store") || err.contains("magic"),
        "the error does not say what is wrong: {err}"
    );
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        content,
        "the foreign file was modified"
    );

    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    waiting(&empty);
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
}

/// The nice value of every thread of process `pid` (field 19 of
/// `/proc/<pid>/task/<tid>/stat`, counted after the command name).
fn thread_nice_values(pid: u32) -> Vec<i64> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let stat = std::fs::read_to_string(task.unwrap().path().join("stat")).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        // After ')' come field 3 (state) onwards; nice is field 19.
        let nice = rest.split_whitespace().nth(16).unwrap();
        out.push(nice.parse().unwrap());
    }
    out
}

#[test]
fn serve_runs_at_a_lower_priority_than_the_workers_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    Store::open(&path, &Options::default()).unwrap();
    let default = Serve::on_store(&path, &[]);
    // Serve a scrape first, so the render threads exist too.
    assert_eq!(get(default.addr, "/metrics", &[]).status, 200);
    let nice = thread_nice_values(default.process.0.id());
    assert!(nice.len() >= 3, "threads: {nice:?}");
    assert!(nice.iter().all(|n| *n == 10), "nice values {nice:?}");
    let mine = thread_nice_values(std::process::id())[0];
    let unchanged = Serve::on_store(&path, &["--nice", "0"]);
    let nice = thread_nice_values(unchanged.process.0.id());
    assert!(nice.iter().all(|n| *n == mine), "nice values {nice:?}");
    let out = std::process::Command::new(shmetrics_bin())
        .args(["serve", "--nice", "20", "--store"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--nice"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The scheduler slice (ns) of every thread of process `pid`, as
/// `/proc/<pid>/task/<tid>/sched` shows it (`se.slice`); empty where the
/// kernel does not show it.
fn thread_slices(pid: u32) -> Vec<u64> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| shown_slice(&task.unwrap().path()))
        .collect()
}

/// `se.slice` of the task directory `task`, if the kernel shows it.
fn shown_slice(task: &std::path::Path) -> Option<u64> {
    let sched = std::fs::read_to_string(task.join("sched")).ok()?;
    sched.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "se.slice").then(|| v.trim().parse().unwrap())
    })
}

#[test]
fn serve_renders_in_short_scheduler_slices_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    Store::open(&path, &Options::default()).unwrap();
    // What a child of this thread inherits.
    let slice = shown_slice(std::path::Path::new("/proc/thread-self"));
    let nice = thread_nice_values(std::process::id())[0];
    let default = Serve::on_store(&path, &[]);
    assert_eq!(get(default.addr, "/metrics", &[]).status, 200);
    let slices = thread_slices(default.process.0.id());
    // Custom slices came with Linux 6.12; an older kernel (or one that
    // does not show se.slice) keeps its own, and the nice value still
    // applies (the test above).
    let (major, minor) = kernel_version();
    if (major, minor) >= (6, 12) && !slices.is_empty() {
        assert!(slices.iter().all(|s| *s == 100_000), "slices {slices:?}");
    }
    let unchanged = Serve::on_store(&path, &["--sched-slice-us", "0", "--nice", "0"]);
    assert_eq!(get(unchanged.addr, "/metrics", &[]).status, 200);
    let slices = thread_slices(unchanged.process.0.id());
    assert!(
        slices.iter().all(|s| Some(*s) == slice),
        "slices {slices:?}, not {slice:?}"
    );
    assert!(thread_nice_values(unchanged.process.0.id())
        .iter()
        .all(|n| *n == nice));
    for bad in ["50", "100001", "x"] {
        let out = std::process::Command::new(shmetrics_bin())
            .args(["serve", "--sched-slice-us", bad, "--store"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(!out.status.success(), "--sched-slice-us {bad} was taken");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--sched-slice-us"));
    }
}

/// The running kernel's (major, minor) version.
fn kernel_version() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse().unwrap_or(0));
    (v.next().unwrap_or(0), v.next().unwrap_or(0))
}

//! Slow, idle and excess clients: the header timeout closes connections
//! that send nothing or dribble their request head, at the connection
//! limit the oldest idle connection is closed to make room (and counted),
//! and an oversized request head is refused. Normal scrapes keep working
//! meanwhile.

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use shmetrics_core::{FamilyDesc, Kind, Store};

use crate::util::*;

/// A generous bound for the server to close a connection it should close
/// after one second (or at once).
const CLOSE_BOUND: Duration = Duration::from_secs(10);

/// A small store with `pings_total 7`.
pub(crate) fn small_store(path: &Path) -> Store {
    store_with_counter(
        path,
        &FamilyDesc::new("pings_total", Kind::Counter).help("Pings."),
        &[],
        7.0,
    )
}

fn scrape_ok(addr: std::net::SocketAddr, what: &str) {
    let r = get(addr, "/metrics", &[]);
    assert_eq!(r.status, 200, "{what}");
    assert!(
        r.text().contains("\npings_total 7\n"),
        "{what}: {}",
        r.text()
    );
}

/// Whatever the server sent before closing must not be a success.
fn assert_not_served(got: &[u8], what: &str) {
    let text = String::from_utf8_lossy(got);
    assert!(
        !text.starts_with("HTTP/1.1 2"),
        "{what}: the server answered with success:\n{text}"
    );
}

#[test]
fn idle_and_slow_clients_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = small_store(&path);
    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
        c.max_connections = 16;
        c.header_timeout = Duration::from_secs(1);
        // Long, so that only the header timeout can close them in time.
        c.request_timeout = Duration::from_secs(120);
    });
    let addr = server.addr;

    // Ten connections that send nothing.
    let mut idle: Vec<TcpStream> = (0..10).map(|_| connect(addr)).collect();

    // One that sends its request head a byte every 300 ms: 80 bytes would
    // take 24 s.
    let slow = std::thread::spawn(move || {
        let mut head = request_head("GET", "/metrics", &[("X-Pad", &"p".repeat(30))], true);
        head.truncate(80); // never complete
        let mut s = connect(addr);
        let start = Instant::now();
        let mut sent = 0;
        for b in &head {
            if s.write_all(&[*b]).is_err() {
                return (sent, start.elapsed(), Vec::new());
            }
            sent += 1;
            if let Some(got) = wait_closed(&mut s, Duration::from_millis(300)) {
                return (sent, start.elapsed(), got);
            }
            assert!(
                start.elapsed() < CLOSE_BOUND,
                "the slow client is still served"
            );
        }
        panic!(
            "the server let a client take {:?} over its request head",
            start.elapsed()
        );
    });

    // Meanwhile normal scrapes succeed (5 of the 16 connections are free).
    for i in 0..5 {
        scrape_ok(addr, &format!("scrape {i} beside the idle clients"));
    }

    for (i, s) in idle.iter_mut().enumerate() {
        let got = wait_closed(s, CLOSE_BOUND)
            .unwrap_or_else(|| panic!("idle connection {i} still open after {CLOSE_BOUND:?}"));
        assert_not_served(&got, &format!("idle connection {i}"));
    }
    let (sent, took, got) = slow.join().unwrap();
    assert!(sent < 80, "the slow client sent its whole head");
    assert_not_served(&got, "the slow client");
    eprintln!("slow client cut off after {sent} bytes, {took:?}");

    // The closed connections gave their places back: 16 clients at once
    // are served. (A place is given back just after the server closes, so
    // a client may still be turned away for a moment: it retries, and each
    // such refusal must show in the rejection count.)
    let many: Vec<_> = (0..16)
        .map(|_| {
            std::thread::spawn(move || {
                let mut refused = 0u64;
                let start = Instant::now();
                loop {
                    match request(addr, "GET", "/healthz", &[]) {
                        Ok(r) => {
                            assert_eq!(r.status, 200);
                            return refused;
                        }
                        Err(_) if start.elapsed() < CLOSE_BOUND => refused += 1,
                        Err(e) => panic!("no place after {CLOSE_BOUND:?}: {e}"),
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    let refused: u64 = many.into_iter().map(|t| t.join().unwrap()).sum();

    // Request heads: a large one under the limit is served, those over it
    // are refused (431, or the connection closed), never served.
    let r = get(addr, "/metrics", &[("X-Big", &"b".repeat(4 * 1024))]);
    assert_eq!(r.status, 200, "a 4 KiB request head");
    for size in [20 * 1024, 64 * 1024, 1024 * 1024] {
        let what = format!("a {} KiB request head", size / 1024);
        let head = request_head("GET", "/metrics", &[("X-Big", &"b".repeat(size))], true);
        let mut s = connect(addr);
        // The server may close while we still write: that is a refusal.
        let _ = s.write_all(&head);
        let got = wait_closed(&mut s, CLOSE_BOUND)
            .unwrap_or_else(|| panic!("{what}: the connection stayed open"));
        assert_not_served(&got, &what);
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.is_empty() || text.starts_with("HTTP/1.1 431"),
            "{what}: {text}"
        );
    }
    scrape_ok(addr, "after the oversized heads");
    let stats = &server.renderer.stats;
    let closed_at_limit = stats
        .rejected_connections
        .load(std::sync::atomic::Ordering::Relaxed)
        + stats
            .evicted_connections
            .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        closed_at_limit, refused,
        "closed at the limit: only the retried ones above went over it"
    );
    server.stop();
}

#[test]
fn at_the_limit_the_oldest_idle_connection_makes_room() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = small_store(&path);
    const LIMIT: usize = 16;
    const EXTRA: usize = 5;
    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
        c.max_connections = LIMIT;
        // Long timeouts: nothing but the limit closes a connection here.
        c.header_timeout = Duration::from_secs(60);
        c.request_timeout = Duration::from_secs(120);
    });
    let addr = server.addr;
    let evicted = || {
        server
            .renderer
            .stats
            .evicted_connections
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let rejected = || {
        server
            .renderer
            .stats
            .rejected_connections
            .load(std::sync::atomic::Ordering::Relaxed)
    };

    // Fill every place with a connection that sends nothing, then open
    // EXTRA more, one after the other (the pause lets the server find
    // each one waiting before the next): each extra one closes the
    // holder that has waited longest, unanswered.
    let mut holders: Vec<TcpStream> = (0..LIMIT + EXTRA)
        .map(|_| {
            let s = connect(addr);
            std::thread::sleep(Duration::from_millis(50));
            s
        })
        .collect();
    for (i, s) in holders.iter_mut().take(EXTRA).enumerate() {
        let got = wait_closed(s, CLOSE_BOUND)
            .unwrap_or_else(|| panic!("holder {i} is still open after {CLOSE_BOUND:?}"));
        assert!(got.is_empty(), "holder {i} got an answer");
    }
    for (i, s) in holders.iter_mut().enumerate().skip(EXTRA) {
        assert!(
            wait_closed(s, Duration::from_millis(100)).is_none(),
            "holder {i} was closed, though older ones were there to close first"
        );
    }
    // The counter is bumped just after the connection is told to close.
    let counted = |n: usize| {
        wait_for(
            "the count of closed idle connections",
            CLOSE_BOUND,
            Duration::from_millis(10),
            || match evicted() {
                e if e == n as u64 => Ok(()),
                e => Err(format!(
                    "{e} closed, and the rejected count is {}",
                    rejected()
                )),
            },
        )
    };
    counted(EXTRA);

    // The newest holder sends its request and is served; the counts show
    // in the exposition.
    let mut h = BufReader::new(holders.pop().unwrap());
    h.get_mut()
        .write_all(&request_head("GET", "/metrics", &[], false))
        .unwrap();
    let r = read_response(&mut h, false).unwrap();
    assert_eq!(r.status, 200);
    let body = r.text();
    for line in [
        format!("shmetrics_exporter_evicted_connections_total {EXTRA}"),
        "shmetrics_exporter_rejected_connections_total 0".to_string(),
        format!(
            "shmetrics_exporter_connections{{state=\"idle\"}} {}",
            LIMIT - 1
        ),
        "shmetrics_exporter_connections{state=\"serving\"} 1".to_string(),
        format!("shmetrics_exporter_connections{{state=\"capacity\"}} {LIMIT}"),
    ] {
        assert!(body.lines().any(|l| l == line), "no {line:?} in:\n{body}");
    }

    // The served connection ends with its response; once its place is
    // free, the table holds the LIMIT - 1 holders left.
    assert!(
        wait_closed(h.get_mut(), CLOSE_BOUND).is_some(),
        "the served connection stays open"
    );
    wait_for(
        "the served connection's place to be free",
        CLOSE_BOUND,
        Duration::from_millis(10),
        || match server.renderer.open_connections() {
            Some(n) if n == LIMIT - 1 => Ok(()),
            n => Err(format!("{n:?} connections open")),
        },
    );

    // A scrape while the table is full again closes the oldest holder
    // left and is served.
    let _h = connect(addr);
    scrape_ok(addr, "a scrape at the limit");
    let got =
        wait_closed(&mut holders[EXTRA], CLOSE_BOUND).expect("the oldest holder left is open");
    assert!(got.is_empty());
    counted(EXTRA + 1);
    drop(holders);
    scrape_ok(addr, "after the holders left");
    server.stop();
}

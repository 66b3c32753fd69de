//! Scrape latency with and without a connection flood, in one run:
//! `shmetrics serve` over a store of a few thousand series is scraped
//! sequentially, first alone, then while 1,000 idle connections and 100
//! that send half a request head and reconnect as soon as they are closed
//! are held against it. Prints p50/p99 of each phase, their ratios, the
//! scrapes that failed and the exporter's resident memory. No pass/fail
//! threshold. Run it with `benches/scrape_flood.sh`, which builds the
//! release `shmetrics` and passes its path in `SHMETRICS_BIN`.

#![allow(missing_docs)]

#[path = "../tests/it/flood_load.rs"]
mod flood_load;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use flood_load::{percentile, timed_scrape, Flood};
use shmetrics_core::{FamilyDesc, Kind, Options, Store};

const SERIES: usize = 4000;
const SCRAPES: usize = 200;
const IDLE: usize = 1000;
const RECONNECTING: usize = 100;

/// The exporter, killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_serve(bin: &str, store: &std::path::Path) -> (Serve, SocketAddr) {
    let mut child = Command::new(bin)
        .arg("serve")
        .arg("--store")
        .arg(store)
        .args(["--listen", "127.0.0.1:0", "--nice", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start shmetrics serve");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let serve = Serve(child);
    let mut line = String::new();
    while stderr.read_line(&mut line).expect("serve's stderr") > 0 {
        let addr = line.split("://").nth(1).and_then(|r| r.split('/').next());
        if let Some(addr) = addr.and_then(|a| a.parse().ok()) {
            // Keep draining its stderr so that it never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (serve, addr);
        }
        line.clear();
    }
    panic!("shmetrics serve exited before saying where it listens");
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Scrapes `SCRAPES` times, 20 ms apart; returns the durations of those
/// that succeeded and the number that failed.
fn phase(addr: SocketAddr) -> (Vec<Duration>, usize) {
    let mut took = Vec::new();
    let mut failed = 0;
    for _ in 0..SCRAPES {
        match timed_scrape(addr, Duration::from_secs(10)) {
            Ok((_, t)) => took.push(t),
            Err(_) => failed += 1,
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (took, failed)
}

fn main() {
    let Ok(bin) = std::env::var("SHMETRICS_BIN") else {
        eprintln!("scrape_flood: set SHMETRICS_BIN (benches/scrape_flood.sh does)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let desc = FamilyDesc::new("bench_requests_total", Kind::Counter)
        .help("Requests.")
        .labels(&["route", "code"]);
    let f = store.register(&desc).unwrap();
    for i in 0..SERIES {
        let s = store.series(&f, &[&format!("/r{i}"), "200"]).unwrap();
        store.counter_add(s, i as f64).unwrap();
    }
    let (serve, addr) = start_serve(&bin, &path);
    phase(addr); // warm up
    let rss_quiet = rss_kib(serve.0.id());
    let (quiet, quiet_failed) = phase(addr);
    let flood = Flood::start(addr, IDLE, RECONNECTING);
    let rss_flood = rss_kib(serve.0.id());
    let (flooded, flood_failed) = phase(addr);
    let opened = flood.stop();
    let p = |d: &[Duration], q| percentile(d, q).as_secs_f64() * 1e3;
    println!("scrape_flood: {SERIES} series, {SCRAPES} sequential scrapes per phase");
    println!("  phase            p50 ms   p99 ms   failed   exporter RSS");
    for (name, d, failed, rss) in [
        ("alone", &quiet, quiet_failed, rss_quiet),
        ("during flood", &flooded, flood_failed, rss_flood),
    ] {
        println!(
            "  {name:<14} {:>8.2} {:>8.2} {failed:>8}   {rss} KiB",
            p(d, 50.0),
            p(d, 99.0)
        );
    }
    println!("  flood: {IDLE} idle + {RECONNECTING} reconnecting, {opened} connections opened");
    println!(
        "  ratio flood/alone: p50 {:.2}, p99 {:.2}",
        p(&flooded, 50.0) / p(&quiet, 50.0),
        p(&flooded, 99.0) / p(&quiet, 99.0)
    );
}

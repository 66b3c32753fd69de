//! Connection floods against a real `shmetrics serve`: 1,000 idle
//! connections and 100 that send half a request head and reconnect as
//! soon as they are closed, held while a scraper measures success. Every
//! scrape must succeed, with the default limits and with a connection
//! limit far below the flood (idle connections then make room).

use std::net::SocketAddr;
use std::time::Duration;

use crate::clients::small_store;
use crate::flood_load::{percentile, timed_scrape, Flood};
use crate::util::*;

const IDLE: usize = 1000;
const RECONNECTING: usize = 100;
const SCRAPES: usize = 40;

/// Scrapes every 100 ms while the flood runs; panics unless every scrape
/// succeeds with the store's value. Returns the last body.
fn scrape_through(addr: SocketAddr, what: &str) -> String {
    let mut took = Vec::new();
    let mut failures = Vec::new();
    let mut last = String::new();
    for i in 0..SCRAPES {
        match timed_scrape(addr, Duration::from_secs(10)) {
            Ok((body, t)) if body.contains("\npings_total 7\n") => {
                took.push(t);
                last = body;
            }
            Ok((body, _)) => failures.push(format!("scrape {i}: no pings_total 7 in:\n{body}")),
            Err(e) => failures.push(format!("scrape {i}: {e}")),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let connection_lines: Vec<&str> = last
        .lines()
        .filter(|l| l.starts_with("shmetrics_exporter_") && l.contains("connections"))
        .collect();
    assert!(
        failures.is_empty(),
        "{what}: {} of {SCRAPES} scrapes failed:\n{}\nat the last success:\n{}",
        failures.len(),
        failures.join("\n"),
        connection_lines.join("\n")
    );
    eprintln!(
        "{what}: {SCRAPES} of {SCRAPES} scrapes succeeded, p50 {:?}, p99 {:?}",
        percentile(&took, 50.0),
        percentile(&took, 99.0)
    );
    last
}

/// The value of an unlabelled or labelled sample line `name value`.
fn sample(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{body}"))
}

#[test]
fn scrapes_succeed_during_a_connection_flood() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = small_store(&path);
    let serve = Serve::on_store(&path, &["--web.exporter-metrics"]);
    let flood = Flood::start(serve.addr, IDLE, RECONNECTING);
    let body = scrape_through(serve.addr, "default limits");
    // The flood was really held open beside the scrapes.
    let idle = sample(&body, "shmetrics_exporter_connections{state=\"idle\"}");
    assert!(idle >= (IDLE / 2) as f64, "only {idle} idle connections");
    assert_eq!(
        sample(&body, "shmetrics_exporter_rejected_connections_total"),
        0.0
    );
    let opened = flood.stop();
    eprintln!("the flood opened {opened} connections");
    assert_eq!(
        get(serve.addr, "/healthz", &[]).status,
        200,
        "{}",
        serve.stderr()
    );
}

#[test]
fn a_flood_beyond_the_limit_makes_room_for_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = small_store(&path);
    let serve = Serve::on_store(
        &path,
        &["--max-connections", "256", "--web.exporter-metrics"],
    );
    let flood = Flood::start(serve.addr, IDLE, RECONNECTING);
    let body = scrape_through(serve.addr, "256 connections at most");
    let evicted = sample(&body, "shmetrics_exporter_evicted_connections_total");
    assert!(
        evicted >= (IDLE + RECONNECTING - 256) as f64,
        "only {evicted} idle connections closed to make room"
    );
    assert_eq!(
        sample(&body, "shmetrics_exporter_connections{state=\"capacity\"}"),
        256.0
    );
    let opened = flood.stop();
    eprintln!("the flood opened {opened} connections, {evicted} closed to make room");
}

//! Concurrent scrapes of a large store while writers update it: every
//! response is complete, counters never go back between rounds, concurrent
//! scrapes share renders, and the final totals are exact.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Options, Series, Store};

use crate::util::*;

const SERIES: usize = 50_000;
const ROUNDS: usize = 4;
const CONCURRENCY: usize = 16;
const FAMILY: &str = "load_requests";

fn family() -> FamilyDesc {
    FamilyDesc::new("load_requests_total", Kind::Counter)
        .help("Requests, by shard and id.")
        .labels(&["shard", "id"])
}

fn labels(i: usize) -> [String; 2] {
    [(i % 16).to_string(), i.to_string()]
}

fn handles(store: &Store) -> Vec<Series> {
    let f = store.register(&family()).unwrap();
    (0..SERIES)
        .map(|i| {
            let [a, b] = labels(i);
            store.series(&f, &[&a, &b]).unwrap()
        })
        .collect()
}

/// Increments pseudo-random series until `stop`, pausing now and then so
/// that two cores are left for the scrapes. Returns the increments made.
fn churn(store: &Store, series: &[Series], seed: u64, stop: &AtomicBool) -> u64 {
    let mut x = seed | 1;
    let mut n = 0u64;
    while !stop.load(Relaxed) {
        for _ in 0..2000 {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            store
                .counter_inc(series[(x % SERIES as u64) as usize])
                .unwrap();
            n += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    n
}

/// The worker side (see `tests.rs`): increments until standard input is
/// closed, then prints `INCS <n>`.
pub fn worker(path: &Path, _arg: &str) {
    let store = Store::open(
        path,
        &Options {
            create: false,
            ..Options::default()
        },
    )
    .unwrap();
    let series = handles(&store);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    std::thread::spawn(move || {
        wait_stdin_closed();
        stop2.store(true, Relaxed);
    });
    worker_ready();
    let n = churn(&store, &series, 0x9e37_79b9_7f4a_7c15, &stop);
    println!("INCS {n}");
}

/// What one body says: its line count and the sum of the family's samples.
struct Checked {
    lines: usize,
    sum: f64,
}

/// Checks a text-format body is complete: every sample line parses, the
/// family has exactly [`SERIES`] samples, and the body ends where it
/// should.
fn check_body(body: &str, what: &str) -> Checked {
    assert!(body.ends_with('\n'), "{what}: the body is cut short");
    let prefix = format!("{FAMILY}_total{{");
    let mut samples = 0;
    let mut sum = 0.0;
    let mut lines = 0;
    let mut help = 0;
    for line in body.lines() {
        lines += 1;
        if line.starts_with('#') {
            help += usize::from(line.starts_with(&format!("# HELP {FAMILY}_total ")));
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("{what}: a line without a value: {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("{what}: a bad value in {line:?}"));
        assert!(!series.is_empty(), "{what}: {line:?}");
        if line.starts_with(&prefix) {
            samples += 1;
            sum += value;
        }
    }
    assert_eq!(help, 1, "{what}: HELP lines of {FAMILY}");
    assert_eq!(samples, SERIES, "{what}: samples of {FAMILY}");
    Checked { lines, sum }
}

#[test]
fn concurrent_scrapes_share_renders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Arc::new(
        Store::open(
            &path,
            &Options {
                max_series: SERIES as u32 + 100,
                max_writers: 4,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    let series = Arc::new(handles(&store));
    for s in series.iter() {
        store.counter_inc(*s).unwrap();
    }

    // Writers: two threads here and a worker process.
    let stop = Arc::new(AtomicBool::new(false));
    let thread_incs = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2u64)
        .map(|t| {
            let (store, series, stop, incs) = (
                store.clone(),
                series.clone(),
                stop.clone(),
                thread_incs.clone(),
            );
            std::thread::spawn(move || {
                let n = churn(&store, &series, 0x1234_5678 + t, &stop);
                incs.fetch_add(n, Relaxed);
            })
        })
        .collect();
    let worker = Rerun::start("churn", &path, "");

    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
        c.max_connections = 64;
    });
    let addr = server.addr;
    let mut prev_max = 0.0f64;
    let mut lines = None;
    for round in 0..ROUNDS {
        let barrier = Arc::new(Barrier::new(CONCURRENCY));
        let scrapers: Vec<_> = (0..CONCURRENCY)
            .map(|i| {
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let gzip = i % 4 == 3;
                    let headers: &[(&str, &str)] = if gzip {
                        &[("Accept-Encoding", "gzip")]
                    } else {
                        &[]
                    };
                    barrier.wait();
                    let r = get(addr, "/metrics", headers);
                    assert_eq!(r.status, 200);
                    assert_eq!(r.header("content-type"), Some(CT_TEXT));
                    assert_eq!(
                        r.header("content-encoding"),
                        gzip.then_some("gzip"),
                        "scrape {i}"
                    );
                    r.text()
                })
            })
            .collect();
        let bodies: Vec<String> = scrapers.into_iter().map(|t| t.join().unwrap()).collect();
        let mut min = f64::INFINITY;
        let mut max = 0.0f64;
        for (i, body) in bodies.iter().enumerate() {
            let c = check_body(body, &format!("round {round}, scrape {i}"));
            // The shape is fixed: the same lines every time.
            assert_eq!(
                *lines.get_or_insert(c.lines),
                c.lines,
                "round {round}, scrape {i}: line count"
            );
            min = min.min(c.sum);
            max = max.max(c.sum);
        }
        // Every scrape of this round arrived after every scrape of the
        // last one was answered, and a scrape never gets a render older
        // than itself: no counter total can go back.
        assert!(
            min >= prev_max,
            "round {round}: a total of {min} after {prev_max} in the previous round"
        );
        prev_max = max;
    }
    let stats = &server.renderer.stats;
    let (scrapes, renders, shared) = (
        stats.scrapes.load(Relaxed),
        stats.renders.load(Relaxed),
        stats.shared_renders.load(Relaxed),
    );
    eprintln!("{scrapes} scrapes, {renders} renders, {shared} shared");
    assert_eq!(scrapes, (ROUNDS * CONCURRENCY) as u64);
    assert!(
        renders < scrapes && shared > 0,
        "concurrent scrapes did not share: {renders} renders for {scrapes} scrapes"
    );

    // Writers stopped: the totals are exact.
    stop.store(true, Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let out = worker.finish();
    let worker_incs: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("INCS "))
        .unwrap_or_else(|| panic!("the worker did not report: {out}"))
        .trim()
        .parse()
        .unwrap();
    let total = SERIES as u64 + thread_incs.load(Relaxed) + worker_incs;
    assert!(worker_incs > 0 && thread_incs.load(Relaxed) > 0);
    let body = get(addr, "/metrics", &[]).text();
    let c = check_body(&body, "final scrape");
    assert_eq!(c.sum, total as f64, "the final total");
    let own = |name: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} is missing"))
            .parse()
            .unwrap()
    };
    assert_eq!(own("shmetrics_exporter_scrapes_total"), scrapes as f64);
    assert_eq!(own("shmetrics_exporter_renders_total"), renders as f64);
    // The big body parses and lints clean for promtool too.
    let (code, out) = promtool_check(&body);
    assert_eq!(code, 0, "promtool: {out}");
    server.stop();
}

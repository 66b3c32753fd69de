//! `shmetrics-isolation`: the load generator of `benches/scrape_isolation.sh`.
//! It measures how much a scraping exporter slows down the processes that
//! write to the store.
//!
//! - `run --shmetrics BIN [--writers N] [--seconds S] [--series K]
//!   [--interval-ms I] [--dir D]`: creates a store of K series (default
//!   100,000: 90% counters, 10% histograms), then runs two phases of S
//!   seconds each (default 10) with N writer processes (default 4):
//!   (A) nobody scrapes; (B) `BIN serve` serves the store and is scraped
//!   every I ms (default 1000) for the full page. Prints a table.
//! - `write STORE SECONDS SEED`: one writer (started by `run`): a tight
//!   loop of counter increments and histogram observations on
//!   pre-resolved handles; every 64th update is timed alone. Prints one
//!   line: `updates elapsed_s max_ns p999_ns samples`.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{exit, Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shmetrics_core::{FamilyDesc, Kind, Options, Series, Store};
use shmetrics_testkit::http::request;
use shmetrics_testkit::serve::{find_metric, Serve};

const COUNTER: &str = "iso_requests";
const HIST: &str = "iso_latency_seconds";
const BUCKETS: [f64; 8] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];
/// One update in this many is timed on its own.
const SAMPLE_EVERY: u64 = 64;

fn counter_family() -> FamilyDesc {
    FamilyDesc::new(COUNTER, Kind::Counter)
        .help("Requests of the isolation benchmark.")
        .labels(&["shard", "id"])
}

fn hist_family() -> FamilyDesc {
    FamilyDesc::new(HIST, Kind::Histogram)
        .help("Latency of the isolation benchmark.")
        .labels(&["id"])
        .buckets(&BUCKETS)
}

/// Series per family for a total of `k`.
fn split(k: usize) -> (usize, usize) {
    let h = k / 10;
    (k - h, h)
}

fn die(msg: &str) -> ! {
    eprintln!("shmetrics-isolation: {msg}");
    exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("write") if args.len() == 4 => write(
            Path::new(&args[1]),
            args[2].parse().unwrap_or_else(|_| die("bad seconds")),
            args[3].parse().unwrap_or_else(|_| die("bad seed")),
        ),
        _ => die("usage: shmetrics-isolation run --shmetrics BIN [--writers N] [--seconds S] [--series K] [--interval-ms I] [--dir D]"),
    }
}

// ----- the writer ------------------------------------------------------------------

/// Opens the store and resolves every series (the store is already full:
/// resolution only looks them up).
fn handles(store: &Store) -> (Vec<Series>, Vec<Series>) {
    let (nc, nh) = split(store_series(store));
    let cf = store.register(&counter_family()).unwrap();
    let hf = store.register(&hist_family()).unwrap();
    let cs = (0..nc)
        .map(|i| {
            store
                .series(&cf, &[&(i % 16).to_string(), &i.to_string()])
                .unwrap()
        })
        .collect();
    let hs = (0..nh)
        .map(|i| store.series(&hf, &[&i.to_string()]).unwrap())
        .collect();
    (cs, hs)
}

/// The series count, recorded in the file name's sidecar by `setup`.
fn store_series(store: &Store) -> usize {
    let p = store.path().with_extension("series");
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| die(&format!("{}: {e}", p.display())))
        .trim()
        .parse()
        .unwrap_or_else(|_| die("bad series file"))
}

fn write(path: &Path, seconds: f64, seed: u64) {
    let store = Store::open(
        path,
        &Options {
            create: false,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| die(&format!("open: {e}")));
    let (cs, hs) = handles(&store);
    // Tell `run` we are ready, then wait for its go (a line on stdin), so
    // that all writers start together.
    println!("READY");
    std::io::stdout().flush().unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();

    let mut x = seed | 1;
    let mut lat: Vec<u32> = Vec::with_capacity(1 << 22);
    let mut n: u64 = 0;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    'outer: loop {
        for _ in 0..(SAMPLE_EVERY * 16) {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let timed = n.is_multiple_of(SAMPLE_EVERY);
            let t = timed.then(Instant::now);
            if n.is_multiple_of(2) {
                store
                    .counter_inc(cs[(x % cs.len() as u64) as usize])
                    .unwrap();
            } else {
                let v = (x >> 40) as f64 / (1u64 << 24) as f64 * 2.0;
                store
                    .observe(hs[(x % hs.len() as u64) as usize], v)
                    .unwrap();
            }
            if let Some(t) = t {
                lat.push(t.elapsed().as_nanos().min(u32::MAX as u128) as u32);
            }
            n += 1;
        }
        if Instant::now() >= end {
            break 'outer;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let max = lat.last().copied().unwrap_or(0);
    let p999 = lat
        .get(((lat.len() as f64 * 0.999) as usize).min(lat.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0);
    println!("{n} {elapsed} {max} {p999} {}", lat.len());
}

// ----- the driver ------------------------------------------------------------------

struct RunArgs {
    shmetrics: PathBuf,
    writers: usize,
    seconds: f64,
    series: usize,
    interval: Duration,
    dir: Option<PathBuf>,
}

fn parse_run(args: &[String]) -> RunArgs {
    let mut r = RunArgs {
        shmetrics: PathBuf::new(),
        writers: 4,
        seconds: 10.0,
        series: 100_000,
        interval: Duration::from_millis(1000),
        dir: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it
            .next()
            .unwrap_or_else(|| die(&format!("{a} needs a value")));
        let num = |v: &str| -> f64 { v.parse().unwrap_or_else(|_| die(&format!("bad {a} {v}"))) };
        match a.as_str() {
            "--shmetrics" => r.shmetrics = v.into(),
            "--writers" => r.writers = num(v) as usize,
            "--seconds" => r.seconds = num(v),
            "--series" => r.series = num(v) as usize,
            "--interval-ms" => r.interval = Duration::from_millis(num(v) as u64),
            "--dir" => r.dir = Some(v.into()),
            _ => die(&format!("unknown option {a}")),
        }
    }
    if r.shmetrics.as_os_str().is_empty() {
        die("--shmetrics BIN is required");
    }
    r
}

/// Creates the store and all its series.
fn setup(path: &Path, series: usize, writers: usize) {
    let _ = std::fs::remove_file(path);
    std::fs::write(path.with_extension("series"), series.to_string()).unwrap();
    let store = Store::open(
        path,
        &Options {
            max_series: (series + 16) as u32,
            max_writers: (writers + 8) as u32,
            label_bytes: 32 << 20,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| die(&format!("create store: {e}")));
    drop(handles(&store));
}

/// One writer's result.
#[derive(Clone, Copy, Default)]
struct WriterResult {
    updates: u64,
    elapsed: f64,
    max_ns: u32,
    p999_ns: u32,
}

struct Scrapes {
    count: usize,
    failed: usize,
    durations: Vec<f64>,
    renders: Vec<f64>,
    bytes: usize,
}

fn run_writers(me: &Path, store: &Path, a: &RunArgs) -> Vec<WriterResult> {
    let mut children: Vec<(Child, BufReader<std::process::ChildStdout>)> = (0..a.writers)
        .map(|i| {
            let mut c = Command::new(me)
                .arg("write")
                .arg(store)
                .arg(a.seconds.to_string())
                .arg((0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 * 0x1234_5678_9abc)).to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| die(&format!("spawn writer: {e}")));
            let out = BufReader::new(c.stdout.take().unwrap());
            (c, out)
        })
        .collect();
    let mut line = String::new();
    for (_, out) in &mut children {
        line.clear();
        out.read_line(&mut line).unwrap();
        if line.trim() != "READY" {
            die(&format!("writer said {line:?}"));
        }
    }
    for (c, _) in &mut children {
        c.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    children
        .into_iter()
        .map(|(mut c, mut out)| {
            let mut s = String::new();
            out.read_to_string(&mut s).unwrap();
            if !c.wait().unwrap().success() {
                die("a writer failed");
            }
            let f: Vec<f64> = s
                .split_whitespace()
                .map(|x| {
                    x.parse()
                        .unwrap_or_else(|_| die(&format!("writer said {s:?}")))
                })
                .collect();
            WriterResult {
                updates: f[0] as u64,
                elapsed: f[1],
                max_ns: f[2] as u32,
                p999_ns: f[3] as u32,
            }
        })
        .collect()
}

/// `GET /metrics` (text format, uncompressed); returns the body.
fn get_metrics(addr: SocketAddr) -> std::io::Result<String> {
    let r = request(
        addr,
        "GET",
        "/metrics",
        &[("Accept", "text/plain;version=0.0.4")],
    )?;
    if r.status != 200 {
        return Err(std::io::Error::other(format!("status {}", r.status)));
    }
    Ok(r.text())
}

fn scrape_loop(addr: SocketAddr, interval: Duration, stop: Arc<AtomicBool>) -> Scrapes {
    let mut r = Scrapes {
        count: 0,
        failed: 0,
        durations: Vec::new(),
        renders: Vec::new(),
        bytes: 0,
    };
    let mut next = Instant::now();
    while !stop.load(Relaxed) {
        let t = Instant::now();
        match get_metrics(addr) {
            Ok(body) => {
                r.count += 1;
                r.durations.push(t.elapsed().as_secs_f64());
                r.bytes = body.len();
                if let Some(v) = find_metric(&body, "shmetrics_exporter_last_render_seconds") {
                    r.renders.push(v);
                }
            }
            Err(_) => r.failed += 1,
        }
        next += interval;
        while Instant::now() < next && !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    r
}

struct Phase {
    name: &'static str,
    writers: Vec<WriterResult>,
    scrapes: Option<Scrapes>,
}

impl Phase {
    fn rate(&self) -> f64 {
        self.writers
            .iter()
            .map(|w| w.updates as f64 / w.elapsed)
            .sum()
    }
    fn max_us(&self) -> f64 {
        self.writers.iter().map(|w| w.max_ns).max().unwrap_or(0) as f64 / 1e3
    }
    fn p999_us(&self) -> f64 {
        // The worst writer's p99.9.
        self.writers.iter().map(|w| w.p999_ns).max().unwrap_or(0) as f64 / 1e3
    }
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(args: &[String]) {
    let a = parse_run(args);
    let me = std::env::current_exe().unwrap();
    let tmp = a.dir.clone().unwrap_or_else(|| {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() { shm } else { Path::new("/tmp") }
            .join(format!("shmetrics-iso-{}", std::process::id()))
    });
    std::fs::create_dir_all(&tmp).unwrap();
    let store = tmp.join("store");
    let t = Instant::now();
    setup(&store, a.series, a.writers);
    let (nc, nh) = split(a.series);
    eprintln!(
        "store {}: {nc} counter + {nh} histogram series ({} buckets), created in {:.1}s; \
         {} writers, {} s per phase, {} CPUs",
        store.display(),
        BUCKETS.len(),
        t.elapsed().as_secs_f64(),
        a.writers,
        a.seconds,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    eprintln!("phase A: no scraping");
    let phase_a = Phase {
        name: "A (no scrape)",
        writers: run_writers(&me, &store, &a),
        scrapes: None,
    };
    eprintln!("phase B: scraping every {:?}", a.interval);
    let phase_b = scraped_phase(&me, &store, &a);
    print_table(&phase_a, &phase_b);
    if a.dir.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

/// Phase B: the writers run while `shmetrics serve` is scraped.
fn scraped_phase(me: &Path, store: &Path, a: &RunArgs) -> Phase {
    // The render time is read from the scraped page itself.
    let exporter = Serve::with_bin(
        &a.shmetrics,
        &[
            OsStr::new("--web.exporter-metrics"),
            OsStr::new("--store"),
            store.as_os_str(),
        ],
    );
    let addr = exporter.addr;
    // One scrape first, so that phase B starts from a warm exporter.
    let _ = get_metrics(addr);
    let stop = Arc::new(AtomicBool::new(false));
    let scraper = {
        let stop = stop.clone();
        let interval = a.interval;
        std::thread::spawn(move || scrape_loop(addr, interval, stop))
    };
    let writers = run_writers(me, store, a);
    stop.store(true, Relaxed);
    let scrapes = scraper.join().unwrap();
    drop(exporter);
    Phase {
        name: "B (scrape 1/s)",
        writers,
        scrapes: Some(scrapes),
    }
}

/// The results of both phases, one row each, and their ratios.
fn print_table(phase_a: &Phase, phase_b: &Phase) {
    println!();
    println!(
        "{:<15} {:>12} {:>14} {:>12} {:>12} {:>8} {:>14} {:>14} {:>11}",
        "phase",
        "updates/s",
        "per writer/s",
        "worst (us)",
        "p99.9 (us)",
        "scrapes",
        "render (ms)",
        "scrape (ms)",
        "page (MB)"
    );
    for p in [phase_a, phase_b] {
        let per: Vec<String> = p
            .writers
            .iter()
            .map(|w| format!("{:.2}M", w.updates as f64 / w.elapsed / 1e6))
            .collect();
        let [n, render, scrape, page] = scrape_cells(p.scrapes.as_ref());
        println!(
            "{:<15} {:>11.2}M {:>14} {:>12.1} {:>12.2} {:>8} {:>14} {:>14} {:>11}",
            p.name,
            p.rate() / 1e6,
            per.join(" "),
            p.max_us(),
            p.p999_us(),
            n,
            render,
            scrape,
            page
        );
    }
    println!(
        "{:<15} {:>12.3} {:>14} {:>12.2} {:>12.2}",
        "ratio B/A",
        phase_b.rate() / phase_a.rate(),
        "",
        phase_b.max_us() / phase_a.max_us(),
        phase_b.p999_us() / phase_a.p999_us()
    );
    println!(
        "(an update is one counter_inc or one observe on a pre-resolved handle; every {SAMPLE_EVERY}th \
         is timed alone; worst and p99.9 are over all writers; render is the exporter's \
         shmetrics_exporter_last_render_seconds, scrape the client's full GET)"
    );
}

/// A phase's scrape columns: count (and failures), render and scrape
/// times, page size; dashes for a phase without scrapes.
fn scrape_cells(s: Option<&Scrapes>) -> [String; 4] {
    let Some(s) = s else {
        return ["-", "-", "-", "-"].map(String::from);
    };
    let failed = if s.failed > 0 {
        format!("+{}err", s.failed)
    } else {
        String::new()
    };
    let med_max = |v: &[f64]| {
        format!(
            "{:.0} med/{:.0} max",
            median(v) * 1e3,
            v.iter().copied().fold(0.0, f64::max) * 1e3
        )
    };
    [
        format!("{}{failed}", s.count),
        med_max(&s.renders),
        med_max(&s.durations),
        format!("{:.1}", s.bytes as f64 / 1e6),
    ]
}

//! StatsD push benchmark: shmetrics (workers add into shared memory, the
//! exporter's flusher sends DogStatsD deltas and distributions) against a
//! client that sends one datagram per event, in the same run, to the same
//! local UDP receiver written here.
//!
//! Run it with `benches/push/run.sh` (or `cargo bench -p shmetrics-push
//! --bench statsd`). It prints its figures; nothing passes or fails.
//!
//! Settings (environment): `BENCH_WORKERS` (4), `BENCH_SECS` per mode (5),
//! `BENCH_COUNTERS` counter series (8), `BENCH_HISTOGRAMS` histogram
//! series (4, 11 buckets each), `BENCH_INTERVAL` flush interval in seconds
//! (1; it must divide 10).
//!
//! Each worker is this binary run again with `--worker`. An event is one
//! update: a counter increment or a histogram observation, alternately,
//! spread round-robin over the series.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use shmetrics_core::{FamilyDesc, Kind, Options, Store};
use shmetrics_push::statsd::{Address, Config, Flavor, Flusher};

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The histogram's observed values: they cycle over the default buckets.
const VALUES: [f64; 12] = [
    0.003, 0.007, 0.02, 0.04, 0.07, 0.2, 0.4, 0.7, 2.0, 4.0, 7.0, 20.0,
];

// ----- workers -----------------------------------------------------------------

/// `--worker MODE ID START_NS SECS COUNTERS HISTOGRAMS TARGET`: waits until
/// `START_NS`, updates for `SECS`, prints `events counter_incs observes`.
fn worker(args: &[String]) {
    let mode = args[0].as_str();
    let id: usize = args[1].parse().unwrap();
    let start_ns: u64 = args[2].parse().unwrap();
    let secs: f64 = args[3].parse().unwrap();
    let (nc, nh): (usize, usize) = (args[4].parse().unwrap(), args[5].parse().unwrap());
    let target = &args[6];
    let wait = start_ns.saturating_sub(unix_ns());
    let mut incs = 0u64;
    let mut observes = 0u64;
    let mut bytes = 0u64;
    match mode {
        "shm" => {
            let store = Store::open(target, &Options::default()).unwrap();
            let (counters, hists) = register(&store, nc, nh);
            std::thread::sleep(Duration::from_nanos(wait));
            let deadline = Instant::now() + Duration::from_secs_f64(secs);
            let mut i = id;
            'run: loop {
                for _ in 0..1024 {
                    store.counter_inc(counters[i % nc]).unwrap();
                    store
                        .observe(hists[i % nh], VALUES[i % VALUES.len()])
                        .unwrap();
                    i += 1;
                }
                incs += 1024;
                observes += 1024;
                if Instant::now() >= deadline {
                    break 'run;
                }
            }
        }
        "udp" => {
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            sock.connect(target).unwrap();
            let counter_lines: Vec<Vec<u8>> = (0..nc)
                .map(|c| format!("bench.requests:1|c|#route:r{c}").into_bytes())
                .collect();
            let hist_lines: Vec<Vec<Vec<u8>>> = (0..nh)
                .map(|h| {
                    VALUES
                        .iter()
                        .map(|v| format!("bench.latency_seconds:{v}|d|#route:r{h}").into_bytes())
                        .collect()
                })
                .collect();
            std::thread::sleep(Duration::from_nanos(wait));
            let deadline = Instant::now() + Duration::from_secs_f64(secs);
            let mut i = id;
            'run: loop {
                for _ in 0..64 {
                    let line = &counter_lines[i % nc];
                    if sock.send(line).is_ok() {
                        incs += 1;
                        bytes += line.len() as u64;
                    }
                    let line = &hist_lines[i % nh][i % VALUES.len()];
                    if sock.send(line).is_ok() {
                        observes += 1;
                        bytes += line.len() as u64;
                    }
                    i += 1;
                }
                if Instant::now() >= deadline {
                    break 'run;
                }
            }
        }
        other => panic!("unknown worker mode {other}"),
    }
    println!("{} {incs} {observes} {bytes}", incs + observes);
}

fn register(
    store: &Store,
    nc: usize,
    nh: usize,
) -> (Vec<shmetrics_core::Series>, Vec<shmetrics_core::Series>) {
    let requests = store
        .register(
            &FamilyDesc::new("requests", Kind::Counter)
                .help("Requests.")
                .labels(&["route"]),
        )
        .unwrap();
    let latency = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .labels(&["route"]),
        )
        .unwrap();
    let counters = (0..nc)
        .map(|c| store.series(&requests, &[&format!("r{c}")]).unwrap())
        .collect();
    let hists = (0..nh)
        .map(|h| store.series(&latency, &[&format!("r{h}")]).unwrap())
        .collect();
    (counters, hists)
}

// ----- the receiver ---------------------------------------------------------------

#[derive(Default)]
struct Received {
    datagrams: AtomicU64,
    bytes: AtomicU64,
    lines: AtomicU64,
    /// Counter increments and observations the lines stand for (sample
    /// rates applied), to check that nothing was lost.
    counted: Mutex<(f64, f64)>,
}

/// A UDP receiver that counts datagrams, bytes and lines, and adds up
/// what `c` and `d` lines stand for.
fn receiver(sock: UdpSocket, got: Arc<Received>, stop: Arc<AtomicBool>) {
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buf = vec![0u8; 65_536];
    let (mut incs, mut obs) = (0.0, 0.0);
    while !stop.load(Relaxed) {
        let Ok(n) = sock.recv(&mut buf) else { continue };
        got.datagrams.fetch_add(1, Relaxed);
        got.bytes.fetch_add(n as u64, Relaxed);
        for line in buf[..n].split(|&b| b == b'\n') {
            got.lines.fetch_add(1, Relaxed);
            let line = std::str::from_utf8(line).unwrap_or("");
            let mut fields = line.split('|');
            let values = fields.next().unwrap_or("").split(':').skip(1);
            let ty = fields.next().unwrap_or("");
            let mut weight = 1.0;
            for f in fields {
                if let Some(r) = f.strip_prefix('@') {
                    weight = (1.0 / r.parse::<f64>().unwrap_or(1.0)).trunc();
                }
            }
            for v in values {
                match ty {
                    "c" => incs += v.parse::<f64>().unwrap_or(0.0) * weight,
                    "d" => obs += weight,
                    _ => {}
                }
            }
        }
        *got.counted.lock().unwrap() = (incs, obs);
    }
}

// ----- a mode's run -------------------------------------------------------------------

struct Figures {
    secs: f64,
    events: u64,
    incs: u64,
    observes: u64,
    /// Sent by the exporter or the clients.
    sent_datagrams: u64,
    sent_bytes: u64,
    /// What the receiver got.
    datagrams: u64,
    bytes: u64,
    lines: u64,
    counted: (f64, f64),
}

fn spawn_workers(mode: &str, run: Run, target: &str) -> Vec<Child> {
    let exe = std::env::current_exe().unwrap();
    let start_ns = unix_ns() + 700_000_000;
    (0..run.workers)
        .map(|id| {
            Command::new(&exe)
                .arg("--worker")
                .args([
                    mode.to_string(),
                    id.to_string(),
                    start_ns.to_string(),
                    run.secs.to_string(),
                    run.nc.to_string(),
                    run.nh.to_string(),
                    target.to_string(),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

fn collect(children: Vec<Child>) -> (u64, u64, u64, u64) {
    let mut sum = (0, 0, 0, 0);
    for mut c in children {
        let mut line = String::new();
        BufReader::new(c.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(c.wait().unwrap().success(), "a worker failed");
        let v: Vec<u64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        sum.0 += v[0];
        sum.1 += v[1];
        sum.2 += v[2];
        sum.3 += v[3];
    }
    sum
}

/// The settings of a run.
#[derive(Clone, Copy)]
struct Run {
    workers: usize,
    secs: f64,
    nc: usize,
    nh: usize,
    interval: f64,
}

fn run_mode(mode: &str, run: Run) -> Figures {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap().to_string();
    let got = Arc::new(Received::default());
    let stop = Arc::new(AtomicBool::new(false));
    let rx = {
        let (got, stop) = (got.clone(), stop.clone());
        std::thread::spawn(move || receiver(sock, got, stop))
    };
    let (events, incs, observes, sent_datagrams, sent_bytes) = if mode == "shm" {
        run_shm(run, &addr)
    } else {
        let children = spawn_workers("udp", run, &addr);
        let (e, i, o, b) = collect(children);
        (e, i, o, e, b)
    };
    // Let the receiver drain its socket.
    let mut last = u64::MAX;
    while got.datagrams.load(Relaxed) != last {
        last = got.datagrams.load(Relaxed);
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Relaxed);
    rx.join().unwrap();
    let counted = *got.counted.lock().unwrap();
    Figures {
        secs: run.secs,
        events,
        incs,
        observes,
        sent_datagrams,
        sent_bytes,
        datagrams: got.datagrams.load(Relaxed),
        bytes: got.bytes.load(Relaxed),
        lines: got.lines.load(Relaxed),
        counted,
    }
}

/// The shmetrics mode: workers update a store in shared memory, the
/// flusher sends DogStatsD to `addr`. Returns the workers' (events,
/// increments, observations) and the flusher's (datagrams, bytes).
fn run_shm(run: Run, addr: &str) -> (u64, u64, u64, u64, u64) {
    let dir = tempfile::Builder::new()
        .prefix("shmetrics-bench-")
        .tempdir_in(if std::path::Path::new("/dev/shm").is_dir() {
            "/dev/shm"
        } else {
            "/tmp"
        })
        .unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    register(&store, run.nc, run.nh);
    let config = Config::new(Address::parse(addr).unwrap(), Flavor::Dogstatsd)
        .with_interval_secs(run.interval)
        .unwrap()
        .with_prefix("bench")
        .unwrap();
    let flusher = Flusher::new(config);
    let stats = flusher.stats();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let reader = Store::open(&path, &Options::reader()).unwrap();
    let exporter = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(flusher.run(Arc::new(reader), async move {
            let _ = stop_rx.await;
        }));
    });
    let children = spawn_workers("shm", run, path.to_str().unwrap());
    let (e, i, o, _) = collect(children);
    // The last flush sends what the last interval gained.
    let _ = stop_tx.send(());
    exporter.join().unwrap();
    drop(store);
    (
        e,
        i,
        o,
        stats.datagrams_sent.load(Relaxed),
        stats.bytes_sent.load(Relaxed),
    )
}

fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.1}")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--worker") {
        worker(&args[i + 1..]);
        return;
    }
    let run = Run {
        workers: env("BENCH_WORKERS", 4),
        secs: env("BENCH_SECS", 5.0),
        nc: env("BENCH_COUNTERS", 8),
        nh: env("BENCH_HISTOGRAMS", 4),
        interval: env("BENCH_INTERVAL", 1.0),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "StatsD push: {} worker processes, {} s per mode, {} counter + {} histogram series \
         (11 buckets), {cores} cores; events alternate counter increments and observations",
        run.workers, run.secs, run.nc, run.nh
    );
    let mut results = HashMap::new();
    for mode in ["shm", "udp"] {
        results.insert(mode, run_mode(mode, run));
    }
    let (s, u) = (&results["shm"], &results["udp"]);
    print_table(run.interval, s, u);
    print_summary(run.workers, cores, s, u);
}

/// The figures of both modes, a row each.
fn print_table(interval: f64, s: &Figures, u: &Figures) {
    println!();
    println!(
        "{:<36} {:>10} {:>12} {:>10} {:>12} {:>10} {:>10} {:>10}",
        "mode",
        "events/s",
        "datagrams/s",
        "bytes/s",
        "events per",
        "received",
        "received",
        "received"
    );
    println!(
        "{:<36} {:>10} {:>12} {:>10} {:>12} {:>10} {:>10} {:>10}",
        "", "", "sent", "sent", "datagram", "dgrams/s", "bytes/s", "lines/s"
    );
    for (name, f) in [
        (format!("shmetrics (DogStatsD every {interval} s)"), s),
        ("baseline (a datagram per event)".to_string(), u),
    ] {
        println!(
            "{:<36} {:>10} {:>12} {:>10} {:>12} {:>10} {:>10} {:>10}",
            name,
            si(f.events as f64 / f.secs),
            si(f.sent_datagrams as f64 / f.secs),
            si(f.sent_bytes as f64 / f.secs),
            si(f.events as f64 / f.sent_datagrams.max(1) as f64),
            si(f.datagrams as f64 / f.secs),
            si(f.bytes as f64 / f.secs),
            si(f.lines as f64 / f.secs),
        );
    }
    println!();
}

/// Updates per core, the ratios, and the checks of what was received.
fn print_summary(workers: usize, cores: usize, s: &Figures, u: &Figures) {
    let per_core = s.events as f64 / s.secs / workers.min(cores) as f64;
    println!(
        "shmetrics updates per core: {} /s ({} workers on {} cores)",
        si(per_core),
        workers,
        cores
    );
    println!(
        "ratios shmetrics / baseline: events/s {:.1}x; datagrams/s sent {:.2e}x, bytes/s sent {:.2e}x \
         (per event: {:.2e}x datagrams, {:.2e}x bytes)",
        s.events as f64 / u.events as f64,
        s.sent_datagrams as f64 / u.sent_datagrams.max(1) as f64,
        s.sent_bytes as f64 / u.sent_bytes.max(1) as f64,
        (s.sent_datagrams as f64 / s.events as f64) / (u.sent_datagrams as f64 / u.events as f64),
        (s.sent_bytes as f64 / s.events as f64) / (u.sent_bytes as f64 / u.events as f64),
    );
    println!(
        "check, shmetrics: the receiver counted {} increments and {} observations; the workers made {} and {} ({})",
        s.counted.0,
        s.counted.1,
        s.incs,
        s.observes,
        if s.counted.0 == s.incs as f64 && s.counted.1 == s.observes as f64 {
            "exact"
        } else {
            "NOT EXACT"
        }
    );
    println!(
        "check, baseline: the clients sent {} datagrams, the receiver got {} ({:.1}% lost: one thread cannot keep up)",
        u.events,
        u.datagrams,
        100.0 * (1.0 - u.datagrams as f64 / u.events.max(1) as f64)
    );
}

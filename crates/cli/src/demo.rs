//! `shmetrics demo`: a pre-fork web server in miniature.
//!
//! The demo starts worker processes that record request metrics into one
//! store, crashes (SIGKILL) a random worker now and then and lets others
//! retire after a number of requests, as gunicorn's `max_requests` and
//! php-fpm's `pm.max_requests` do. It prints the merged totals every second:
//! counts keep rising across restarts, and the in-flight gauge counts only
//! live workers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use shmetrics_core::{Family, FamilyDesc, GaugeMode, Kind, Options, Series, Store, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use crate::out::outln;
use crate::AnyResult;

/// Options of `shmetrics demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Worker processes.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long)]
    duration: Option<f64>,
    /// Requests per second per worker.
    #[arg(long, default_value_t = 2000)]
    rate: u64,
    /// Crash (SIGKILL) a random worker every this many seconds; 0 never.
    #[arg(long, default_value_t = 3.0)]
    crash_every: f64,
    /// The store file (default: a new file under /dev/shm, removed at exit).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Where the exporter listens. `--listen` is the old name.
    #[arg(
        long = "web.listen-address",
        visible_alias = "listen",
        value_name = "ADDRESS",
        default_value = shmetrics_exporter::DEFAULT_LISTEN
    )]
    listen: std::net::SocketAddr,
    /// The exporter's logging (the demo itself prints to standard output).
    #[command(flatten)]
    log: crate::log::LogArgs,
}

/// Options of the hidden `demo-worker` command.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    #[arg(long)]
    store: PathBuf,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    rate: u64,
    /// Exit cleanly after this many requests.
    #[arg(long)]
    max_requests: u64,
}

const ROUTES: [&str; 5] = ["/", "/api/users", "/api/orders", "/static/app.js", "/login"];
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

struct DemoFamilies {
    requests: Family,
    latency: Family,
    quantiles: Family,
    in_flight: Family,
    starts: Family,
}

fn families(store: &Store) -> shmetrics_core::Result<DemoFamilies> {
    Ok(DemoFamilies {
        requests: store.register(
            &FamilyDesc::new("demo_http_requests_total", Kind::Counter)
                .help("HTTP requests served, by route and status.")
                .labels(&["route", "status"]),
        )?,
        latency: store.register(
            &FamilyDesc::new("demo_http_request_duration_seconds", Kind::Histogram)
                .help("HTTP request latency.")
                .labels(&["route"])
                .buckets(&LATENCY_BUCKETS),
        )?,
        quantiles: store.register(
            &FamilyDesc::new("demo_http_request_latency_seconds", Kind::Summary)
                .help("HTTP request latency quantiles over the last minute, all workers merged.")
                .quantiles(&[0.5, 0.9, 0.99])
                .max_age(Duration::from_secs(60), 6),
        )?,
        in_flight: store.register(
            &FamilyDesc::new("demo_http_requests_in_flight", Kind::Gauge)
                .help("Requests being served now, over live workers.")
                .gauge_mode(GaugeMode::LiveSum),
        )?,
        starts: store.register(
            &FamilyDesc::new("demo_worker_starts_total", Kind::Counter)
                .help("Worker processes started by the demo.")
                .labels(&["reason"]),
        )?,
    })
}

/// A small xorshift generator: the demo needs no cryptographic randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The worker: serves simulated requests until it reaches its quota or
/// its parent goes away.
pub fn worker(args: WorkerArgs) -> AnyResult {
    let store = Store::open(
        &args.store,
        &Options {
            create: false,
            ..Options::default()
        },
    )?;
    let fams = families(&store)?;
    let parent = std::os::unix::process::parent_id();
    let mut rng = Rng(args.seed | 1);
    // Handles are looked up once per label set and cached, as the
    // language bindings do.
    let mut counters: HashMap<(usize, &str), Series> = HashMap::new();
    let mut latencies: Vec<Series> = Vec::new();
    for r in ROUTES {
        latencies.push(store.series(&fams.latency, &[r])?);
    }
    let in_flight = store.series(&fams.in_flight, &[])?;
    let quantiles = store.series(&fams.quantiles, &[])?;
    let batch = 20;
    let pause = Duration::from_secs_f64(batch as f64 / args.rate.max(1) as f64);
    let mut served = 0;
    while served < args.max_requests {
        for _ in 0..batch {
            store.gauge_add(in_flight, 1.0)?;
            let route = (rng.next() % ROUTES.len() as u64) as usize;
            let roll = rng.unit();
            let status = if roll < 0.01 {
                "500"
            } else if roll < 0.05 {
                "404"
            } else {
                "200"
            };
            // Log-normal-ish latency around 20 ms with a long tail.
            let latency =
                0.02 * (-(rng.unit().max(1e-12)).ln()).powf(1.5) * (1.0 + route as f64 * 0.3);
            let key = (route, status);
            let c = match counters.get(&key) {
                Some(c) => *c,
                None => {
                    let c = store.series(&fams.requests, &[ROUTES[route], status])?;
                    counters.insert(key, c);
                    c
                }
            };
            store.counter_inc(c)?;
            store.observe(latencies[route], latency)?;
            store.observe(quantiles, latency)?;
            store.gauge_add(in_flight, -1.0)?;
            served += 1;
        }
        // Leave a request in flight while sleeping now and then, so the
        // gauge has something to show.
        let hold = rng.unit() < 0.5;
        if hold {
            store.gauge_add(in_flight, 1.0)?;
        }
        std::thread::sleep(pause);
        if hold {
            store.gauge_add(in_flight, -1.0)?;
        }
        if std::os::unix::process::parent_id() != parent {
            break;
        }
    }
    Ok(())
}

struct Totals {
    requests: f64,
    observations: u64,
    in_flight: f64,
    /// The latency median and 99th percentile over the last minute.
    p50: f64,
    p99: f64,
}

fn totals(store: &Store) -> shmetrics_core::Result<(Totals, shmetrics_core::StoreStats, Duration)> {
    let t = Instant::now();
    let snap = store.snapshot()?;
    let took = t.elapsed();
    let mut out = Totals {
        requests: 0.0,
        observations: 0,
        in_flight: 0.0,
        p50: f64::NAN,
        p99: f64::NAN,
    };
    for f in snap.families() {
        for s in f.series() {
            match (f.name(), s.value()) {
                ("demo_http_requests", Value::Counter(v)) => out.requests += v,
                ("demo_http_request_duration_seconds", Value::Histogram { cumulative, .. }) => {
                    out.observations += cumulative.last().copied().unwrap_or(0)
                }
                ("demo_http_requests_in_flight", Value::Gauge(v)) => out.in_flight += v,
                ("demo_http_request_latency_seconds", Value::Summary { quantiles, .. }) => {
                    for q in quantiles {
                        if q.quantile == 0.5 {
                            out.p50 = q.value;
                        } else if q.quantile == 0.99 {
                            out.p99 = q.value;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok((out, snap.stats().clone(), took))
}

/// Runs the demo.
pub fn run(args: DemoArgs) -> AnyResult {
    let (path, temporary) = match &args.store {
        Some(p) => (p.clone(), false),
        None => (
            PathBuf::from(format!("/dev/shm/shmetrics-demo-{}", std::process::id())),
            true,
        ),
    };
    let store = Store::open(&path, &Options::default())?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))?;
    }
    let mut spawner = Spawner {
        exe: std::env::current_exe()?,
        path: &path,
        rate: args.rate,
        store: &store,
        fams: families(&store)?,
        rng: Rng(0x9e37_79b9_7f4a_7c15 ^ std::process::id() as u64),
    };
    let mut exporter = Command::new(&spawner.exe)
        .args(["serve", "--exit-with-parent", "--store"])
        .arg(&path)
        .args(["--web.listen-address", &args.listen.to_string()])
        .args(args.log.to_args())
        .stdin(Stdio::null())
        .spawn()?;
    wait_until_serving(args.listen, &mut exporter)?;
    print_banner(&args, &path)?;
    let mut workers: Vec<Child> = Vec::new();
    for _ in 0..args.workers {
        workers.push(spawner.spawn("initial")?);
    }
    let supervised = supervise(&args, &stop, &mut spawner, &mut workers);
    for w in workers.iter_mut() {
        let _ = w.kill();
        let _ = w.wait();
    }
    // A failure (a closed stdout among them) still stops the exporter
    // and removes a temporary store.
    let reported = supervised.and_then(|()| print_final(&store, args.listen));
    let _ = exporter.kill();
    let _ = exporter.wait();
    if temporary {
        drop(store);
        std::fs::remove_file(&path)?;
        reported?;
    } else {
        reported?;
        outln!()?;
        outln!(
            "the store is kept at {}; try `shmetrics inspect --store {}`",
            path.display(),
            path.display()
        )?;
    }
    Ok(())
}

/// Starts demo workers, each counted in `demo_worker_starts_total` with
/// the reason it was started.
struct Spawner<'a> {
    exe: PathBuf,
    path: &'a std::path::Path,
    rate: u64,
    store: &'a Store,
    fams: DemoFamilies,
    rng: Rng,
}

impl Spawner<'_> {
    fn spawn(&mut self, reason: &str) -> Result<Child, Box<dyn std::error::Error>> {
        let quota = self.rate * (5 + self.rng.next() % 10); // retire after 5 to 15 s of work
        let child = Command::new(&self.exe)
            .args(["demo-worker", "--store"])
            .arg(self.path)
            .args([
                "--seed",
                &self.rng.next().to_string(),
                "--rate",
                &self.rate.to_string(),
            ])
            .args(["--max-requests", &quota.to_string()])
            .stdin(Stdio::null())
            .spawn()?;
        let starts = self.store.series(&self.fams.starts, &[reason])?;
        self.store.counter_inc(starts)?;
        Ok(child)
    }
}

fn print_banner(args: &DemoArgs, path: &std::path::Path) -> std::io::Result<()> {
    outln!(
        "shmetrics demo: {} workers writing to {}",
        args.workers,
        path.display()
    )?;
    outln!("the exporter (a separate process) serves http://{}/metrics and a status page at http://{}/", args.listen, args.listen)?;
    outln!("every {}s a random worker is killed with SIGKILL; workers also retire after a quota of requests", args.crash_every)?;
    outln!(
        "inspect it from another shell: shmetrics inspect --store {}",
        path.display()
    )?;
    outln!()?;
    outln!(
        "{:>6} {:>12} {:>10} {:>12} {:>15} {:>9} {:>13} {:>9} {:>10}",
        "time",
        "requests",
        "req/s",
        "observations",
        "p50/p99 (ms)",
        "in-flight",
        "writers l/d",
        "restarts",
        "snapshot"
    )
}

/// Restarts retired workers, kills one now and then, and prints a line a
/// second, until Ctrl-C or the duration.
fn supervise(
    args: &DemoArgs,
    stop: &AtomicBool,
    spawner: &mut Spawner<'_>,
    workers: &mut [Child],
) -> AnyResult {
    let start = Instant::now();
    let mut last_crash = Instant::now();
    let mut last_print = Instant::now();
    let mut last_requests = 0.0;
    let mut restarts = 0u64;
    let deadline = args.duration.map(Duration::from_secs_f64);
    while !stop.load(Ordering::SeqCst) && deadline.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        for w in workers.iter_mut() {
            if let Some(_status) = w.try_wait()? {
                *w = spawner.spawn("retired")?;
                restarts += 1;
            }
        }
        if args.crash_every > 0.0 && last_crash.elapsed().as_secs_f64() >= args.crash_every {
            let i = (spawner.rng.next() % workers.len() as u64) as usize;
            workers[i].kill()?;
            workers[i].wait()?;
            workers[i] = spawner.spawn("crashed")?;
            restarts += 1;
            last_crash = Instant::now();
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            let dt = last_print.elapsed().as_secs_f64();
            last_print = Instant::now();
            let (t, st, took) = totals(spawner.store)?;
            outln!(
                "{:>5.0}s {:>12.0} {:>10.0} {:>12} {:>15} {:>9.0} {:>13} {:>9} {:>8}µs",
                start.elapsed().as_secs_f64(),
                t.requests,
                (t.requests - last_requests) / dt,
                t.observations,
                format!("{:.1}/{:.1}", t.p50 * 1e3, t.p99 * 1e3),
                t.in_flight,
                format!("{}/{}", st.writers_live, st.writers_dead),
                restarts,
                took.as_micros()
            )?;
            last_requests = t.requests;
        }
    }
    Ok(())
}

/// The totals once the workers are gone, and a sample of the exposition.
fn print_final(store: &Store, listen: SocketAddr) -> AnyResult {
    let (t, st, _) = totals(store)?;
    outln!()?;
    outln!(
        "final: {:.0} requests, {} latency observations, in-flight {:.0} (no live workers left), \
         {} writer slots served {} slot claims",
        t.requests,
        t.observations,
        t.in_flight,
        st.writers_live + st.writers_dead,
        st.writer_claims_total
    )?;
    outln!()?;
    outln!("a sample of http://{listen}/metrics, as Prometheus would scrape it:")?;
    let text = http_get(listen, "/metrics")?;
    let sample = text
        .lines()
        .filter(|l| l.contains("demo_") && (!l.contains("_bucket") || l.contains("route=\"/\"")))
        .take(64);
    for line in sample {
        outln!("  {line}")?;
    }
    Ok(())
}

/// A minimal HTTP/1.0 GET, enough for the demo to show what the exporter
/// serves without another dependency.
fn http_get(addr: SocketAddr, path: &str) -> Result<String, Box<dyn std::error::Error>> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(conn, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut response = String::new();
    conn.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or("malformed HTTP response")?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return Err(format!("GET {path}: {}", head.lines().next().unwrap_or("")).into());
    }
    Ok(body.to_string())
}

/// Waits for the exporter to answer `/healthz`; fails if it exits.
fn wait_until_serving(addr: SocketAddr, exporter: &mut Child) -> AnyResult {
    let start = Instant::now();
    loop {
        if http_get(addr, "/healthz").is_ok() {
            return Ok(());
        }
        if let Some(status) = exporter.try_wait()? {
            return Err(format!(
                "the exporter exited ({status}); is {addr} in use? pick another with --web.listen-address"
            )
            .into());
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = exporter.kill();
            return Err(format!("the exporter did not answer on {addr} within 10 s").into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

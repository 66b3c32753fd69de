//! A real Prometheus (Debian's `prometheus`) scrapes the exporter while
//! the store holds what this process and two worker processes wrote; the
//! values are then read back through Prometheus' query API. Once as
//! Prometheus scrapes by default (OpenMetrics), once with native histograms
//! enabled, which makes it ask for the protobuf format first; and a native
//! histogram written by three processes, queried with `histogram_quantile`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shmetrics_core::{FamilyDesc, Kind, NativeOpts, Options, Store};

use crate::util::*;

const BOUNDS: [f64; 5] = [0.1, 0.2, 0.5, 1.0, 2.0];
/// What this process observes.
const PARENT_OBS: [f64; 8] = [0.05, 0.05, 0.15, 0.3, 0.3, 0.7, 1.5, 3.0];
/// What each worker observes.
const WORKER_OBS: [f64; 4] = [0.15, 0.15, 0.3, 0.4];
const WORKERS: usize = 2;
/// Each worker's increments of `jobs_processed_total{queue="email"}`.
const WORKER_EMAIL: u64 = 250;
/// Each worker's gauge value (live-sum mode: the values add up).
const WORKER_POOL: f64 = 1.25;

const TRICKY_ROUTE: &str = "/a\"b\\c\nd";
const TRICKY_STATUS: &str = "é日本";

fn jobs() -> FamilyDesc {
    FamilyDesc::new("jobs_processed_total", Kind::Counter)
        .help("Jobs processed.")
        .labels(&["queue"])
}

fn durations() -> FamilyDesc {
    FamilyDesc::new("job_duration_seconds", Kind::Histogram)
        .help("Job durations.")
        .buckets(&BOUNDS)
}

fn pool() -> FamilyDesc {
    FamilyDesc::new("pool_size", Kind::Gauge).help("Pool size, summed over live processes.")
}

/// The worker side (see `tests.rs`): `arg` is the worker's number, 1 or 2.
pub fn worker(path: &Path, arg: &str) {
    let n: u64 = arg.parse().unwrap();
    let store = Store::open(
        path,
        &Options {
            create: false,
            ..Options::default()
        },
    )
    .unwrap();
    let j = store.register(&jobs()).unwrap();
    let email = store.series(&j, &["email"]).unwrap();
    for _ in 0..WORKER_EMAIL {
        store.counter_inc(email).unwrap();
    }
    store
        .counter_add(store.series(&j, &["sms"]).unwrap(), (10 * n) as f64)
        .unwrap();
    let h = store.register(&durations()).unwrap();
    let s = store.series(&h, &[]).unwrap();
    for o in WORKER_OBS {
        store.observe(s, o).unwrap();
    }
    let p = store.register(&pool()).unwrap();
    store
        .gauge_set(store.series(&p, &[]).unwrap(), WORKER_POOL)
        .unwrap();
    worker_ready();
    // Stay alive (a live-sum gauge counts live writers) until told.
    wait_stdin_closed();
}

/// `histogram_quantile` as Prometheus (2.x, classic buckets) computes it
/// over cumulative `(upper bound, count)` pairs ending with `+Inf`.
fn prometheus_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    let total = buckets.last().unwrap().1;
    let rank = q * total;
    let b = buckets[..buckets.len() - 1]
        .iter()
        .position(|(_, c)| *c >= rank)
        .unwrap_or(buckets.len() - 1);
    if b == buckets.len() - 1 {
        return buckets[buckets.len() - 2].0;
    }
    if b == 0 && buckets[0].0 <= 0.0 {
        return buckets[0].0;
    }
    let (mut start, end, mut count, mut rank) = (0.0, buckets[b].0, buckets[b].1, rank);
    if b > 0 {
        start = buckets[b - 1].0;
        count -= buckets[b - 1].1;
        rank -= buckets[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

/// Debian's Prometheus (2.42 on bookworm).
const DEBIAN_PROMETHEUS: &str = "/usr/bin/prometheus";

/// A running Prometheus, killed when dropped.
pub struct Prometheus {
    process: KillOnDrop,
    /// Where its API listens.
    pub addr: std::net::SocketAddr,
    log: std::path::PathBuf,
}

impl Prometheus {
    /// Scrapes `target` over plain HTTP every second, as job `shmetrics`.
    pub fn start(dir: &Path, target: std::net::SocketAddr) -> Prometheus {
        Prometheus::start_scraping(
            dir,
            &format!(
                "scrape_configs:\n  - job_name: shmetrics\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
    }

    /// Runs with `scrape_configs` (a YAML `scrape_configs:` block) and a
    /// 1 s scrape interval. The configuration is written to
    /// `dir/prometheus.yml`, so relative paths in it resolve against `dir`.
    pub fn start_scraping(dir: &Path, scrape_configs: &str) -> Prometheus {
        Prometheus::start_with(dir, scrape_configs, &[])
    }

    /// As [`Prometheus::start_scraping`], with extra command-line flags
    /// (such as `--enable-feature=native-histograms`).
    pub fn start_with(dir: &Path, scrape_configs: &str, flags: &[&str]) -> Prometheus {
        Prometheus::start_bin(Path::new(DEBIAN_PROMETHEUS), dir, scrape_configs, flags)
    }

    /// As [`Prometheus::start_with`], running the Prometheus at `bin`
    /// (Prometheus 3: see `prometheus3.rs`).
    pub fn start_bin(bin: &Path, dir: &Path, scrape_configs: &str, flags: &[&str]) -> Prometheus {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1m\n{scrape_configs}"
            ),
        )
        .unwrap();
        // The port was free a moment ago; if another process took it in
        // between, Prometheus exits and gets another one.
        for attempt in 0.. {
            let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
            let log = dir.join(format!("prometheus-{attempt}.log"));
            let data = dir.join(format!("data-{attempt}"));
            let child = Command::new(bin)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", data.display()))
                .arg(format!("--web.listen-address={addr}"))
                .args(flags)
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(&log).unwrap())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "cannot run {} ({e}): {}",
                        bin.display(),
                        if bin == Path::new(DEBIAN_PROMETHEUS) {
                            "install the Debian package `prometheus` (./run-tests does)"
                        } else {
                            "build it with scripts/build-peers.sh (./run-tests does)"
                        }
                    )
                });
            let mut p = Prometheus {
                process: KillOnDrop(child),
                addr,
                log,
            };
            let ready = wait_for(
                "Prometheus to be ready",
                Duration::from_secs(90),
                Duration::from_millis(200),
                || {
                    if let Some(status) = p.process.0.try_wait().unwrap() {
                        return Some(Err(status));
                    }
                    match request(addr, "GET", "/-/ready", &[]) {
                        Ok(r) if r.status == 200 => Some(Ok(())),
                        _ => None,
                    }
                },
            );
            match ready {
                Ok(()) => return p,
                Err(status) if attempt < 3 => {
                    eprintln!("prometheus exited ({status}), retrying:\n{}", p.log_text());
                    p.process.0.wait().ok();
                }
                Err(status) => panic!("prometheus exited ({status}):\n{}", p.log_text()),
            }
        }
        unreachable!()
    }

    /// What it logged.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// An instant query; returns the result vector. Panics on an error.
    pub fn query(&self, q: &str) -> Vec<serde_json::Value> {
        let path = format!("/api/v1/query?query={}", url_encode(q));
        let r = get(self.addr, &path, &[]);
        let body = r.text();
        assert_eq!(r.status, 200, "query {q}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "query {q}: {body}");
        assert_eq!(v["data"]["resultType"], "vector", "query {q}: {body}");
        v["data"]["result"].as_array().unwrap().clone()
    }

    /// A GET of its HTTP API (`path` with its query string); returns
    /// `data`. Panics on an error.
    pub fn api(&self, path: &str) -> serde_json::Value {
        let r = get(self.addr, path, &[]);
        let body = r.text();
        assert_eq!(r.status, 200, "{path}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{path}: {body}");
        v["data"].clone()
    }

    /// The single value of a query that must return one sample.
    pub fn value(&self, q: &str) -> f64 {
        let result = self.query(q);
        assert_eq!(result.len(), 1, "query {q}: {result:?}");
        result[0]["value"][1].as_str().unwrap().parse().unwrap()
    }
}

#[test]
fn real_prometheus_scrape() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(
        &path,
        &Options {
            max_series: 256,
            max_writers: 8,
            ..Options::default()
        },
    )
    .unwrap();

    // This process's writes.
    let j = store.register(&jobs()).unwrap();
    let email = store.series(&j, &["email"]).unwrap();
    for _ in 0..100 {
        store.counter_inc(email).unwrap();
    }
    store.counter_add(email, 0.5).unwrap();
    let h = store.register(&durations()).unwrap();
    let s = store.series(&h, &[]).unwrap();
    for o in PARENT_OBS {
        store.observe(s, o).unwrap();
    }
    let p = store.register(&pool()).unwrap();
    store
        .gauge_set(store.series(&p, &[]).unwrap(), 7.5)
        .unwrap();
    let http = store
        .register(
            &FamilyDesc::new("http_requests_total", Kind::Counter)
                .help("Requests.")
                .labels(&["route", "status"]),
        )
        .unwrap();
    store
        .counter_add(
            store.series(&http, &[TRICKY_ROUTE, TRICKY_STATUS]).unwrap(),
            3.0,
        )
        .unwrap();

    // The workers' writes; they stay alive until the end.
    let workers: Vec<Rerun> = (1..=WORKERS)
        .map(|n| Rerun::start("prometheus", &path, &n.to_string()))
        .collect();
    let written_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();

    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
    });
    let prom = Prometheus::start(dir.path(), server.addr);

    // Wait for a successful scrape that started after every write.
    let scraped_at = wait_for(
        "Prometheus to scrape the exporter",
        Duration::from_secs(90),
        Duration::from_millis(250),
        || {
            let r = prom.query("timestamp(up{job=\"shmetrics\"} == 1)");
            let t: f64 = r.first()?["value"][1].as_str()?.parse().ok()?;
            (t > written_at + 0.001).then_some(t)
        },
    );
    eprintln!("scraped at {scraped_at}, written at {written_at}");

    // The target is healthy.
    let r = get(prom.addr, "/api/v1/targets", &[]);
    let targets: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    let active = targets["data"]["activeTargets"].as_array().unwrap();
    assert_eq!(active.len(), 1, "{targets}");
    assert_eq!(active[0]["health"], "up", "{targets}\n{}", prom.log_text());
    assert_eq!(active[0]["lastError"], "", "{targets}");

    // Counters: what this process and the workers added.
    let workers_sms: u64 = (1..=WORKERS as u64).map(|n| 10 * n).sum();
    let email_total = 100.5 + (WORKERS as u64 * WORKER_EMAIL) as f64;
    assert_eq!(
        prom.value("jobs_processed_total{job=\"shmetrics\",queue=\"email\"}"),
        email_total
    );
    assert_eq!(
        prom.value("jobs_processed_total{job=\"shmetrics\",queue=\"sms\"}"),
        workers_sms as f64
    );
    assert_eq!(
        prom.value("sum(jobs_processed_total{job=\"shmetrics\"})"),
        email_total + workers_sms as f64
    );

    // The gauge: live sum over this process and the workers.
    assert_eq!(
        prom.value("pool_size{job=\"shmetrics\"}"),
        7.5 + WORKERS as f64 * WORKER_POOL
    );

    // The histogram, from the raw cumulative buckets.
    let mut all: Vec<f64> = PARENT_OBS.to_vec();
    for _ in 0..WORKERS {
        all.extend_from_slice(&WORKER_OBS);
    }
    let buckets: Vec<(f64, f64)> = BOUNDS
        .iter()
        .chain(&[f64::INFINITY])
        .map(|b| (*b, all.iter().filter(|o| **o <= *b).count() as f64))
        .collect();
    assert_eq!(
        prom.value("job_duration_seconds_count{job=\"shmetrics\"}"),
        all.len() as f64
    );
    let sum = prom.value("job_duration_seconds_sum{job=\"shmetrics\"}");
    assert!(
        (sum - all.iter().sum::<f64>()).abs() < 1e-9,
        "sum {sum}, expected {}",
        all.iter().sum::<f64>()
    );
    let got = prom.query("job_duration_seconds_bucket{job=\"shmetrics\"}");
    assert_eq!(got.len(), buckets.len(), "{got:?}");
    for (b, n) in &buckets {
        let le = if b.is_infinite() {
            "+Inf".to_string()
        } else {
            b.to_string()
        };
        let found = got
            .iter()
            .find(|s| {
                let v = s["metric"]["le"].as_str().unwrap();
                let v: f64 = if v == "+Inf" {
                    f64::INFINITY
                } else {
                    v.parse().unwrap()
                };
                v == *b
            })
            .unwrap_or_else(|| panic!("no bucket le={le}: {got:?}"));
        let value: f64 = found["value"][1].as_str().unwrap().parse().unwrap();
        assert_eq!(value, *n, "bucket le={le}");
    }
    // Worked by hand: 16 observations, cumulative 2, 7, 13, 14, 15, 16.
    // q=0.75: rank 12 falls in (0.2, 0.5], 5 of its 6 → 0.2 + 0.3 × 5/6.
    // q=0.5: rank 8 → 0.2 + 0.3 × 1/6. q=0.99: rank 15.84 is in +Inf →
    // the highest finite bound, 2.
    for (q, by_hand) in [(0.75, 0.45), (0.5, 0.25), (0.99, 2.0)] {
        let expected = prometheus_quantile(q, &buckets);
        assert!((expected - by_hand).abs() < 1e-12, "{q}: {expected}");
        let got = prom.value(&format!(
            "histogram_quantile({q}, sum by (le) (job_duration_seconds_bucket{{job=\"shmetrics\"}}))"
        ));
        assert!(
            (got - expected).abs() < 1e-9,
            "histogram_quantile({q}) = {got}, expected {expected}"
        );
    }

    // Label values that need escaping arrive intact.
    let r = prom.query("http_requests_total{job=\"shmetrics\"}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["metric"]["route"], TRICKY_ROUTE, "{r:?}");
    assert_eq!(r[0]["metric"]["status"], TRICKY_STATUS, "{r:?}");
    assert_eq!(r[0]["value"][1], "3", "{r:?}");

    // Prometheus negotiated OpenMetrics: only that format has `_created`.
    let r = prom.query("jobs_processed_created{job=\"shmetrics\"}");
    assert_eq!(
        r.len(),
        2,
        "no _created series: was OpenMetrics negotiated? {r:?}"
    );

    // The exporter's own metrics were scraped too.
    // (The first scrape reports the scrapes answered before it: none.)
    assert!(prom.value("shmetrics_exporter_scrapes_total{job=\"shmetrics\"}") >= 0.0);
    assert_eq!(
        prom.value("shmetrics_store_series{job=\"shmetrics\",kind=\"capacity\"}"),
        256.0
    );
    assert_eq!(
        prom.value("shmetrics_store_writers{job=\"shmetrics\",state=\"live\"}"),
        1.0 + WORKERS as f64
    );

    drop(prom);
    for w in workers {
        w.finish();
    }
    server.stop();
}

/// Prometheus 2.42 with `--enable-feature=native-histograms` asks for the
/// protobuf format first; the exporter serves it, and every value arrives
/// exactly: counters (named with `_total`), gauges (one with a unit, which
/// this Prometheus does not know and must skip), a classic histogram's
/// buckets, count and sum, a summary's count and sum, label values that
/// the text formats escape.
#[test]
fn real_prometheus_scrapes_protobuf() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(
        &path,
        &Options {
            max_series: 256,
            max_writers: 8,
            ..Options::default()
        },
    )
    .unwrap();

    let j = store.register(&jobs()).unwrap();
    let email = store.series(&j, &["email"]).unwrap();
    for _ in 0..100 {
        store.counter_inc(email).unwrap();
    }
    store.counter_add(email, 0.5).unwrap();
    store
        .counter_add(store.series(&j, &["sms"]).unwrap(), 30.0)
        .unwrap();
    let h = store.register(&durations()).unwrap();
    let s = store.series(&h, &[]).unwrap();
    for o in PARENT_OBS {
        store.observe(s, o).unwrap();
    }
    let p = store.register(&pool()).unwrap();
    store
        .gauge_set(store.series(&p, &[]).unwrap(), 7.5)
        .unwrap();
    let q = store
        .register(
            &FamilyDesc::new("queue_size_bytes", Kind::Gauge)
                .help("Bytes queued.")
                .unit("bytes"),
        )
        .unwrap();
    store
        .gauge_set(store.series(&q, &[]).unwrap(), -1024.5)
        .unwrap();
    let rpc = store
        .register(
            &FamilyDesc::new("rpc_duration_seconds", Kind::Summary)
                .help("RPC latency.")
                .labels(&["service"]),
        )
        .unwrap();
    let auth = store.series(&rpc, &["auth"]).unwrap();
    for o in [1.5, 2.5, 0.125] {
        store.observe(auth, o).unwrap();
    }
    let http = store
        .register(
            &FamilyDesc::new("http_requests_total", Kind::Counter)
                .help("Requests.")
                .labels(&["route", "status"]),
        )
        .unwrap();
    store
        .counter_add(
            store.series(&http, &[TRICKY_ROUTE, TRICKY_STATUS]).unwrap(),
            3.0,
        )
        .unwrap();
    let written_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();

    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
    });
    let prom = Prometheus::start_with(
        dir.path(),
        &format!(
            "scrape_configs:\n  - job_name: shmetrics\n    static_configs:\n      - targets: ['{}']\n",
            server.addr
        ),
        &["--enable-feature=native-histograms"],
    );

    // Wait for a scrape that started after every write, and that reports
    // (in the exporter's own counter, which counts the scrapes answered
    // before it) an earlier scrape served in protobuf.
    wait_for(
        "Prometheus to scrape the exporter in protobuf",
        Duration::from_secs(90),
        Duration::from_millis(250),
        || {
            let r = prom.query("timestamp(up{job=\"shmetrics\"} == 1)");
            let t: f64 = r.first()?["value"][1].as_str()?.parse().ok()?;
            let r = prom.query(
                "shmetrics_exporter_scrapes_by_format_total{job=\"shmetrics\",format=\"protobuf\"} >= 1",
            );
            (t > written_at + 0.001 && !r.is_empty()).then_some(())
        },
    );

    // The target is healthy.
    let r = get(prom.addr, "/api/v1/targets", &[]);
    let targets: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    let active = targets["data"]["activeTargets"].as_array().unwrap();
    assert_eq!(active.len(), 1, "{targets}");
    assert_eq!(active[0]["health"], "up", "{targets}\n{}", prom.log_text());
    assert_eq!(active[0]["lastError"], "", "{targets}");

    // Every scrape was answered in protobuf: the exporter says so, and so
    // does what Prometheus ingested of the exporter's counter.
    let by_format = |f: &str| {
        prom.value(&format!(
            "shmetrics_exporter_scrapes_by_format_total{{job=\"shmetrics\",format=\"{f}\"}}"
        ))
    };
    assert_eq!(by_format("text"), 0.0);
    assert_eq!(by_format("openmetrics"), 0.0);
    assert!(by_format("protobuf") >= 1.0);
    let stats = &server.renderer.stats;
    let n = |i: usize| stats.scrapes_by_format[i].load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!((n(0), n(1)), (0, 0), "text and OpenMetrics scrapes");
    assert!(n(2) >= 2, "protobuf scrapes: {}", n(2));
    // And the header it sends is the one the exporter answers in
    // protobuf.
    let r = get(
        server.addr,
        "/metrics",
        &[("Accept", ACCEPT_PROM242_NATIVE)],
    );
    assert_eq!(r.header("content-type"), Some(CT_PROTOBUF));
    // In protobuf, Prometheus 2.42 ingests no `_created` series (from
    // OpenMetrics it does: see `real_prometheus_scrape`).
    let r = prom.query("{__name__=~\".+_created\",job=\"shmetrics\"}");
    assert!(
        r.is_empty(),
        "_created series: was OpenMetrics negotiated? {r:?}"
    );

    // Counters: the family is named with `_total`, as Prometheus' protobuf
    // parser expects.
    assert_eq!(
        prom.value("jobs_processed_total{job=\"shmetrics\",queue=\"email\"}"),
        100.5
    );
    assert_eq!(
        prom.value("jobs_processed_total{job=\"shmetrics\",queue=\"sms\"}"),
        30.0
    );
    let r = get(
        prom.addr,
        "/api/v1/metadata?metric=jobs_processed_total",
        &[],
    );
    let meta: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    let m = &meta["data"]["jobs_processed_total"][0];
    assert_eq!(m["type"], "counter", "{meta}");
    assert_eq!(m["help"], "Jobs processed.", "{meta}");

    // Gauges, the one with a unit included.
    assert_eq!(prom.value("pool_size{job=\"shmetrics\"}"), 7.5);
    assert_eq!(prom.value("queue_size_bytes{job=\"shmetrics\"}"), -1024.5);

    // The classic histogram: every bucket, the count and the sum.
    let buckets: Vec<(f64, f64)> = BOUNDS
        .iter()
        .chain(&[f64::INFINITY])
        .map(|b| (*b, PARENT_OBS.iter().filter(|o| **o <= *b).count() as f64))
        .collect();
    let got = prom.query("job_duration_seconds_bucket{job=\"shmetrics\"}");
    assert_eq!(got.len(), buckets.len(), "{got:?}");
    for (b, n) in &buckets {
        let le = if b.is_infinite() {
            "+Inf".to_string()
        } else {
            // As Prometheus' protobuf parser writes it: 1 is "1.0".
            let s = b.to_string();
            if s.contains('.') {
                s
            } else {
                format!("{s}.0")
            }
        };
        let v = prom.value(&format!(
            "job_duration_seconds_bucket{{job=\"shmetrics\",le=\"{le}\"}}"
        ));
        assert_eq!(v, *n, "bucket le={le}");
    }
    assert_eq!(
        prom.value("job_duration_seconds_count{job=\"shmetrics\"}"),
        PARENT_OBS.len() as f64
    );
    assert_eq!(
        prom.value("job_duration_seconds_sum{job=\"shmetrics\"}"),
        PARENT_OBS.iter().sum::<f64>()
    );
    // No native histogram came of it (the store has no native buckets).
    let r = prom.query("job_duration_seconds{job=\"shmetrics\"}");
    assert!(r.is_empty(), "{r:?}");

    // The summary's count and sum.
    assert_eq!(
        prom.value("rpc_duration_seconds_count{job=\"shmetrics\",service=\"auth\"}"),
        3.0
    );
    assert_eq!(
        prom.value("rpc_duration_seconds_sum{job=\"shmetrics\",service=\"auth\"}"),
        4.125
    );

    // Label values travel unescaped and arrive intact.
    let r = prom.query("http_requests_total{job=\"shmetrics\"}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["metric"]["route"], TRICKY_ROUTE, "{r:?}");
    assert_eq!(r[0]["metric"]["status"], TRICKY_STATUS, "{r:?}");
    assert_eq!(r[0]["value"][1], "3", "{r:?}");

    // The exporter's own metrics too.
    assert_eq!(
        prom.value("shmetrics_store_series{job=\"shmetrics\",kind=\"capacity\"}"),
        256.0
    );

    drop(prom);
    server.stop();
}

/// The native histogram family (the default options: schema 3).
fn rpc_latency() -> FamilyDesc {
    FamilyDesc::new("rpc_latency_seconds", Kind::Histogram)
        .help("RPC latency, native buckets only.")
        .native(NativeOpts::default())
}

/// What process `n` (0 for the test, 1 and 2 for the workers) observes:
/// its share of `i / 1024` for `i` in 1..=1024, so that all three
/// together observe every one once. Multiples of 2^-10: every sum is
/// exact, in any order.
fn native_obs(n: u64) -> Vec<f64> {
    (1..=1024u64)
        .filter(|i| i % 3 == n)
        .map(|i| i as f64 / 1024.0)
        .collect()
}

/// The worker side of [`real_prometheus_native_histogram`].
pub fn native_worker(path: &Path, arg: &str) {
    let n: u64 = arg.parse().unwrap();
    let store = Store::open(
        path,
        &Options {
            create: false,
            ..Options::default()
        },
    )
    .unwrap();
    let f = store.register(&rpc_latency()).unwrap();
    let s = store.series(&f, &[]).unwrap();
    for v in native_obs(n) {
        store.observe(s, v).unwrap();
    }
    worker_ready();
    wait_stdin_closed();
}

/// Prometheus 2.42 with `--enable-feature=native-histograms` scrapes a
/// native histogram merged from three processes' slots: its count and sum
/// arrive exactly, and `histogram_quantile` answers within the error
/// bound of the schema, that is inside the bucket that holds the exact
/// quantile of the observations (at schema 3, less than 9.1% from it).
#[test]
fn real_prometheus_native_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(
        &path,
        &Options {
            max_series: 64,
            max_writers: 8,
            ..Options::default()
        },
    )
    .unwrap();
    let f = store.register(&rpc_latency()).unwrap();
    let s = store.series(&f, &[]).unwrap();
    for v in native_obs(0) {
        store.observe(s, v).unwrap();
    }
    // Classic and native buckets in one family.
    let b = store
        .register(
            &FamilyDesc::new("both_seconds", Kind::Histogram)
                .help("Classic and native.")
                .buckets(&[1.0])
                .native(NativeOpts::default()),
        )
        .unwrap();
    let bs = store.series(&b, &[]).unwrap();
    for v in [0.5, 2.0, -0.25] {
        store.observe(bs, v).unwrap();
    }
    let workers: Vec<Rerun> = (1..=2)
        .map(|n| Rerun::start("native", &path, &n.to_string()))
        .collect();
    let written_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();

    // What the store says, before Prometheus does.
    let snap = store.snapshot().unwrap();
    let series = snap
        .family("rpc_latency_seconds")
        .unwrap()
        .series()
        .next()
        .unwrap();
    let shmetrics_core::Value::Histogram {
        cumulative,
        native: Some(nb),
        ..
    } = series.value()
    else {
        panic!("no native buckets")
    };
    assert_eq!(cumulative, [1024]);
    assert_eq!(nb.schema, 3);
    assert_eq!(nb.positive.counts.iter().sum::<u64>(), 1024);

    let server = TestServer::start(&path, |c| {
        c.exporter_metrics = true;
    });
    let prom = Prometheus::start_with(
        dir.path(),
        &format!(
            "scrape_configs:\n  - job_name: shmetrics\n    static_configs:\n      - targets: ['{}']\n",
            server.addr
        ),
        &["--enable-feature=native-histograms"],
    );
    wait_for(
        "Prometheus to scrape the native histogram",
        Duration::from_secs(90),
        Duration::from_millis(250),
        || {
            let r = prom.query("timestamp(up{job=\"shmetrics\"} == 1)");
            let t: f64 = r.first()?["value"][1].as_str()?.parse().ok()?;
            let r = prom.query("histogram_count(rpc_latency_seconds{job=\"shmetrics\"})");
            (t > written_at + 0.001 && !r.is_empty()).then_some(())
        },
    );
    let r = get(prom.addr, "/api/v1/targets", &[]);
    let targets: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    let active = targets["data"]["activeTargets"].as_array().unwrap();
    assert_eq!(active[0]["health"], "up", "{targets}\n{}", prom.log_text());
    assert_eq!(active[0]["lastError"], "", "{targets}");

    let sel = "rpc_latency_seconds{job=\"shmetrics\"}";
    assert_eq!(prom.value(&format!("histogram_count({sel})")), 1024.0);
    assert_eq!(prom.value(&format!("histogram_sum({sel})")), 512.5);
    let mut all: Vec<f64> = (0..3).flat_map(native_obs).collect();
    all.sort_by(f64::total_cmp);
    let base = 2f64.powf(2f64.powi(-3));
    for q in [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99] {
        // The exact quantile: the observation at rank ceil(q * n), as
        // Prometheus counts ranks; it lies in bucket i, (base^(i-1), base^i].
        let exact = all[((q * all.len() as f64).ceil() as usize).max(1) - 1];
        let i = (exact.log2() * 8.0).ceil();
        let (lower, upper) = (base.powf(i - 1.0), base.powf(i));
        assert!(lower < exact && exact <= upper * (1.0 + 1e-12));
        let got = prom.value(&format!("histogram_quantile({q}, {sel})"));
        eprintln!("q={q}: exact {exact:.6}, Prometheus {got:.6}, bucket ({lower:.6}, {upper:.6}]");
        assert!(
            got >= lower * (1.0 - 1e-12) && got <= upper * (1.0 + 1e-12),
            "histogram_quantile({q}) = {got}, outside the bucket ({lower}, {upper}] of the exact {exact}"
        );
        assert!(
            (got - exact).abs() / exact < base - 1.0,
            "histogram_quantile({q}) = {got} vs exact {exact}: beyond the schema's error bound"
        );
    }
    // The median is a bucket bound (2^-1) and the rank ends that bucket:
    // Prometheus' interpolation gives it exactly.
    assert_eq!(prom.value(&format!("histogram_quantile(0.5, {sel})")), 0.5);

    // Classic and native: Prometheus 2.42 keeps the native histogram.
    let both = "both_seconds{job=\"shmetrics\"}";
    assert_eq!(prom.value(&format!("histogram_count({both})")), 3.0);
    assert_eq!(prom.value(&format!("histogram_sum({both})")), 2.25);

    drop(prom);
    for w in workers {
        w.finish();
    }
    server.stop();
}

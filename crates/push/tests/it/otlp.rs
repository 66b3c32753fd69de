//! OTLP/HTTP export from the real `shmetrics serve` to a receiver that
//! decodes every body with the official OpenTelemetry protobuf
//! definitions: `otlp_receiver.py`, a small Python HTTP server on a
//! loopback port using PyPI's `opentelemetry-proto`. Neither Debian's
//! Prometheus (2.42) nor its VictoriaMetrics (1.79) has an OTLP receiver.
//!
//! The Python packages are installed by the test into a virtualenv under
//! the target directory (`target/otlp-venv`, made once, then reused).
//! That needs `python3` with `venv` and `ensurepip` (Debian:
//! `python3-venv`) and PyPI; if anything is missing the test fails and
//! says what, it never skips.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value as Json;
use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::util::*;

/// The receiver's packages, pinned so that every machine decodes with the
/// same definitions.
const PIP_PACKAGES: &[&str] = &["opentelemetry-proto==1.45.2", "protobuf==7.36.2"];

// ----- the Python environment ---------------------------------------------------

/// A Python with `opentelemetry-proto` installed: the virtualenv
/// `<target>/otlp-venv`, made on first use. Panics, saying what to
/// install, if it cannot be made.
fn python() -> PathBuf {
    static PY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PY.get_or_init(make_venv)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn target_dir() -> PathBuf {
    // This executable is <target>/<profile>/deps/tests-<hash>.
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .nth(3)
        .expect("the target directory")
        .to_path_buf()
}

/// Whether `python` can import what the receiver needs, with the pinned
/// versions.
fn venv_ready(python: &Path) -> Result<(), String> {
    let check = "import importlib.metadata as m, sys\n\
                 from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2\n\
                 from google.protobuf import json_format\n\
                 want = dict(a.split('==') for a in sys.argv[1:])\n\
                 got = {k: m.version(k) for k in want}\n\
                 sys.exit(0 if got == want else 'installed: %s' % got)\n";
    let out = Command::new(python)
        .arg("-c")
        .arg(check)
        .args(PIP_PACKAGES)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn make_venv() -> Result<PathBuf, String> {
    let target = target_dir();
    let venv = target.join("otlp-venv");
    let python = venv.join("bin/python");
    if venv_ready(&python).is_ok() {
        return Ok(python);
    }
    // Build it beside, then move it into place, so that a concurrent run
    // never sees half an environment. (A venv may be moved: its python
    // finds its packages from its own path; pip is run as `python -m pip`.)
    let tmp = target.join(format!("otlp-venv.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let run = |cmd: &mut Command, what: &str, hint: &str| -> Result<(), String> {
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{what}: cannot run it ({e}); {hint}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{what} failed ({}); {hint}\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&tmp),
        "python3 -m venv",
        "the OTLP tests need python3 with venv and ensurepip (Debian: apt-get install python3-venv)",
    )?;
    let tmp_python = tmp.join("bin/python");
    run(
        Command::new(&tmp_python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--timeout",
                "60",
            ])
            .args(PIP_PACKAGES),
        &format!("pip install {}", PIP_PACKAGES.join(" ")),
        "the OTLP tests decode with PyPI's opentelemetry-proto, so PyPI must be reachable",
    )?;
    venv_ready(&tmp_python)
        .map_err(|e| format!("the new virtualenv {} is not usable: {e}", tmp.display()))?;
    let _ = std::fs::remove_dir_all(&venv);
    if std::fs::rename(&tmp, &venv).is_err() {
        // Another run moved its own into place first.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    venv_ready(&python)
        .map(|()| python.clone())
        .map_err(|e| format!("{} is not usable: {e}", venv.display()))
}

// ----- the receiver ---------------------------------------------------------------

/// `otlp_receiver.py` on a loopback port, killed when dropped.
pub struct Receiver {
    _process: KillOnDrop,
    addr: SocketAddr,
    out: PathBuf,
    log: PathBuf,
    scheme: &'static str,
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        Receiver::start_with(dir, &[])
    }

    /// With the receiver's environment variables (`OTLP_TLS_CERT`, ...;
    /// see otlp_receiver.py).
    pub fn start_with(dir: &Path, env: &[(&str, &std::ffi::OsStr)]) -> Receiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/otlp_receiver.py");
        std::fs::create_dir_all(dir).unwrap();
        let out = dir.join("received.jsonl");
        let log = dir.join("receiver.log");
        let mut child = Command::new(python())
            .arg(&script)
            .arg(&out)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("cannot start the OTLP receiver");
        let stdout = child.stdout.take().unwrap();
        let process = KillOnDrop(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(IO_TIMEOUT).unwrap_or_default();
        let port: u16 = line
            .strip_prefix("listening on ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "the OTLP receiver did not start (said {line:?}):\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        Receiver {
            _process: process,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            out,
            log,
            scheme: if env.iter().any(|(k, _)| *k == "OTLP_TLS_CERT") {
                "https"
            } else {
                "http"
            },
        }
    }

    /// The export URL.
    pub fn url(&self) -> String {
        format!("{}://{}/v1/metrics", self.scheme, self.addr)
    }

    /// Queues an answer for the next export request (`status=503&...`).
    fn script(&self, query: &str) {
        let r = get(self.addr, &format!("/script?{query}"), &[]);
        assert_eq!(r.status, 200, "{}", r.text());
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Json> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Polls the received requests until `f` finds what it wants. A body
    /// the official definitions refused fails the test at once.
    fn wait<T>(&self, what: &str, mut f: impl FnMut(&[Json]) -> Option<T>) -> T {
        wait_for(what, ARRIVAL, Duration::from_millis(50), || {
            let r = self.received();
            if let Some(bad) = r.iter().find(|x| !x["error"].is_null()) {
                panic!("the receiver refused a request: {bad}");
            }
            f(&r).ok_or_else(|| {
                format!(
                    "{} requests: {}\nreceiver log:\n{}",
                    r.len(),
                    summary(&r),
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                )
            })
        })
    }
}

/// The last few records' numbers, statuses and errors.
fn summary(records: &[Json]) -> String {
    let skip = records.len().saturating_sub(8);
    let last: Vec<String> = records[skip..]
        .iter()
        .map(|r| format!("#{} {} {}", r["seq"], r["status"], r["error"]))
        .collect();
    format!("{}{}", if skip > 0 { "..., " } else { "" }, last.join(", "))
}

// ----- reading decoded requests -----------------------------------------------------

/// One data point, flattened from the decoded JSON.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    metric: String,
    /// `sum`, `gauge`, `histogram` or `summary`.
    kind: String,
    attrs: BTreeMap<String, String>,
    start: u64,
    time: u64,
    /// A sum's or gauge's value.
    value: Option<f64>,
    count: Option<u64>,
    sum: Option<f64>,
    buckets: Vec<u64>,
    bounds: Vec<f64>,
    temporality: Option<String>,
    monotonic: Option<bool>,
    /// A summary's (quantile, value) pairs.
    quantiles: Vec<(f64, f64)>,
}

/// A 64-bit integer field: JSON writes them as strings.
fn u64_field(v: &Json) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_u64())
        .unwrap_or_else(|| panic!("not a 64-bit integer: {v}"))
}

fn kv(list: &Json) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for a in list.as_array().unwrap() {
        let key = a["key"].as_str().unwrap().to_string();
        let value = a["value"]["string_value"]
            .as_str()
            .unwrap_or_else(|| panic!("not a string attribute: {a}"))
            .to_string();
        assert!(out.insert(key, value).is_none(), "repeated key in {list}");
    }
    out
}

/// The request of a record: its resource attributes and points.
fn points(record: &Json) -> (BTreeMap<String, String>, Vec<Point>) {
    let req = &record["request"];
    let rms = req["resource_metrics"].as_array().unwrap();
    assert_eq!(rms.len(), 1, "one resource: {req}");
    let resource = kv(&rms[0]["resource"]["attributes"]);
    let sms = rms[0]["scope_metrics"].as_array().unwrap();
    assert_eq!(sms.len(), 1, "one scope: {req}");
    assert_eq!(sms[0]["scope"]["name"], "shmetrics");
    assert_eq!(sms[0]["scope"]["version"], env!("CARGO_PKG_VERSION"));
    let mut out = Vec::new();
    for m in sms[0]["metrics"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap().to_string();
        let (kind, data) = ["sum", "gauge", "histogram", "summary"]
            .iter()
            .find_map(|k| m.get(*k).map(|d| (k.to_string(), d)))
            .unwrap_or_else(|| panic!("no data in {m}"));
        for p in data["data_points"].as_array().unwrap() {
            let floats = |k: &str| -> Vec<f64> {
                p.get(k)
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().map(|x| x.as_f64().unwrap()).collect())
                    .unwrap_or_default()
            };
            out.push(Point {
                metric: name.clone(),
                kind: kind.clone(),
                attrs: kv(&p["attributes"]),
                start: u64_field(&p["start_time_unix_nano"]),
                time: u64_field(&p["time_unix_nano"]),
                value: p.get("as_double").map(|v| v.as_f64().unwrap()),
                count: p.get("count").map(u64_field),
                sum: p.get("sum").map(|v| v.as_f64().unwrap()),
                buckets: p
                    .get("bucket_counts")
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().map(u64_field).collect())
                    .unwrap_or_default(),
                bounds: floats("explicit_bounds"),
                temporality: data
                    .get("aggregation_temporality")
                    .map(|t| t.as_str().unwrap().to_string()),
                monotonic: data.get("is_monotonic").map(|v| v.as_bool().unwrap()),
                // JSON leaves out a field at its default: quantile 0.
                quantiles: p
                    .get("quantile_values")
                    .and_then(|v| v.as_array())
                    .map(|a| {
                        a.iter()
                            .map(|q| {
                                let f = |k: &str| q.get(k).map_or(0.0, |v| v.as_f64().unwrap());
                                (f("quantile"), f("value"))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
    }
    (resource, out)
}

fn ok_records(records: &[Json]) -> Vec<&Json> {
    records.iter().filter(|r| r["status"] == 200).collect()
}

fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The series' creation times, by family name and label values.
fn created(store: &Store) -> BTreeMap<(String, Vec<String>), u64> {
    let snap = store.snapshot().unwrap();
    let mut out = BTreeMap::new();
    for f in snap.families() {
        for s in f.series() {
            out.insert(
                (
                    f.name().to_string(),
                    s.label_values().map(str::to_string).collect(),
                ),
                s.created_unix_ns(),
            );
        }
    }
    out
}

fn uname_n() -> String {
    let out = Command::new("uname").arg("-n").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The `shmetrics_otlp_NAME` value for `url` in serve's /metrics.
fn own(serve: &Serve, name: &str, url: &str) -> f64 {
    serve.metric(&format!("shmetrics_otlp_{name}{{url=\"{url}\"}}"))
}

fn serve_args(store: &Path, url: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--store",
        store.to_str().unwrap(),
        "--otlp.url",
        url,
        "--otlp.interval",
        "0.2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

// ----- the tests ----------------------------------------------------------------------

/// Every kind of family, exactly, with attributes, resource attributes
/// and start times; cumulative, the default. Run with the flags of
/// docs/exporter.md's example.
#[test]
fn otlp_cumulative_export_decodes_with_the_official_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let jobs = store
        .register(
            &FamilyDesc::new("jobs", Kind::Counter)
                .help("Jobs done.")
                .labels(&["queue", "host"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["email", "worker-7"]).unwrap(), 7.0)
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["", "worker-7"]).unwrap(), 1.5)
        .unwrap();
    let temp = store
        .register(
            &FamilyDesc::new("temperature_celsius", Kind::Gauge)
                .labels(&["zone"])
                .unit("celsius"),
        )
        .unwrap();
    store
        .gauge_set(store.series(&temp, &["north"]).unwrap(), -4.25)
        .unwrap();
    let lat = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .labels(&["route"])
                .buckets(&[0.5, 1.0, 2.5]),
        )
        .unwrap();
    let s = store.series(&lat, &["/a"]).unwrap();
    for v in [0.25, 0.75, 0.75, 2.0, 10.0] {
        store.observe(s, v).unwrap();
    }
    let size = store
        .register(&FamilyDesc::new("size_bytes", Kind::Summary).quantiles(&[0.0, 1.0]))
        .unwrap();
    let s = store.series(&size, &[]).unwrap();
    store.observe(s, 100.0).unwrap();
    store.observe(s, 28.0).unwrap();
    let created = created(&store);

    let recv = Receiver::start(dir.path());
    // The documented example, with this test's store, URL and interval.
    let mut args = crate::prometheus::doc_snippet_args("otlp");
    assert_eq!(args.remove(0), "shmetrics");
    assert_eq!(args.remove(0), "serve");
    for (flag, value) in [
        ("--store", path.to_str().unwrap().to_string()),
        ("--otlp.url", recv.url()),
        ("--otlp.interval", "0.2".to_string()),
    ] {
        let i = args
            .iter()
            .position(|a| *a == flag)
            .unwrap_or_else(|| panic!("no {flag} in the documented example {args:?}"));
        args[i + 1] = value;
    }
    let before = unix_ns();
    let serve = Serve::start(&args);

    let record = recv.wait("a request answered 200", |r| {
        ok_records(r).first().map(|r| (*r).clone())
    });
    let after = unix_ns();
    assert_eq!(record["content_type"], "application/x-protobuf");
    // gzip by default, as the Collector's exporter sends.
    assert_eq!(record["headers"]["content-encoding"], "gzip", "{record}");
    let sizes = (
        record["bytes"].as_u64(),
        record["uncompressed_bytes"].as_u64(),
    );
    assert!(matches!(sizes, (Some(b), Some(u)) if b < u), "{record}");
    let ua = record["user_agent"].as_str().unwrap();
    assert!(ua.starts_with("shmetrics/"), "{ua}");
    let (resource, got) = points(&record);
    assert_eq!(
        resource,
        attrs(&[
            ("service.name", "checkout"),
            ("deployment.environment", "production"),
            ("host.name", &uname_n()),
        ]),
        "the documented resource attributes, and host.name by default"
    );

    let time = got[0].time;
    assert!(before <= time && time <= after, "{before} {time} {after}");
    let c = |name: &str, values: &[&str]| -> u64 {
        created[&(
            name.to_string(),
            values.iter().map(|v| v.to_string()).collect(),
        )]
    };
    let cumulative = Some("AGGREGATION_TEMPORALITY_CUMULATIVE".to_string());
    let base = Point {
        metric: String::new(),
        kind: String::new(),
        attrs: BTreeMap::new(),
        start: 0,
        time,
        value: None,
        count: None,
        sum: None,
        buckets: vec![],
        bounds: vec![],
        temporality: None,
        monotonic: None,
        quantiles: vec![],
    };
    let want = vec![
        Point {
            metric: "jobs".into(),
            kind: "sum".into(),
            attrs: attrs(&[("queue", "email"), ("host", "worker-7")]),
            start: c("jobs", &["email", "worker-7"]),
            value: Some(7.0),
            temporality: cumulative.clone(),
            monotonic: Some(true),
            ..base.clone()
        },
        Point {
            metric: "jobs".into(),
            kind: "sum".into(),
            // The empty label value is left out.
            attrs: attrs(&[("host", "worker-7")]),
            start: c("jobs", &["", "worker-7"]),
            value: Some(1.5),
            temporality: cumulative.clone(),
            monotonic: Some(true),
            ..base.clone()
        },
        Point {
            metric: "temperature_celsius".into(),
            kind: "gauge".into(),
            attrs: attrs(&[("zone", "north")]),
            start: c("temperature_celsius", &["north"]),
            value: Some(-4.25),
            ..base.clone()
        },
        Point {
            metric: "latency_seconds".into(),
            kind: "histogram".into(),
            attrs: attrs(&[("route", "/a")]),
            start: c("latency_seconds", &["/a"]),
            count: Some(5),
            sum: Some(13.75),
            // Per bucket: (..0.5] (0.5..1] (1..2.5] (2.5..+Inf).
            buckets: vec![1, 2, 1, 1],
            bounds: vec![0.5, 1.0, 2.5],
            temporality: cumulative.clone(),
            ..base.clone()
        },
        Point {
            metric: "size_bytes".into(),
            kind: "summary".into(),
            attrs: BTreeMap::new(),
            start: c("size_bytes", &[]),
            count: Some(2),
            sum: Some(128.0),
            // Two observations: exact (an age bucket keeps its first 16).
            quantiles: vec![(0.0, 28.0), (1.0, 100.0)],
            ..base.clone()
        },
    ];
    // The receiver's JSON rendering of a double may lose its last bit:
    // compare quantile values to 1e-15, then the rest exactly.
    let mut got = got;
    for (g, w) in got.iter_mut().zip(&want) {
        assert_eq!(g.quantiles.len(), w.quantiles.len(), "{g:?}");
        for (gq, wq) in g.quantiles.iter().zip(&w.quantiles) {
            assert!(
                gq.0 == wq.0 && ((gq.1 - wq.1) / wq.1).abs() < 1e-15,
                "{g:?}"
            );
        }
        g.quantiles.clone_from(&w.quantiles);
    }
    assert_eq!(got, want);

    // Metric metadata.
    let metrics = &record["request"]["resource_metrics"][0]["scope_metrics"][0]["metrics"];
    let meta: Vec<(&str, &str, &str)> = metrics
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap(),
                m["description"].as_str().unwrap(),
                m["unit"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        meta,
        [
            ("jobs", "Jobs done.", ""),
            ("temperature_celsius", "", "celsius"),
            ("latency_seconds", "Latency.", ""),
            ("size_bytes", "", ""),
        ]
    );

    // Later exports: the same start times, cumulative values that grow.
    store
        .counter_add(store.series(&jobs, &["email", "worker-7"]).unwrap(), 3.0)
        .unwrap();
    let later = recv.wait("the counter at 10", |r| {
        ok_records(r).into_iter().find_map(|r| {
            let (_, p) = points(r);
            (p[0].value == Some(10.0)).then_some(p)
        })
    });
    assert_eq!(later[0].start, want[0].start);
    assert!(later[0].time > time);
    for (a, b) in later.iter().zip(&want).skip(1) {
        assert_eq!((a.start, a.value, a.count), (b.start, b.value, b.count));
    }

    // Nothing refused, and the counters say so.
    let records = recv.received();
    assert!(
        records.iter().all(|r| r["status"] == 200),
        "{}",
        summary(&records)
    );
    let url = recv.url();
    // The request just seen may not be counted yet; the one before it is.
    wait_for(
        "two requests counted as sent",
        ARRIVAL,
        Duration::from_millis(50),
        || match own(&serve, "data_points_sent_total", &url) {
            v if v >= 10.0 && v % 5.0 == 0.0 => Ok(()),
            v => Err(v.to_string()),
        },
    );
    for zero in [
        "data_points_failed_total",
        "data_points_dropped_total",
        "data_points_rejected_total",
        "retries_total",
        "snapshot_failures_total",
    ] {
        assert_eq!(own(&serve, zero, &url), 0.0, "{zero}");
    }
    assert!(own(&serve, "batches_total", &url) >= 2.0);
    assert!(own(&serve, "last_success_timestamp_seconds", &url) * 1e9 >= before as f64);
    let status = get(serve.addr, "/", &[]);
    assert!(
        status.text().contains("<tr><th>otlp</th><td>"),
        "{}",
        status.text()
    );
}

/// Delta temporality across exports: differences from the last export
/// taken, contiguous start times, and after a store reset a new stream
/// with a new start time and no negative delta. Gauges stay values, and
/// summaries (which have no temporality in OTLP) stay cumulative.
#[test]
fn otlp_delta_across_exports_and_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let req = store
        .register(&FamilyDesc::new("requests", Kind::Counter).labels(&["code"]))
        .unwrap();
    let req = store.series(&req, &["200"]).unwrap();
    let dur = store
        .register(&FamilyDesc::new("duration_seconds", Kind::Histogram).buckets(&[1.0]))
        .unwrap();
    let dur = store.series(&dur, &[]).unwrap();
    let inflight = store
        .register(&FamilyDesc::new("inflight", Kind::Gauge))
        .unwrap();
    let inflight = store.series(&inflight, &[]).unwrap();
    let size = store
        .register(&FamilyDesc::new("size", Kind::Summary))
        .unwrap();
    let size = store.series(&size, &[]).unwrap();
    store.counter_add(req, 5.0).unwrap();
    store.observe(dur, 0.5).unwrap();
    store.gauge_set(inflight, 3.0).unwrap();
    store.observe(size, 10.0).unwrap();
    let created = created(&store);

    let recv = Receiver::start(dir.path());
    let url = recv.url();
    let serve = Serve::start(&serve_args(&path, &url, &["--otlp.temporality", "delta"]));

    /// Every point of `metric` in the requests answered 200, in order.
    fn series(records: &[Json], metric: &str) -> Vec<Point> {
        ok_records(records)
            .into_iter()
            .flat_map(|r| points(r).1)
            .filter(|p| p.metric == metric)
            .collect()
    }
    let total = |records: &[Json]| -> f64 {
        series(records, "requests")
            .iter()
            .map(|p| p.value.unwrap())
            .sum()
    };

    // The first export: everything since the series' creation.
    let first = recv.wait("the first export", |r| {
        series(r, "requests").first().cloned()
    });
    assert_eq!(first.value, Some(5.0));
    assert_eq!(
        first.start,
        created[&("requests".into(), vec!["200".into()])]
    );
    assert_eq!(
        first.temporality.as_deref(),
        Some("AGGREGATION_TEMPORALITY_DELTA")
    );
    assert_eq!(first.monotonic, Some(true));

    // More, then the difference.
    store.counter_add(req, 3.0).unwrap();
    store.observe(dur, 2.0).unwrap();
    store.gauge_set(inflight, 4.0).unwrap();
    recv.wait("deltas adding up to 8", |r| (total(r) == 8.0).then_some(()));

    // A reset (every value to zero), then less than before.
    store.reset().unwrap();
    store.counter_add(req, 2.0).unwrap();
    store.observe(dur, 0.5).unwrap();
    let records = recv.wait("deltas adding up to 10 after the reset", |r| {
        let hist_count: u64 = series(r, "duration_seconds")
            .iter()
            .map(|p| p.count.unwrap())
            .sum();
        (total(r) == 10.0 && hist_count == 3).then(|| r.to_vec())
    });
    // One more export after that, so that the last one is settled.
    let n = ok_records(&records).len();
    let records = recv.wait("one more export", |r| {
        (ok_records(r).len() > n + 1).then(|| r.to_vec())
    });

    // Counter: contiguous deltas, except once, at the reset, where a new
    // stream starts after the last point's time; never negative.
    let c = series(&records, "requests");
    let nonzero: Vec<f64> = c
        .iter()
        .filter_map(|p| p.value)
        .filter(|v| *v != 0.0)
        .collect();
    assert_eq!(nonzero, [5.0, 3.0, 2.0], "{c:#?}");
    let mut new_streams = Vec::new();
    for (i, w) in c.windows(2).enumerate() {
        let (prev, p) = (&w[0], &w[1]);
        assert!(p.value.unwrap() >= 0.0, "a negative delta: {p:?}");
        assert!(p.start < p.time, "{p:?}");
        if p.start != prev.time {
            assert!(p.start > prev.time, "{prev:?} then {p:?}");
            new_streams.push(i + 1);
        }
    }
    assert_eq!(new_streams.len(), 1, "one new stream, at the reset: {c:#?}");
    let at = new_streams[0];
    let before_reset: f64 = c[..at].iter().map(|p| p.value.unwrap()).sum();
    let after_reset: f64 = c[at..].iter().map(|p| p.value.unwrap()).sum();
    assert_eq!((before_reset, after_reset), (8.0, 2.0), "{c:#?}");

    // Histogram: the same, part by part.
    let h = series(&records, "duration_seconds");
    let mut new_streams = Vec::new();
    for (i, w) in h.windows(2).enumerate() {
        if w[1].start != w[0].time {
            assert!(w[1].start > w[0].time, "{:?} then {:?}", w[0], w[1]);
            new_streams.push(i + 1);
        }
    }
    assert_eq!(new_streams.len(), 1, "{h:#?}");
    let add = |ps: &[Point]| -> (Vec<u64>, u64, f64) {
        let mut buckets = vec![0, 0];
        let (mut count, mut sum) = (0, 0.0);
        for p in ps {
            assert_eq!(p.bounds, [1.0]);
            assert_eq!(p.buckets.iter().sum::<u64>(), p.count.unwrap(), "{p:?}");
            for (b, n) in buckets.iter_mut().zip(&p.buckets) {
                *b += n;
            }
            count += p.count.unwrap();
            sum += p.sum.unwrap();
        }
        (buckets, count, sum)
    };
    assert_eq!(add(&h[..new_streams[0]]), (vec![1, 1], 2, 2.5));
    assert_eq!(add(&h[new_streams[0]..]), (vec![1, 0], 1, 0.5));

    // Gauge: values, not differences.
    let g = series(&records, "inflight");
    assert_eq!(g.first().unwrap().value, Some(3.0));
    assert!(g.iter().any(|p| p.value == Some(4.0)));
    assert_eq!(g.last().unwrap().value, Some(0.0), "reset to zero");
    assert!(g.iter().all(|p| p.temporality.is_none()));

    // Summary: cumulative, with a new start after the reset.
    let s = series(&records, "size");
    assert_eq!(
        (s[0].count, s[0].sum, s[0].start),
        (Some(1), Some(10.0), created[&("size".into(), vec![])])
    );
    let last = s.last().unwrap();
    assert_eq!((last.count, last.sum), (Some(0), Some(0.0)));
    assert!(last.start > s[0].start);

    assert_eq!(own(&serve, "data_points_failed_total", &url), 0.0);
}

/// A 503 with Retry-After is retried with the same body after the wait; a
/// 400 is dropped and counted, not retried; a partial success is counted.
#[test]
fn otlp_retries_503_and_drops_400() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let fam = store
        .register(&FamilyDesc::new("events", Kind::Counter).labels(&["kind"]))
        .unwrap();
    let a = store.series(&fam, &["a"]).unwrap();
    let b = store.series(&fam, &["b"]).unwrap();
    store.counter_add(a, 1.0).unwrap();
    store.counter_add(b, 2.0).unwrap();

    let recv = Receiver::start(dir.path());
    let url = recv.url();
    recv.script("status=503&retry_after=1");
    let serve = Serve::start(&serve_args(
        &path,
        &url,
        &["--otlp.resource-attribute", "host.name=web-1"],
    ));

    // The 503, then the same request again, a second later.
    let records = recv.wait("a 503 and its retry", |r| {
        (r.len() >= 2).then(|| r.to_vec())
    });
    assert_eq!(records[0]["status"], 503, "{}", summary(&records));
    assert_eq!(records[1]["status"], 200, "{}", summary(&records));
    assert_eq!(
        records[0]["request"], records[1]["request"],
        "the retry sends the same request"
    );
    let waited = records[1]["received_unix"].as_f64().unwrap()
        - records[0]["received_unix"].as_f64().unwrap();
    assert!(
        waited >= 0.95,
        "Retry-After: 1 honoured, but the retry came after {waited} s"
    );
    let (resource, _) = points(&records[0]);
    assert_eq!(resource["host.name"], "web-1", "the given host.name wins");
    wait_for(
        "the retry counted",
        ARRIVAL,
        Duration::from_millis(50),
        || match own(&serve, "retries_total", &url) {
            1.0 => Ok(()),
            v => Err(v.to_string()),
        },
    );
    let log = serve.stderr();
    assert!(
        log.contains("503 Service Unavailable: scripted 503"),
        "{log}"
    );

    // A 400: dropped and counted (two points), never retried.
    recv.script("status=400");
    let records = recv.wait("a 400 and a request after it", |r| {
        let i = r.iter().position(|x| x["status"] == 400)?;
        (r.len() > i + 1).then(|| (r.to_vec(), i))
    });
    let (records, i) = records;
    let refused = points(&records[i]).1;
    assert_eq!(refused.len(), 2);
    let next = points(&records[i + 1]).1;
    assert_eq!(records[i + 1]["status"], 200);
    assert!(
        next[0].time > refused[0].time,
        "the request after the 400 is a later snapshot, not a retry"
    );
    wait_for(
        "the 400 counted",
        ARRIVAL,
        Duration::from_millis(50),
        || match own(&serve, "data_points_failed_total", &url) {
            2.0 => Ok(()),
            v => Err(v.to_string()),
        },
    );
    assert_eq!(own(&serve, "retries_total", &url), 1.0);
    let log = serve.stderr();
    assert!(
        log.contains("400 Bad Request: scripted 400 from the test receiver; dropped 2 data points"),
        "{log}"
    );

    // A partial success: taken, and its rejected points counted.
    recv.script("status=200&rejected=1&message=bad+point");
    wait_for(
        "the rejected point counted",
        ARRIVAL,
        Duration::from_millis(50),
        || match own(&serve, "data_points_rejected_total", &url) {
            1.0 => Ok(()),
            v => Err(v.to_string()),
        },
    );
    assert!(
        serve
            .stderr()
            .contains("the receiver rejected 1 of 2 data points: bad point"),
        "{}",
        serve.stderr()
    );
    assert_eq!(own(&serve, "data_points_failed_total", &url), 2.0);
    assert_eq!(own(&serve, "data_points_dropped_total", &url), 0.0);
    assert_eq!(own(&serve, "retries_total", &url), 1.0);
    let records = recv.received();
    assert!(
        records.iter().all(|r| r["error"].is_null()),
        "{}",
        summary(&records)
    );
}

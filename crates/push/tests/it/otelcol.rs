//! OTLP from the real `shmetrics serve` into a real OpenTelemetry
//! Collector (built by `scripts/build-peers.sh` from
//! `tests/peers/otelcol-builder.yaml`): its OTLP receiver over HTTPS with
//! a bearer token (the `bearertokenauth` extension), and its file
//! exporter, whose JSON lines (OTLP's JSON mapping) are read back and
//! checked against what the store holds, cumulative and delta.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value as Json;
use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::prometheus::{doc_snippet_args, set_flag};
use crate::secured::Pki;
use crate::util::*;

const TOKEN: &str = "tok-otel-42";

/// The Collector binary: `$SHMETRICS_OTELCOL`, else where build-peers.sh
/// puts it under the target directory.
fn otelcol_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SHMETRICS_OTELCOL") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("peers/otelcol-0.161.0/otelcol/otelcol-shmetrics")
}

/// A running Collector, killed when dropped.
struct Collector {
    _process: KillOnDrop,
    url: String,
    out: PathBuf,
    log: PathBuf,
}

impl Collector {
    /// A Collector whose OTLP receiver takes every compression it knows,
    /// and none.
    fn start(dir: &Path, pki: &Pki) -> Collector {
        Collector::start_with(
            dir,
            pki,
            &["", "gzip", "zstd", "zlib", "snappy", "deflate", "lz4"],
        )
    }

    /// A Collector whose OTLP receiver takes only the `Content-Encoding`s
    /// `encodings` (`""`: uncompressed), and answers 400 to any other.
    fn start_with(dir: &Path, pki: &Pki, encodings: &[&str]) -> Collector {
        let port = free_port();
        let encodings = encodings
            .iter()
            .map(|e| format!("\"{e}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let out = dir.join("metrics.jsonl");
        let log = dir.join("otelcol.log");
        let config = dir.join("otelcol.yaml");
        std::fs::write(
            &config,
            format!(
                "extensions:\n  bearertokenauth:\n    token: \"{TOKEN}\"\n\
                 receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n\
                 \x20       tls:\n          cert_file: {cert}\n          key_file: {key}\n\
                 \x20       auth:\n          authenticator: bearertokenauth\n\
                 \x20       compression_algorithms: [{encodings}]\n\
                 exporters:\n  file:\n    path: {out}\n    flush_interval: 100ms\n\
                 service:\n  extensions: [bearertokenauth]\n\
                 \x20 telemetry:\n    metrics:\n      level: none\n\
                 \x20 pipelines:\n    metrics:\n      receivers: [otlp]\n      exporters: [file]\n",
                cert = pki.cert.display(),
                key = pki.key.display(),
                out = out.display(),
            ),
        )
        .unwrap();
        let bin = otelcol_bin();
        assert!(
            bin.is_file(),
            "no OpenTelemetry Collector at {}: run scripts/build-peers.sh otelcol (./run-tests does)",
            bin.display()
        );
        let process = spawn_logged(
            Command::new(&bin).arg(format!("--config={}", config.display())),
            &log,
            "the Collector with scripts/build-peers.sh",
        );
        let c = Collector {
            _process: process,
            url: format!("https://127.0.0.1:{port}/v1/metrics"),
            out,
            log,
        };
        wait_for(
            "the Collector to listen",
            Duration::from_secs(60),
            Duration::from_millis(100),
            || {
                std::net::TcpStream::connect(("127.0.0.1", port))
                    .ok()
                    .map(|_| ())
            },
        );
        c
    }

    /// Every data point the file exporter wrote, in order: (metric name,
    /// its kind and temporality, the point).
    fn points(&self) -> Vec<(String, String, i64, Json)> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let req: Json = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("the file exporter's line {line}: {e}"));
            for rm in req["resourceMetrics"].as_array().into_iter().flatten() {
                for sm in rm["scopeMetrics"].as_array().into_iter().flatten() {
                    for m in sm["metrics"].as_array().into_iter().flatten() {
                        let name = m["name"].as_str().unwrap().to_string();
                        for kind in [
                            "sum",
                            "gauge",
                            "histogram",
                            "exponentialHistogram",
                            "summary",
                        ] {
                            let data = &m[kind];
                            if data.is_null() {
                                continue;
                            }
                            let t = data["aggregationTemporality"].as_i64().unwrap_or(0);
                            for p in data["dataPoints"].as_array().into_iter().flatten() {
                                out.push((name.clone(), kind.to_string(), t, p.clone()));
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// A point's attributes as a map.
fn attrs(p: &Json) -> BTreeMap<String, String> {
    p["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|kv| {
            let v = &kv["value"];
            let v = v["stringValue"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            (kv["key"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// A number point's value (`asDouble`, or `asInt`, a string in OTLP's
/// JSON).
fn number(p: &Json) -> f64 {
    if let Some(v) = p["asDouble"].as_f64() {
        return v;
    }
    p["asInt"]
        .as_str()
        .map(|s| s.parse().unwrap())
        .unwrap_or_else(|| panic!("no value: {p}"))
}

fn u64_of(v: &Json) -> u64 {
    v.as_str()
        .map(|s| s.parse().unwrap())
        .or_else(|| v.as_u64())
        .unwrap_or(0)
}

fn store_at(path: &Path) -> Store {
    let store = Store::open(path, &Options::default()).unwrap();
    let jobs = store
        .register(
            &FamilyDesc::new("jobs", Kind::Counter)
                .help("Jobs.")
                .labels(&["queue"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["email"]).unwrap(), 7.0)
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["say \"hi\" é"]).unwrap(), 2.5)
        .unwrap();
    let g = store
        .register(&FamilyDesc::new("depth", Kind::Gauge).help("Depth."))
        .unwrap();
    store
        .gauge_set(store.series(&g, &[]).unwrap(), -4.25)
        .unwrap();
    let h = store
        .register(&FamilyDesc::new("latency_seconds", Kind::Histogram).buckets(&[0.5, 1.0, 10.0]))
        .unwrap();
    let s = store.series(&h, &[]).unwrap();
    for v in [0.25, 0.75, 0.75, 2.0, 20.0] {
        store.observe(s, v).unwrap();
    }
    store
}

fn serve(store: &Path, url: &str, pki: &Pki, token: &Path, extra: &[&str]) -> Serve {
    let mut args = vec![
        "--store",
        store.to_str().unwrap(),
        "--otlp.url",
        url,
        "--otlp.interval",
        "0.3",
        "--otlp.tls.ca-file",
        pki.ca.to_str().unwrap(),
        "--otlp.bearer-token-file",
        token.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Serve::start(&args)
}

/// The last point of `name` with `attrs`, once there is one.
fn last_point(c: &Collector, name: &str, want: &[(&str, &str)]) -> (String, i64, Json) {
    wait_for(
        &format!("{name} {want:?} in the Collector's file"),
        Duration::from_secs(60),
        Duration::from_millis(200),
        || {
            c.points()
                .into_iter()
                .rev()
                .find(|(n, _, _, p)| {
                    let a = attrs(p);
                    n == name
                        && a.len() == want.len()
                        && want
                            .iter()
                            .all(|(k, v)| a.get(*k).map(String::as_str) == Some(*v))
                })
                .map(|(_, kind, t, p)| (kind, t, p))
        },
    )
}

#[test]
fn otlp_into_the_collector_over_https_with_a_bearer_token_cumulative() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    // Only gzip: an uncompressed body would be refused (gzip is the
    // default).
    let collector = Collector::start_with(dir.path(), &pki, &["gzip"]);
    let path = dir.path().join("store");
    let _store = store_at(&path);
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "tok-guess\n").unwrap();
    // docs/exporter.md's example, with this test's paths, URL and interval.
    let mut args = doc_snippet_args("otlp-collector");
    assert_eq!(args[..2], ["shmetrics", "serve"], "{args:?}");
    let mut args = args.split_off(2);
    set_flag(&mut args, "--store", path.to_str().unwrap());
    set_flag(&mut args, "--otlp.url", &collector.url);
    set_flag(&mut args, "--otlp.tls.ca-file", pki.ca.to_str().unwrap());
    set_flag(
        &mut args,
        "--otlp.bearer-token-file",
        token.to_str().unwrap(),
    );
    args.extend(["--otlp.interval".to_string(), "0.3".to_string()]);
    let good = Serve::start(&args);
    let bad = serve(&path, &collector.url, &pki, &wrong, &[]);

    let (kind, t, p) = last_point(&collector, "jobs", &[("queue", "email")]);
    assert_eq!((kind.as_str(), t), ("sum", 2), "a cumulative sum: {p}");
    assert_eq!(number(&p), 7.0, "{p}");
    let (_, _, p) = last_point(&collector, "jobs", &[("queue", "say \"hi\" é")]);
    assert_eq!(number(&p), 2.5, "{p}");
    assert!(u64_of(&p["startTimeUnixNano"]) > 0, "{p}");
    let (kind, _, p) = last_point(&collector, "depth", &[]);
    assert_eq!(kind, "gauge");
    assert_eq!(number(&p), -4.25);
    let (kind, t, p) = last_point(&collector, "latency_seconds", &[]);
    assert_eq!((kind.as_str(), t), ("histogram", 2), "{p}");
    assert_eq!(u64_of(&p["count"]), 5, "{p}");
    assert_eq!(p["sum"].as_f64(), Some(23.75), "{p}");
    let bounds: Vec<f64> = p["explicitBounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_f64().unwrap())
        .collect();
    assert_eq!(bounds, [0.5, 1.0, 10.0], "{p}");
    let counts: Vec<u64> = p["bucketCounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(u64_of)
        .collect();
    assert_eq!(counts, [1, 2, 1, 1], "{p}");

    // The wrong token: refused by the Collector (401), counted as such.
    let url = &collector.url;
    let auth = format!("shmetrics_otlp_request_failures_total{{url=\"{url}\",reason=\"auth\"}}");
    wait_for(
        "the wrong token's refusal",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || (bad.metric(&auth) > 0.0).then_some(()),
    );
    assert!(
        !bad.stderr().contains("tok-guess"),
        "the log shows the token"
    );
    assert!(
        good.metric(&format!(
            "shmetrics_otlp_data_points_sent_total{{url=\"{url}\"}}"
        )) > 0.0,
        "{}",
        std::fs::read_to_string(&collector.log).unwrap_or_default()
    );
}

#[test]
fn otlp_compression_none_sends_uncompressed_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    // Only uncompressed bodies: gzip is answered 400.
    let collector = Collector::start_with(dir.path(), &pki, &[""]);
    let path = dir.path().join("store");
    let _store = store_at(&path);
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let url = &collector.url;
    let plain = serve(&path, url, &pki, &token, &["--otlp.compression", "none"]);
    let gzip = serve(&path, url, &pki, &token, &[]);

    let (_, _, p) = last_point(&collector, "jobs", &[("queue", "email")]);
    assert_eq!(number(&p), 7.0, "{p}");
    let (_, _, p) = last_point(&collector, "latency_seconds", &[]);
    assert_eq!(u64_of(&p["count"]), 5, "{p}");
    let failed = format!("shmetrics_otlp_data_points_failed_total{{url=\"{url}\"}}");
    wait_for(
        "the gzip exporter's refusal",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || (gzip.metric(&failed) > 0.0).then_some(()),
    );
    assert!(
        gzip.stderr().contains("unsupported Content-Encoding: gzip"),
        "{}",
        gzip.stderr()
    );
    assert_eq!(plain.metric(&failed), 0.0, "{}", plain.stderr());
    let sent = format!("shmetrics_otlp_data_points_sent_total{{url=\"{url}\"}}");
    assert!(plain.metric(&sent) > 0.0);
    assert_eq!(gzip.metric(&sent), 0.0);
}

#[test]
fn otlp_into_the_collector_delta_adds_up_to_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let collector = Collector::start(dir.path(), &pki);
    let path = dir.path().join("store");
    let store = store_at(&path);
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let _serve = serve(
        &path,
        &collector.url,
        &pki,
        &token,
        &["--otlp.temporality", "delta"],
    );
    let _ = last_point(&collector, "jobs", &[("queue", "email")]);

    // More between pushes: the deltas add up to the store's totals.
    let jobs = store
        .register(
            &FamilyDesc::new("jobs", Kind::Counter)
                .help("Jobs.")
                .labels(&["queue"]),
        )
        .unwrap();
    let email = store.series(&jobs, &["email"]).unwrap();
    let h = store
        .register(&FamilyDesc::new("latency_seconds", Kind::Histogram).buckets(&[0.5, 1.0, 10.0]))
        .unwrap();
    let s = store.series(&h, &[]).unwrap();
    for i in 0..30 {
        store.counter_add(email, 1.0).unwrap();
        store.observe(s, 0.75).unwrap();
        if i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(400));
        }
    }
    let sum_of = |name: &str| -> (f64, u64, i64) {
        let pts: Vec<_> = collector
            .points()
            .into_iter()
            .filter(|(n, ..)| n == name)
            .collect();
        let t = pts.first().map(|(_, _, t, _)| *t).unwrap_or(0);
        let filtered = pts.iter().filter(|(_, _, _, p)| {
            name != "jobs" || attrs(p).get("queue").map(String::as_str) == Some("email")
        });
        let v = filtered
            .clone()
            .map(|(_, _, _, p)| if name == "jobs" { number(p) } else { 0.0 })
            .sum();
        let c = filtered.map(|(_, _, _, p)| u64_of(&p["count"])).sum();
        (v, c, t)
    };
    wait_for(
        "the deltas to add up to the store",
        Duration::from_secs(60),
        Duration::from_millis(300),
        || {
            let (jobs, _, t) = sum_of("jobs");
            let (_, count, ht) = sum_of("latency_seconds");
            (jobs == 37.0 && count == 35 && t == 1 && ht == 1).then_some(())
        },
    );
}

/// The OTLP buckets `(index, count)` of `values` at `scale`, as an
/// exponential histogram counts them: bucket `k` is
/// `(base^k, base^(k+1)]` with `base = 2^(2^-scale)`.
fn exponential_buckets(values: &[f64], scale: i32) -> BTreeMap<i64, u64> {
    let mut out = BTreeMap::new();
    for v in values {
        let k = (v.log2() * 2f64.powi(scale)).ceil() as i64 - 1;
        *out.entry(k).or_insert(0) += 1;
    }
    out
}

/// A point's dense buckets as `(index, count)`, zero counts left out.
fn point_buckets(b: &Json) -> BTreeMap<i64, u64> {
    let offset = b["offset"].as_i64().unwrap_or(0);
    b["bucketCounts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(k, c)| (offset + k as i64, u64_of(c)))
        .filter(|(_, c)| *c > 0)
        .collect()
}

#[test]
fn otlp_native_histograms_reach_the_collector_as_exponential_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::write(dir.path());
    let collector = Collector::start(dir.path(), &pki);
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let h = store
        .register(
            &FamilyDesc::new("rpc_seconds", Kind::Histogram)
                .help("RPC durations.")
                .native(shmetrics_core::NativeOpts::default()),
        )
        .unwrap();
    let s = store.series(&h, &[]).unwrap();
    let first = [0.003, 0.02, 0.02, 0.7, 1.0, 3.0, 150.0];
    for v in first {
        store.observe(s, v).unwrap();
    }
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let cumulative = serve(
        &path,
        &collector.url,
        &pki,
        &token,
        &["--otlp.native-histograms"],
    );
    let (kind, t, p) = last_point(&collector, "rpc_seconds", &[]);
    assert_eq!((kind.as_str(), t), ("exponentialHistogram", 2), "{p}");
    let scale = p["scale"].as_i64().unwrap() as i32;
    assert_eq!(u64_of(&p["count"]), first.len() as u64, "{p}");
    assert!(
        (p["sum"].as_f64().unwrap() - first.iter().sum::<f64>()).abs() < 1e-9,
        "{p}"
    );
    assert_eq!(
        point_buckets(&p["positive"]),
        exponential_buckets(&first, scale),
        "scale {scale}: {p}"
    );
    assert_eq!(u64_of(&p["zeroCount"]), 0, "{p}");
    drop(cumulative);

    // Delta: what each export adds up to the store's buckets.
    let dir2 = dir.path().join("delta");
    std::fs::create_dir_all(&dir2).unwrap();
    let collector2 = Collector::start(&dir2, &pki);
    let _delta = serve(
        &path,
        &collector2.url,
        &pki,
        &token,
        &["--otlp.native-histograms", "--otlp.temporality", "delta"],
    );
    let _ = last_point(&collector2, "rpc_seconds", &[]);
    let more = [0.02, 0.5, 40.0];
    for v in more {
        store.observe(s, v).unwrap();
    }
    let all: Vec<f64> = first.iter().chain(&more).copied().collect();
    wait_for(
        "the delta points to add up to the store's buckets",
        Duration::from_secs(60),
        Duration::from_millis(300),
        || {
            let mut got = BTreeMap::new();
            let mut count = 0;
            for (n, kind, t, p) in collector2.points() {
                if n != "rpc_seconds" {
                    continue;
                }
                assert_eq!((kind.as_str(), t), ("exponentialHistogram", 1), "{p}");
                count += u64_of(&p["count"]);
                for (k, c) in point_buckets(&p["positive"]) {
                    *got.entry(k).or_insert(0) += c;
                }
            }
            (count == all.len() as u64 && got == exponential_buckets(&all, scale)).then_some(())
        },
    );
}

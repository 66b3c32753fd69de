//! Prometheus 3 (built by `scripts/build-peers.sh` from its Go module,
//! v0.316.0) scrapes the exporter, and what it stored is read back through
//! its HTTP API:
//!
//! - with its default scrape settings and with each `scrape_protocols`
//!   order of one protocol, the same series and values;
//! - UTF-8 metric and label names stored as written (its default
//!   `allow-utf-8`), and escaped as configured under the legacy scheme;
//! - native histograms from the protobuf format, with the classic buckets
//!   beside them where asked (`always_scrape_classic_histograms`);
//! - created timestamps as a zero sample
//!   (`created-timestamp-zero-ingestion`);
//! - exemplars (`exemplar-storage`).
//!
//! The binary: `$SHMETRICS_PROMETHEUS3`, else where build-peers.sh puts
//! it under the target directory. A missing one fails the tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shmetrics_core::{FamilyDesc, Kind, NativeOpts, Options, Store};

use crate::prometheus::Prometheus;
use crate::util::*;

/// The Go module version of Prometheus 3 that build-peers.sh builds.
const PROMETHEUS3_VERSION: &str = "v0.316.0";

/// The Prometheus 3 binary.
fn prometheus3() -> PathBuf {
    if let Some(p) = std::env::var_os("SHMETRICS_PROMETHEUS3") {
        return PathBuf::from(p);
    }
    // CARGO_TARGET_TMPDIR is <target>/tmp.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join(format!(
            "peers/prometheus-{PROMETHEUS3_VERSION}/bin/prometheus"
        ))
}

fn start(dir: &Path, scrape_configs: &str, flags: &[&str]) -> Prometheus {
    let bin = prometheus3();
    assert!(
        bin.is_file(),
        "no Prometheus 3 at {}: run scripts/build-peers.sh prometheus (./run-tests does)",
        bin.display()
    );
    Prometheus::start_bin(&bin, dir, scrape_configs, flags)
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// One job scraping `target`, with the extra YAML lines `extra` (each
/// indented as a key of the job).
fn job(name: &str, target: std::net::SocketAddr, extra: &[&str]) -> String {
    let mut s =
        format!("  - job_name: {name}\n    static_configs:\n      - targets: ['{target}']\n");
    for line in extra {
        s.push_str("    ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// Waits until every job in `jobs` has a successful scrape that started
/// after `after` (Unix seconds).
fn wait_scraped(prom: &Prometheus, jobs: &[&str], after: f64) {
    for j in jobs {
        wait_for(
            &format!("Prometheus 3 to scrape job {j}"),
            Duration::from_secs(90),
            Duration::from_millis(250),
            || {
                let r = prom.query(&format!("timestamp(up{{job=\"{j}\"}} == 1)"));
                let t: f64 = r.first()?["value"][1].as_str()?.parse().ok()?;
                (t > after + 0.001).then_some(())
            },
        );
    }
}

/// Every series of `job` that the target sent, as its labels (without
/// `job` and `instance`) and value; `up` and `scrape_*` left out.
fn series_of(prom: &Prometheus, job: &str) -> BTreeMap<Vec<(String, String)>, String> {
    let q = format!("{{job=\"{job}\",__name__!=\"up\",__name__!~\"scrape_.*\"}}");
    prom.query(&q)
        .into_iter()
        .map(|s| {
            let labels = s["metric"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| *k != "job" && *k != "instance")
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            (labels, s["value"][1].as_str().unwrap().to_string())
        })
        .collect()
}

fn name_of(labels: &[(String, String)]) -> &str {
    &labels.iter().find(|(k, _)| k == "__name__").unwrap().1
}

/// A store with a counter (label values that need escaping), a gauge, a
/// classic histogram with integer and fractional bounds, and a summary.
fn classic_store(path: &Path) -> Store {
    let store = Store::open(
        path,
        &Options {
            max_series: 128,
            max_writers: 4,
            ..Options::default()
        },
    )
    .unwrap();
    let c = store
        .register(
            &FamilyDesc::new("http_requests_total", Kind::Counter)
                .help("Requests.")
                .labels(&["route", "code"]),
        )
        .unwrap();
    for (route, code, n) in [
        ("/a\"b\\c\nd", "200", 3.0),
        ("é日本", "500", 2.5),
        ("", "200", 1.0),
    ] {
        store
            .counter_add(store.series(&c, &[route, code]).unwrap(), n)
            .unwrap();
    }
    let g = store
        .register(&FamilyDesc::new("queue_depth", Kind::Gauge).help("Depth."))
        .unwrap();
    store
        .gauge_set(store.series(&g, &[]).unwrap(), -4.25)
        .unwrap();
    let h = store
        .register(
            &FamilyDesc::new("job_seconds", Kind::Histogram)
                .help("Job durations.")
                .buckets(&[0.25, 1.0, 10.0]),
        )
        .unwrap();
    let hs = store.series(&h, &[]).unwrap();
    for v in [0.1, 0.5, 2.0, 20.0] {
        store.observe(hs, v).unwrap();
    }
    let s = store
        .register(&FamilyDesc::new("rpc_seconds", Kind::Summary).help("RPC durations."))
        .unwrap();
    let ss = store.series(&s, &[]).unwrap();
    for v in [1.0, 2.0, 3.0] {
        store.observe(ss, v).unwrap();
    }
    store
}

/// Prometheus 3's scrape protocols, one per job, and its defaults.
const PROTOCOLS: [(&str, &str); 5] = [
    ("proto", "PrometheusProto"),
    ("om1", "OpenMetricsText1.0.0"),
    ("om0", "OpenMetricsText0.0.1"),
    ("text1", "PrometheusText1.0.0"),
    ("text0", "PrometheusText0.0.4"),
];

#[test]
fn prometheus3_stores_the_same_series_whatever_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = classic_store(&path);
    let written = now();
    let server = TestServer::start(&path, |_| {});

    let mut config = String::from("scrape_configs:\n");
    config.push_str(&job("default", server.addr, &[]));
    for (name, protocol) in PROTOCOLS {
        config.push_str(&job(
            name,
            server.addr,
            &[&format!("scrape_protocols: [{protocol}]")],
        ));
    }
    let prom = start(dir.path(), &config, &[]);
    let mut jobs = vec!["default"];
    jobs.extend(PROTOCOLS.iter().map(|(n, _)| *n));
    wait_scraped(&prom, &jobs, written);

    let reference = series_of(&prom, "default");
    // What the exporter wrote, as Prometheus 3 stores it by default
    // (OpenMetrics: integer bounds read as floats, `le="1.0"`).
    let find = |name: &str, labels: &[(&str, &str)]| {
        reference
            .iter()
            .find(|(k, _)| {
                name_of(k) == name
                    && labels
                        .iter()
                        .all(|(n, v)| k.iter().any(|(kn, kv)| kn == n && kv == v))
            })
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        find(
            "http_requests_total",
            &[("route", "/a\"b\\c\nd"), ("code", "200")]
        )
        .as_deref(),
        Some("3"),
        "{reference:#?}"
    );
    assert_eq!(
        find("http_requests_total", &[("route", "é日本")]).as_deref(),
        Some("2.5")
    );
    assert_eq!(find("queue_depth", &[]).as_deref(), Some("-4.25"));
    assert_eq!(
        find("job_seconds_bucket", &[("le", "1.0")]).as_deref(),
        Some("2")
    );
    assert_eq!(
        find("job_seconds_bucket", &[("le", "+Inf")]).as_deref(),
        Some("4")
    );
    assert_eq!(find("job_seconds_count", &[]).as_deref(), Some("4"));
    assert_eq!(find("rpc_seconds_count", &[]).as_deref(), Some("3"));

    // Every protocol stores the same series and values; `_created` series
    // come with OpenMetrics only (what Prometheus 3 does with them is
    // checked apart).
    let without_created = |m: &BTreeMap<Vec<(String, String)>, String>| {
        m.iter()
            .filter(|(k, _)| !name_of(k).ends_with("_created"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    let want = without_created(&reference);
    assert!(want.len() >= 12, "{want:#?}");
    for (name, protocol) in PROTOCOLS {
        let got = without_created(&series_of(&prom, name));
        assert_eq!(
            got, want,
            "scrape_protocols: [{protocol}] against the defaults"
        );
    }
}

#[test]
fn prometheus3_utf8_names_stored_as_written_or_escaped_as_configured() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = crate::utf8::utf8_store(&path);
    let written = now();
    let server = TestServer::start(&path, |_| {});
    let legacy = |scheme: &str| {
        format!("metric_name_validation_scheme: legacy\n    metric_name_escaping_scheme: {scheme}")
    };
    let mut config = String::from("scrape_configs:\n");
    config.push_str(&job("utf8", server.addr, &[]));
    for scheme in ["underscores", "dots", "values"] {
        config.push_str(&job(scheme, server.addr, &[&legacy(scheme)]));
    }
    let prom = start(dir.path(), &config, &[]);
    wait_scraped(&prom, &["utf8", "underscores", "dots", "values"], written);

    let value = |q: &str| {
        let r = prom.query(q);
        assert_eq!(r.len(), 1, "{q}: {r:?}");
        r[0]["value"][1].as_str().unwrap().to_string()
    };
    // allow-utf-8: the names as the application wrote them.
    assert_eq!(
        value("{\"http.server.requests_total\",job=\"utf8\",\"http.request.method\"=\"GET\"}"),
        "7"
    );
    assert_eq!(value("{\"température °C\",job=\"utf8\"}"), "21.5");
    assert_eq!(value("plain_jobs_total{job=\"utf8\",queue=\"email\"}"), "3");
    // The legacy scheme, escaped as each job asks. The family's name is
    // escaped and its samples' suffixes follow it unescaped, as
    // client_golang writes them (`U__http_2e_server_2e_requests_total`).
    assert_eq!(
        value("http_server_requests_total{job=\"underscores\",http_request_method=\"GET\"}"),
        "7"
    );
    assert_eq!(
        value(
            "http_dot_server_dot_requests_total{job=\"dots\",http_dot_request_dot_method=\"GET\"}"
        ),
        "7"
    );
    assert_eq!(
        value("U__http_2e_server_2e_requests_total{job=\"values\",U__http_2e_request_2e_method=\"GET\"}"),
        "7"
    );
    // Nothing of the UTF-8 names leaks into the legacy jobs.
    for j in ["underscores", "dots", "values"] {
        for (labels, _) in series_of(&prom, j) {
            for (k, v) in &labels {
                let name = if k == "__name__" { v } else { k };
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                    "job {j}: {name:?} is not a legacy name"
                );
            }
        }
    }
}

#[test]
fn prometheus3_native_histograms_from_protobuf_with_classic_buckets_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(
        &path,
        &Options {
            max_series: 64,
            max_writers: 4,
            ..Options::default()
        },
    )
    .unwrap();
    let h = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .buckets(&[0.1, 1.0])
                .native(NativeOpts::default()),
        )
        .unwrap();
    let s = store.series(&h, &[]).unwrap();
    let obs = [0.05, 0.2, 0.2, 0.7, 3.0];
    for v in obs {
        store.observe(s, v).unwrap();
    }
    let written = now();
    let server = TestServer::start(&path, |_| {});
    let native = [
        "scrape_native_histograms: true",
        "scrape_protocols: [PrometheusProto, OpenMetricsText1.0.0]",
    ];
    let both = [
        native[0],
        native[1],
        "always_scrape_classic_histograms: true",
    ];
    let mut config = String::from("scrape_configs:\n");
    config.push_str(&job("native", server.addr, &native));
    config.push_str(&job("both", server.addr, &both));
    let prom = start(dir.path(), &config, &[]);
    wait_scraped(&prom, &["native", "both"], written);

    for j in ["native", "both"] {
        assert_eq!(
            prom.value(&format!("histogram_count(latency_seconds{{job=\"{j}\"}})")),
            obs.len() as f64,
            "job {j}"
        );
        let sum = prom.value(&format!("histogram_sum(latency_seconds{{job=\"{j}\"}})"));
        assert!(
            (sum - obs.iter().sum::<f64>()).abs() < 1e-9,
            "job {j}: {sum}"
        );
        // Within the native schema's bucket error of the true quantile.
        let median = prom.value(&format!(
            "histogram_quantile(0.5, latency_seconds{{job=\"{j}\"}})"
        ));
        assert!(
            (median - 0.2).abs() <= 0.2 * 0.1,
            "job {j}: median {median}"
        );
    }
    let classic = |j: &str| prom.query(&format!("latency_seconds_bucket{{job=\"{j}\"}}"));
    assert!(classic("native").is_empty(), "{:?}", classic("native"));
    let buckets: BTreeMap<String, String> = classic("both")
        .iter()
        .map(|s| {
            (
                s["metric"]["le"].as_str().unwrap().to_string(),
                s["value"][1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: BTreeMap<String, String> = [("0.1", "1"), ("1.0", "4"), ("+Inf", "5")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(buckets, want);
    assert_eq!(prom.value("latency_seconds_count{job=\"both\"}"), 5.0);
}

#[test]
fn prometheus3_created_timestamps_as_a_zero_sample_and_exemplars() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(
        &path,
        &Options {
            max_series: 64,
            max_writers: 4,
            ..Options::default()
        },
    )
    .unwrap();
    let c = store
        .register(
            &FamilyDesc::new("orders_total", Kind::Counter)
                .help("Orders.")
                .exemplars(true),
        )
        .unwrap();
    let s = store.series(&c, &[]).unwrap();
    let created = now();
    store
        .counter_add_with_exemplar(s, 5.0, &[("trace_id", "4bf92f3577b34da6")])
        .unwrap();
    // Scraped a second later at the earliest: the created time is well
    // apart from the first scrape's.
    std::thread::sleep(Duration::from_millis(1500));
    let written = now();
    let server = TestServer::start(&path, |_| {});
    let mut config = String::from("scrape_configs:\n");
    config.push_str(&job(
        "om",
        server.addr,
        &["scrape_protocols: [OpenMetricsText1.0.0]"],
    ));
    config.push_str(&job(
        "proto",
        server.addr,
        &["scrape_protocols: [PrometheusProto]"],
    ));
    let prom = start(
        dir.path(),
        &config,
        &["--enable-feature=created-timestamp-zero-ingestion,exemplar-storage"],
    );
    wait_scraped(&prom, &["om", "proto"], written);

    for j in ["om", "proto"] {
        // The first sample is the zero at the created time, then the value.
        let data = prom.api(&format!(
            "/api/v1/query?query={}",
            url_encode(&format!("orders_total{{job=\"{j}\"}}[5m]"))
        ));
        let values = data["result"][0]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("job {j}: {data}"));
        let (t0, v0) = (
            values[0][0].as_f64().unwrap(),
            values[0][1].as_str().unwrap(),
        );
        assert_eq!(v0, "0", "job {j}: {values:?}");
        assert!(
            (t0 - created).abs() < 0.05,
            "job {j}: zero at {t0}, created at {created}"
        );
        assert_eq!(values[1][1], "5", "job {j}: {values:?}");
        // No `_created` series: Prometheus took the created time instead.
        assert!(
            prom.query(&format!("orders_created{{job=\"{j}\"}}"))
                .is_empty(),
            "job {j}"
        );

        // The exemplar, with its labels and value.
        let data = prom.api(&format!(
            "/api/v1/query_exemplars?query={}&start={}&end={}",
            url_encode(&format!("orders_total{{job=\"{j}\"}}")),
            created - 60.0,
            now() + 60.0
        ));
        let ex = &data[0]["exemplars"][0];
        assert_eq!(
            ex["labels"]["trace_id"], "4bf92f3577b34da6",
            "job {j}: {data}"
        );
        assert_eq!(ex["value"], "5", "job {j}: {data}");
    }
}

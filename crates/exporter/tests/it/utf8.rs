//! UTF-8 metric and label names (Prometheus 3): the exporter quotes them
//! for scrapers that ask for `escaping=allow-utf-8` and escapes them for
//! the others (`underscores` unless the scrape names another scheme), and
//! its `Content-Type` says which. Checked with prometheus_client's parsers,
//! promtool, and a real Prometheus 2.42 (which names no scheme) that
//! ingests the escaped names.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::prometheus::Prometheus;
use crate::util::*;

/// A store with names outside the legacy set, and one legacy family.
pub fn utf8_store(path: &std::path::Path) -> Store {
    let store = Store::open(
        path,
        &Options {
            max_series: 64,
            max_writers: 4,
            ..Options::default()
        },
    )
    .unwrap();
    let c = store
        .register(
            &FamilyDesc::new("http.server.requests", Kind::Counter)
                .help("Requests, named as OpenTelemetry does.")
                .labels(&["http.request.method", "code"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&c, &["GET", "200"]).unwrap(), 7.0)
        .unwrap();
    store
        .counter_add(store.series(&c, &["POST", "500"]).unwrap(), 2.0)
        .unwrap();
    let h = store
        .register(
            &FamilyDesc::new("rpc.duration", Kind::Histogram)
                .help("RPC durations.")
                .labels(&["rpc.service"])
                .buckets(&[0.1, 1.0]),
        )
        .unwrap();
    let s = store.series(&h, &["billing"]).unwrap();
    for v in [0.05, 0.5, 0.5, 3.0] {
        store.observe(s, v).unwrap();
    }
    let g = store
        .register(&FamilyDesc::new("température °C", Kind::Gauge).help("Heat."))
        .unwrap();
    store
        .gauge_set(store.series(&g, &[]).unwrap(), 21.5)
        .unwrap();
    let legacy = store
        .register(&FamilyDesc::new("plain_jobs", Kind::Counter).labels(&["queue"]))
        .unwrap();
    store
        .counter_add(store.series(&legacy, &["email"]).unwrap(), 3.0)
        .unwrap();
    store
}

/// A scrape: its name, `Accept`, the `Content-Type` answered, the parser,
/// and the names prometheus_client reads (counter sample, its label, the
/// gauge).
type Case<'a> = (&'a str, Option<&'a str>, &'a str, &'a str, [&'a str; 3]);

#[test]
fn utf8_names_by_negotiated_escaping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = utf8_store(&path);
    let server = TestServer::start(&path, |_| {});
    let addr = server.addr;

    // (case, Accept, Content-Type, parser, the names prometheus_client
    // reads: counter sample, its label, the gauge)
    let cases: &[Case] = &[
        (
            "no Accept",
            None,
            CT_TEXT,
            "text",
            [
                "http_server_requests_total",
                "http_request_method",
                "temp_rature__C",
            ],
        ),
        (
            "Prometheus 2.x",
            Some(ACCEPT_PROM2),
            CT_OPENMETRICS,
            "openmetrics",
            [
                "http_server_requests_total",
                "http_request_method",
                "temp_rature__C",
            ],
        ),
        (
            "Prometheus 3.x",
            Some(ACCEPT_PROM3),
            CT_OPENMETRICS_UTF8,
            "openmetrics",
            [
                "http.server.requests_total",
                "http.request.method",
                "température °C",
            ],
        ),
        (
            "Prometheus 3.x, text first",
            Some(ACCEPT_PROM3_TEXT_FIRST),
            CT_TEXT_UTF8,
            "text",
            [
                "http.server.requests_total",
                "http.request.method",
                "température °C",
            ],
        ),
        (
            "dots",
            Some("text/plain;version=1.0.0;escaping=dots"),
            "text/plain; version=1.0.0; charset=utf-8; escaping=dots",
            "text",
            [
                "http_dot_server_dot_requests_total",
                "http_dot_request_dot_method",
                "temp__rature____C",
            ],
        ),
        (
            "values",
            Some("application/openmetrics-text;version=1.0.0;escaping=values"),
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=values",
            "openmetrics",
            [
                "U__http_2e_server_2e_requests_total",
                "U__http_2e_request_2e_method",
                "U__temp_e9_rature_20__b0_C",
            ],
        ),
    ];
    for (case, accept, ct, parser, [counter, label, gauge]) in cases {
        let headers: Vec<(&str, &str)> = accept.iter().map(|a| ("Accept", *a)).collect();
        let r = get(addr, "/metrics", &headers);
        assert_eq!(r.status, 200, "{case}");
        assert_eq!(r.header("content-type"), Some(*ct), "{case}");
        let body = r.text();
        let families = python_parse(&body, parser, dir.path());
        let sample = |name: &str, labels: &[(&str, &str)]| {
            families.iter().find_map(|f| f.value(name, labels))
        };
        assert_eq!(
            sample(counter, &[(label, "GET"), ("code", "200")]),
            Some(7.0),
            "{case}:\n{body}"
        );
        assert_eq!(sample(gauge, &[]), Some(21.5), "{case}:\n{body}");
        // Legacy names never change, whatever the scheme.
        assert_eq!(
            sample("plain_jobs_total", &[("queue", "email")]),
            Some(3.0),
            "{case}:\n{body}"
        );
    }

    // promtool (Prometheus 2.42's parser) takes the default page.
    let body = get(addr, "/metrics", &[]).text();
    let (code, out) = promtool_check(&body);
    assert!(
        code == 0 || code == 3,
        "promtool could not parse the default page (exit {code}):\n{out}\n{body}"
    );
    assert!(!out.contains("error"), "promtool: {out}\n{body}");
    server.stop();
}

/// Prometheus 2.42 sends no `escaping`: it gets escaped names, ingests
/// them, and answers queries by them.
#[test]
fn real_prometheus_ingests_escaped_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = utf8_store(&path);
    let written_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let server = TestServer::start(&path, |_| {});
    let prom = Prometheus::start(dir.path(), server.addr);
    wait_for(
        "Prometheus to scrape the exporter",
        Duration::from_secs(90),
        Duration::from_millis(250),
        || {
            let r = prom.query("timestamp(up{job=\"shmetrics\"} == 1)");
            let t: f64 = r.first()?["value"][1].as_str()?.parse().ok()?;
            (t > written_at + 0.001).then_some(())
        },
    );
    let r = get(prom.addr, "/api/v1/targets", &[]);
    let targets: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    let active = &targets["data"]["activeTargets"][0];
    assert_eq!(active["health"], "up", "{targets}\n{}", prom.log_text());
    assert_eq!(active["lastError"], "", "{targets}");

    assert_eq!(
        prom.value(
            "http_server_requests_total{job=\"shmetrics\",http_request_method=\"GET\",code=\"200\"}"
        ),
        7.0
    );
    assert_eq!(
        prom.value("sum(http_server_requests_total{job=\"shmetrics\"})"),
        9.0
    );
    assert_eq!(
        prom.value("rpc_duration_bucket{job=\"shmetrics\",rpc_service=\"billing\",le=\"1.0\"}"),
        3.0
    );
    assert_eq!(
        prom.value("rpc_duration_count{job=\"shmetrics\",rpc_service=\"billing\"}"),
        4.0
    );
    assert_eq!(prom.value("temp_rature__C{job=\"shmetrics\"}"), 21.5);
    assert_eq!(
        prom.value("plain_jobs_total{job=\"shmetrics\",queue=\"email\"}"),
        3.0
    );
    // No name outside the legacy set reached Prometheus.
    let names = prom.query("count by (__name__) ({job=\"shmetrics\"})");
    for n in &names {
        let name = n["metric"]["__name__"].as_str().unwrap();
        assert!(
            shmetrics_core::is_legacy_metric_name(name),
            "{name} in {names:?}"
        );
    }
    server.stop();
}

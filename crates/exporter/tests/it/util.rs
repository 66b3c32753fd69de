//! The exporter tests' own helpers: the Accept headers Prometheus sends,
//! and the reference tools (promtool, prometheus_client); with the test
//! kit's (HTTP client, processes, deadlines, `shmetrics serve`, the
//! in-process exporter, worker processes), re-exported.
//!
//! Every wait here is bounded: when a bound is reached the test fails, it
//! never hangs and never skips.

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use shmetrics_testkit::http::*;
pub use shmetrics_testkit::process::{signal, wait_exit, KillOnDrop};
pub use shmetrics_testkit::reexec::*;
pub use shmetrics_testkit::serve::Serve;
pub use shmetrics_testkit::server::TestServer;
pub use shmetrics_testkit::tools::promtool_check;
pub use shmetrics_testkit::wait::wait_for;
pub use shmetrics_testkit::{shmetrics_bin, store_with_counter};

/// Accept headers exactly as Prometheus sends them (the same strings as
/// `crates/expo/src/tests.rs`).
pub const ACCEPT_PROM2: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
/// Prometheus 3.x's default.
pub const ACCEPT_PROM3: &str = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
/// Prometheus 3.x with `scrape_protocols: [PrometheusText1.0.0, PrometheusText0.0.4, OpenMetricsText1.0.0]`.
pub const ACCEPT_PROM3_TEXT_FIRST: &str = "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.6,text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.4,*/*;q=0.3";
/// Prometheus 2.0 to 2.4 (text only).
pub const ACCEPT_PROM20: &str = "text/plain;version=0.0.4;q=1,*/*;q=0.1";
/// Prometheus 1.x (protobuf first, then text); Telegraf's
/// `inputs.prometheus` sends it too.
pub const ACCEPT_PROM1: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1";
/// Prometheus 2.42 with `--enable-feature=native-histograms` (protobuf
/// first), as captured from Debian's prometheus 2.42.0.
pub const ACCEPT_PROM242_NATIVE: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// The text format's Content-Type (0.0.4, names escaped with
/// `underscores`: what scrapers that name no escaping get).
pub const CT_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores";
/// The text format 1.0.0 with UTF-8 names, as Prometheus 3 asks for it.
pub const CT_TEXT_UTF8: &str = "text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8";
/// OpenMetrics' Content-Type.
pub const CT_OPENMETRICS: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores";
/// OpenMetrics with UTF-8 names, as Prometheus 3 asks for it.
pub const CT_OPENMETRICS_UTF8: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8";
/// The protobuf format's Content-Type.
pub const CT_PROTOBUF: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores";

// ----- expositions -----------------------------------------------------------

/// A family as prometheus_client parsed it.
#[derive(Debug, Clone)]
pub struct ParsedFamily {
    pub name: String,
    pub kind: String,
    pub help: String,
    pub unit: String,
    pub samples: Vec<ParsedSample>,
}

/// A sample as prometheus_client parsed it.
#[derive(Debug, Clone)]
pub struct ParsedSample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl ParsedFamily {
    /// The value of the sample with that name and exactly these labels.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == want)
            .map(|s| s.value)
    }
}

/// The directory of this test binary's sources.
pub fn it_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it")
}

/// Parses `body` with prometheus_client's text (`"text"`) or OpenMetrics
/// (`"openmetrics"`) parser. Panics if Python or prometheus_client is
/// missing or the parser rejects the body.
pub fn python_parse(body: &str, format: &str, scratch: &Path) -> Vec<ParsedFamily> {
    let file = scratch.join(format!("body-{format}-{}.txt", unique()));
    std::fs::write(&file, body).unwrap();
    let out = Command::new("python3")
        .arg(it_dir().join("parse.py"))
        .arg(format)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run python3 ({e}); install Python 3 and prometheus_client")
        });
    assert!(
        out.status.success(),
        "prometheus_client's {format} parser rejected the exposition (exit {:?}):\n{}\n--- body:\n{body}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("parse.py's JSON");
    json.as_array()
        .unwrap()
        .iter()
        .map(|f| ParsedFamily {
            name: f["name"].as_str().unwrap().into(),
            kind: f["type"].as_str().unwrap().into(),
            help: f["help"].as_str().unwrap().into(),
            unit: f["unit"].as_str().unwrap().into(),
            samples: f["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| ParsedSample {
                    name: s["name"].as_str().unwrap().into(),
                    labels: s["labels"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect(),
                    value: s["value"].as_str().unwrap().parse().unwrap(),
                })
                .collect(),
        })
        .collect()
}

/// A number distinct for each call in this process.
pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

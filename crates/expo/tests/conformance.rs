//! Conformance: a rich store, written through the real `Store` by this
//! process and two child processes, encoded in both formats and checked by
//! the reference tools:
//!
//! - `promtool check metrics` (Debian package `prometheus`), which parses
//!   the Prometheus text format and lints it;
//! - `tests/check_parse.py`, which parses both expositions with
//!   prometheus_client's text and OpenMetrics parsers and compares every
//!   sample with what was written.
//!
//! Both tools must be installed (`./run-tests` installs them): when one is
//! missing the test fails, it never skips.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, Stdio};

use shmetrics_core::{FamilyDesc, GaugeMode, Kind, NativeOpts, Options, Store, DEFAULT_BUCKETS};
use shmetrics_expo::{encode, Format};

/// Set in the child processes this test starts: the store to write to.
const CHILD_STORE: &str = "SHMETRICS_EXPO_CHILD_STORE";
/// The gauge value a child sets.
const CHILD_VALUE: &str = "SHMETRICS_EXPO_CHILD_VALUE";

fn workers_family() -> FamilyDesc {
    FamilyDesc::new("workers_busy", Kind::Gauge)
        .help("Busy workers, per process.")
        .labels(&["pool"])
        .gauge_mode(GaugeMode::All)
}

fn jobs_family() -> FamilyDesc {
    FamilyDesc::new("jobs_processed_total", Kind::Counter)
        .help("Jobs processed, by every process.")
        .labels(&["queue"])
        .exemplars(true)
}

/// Not a test: the body of the child processes that `conformance` starts
/// (this test binary run again with `--exact child_process`). Run without
/// the environment variable, as in a normal `cargo test`, it does nothing.
///
/// A child writes, prints [`READY`], and stays alive (so its writer slot
/// stays live and is not reused) until its standard input is closed.
#[test]
fn child_process() {
    let Some(path) = std::env::var_os(CHILD_STORE) else {
        return;
    };
    let value: f64 = std::env::var(CHILD_VALUE).unwrap().parse().unwrap();
    let store = Store::open(
        path,
        &Options {
            create: false,
            ..Options::default()
        },
    )
    .unwrap();
    let workers = store.register(&workers_family()).unwrap();
    store
        .gauge_set(store.series(&workers, &["web"]).unwrap(), value)
        .unwrap();
    let jobs = store.register(&jobs_family()).unwrap();
    // The exemplar of the child started last is the latest.
    store
        .counter_add_with_exemplar(
            store.series(&jobs, &["email"]).unwrap(),
            5.0,
            &[("trace_id", &format!("child-{value}"))],
        )
        .unwrap();
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    std::io::copy(&mut std::io::stdin(), &mut std::io::sink()).unwrap();
}

/// What a child prints once it has written.
const READY: &str = "SHMETRICS_EXPO_CHILD_READY";

/// A child process that has written and waits; dropping it lets it exit.
struct Child {
    process: std::process::Child,
    stdout: BufReader<ChildStdout>,
}

impl Child {
    fn start(path: &Path, value: f64) -> Child {
        let mut process = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_STORE, path)
            .env(CHILD_VALUE, value.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(process.stdout.take().unwrap());
        let mut line = String::new();
        // The harness prints `test child_process ... ` before the line.
        while !line.trim_end().ends_with(READY) {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                panic!("child process ended before writing: {:?}", process.wait());
            }
        }
        Child { process, stdout }
    }

    fn pid(&self) -> u32 {
        self.process.id()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        drop(self.process.stdin.take());
        // Read the harness's last lines, so that it can exit cleanly.
        let mut rest = String::new();
        let _ = self.stdout.read_to_string(&mut rest);
        let status = self.process.wait().unwrap();
        if !std::thread::panicking() {
            assert!(status.success(), "child process failed: {status}\n{rest}");
        }
    }
}

/// One sample the expositions must contain.
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
    text: bool,
    om: bool,
    approx: bool,
    /// The OpenMetrics exemplar, if the sample has one.
    exemplar: Option<ExpectedExemplar>,
}

/// An exemplar's labels, value and timestamp in ns.
type ExpectedExemplar = (Vec<(String, String)>, f64, u64);

struct ExpectedFamily {
    name: String,
    kind: &'static str,
    help: String,
    unit: String,
    samples: Vec<Sample>,
}

#[derive(Default)]
struct Expected {
    families: Vec<ExpectedFamily>,
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Expected {
    fn family(&mut self, desc: &FamilyDesc) -> &mut ExpectedFamily {
        let name = match desc.kind {
            Kind::Counter => desc.name.strip_suffix("_total").unwrap_or(&desc.name),
            _ => &desc.name,
        };
        self.families.push(ExpectedFamily {
            name: name.to_string(),
            kind: desc.kind.as_str(),
            help: desc.help.clone(),
            unit: desc.unit.clone(),
            samples: Vec::new(),
        });
        self.families.last_mut().unwrap()
    }
}

impl ExpectedFamily {
    fn sample(&mut self, suffix: &str, labels: Vec<(String, String)>, value: f64) {
        self.samples.push(Sample {
            name: format!("{}{suffix}", self.name),
            labels,
            value,
            text: true,
            om: true,
            approx: false,
            exemplar: None,
        });
    }

    /// An OpenMetrics-only `_created` sample.
    fn created(&mut self, labels: Vec<(String, String)>, unix_ns: u64) {
        self.samples.push(Sample {
            name: format!("{}_created", self.name),
            labels,
            value: unix_ns as f64 / 1e9,
            text: false,
            om: true,
            approx: true,
            exemplar: None,
        });
    }

    /// A counter's `_total` and `_created`.
    fn counter(&mut self, l: &[(&str, &str)], value: f64, created: u64) {
        self.sample("_total", labels(l), value);
        self.created(labels(l), created);
    }

    /// A histogram's samples, from the observations made (buckets computed
    /// here, independently of the store). `om_sum` says whether OpenMetrics
    /// may carry `_count` and `_sum`.
    fn histogram(&mut self, l: &[(&str, &str)], bounds: &[f64], obs: &[f64], created: u64) {
        // (A native-only histogram has no bounds: `+Inf` only.)
        let om_sum = bounds.first().is_none_or(|b| *b >= 0.0) && obs.iter().sum::<f64>() >= 0.0;
        for b in bounds.iter().chain(&[f64::INFINITY]) {
            let mut with_le = labels(l);
            with_le.push(("le".into(), le(*b)));
            let n = obs.iter().filter(|o| **o <= *b).count();
            self.sample("_bucket", with_le, n as f64);
        }
        self.sample("_count", labels(l), obs.len() as f64);
        self.sample("_sum", labels(l), obs.iter().sum());
        if !om_sum {
            let n = self.samples.len();
            self.samples[n - 2].om = false;
            self.samples[n - 1].om = false;
        }
        self.created(labels(l), created);
    }
}

/// The `le` label value the parsers must return: client_python's and
/// client_golang's rendering of the bound, written out here by hand.
fn le(b: f64) -> String {
    let known: &[(f64, &str)] = &[
        (0.005, "0.005"),
        (0.01, "0.01"),
        (0.025, "0.025"),
        (0.05, "0.05"),
        (0.1, "0.1"),
        (0.25, "0.25"),
        (0.5, "0.5"),
        (1.0, "1.0"),
        (2.5, "2.5"),
        (5.0, "5.0"),
        (10.0, "10.0"),
        (-10.0, "-10.0"),
        (0.0, "0.0"),
        (20.0, "20.0"),
        (1e6, "1e+06"),
        (1e7, "1e+07"),
        (1e8, "1e+08"),
        (1e-5, "1e-05"),
        (f64::INFINITY, "+Inf"),
    ];
    known
        .iter()
        .find(|(v, _)| *v == b)
        .unwrap_or_else(|| panic!("no expected le for {b}"))
        .1
        .to_string()
}

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_f64(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        // Debug is Rust's shortest round-trip form (`1e-9`, `-0.0`).
        write!(out, "{v:?}").unwrap();
    }
}

impl Expected {
    fn to_json(&self) -> String {
        let mut o = String::from("[\n");
        for (i, f) in self.families.iter().enumerate() {
            if i > 0 {
                o.push_str(",\n");
            }
            o.push_str("{\"name\": ");
            json_str(&mut o, &f.name);
            o.push_str(", \"type\": ");
            json_str(&mut o, f.kind);
            o.push_str(", \"help\": ");
            json_str(&mut o, &f.help);
            o.push_str(", \"unit\": ");
            json_str(&mut o, &f.unit);
            o.push_str(", \"samples\": [");
            for (j, s) in f.samples.iter().enumerate() {
                if j > 0 {
                    o.push_str(",\n  ");
                }
                o.push_str("{\"name\": ");
                json_str(&mut o, &s.name);
                o.push_str(", \"labels\": {");
                for (k, (name, value)) in s.labels.iter().enumerate() {
                    if k > 0 {
                        o.push_str(", ");
                    }
                    json_str(&mut o, name);
                    o.push_str(": ");
                    json_str(&mut o, value);
                }
                o.push_str("}, \"value\": ");
                json_f64(&mut o, s.value);
                write!(
                    o,
                    ", \"text\": {}, \"om\": {}, \"approx\": {}, \"exemplar\": ",
                    s.text, s.om, s.approx
                )
                .unwrap();
                match &s.exemplar {
                    None => o.push_str("null}"),
                    Some((labels, value, ts)) => {
                        o.push_str("{\"labels\": {");
                        for (k, (name, value)) in labels.iter().enumerate() {
                            if k > 0 {
                                o.push_str(", ");
                            }
                            json_str(&mut o, name);
                            o.push_str(": ");
                            json_str(&mut o, value);
                        }
                        o.push_str("}, \"value\": ");
                        json_f64(&mut o, *value);
                        write!(o, ", \"timestamp_ns\": {ts}}}}}").unwrap();
                    }
                }
            }
            o.push_str("]}");
        }
        o.push_str("\n]\n");
        o
    }
}

/// Writes a rich store; returns what the expositions must contain, the
/// writing `Store` and the child processes, which must all stay alive until
/// the snapshot is taken (live-only gauges count live writers only).
fn write_store(path: &Path) -> (Expected, Store, Vec<Child>) {
    let store = Store::open(
        path,
        &Options {
            max_series: 1024,
            max_writers: 8,
            ..Options::default()
        },
    )
    .unwrap();
    let mut exp = Expected::default();
    // Creation times, as the store recorded them; everything else the
    // expositions must show is computed from what is written here.
    let created = |family: &str, values: &[&str]| -> u64 {
        let snap = store.snapshot().unwrap();
        let fam = snap.family(family).unwrap();
        let s = fam
            .series()
            .find(|s| s.label_values().eq(values.iter().copied()))
            .unwrap();
        s.created_unix_ns()
    };

    // Counters, with labels that need escaping.
    let desc = FamilyDesc::new("http_requests_total", Kind::Counter)
        .help("Requests served.\nSecond line with a backslash \\ and \"quotes\".")
        .labels(&["route", "status"]);
    let c = store.register(&desc).unwrap();
    let rows: [(&str, &str, &[f64]); 3] = [
        ("/", "200", &[3.0]),
        ("/login", "500", &[1.0, 0.5]),
        ("/a\"b\\c\nd", "é日本", &[2.0, 0.25]),
    ];
    let f = exp.family(&desc);
    for (route, status, adds) in rows {
        let s = store.series(&c, &[route, status]).unwrap();
        for a in adds {
            store.counter_add(s, *a).unwrap();
        }
        let ns = created("http_requests", &[route, status]);
        f.counter(
            &[("route", route), ("status", status)],
            adds.iter().sum(),
            ns,
        );
    }

    let desc = FamilyDesc::new("process_cpu_seconds", Kind::Counter)
        .help("CPU time.")
        .unit("seconds");
    let c = store.register(&desc).unwrap();
    store
        .counter_add(store.series(&c, &[]).unwrap(), 4.25)
        .unwrap();
    let ns = created("process_cpu_seconds", &[]);
    exp.family(&desc).counter(&[], 4.25, ns);

    // A counter written by this process and two children.
    let desc = jobs_family();
    let jobs = store.register(&desc).unwrap();
    // Superseded by the children's exemplars (recorded later).
    store
        .counter_add_with_exemplar(
            store.series(&jobs, &["email"]).unwrap(),
            1.0,
            &[("trace_id", "parent")],
        )
        .unwrap();
    let ns = created("jobs_processed", &["email"]);
    exp.family(&desc)
        .counter(&[("queue", "email")], 1.0 + 5.0 + 5.0, ns);

    // Per-process gauges: this process and two live children.
    let desc = workers_family();
    let workers = store.register(&desc).unwrap();
    store
        .gauge_set(store.series(&workers, &["web"]).unwrap(), 1.0)
        .unwrap();
    let f = exp.family(&desc);
    let me = std::process::id().to_string();
    f.sample("", labels(&[("pool", "web"), ("pid", &me)]), 1.0);
    let mut children = Vec::new();
    for value in [2.0, 3.0] {
        let child = Child::start(path, value);
        let pid = child.pid().to_string();
        f.sample("", labels(&[("pool", "web"), ("pid", &pid)]), value);
        children.push(child);
    }

    // Gauges: a unit, and values at the edges of float formatting.
    let desc = FamilyDesc::new("queue_size_bytes", Kind::Gauge)
        .help("Bytes queued.")
        .unit("bytes");
    let g = store.register(&desc).unwrap();
    store
        .gauge_set(store.series(&g, &[]).unwrap(), 1024.0)
        .unwrap();
    exp.family(&desc).sample("", vec![], 1024.0);

    let desc = FamilyDesc::new("edge_values", Kind::Gauge)
        .help("Values at the edges of float formatting.")
        .labels(&["case"])
        .gauge_mode(GaugeMode::MostRecent);
    let g = store.register(&desc).unwrap();
    let f = exp.family(&desc);
    let edges = [
        ("zero", 0.0),
        ("negative_zero", -0.0),
        ("tiny", 1e-9),
        ("huge", 1e21),
        ("inf", f64::INFINITY),
        ("negative_inf", f64::NEG_INFINITY),
        ("sum_of_tenths", 0.1 + 0.2),
        ("max", f64::MAX),
        ("min_positive", f64::MIN_POSITIVE),
        ("denormal", 5e-324),
        ("largest_exact_int", 9_007_199_254_740_991.0),
        ("past_exact_ints", 9_007_199_254_740_994.0),
        ("big_integral", 1e17),
        ("negative", -1.5),
        ("tiny_negative", -1e-300),
        ("fraction", 123_456_789.125),
        ("third", 1.0 / 3.0),
    ];
    for (case, v) in edges {
        store
            .gauge_set(store.series(&g, &[case]).unwrap(), v)
            .unwrap();
        f.sample("", labels(&[("case", case)]), v);
    }

    // Histograms: default buckets, large bounds, negative bounds.
    let desc = FamilyDesc::new("request_duration_seconds", Kind::Histogram)
        .help("Request latency.")
        .unit("seconds")
        .labels(&["method"]);
    let h = store.register(&desc).unwrap();
    let f = exp.family(&desc);
    // One writer adds in this order, so the expected sums are exact.
    let rows: [(&str, &[f64]); 3] = [
        ("GET", &[0.0009765625, 0.015625, 0.25, 0.25, 4.0, 12.0]),
        ("POST", &[]),
        ("PUT", &[0.005, 10.0, 1e-5]),
    ];
    for (method, obs) in rows {
        let s = store.series(&h, &[method]).unwrap();
        for o in obs {
            store.observe(s, *o).unwrap();
        }
        let ns = created("request_duration_seconds", &[method]);
        f.histogram(&[("method", method)], &DEFAULT_BUCKETS, obs, ns);
    }

    let bounds = [1e6, 1e7, 1e8];
    let desc = FamilyDesc::new("response_size_bytes", Kind::Histogram)
        .help("Response sizes.")
        .unit("bytes")
        .buckets(&bounds);
    let h = store.register(&desc).unwrap();
    let obs = [5e5, 2e7, 2e7, 3e9];
    let s = store.series(&h, &[]).unwrap();
    for o in obs {
        store.observe(s, o).unwrap();
    }
    let ns = created("response_size_bytes", &[]);
    exp.family(&desc).histogram(&[], &bounds, &obs, ns);

    let bounds = [-10.0, 0.0, 10.0, 20.0];
    let desc = FamilyDesc::new("temperature_change", Kind::Histogram)
        .help("Temperature changes (negative buckets: no _sum in OpenMetrics).")
        .buckets(&bounds);
    let h = store.register(&desc).unwrap();
    let obs = [-5.0, 15.0, 0.0];
    let s = store.series(&h, &[]).unwrap();
    for o in obs {
        store.observe(s, o).unwrap();
    }
    let ns = created("temperature_change", &[]);
    exp.family(&desc).histogram(&[], &bounds, &obs, ns);

    // Native histograms: the text formats carry what client_golang writes
    // for them, the classic part: for a native-only one `+Inf`, `_count`
    // and `_sum`.
    let desc = FamilyDesc::new("native_seconds", Kind::Histogram)
        .help("A native-only histogram.")
        .labels(&["route"])
        .native(NativeOpts::default());
    let h = store.register(&desc).unwrap();
    let f = exp.family(&desc);
    let rows: [(&str, &[f64]); 3] = [
        ("/a", &[0.25, 1.5, 1.5, 1e-30, 3e5]),
        ("/b", &[]),
        ("/c", &[-2.0, 0.5]),
    ];
    for (route, obs) in rows {
        let s = store.series(&h, &[route]).unwrap();
        for o in obs {
            store.observe(s, *o).unwrap();
        }
        let ns = created("native_seconds", &[route]);
        f.histogram(&[("route", route)], &[], obs, ns);
    }
    let bounds = [0.5, 5.0];
    let desc = FamilyDesc::new("both_seconds", Kind::Histogram)
        .help("Classic and native buckets.")
        .buckets(&bounds)
        .native(NativeOpts {
            max_buckets: 2,
            ..NativeOpts::default()
        });
    let h = store.register(&desc).unwrap();
    let obs = [0.1, 0.5, 0.75, 2.0, 20.0];
    let s = store.series(&h, &[]).unwrap();
    for o in obs {
        store.observe(s, o).unwrap();
    }
    let ns = created("both_seconds", &[]);
    exp.family(&desc).histogram(&[], &bounds, &obs, ns);

    // A summary.
    let desc = FamilyDesc::new("rpc_duration_seconds", Kind::Summary)
        .help("RPC latency.")
        .labels(&["service"]);
    let sm = store.register(&desc).unwrap();
    let s = store.series(&sm, &["auth"]).unwrap();
    store.observe(s, 1.5).unwrap();
    store.observe(s, 2.5).unwrap();
    let ns = created("rpc_duration_seconds", &["auth"]);
    let f = exp.family(&desc);
    f.sample("_count", labels(&[("service", "auth")]), 2.0);
    f.sample("_sum", labels(&[("service", "auth")]), 4.0);
    f.created(labels(&[("service", "auth")]), ns);

    // A summary with quantiles: with so few observations (each age bucket
    // keeps its first 16 as they were), each is the observation at the
    // quantile's nearest rank; a series with no observation in its window
    // has NaN quantiles.
    let qs = [0.0, 0.5, 1.0];
    let desc = FamilyDesc::new("upload_size_bytes", Kind::Summary)
        .help("Upload sizes.")
        .unit("bytes")
        .labels(&["bucket"])
        .quantiles(&qs);
    let sm = store.register(&desc).unwrap();
    let obs = [1500.0, 250.0, 4e6];
    let s = store.series(&sm, &["photos"]).unwrap();
    for o in obs {
        store.observe(s, o).unwrap();
    }
    store.series(&sm, &["empty"]).unwrap();
    let canonical = |q: f64| {
        let mut b = Vec::new();
        shmetrics_expo::write_canonical_float(&mut b, q);
        String::from_utf8(b).unwrap()
    };
    let f = exp.family(&desc);
    for (q, v) in qs.iter().zip([250.0, 1500.0, 4e6]) {
        let l = labels(&[("bucket", "photos"), ("quantile", &canonical(*q))]);
        f.sample("", l, v);
    }
    f.sample("_count", labels(&[("bucket", "photos")]), 3.0);
    f.sample("_sum", labels(&[("bucket", "photos")]), 4_001_750.0);
    f.created(
        labels(&[("bucket", "photos")]),
        created("upload_size_bytes", &["photos"]),
    );
    for q in qs {
        let l = labels(&[("bucket", "empty"), ("quantile", &canonical(q))]);
        f.sample("", l, f64::NAN);
    }
    f.sample("_count", labels(&[("bucket", "empty")]), 0.0);
    f.sample("_sum", labels(&[("bucket", "empty")]), 0.0);
    f.created(
        labels(&[("bucket", "empty")]),
        created("upload_size_bytes", &["empty"]),
    );

    // Families without series.
    let desc = FamilyDesc::new("never_used_total", Kind::Counter).help("Never incremented.");
    store.register(&desc).unwrap();
    exp.family(&desc);
    let desc = FamilyDesc::new("never_observed_seconds", Kind::Histogram)
        .help("Never observed.")
        .unit("seconds");
    store.register(&desc).unwrap();
    exp.family(&desc);

    // An overflowing family: the overflow series is labelled.
    let desc = FamilyDesc::new("user_logins_total", Kind::Counter)
        .help("Logins by user, at most two users.")
        .labels(&["user"])
        .max_series(2);
    let c = store.register(&desc).unwrap();
    let f = exp.family(&desc);
    let mut overflowed = 0.0;
    for user in ["ann", "bob", "cy", "dee"] {
        let s = store.series_or_overflow(&c, &[user]).unwrap();
        store.counter_inc(s).unwrap();
        if user == "ann" || user == "bob" {
            f.counter(&[("user", user)], 1.0, created("user_logins", &[user]));
        } else {
            overflowed += 1.0;
        }
    }
    let snap = store.snapshot().unwrap();
    let over = snap
        .family("user_logins")
        .unwrap()
        .series()
        .find(|s| s.is_overflow())
        .unwrap()
        .created_unix_ns();
    f.counter(
        &[("user", ""), ("shmetrics_overflow", "true")],
        overflowed,
        over,
    );
    drop(snap);

    // Exemplars on histogram buckets: the latest per bucket, `+Inf`
    // included; a bucket without one; labels that need escaping.
    let desc = FamilyDesc::new("rpc_latency_seconds", Kind::Histogram)
        .help("RPC latency, with exemplars.")
        .unit("seconds")
        .buckets(&[0.1, 1.0])
        .exemplars(true);
    let h = store.register(&desc).unwrap();
    let s = store.series(&h, &[]).unwrap();
    let obs: [(f64, &[(&str, &str)]); 4] = [
        (0.5, &[("trace_id", "old")]),
        // (No `"` in an exemplar's label value: prometheus_client 0.26's
        // parser rejects `\"` there, though OpenMetrics allows it.)
        (0.75, &[("trace_id", "a\\c\nd"), ("span_id", "é日本")]),
        (20.0, &[("trace_id", "slow")]),
        (0.05, &[]),
    ];
    for (v, l) in obs {
        store.observe_with_exemplar(s, v, l).unwrap();
    }
    let values: Vec<f64> = obs.iter().map(|o| o.0).collect();
    let f = exp.family(&desc);
    f.histogram(
        &[],
        &[0.1, 1.0],
        &values,
        created("rpc_latency_seconds", &[]),
    );
    let snap = store.snapshot().unwrap();
    let fam = snap.family("rpc_latency_seconds").unwrap();
    let series = fam.series().next().unwrap();
    let ex: Vec<_> = series.exemplars().collect();
    assert_eq!(ex.len(), 3);
    for (b, e) in ex.iter().enumerate() {
        f.samples[b].exemplar = e.map(|e| {
            let l = e.labels().map(|(n, v)| (n.to_string(), v.to_string()));
            (l.collect(), e.value(), e.timestamp_unix_ns())
        });
    }
    assert_eq!(f.samples[0].exemplar.as_ref().unwrap().1, 0.05);
    assert_eq!(f.samples[1].exemplar.as_ref().unwrap().1, 0.75);
    assert_eq!(f.samples[2].exemplar.as_ref().unwrap().1, 20.0);
    drop(snap);
    (exp, store, children)
}

/// Sets the expected exemplar of the `jobs_processed` counter from a
/// snapshot taken once the children have written: the one of the child
/// started last, with the timestamp it recorded.
fn expect_jobs_exemplar(exp: &mut Expected, snap: &shmetrics_core::Snapshot) {
    let s = snap
        .family("jobs_processed")
        .unwrap()
        .series()
        .next()
        .unwrap();
    let e = s.exemplar(0).unwrap();
    let labels: Vec<(String, String)> = e
        .labels()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(labels, [("trace_id".to_string(), "child-3".to_string())]);
    assert_eq!(e.value(), 5.0);
    let f = exp
        .families
        .iter_mut()
        .find(|f| f.name == "jobs_processed")
        .unwrap();
    f.samples[0].exemplar = Some((labels, e.value(), e.timestamp_unix_ns()));
}

/// Turns `\"` into `"`, leaving every other escape sequence as it is.
fn unescape_quotes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('"') => out.push('"'),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `promtool check metrics` on `file`; returns its exit code and
/// combined output. Panics if promtool cannot be run.
fn promtool(file: &Path) -> (i32, String) {
    let out = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}): install it (Debian package `prometheus`; ./run-tests does)")
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn conformance() {
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("store");
    let (mut expected, writer, children) = write_store(&store_path);

    // An exporter's view: a read-only store, while every writer is alive.
    let store = Store::open(&store_path, &Options::reader()).unwrap();
    let snap = store.snapshot().unwrap();
    expect_jobs_exemplar(&mut expected, &snap);
    drop(children);
    drop(writer);
    let mut files = BTreeMap::new();
    for (format, file) in [
        (Format::PrometheusText, "metrics.prom"),
        (Format::OpenMetrics, "metrics.om"),
    ] {
        let mut out = Vec::new();
        encode(&snap, format, &mut out);
        let path = dir.path().join(file);
        std::fs::write(&path, &out).unwrap();
        files.insert(file, path);
    }
    let expected_path = dir.path().join("expected.json");
    std::fs::write(&expected_path, expected.to_json()).unwrap();

    // promtool: the text format must parse and lint clean.
    let (code, out) = promtool(&files["metrics.prom"]);
    assert_eq!(
        code,
        0,
        "promtool check metrics rejected the text format:\n{out}\n--- exposition:\n{}",
        std::fs::read_to_string(&files["metrics.prom"]).unwrap()
    );
    assert!(out.trim().is_empty(), "promtool printed:\n{out}");

    // promtool only has a text-format parser (`check metrics` has no
    // OpenMetrics mode), which reads OpenMetrics too except for one thing:
    // OpenMetrics escapes `"` in HELP as `\"`, which the text format does
    // not allow. So promtool gets the OpenMetrics exposition with exactly
    // that undone. Nor does it read exemplars (promtool 2.42: "expected
    // integer as timestamp, got #"), so they are cut off too; they are
    // checked by prometheus_client's parser below. It must parse (exit 1
    // is a parse error), and its only
    // lint findings may be the ones OpenMetrics naming causes in a text
    // linter: `_created` samples and counters' `_total` samples, read as
    // families without help.
    let om = std::fs::read_to_string(&files["metrics.om"]).unwrap();
    let for_promtool: String = om
        .lines()
        .map(|l| match l.strip_prefix("# HELP ") {
            Some(help) => format!("# HELP {}\n", unescape_quotes(help)),
            None if !l.starts_with('#') => match l.find(" # {") {
                Some(at) => format!("{}\n", &l[..at]),
                None => format!("{l}\n"),
            },
            None => format!("{l}\n"),
        })
        .collect();
    let promtool_om = dir.path().join("metrics.om-for-promtool");
    std::fs::write(&promtool_om, &for_promtool).unwrap();
    let (code, out) = promtool(&promtool_om);
    assert!(
        code == 0 || code == 3,
        "promtool could not parse OpenMetrics (exit {code}):\n{out}\n{for_promtool}"
    );
    let counters: Vec<&str> = expected
        .families
        .iter()
        .filter(|f| f.kind == "counter")
        .map(|f| f.name.as_str())
        .collect();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let name = line
            .strip_suffix(" no help text")
            .unwrap_or_else(|| panic!("unexpected promtool finding on OpenMetrics: {line}\n{out}"));
        let explained = name.ends_with("_created")
            || name
                .strip_suffix("_total")
                .is_some_and(|base| counters.contains(&base));
        assert!(
            explained,
            "unexpected promtool finding on OpenMetrics: {line}\n{out}"
        );
    }
    assert!(om.ends_with("\n# EOF\n"), "{om}");

    // prometheus_client's parsers: every sample as written.
    let script = crate_dir().join("tests/check_parse.py");
    let out = Command::new("python3")
        .arg(&script)
        .args([&files["metrics.prom"], &files["metrics.om"], &expected_path])
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e})"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(
        out.status.success(),
        "check_parse.py failed (exit {:?}):\n{text}\n--- text:\n{}\n--- openmetrics:\n{om}",
        out.status.code(),
        std::fs::read_to_string(&files["metrics.prom"]).unwrap()
    );
    assert!(text.contains(" passed, 0 failed"), "{text}");
}

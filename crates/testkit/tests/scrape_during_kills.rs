//! Test 7: an in-process exporter serves the store while workers are
//! SIGKILLed at random instants and a client scrapes `/metrics` without a
//! pause, alternating the Prometheus text format and OpenMetrics. Every
//! response must be a 200 with a complete, well-formed exposition:
//! parseable sample lines, no series twice, cumulative histogram buckets
//! ending in `+Inf` == `_count`, `# EOF` closing OpenMetrics, and no counter
//! going down between consecutive scrapes of the same format. A sample of
//! the bodies goes through `promtool check metrics` (which must be
//! installed: the test fails without it).

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shmetrics_core::Options;
use shmetrics_testkit::proto::word;
use shmetrics_testkit::rng::Rng;
use shmetrics_testkit::server::TestServer;
use shmetrics_testkit::tools::promtool_check;

use crate::common::{create_store, long_mode, tempdir, Worker, PATIENCE};

const WORKERS: usize = 4;
/// Scrapes that must have been checked before the storm may end.
const MIN_SCRAPES: u64 = 40;
/// Bodies kept per format for promtool.
const PROMTOOL_SAMPLES: usize = 4;

/// The two formats, as Prometheus asks for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    OpenMetrics,
}

impl Format {
    fn accept(self) -> &'static str {
        match self {
            Format::Text => "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            Format::OpenMetrics => {
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
            }
        }
    }

    fn content_type_prefix(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0",
        }
    }
}

// ----- a minimal HTTP client -----------------------------------------------------

/// `GET /metrics` on a new connection; returns the status, the
/// Content-Type and the body. Errors on I/O failure or an incomplete body.
fn scrape(addr: SocketAddr, format: Format) -> Result<(u16, String, String), String> {
    let io = |e: std::io::Error| format!("GET /metrics: {e}");
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE).map_err(io)?;
    s.set_read_timeout(Some(PATIENCE)).map_err(io)?;
    s.set_write_timeout(Some(PATIENCE)).map_err(io)?;
    let head = format!(
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {}\r\nConnection: close\r\n\r\n",
        format.accept()
    );
    s.write_all(head.as_bytes()).map_err(io)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(io)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of the response head")?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| "head not UTF-8")?;
    let body = String::from_utf8(raw[split + 4..].to_vec()).map_err(|_| "body not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    let mut content_type = String::new();
    let mut length = None;
    for l in lines {
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| format!("bad header {l:?}"))?;
        match k.trim().to_ascii_lowercase().as_str() {
            "content-type" => content_type = v.trim().to_string(),
            "content-length" => length = v.trim().parse::<usize>().ok(),
            "content-encoding" => return Err(format!("unexpected encoding {v:?}")),
            _ => {}
        }
    }
    if status == 200 && length != Some(body.len()) {
        return Err(format!(
            "body of {} bytes, Content-Length {length:?}",
            body.len()
        ));
    }
    Ok((status, content_type, body))
}

// ----- the structural check ------------------------------------------------------

/// One sample line, parsed.
struct Sample<'a> {
    name: &'a str,
    /// Label pairs in order, values unescaped.
    labels: Vec<(&'a str, String)>,
    value: f64,
}

/// Parses `name{labels} value [timestamp]`.
fn parse_sample(line: &str) -> Result<Sample<'_>, String> {
    let bad = |why: &str| format!("{why}: {line:?}");
    let name_end = line.find(['{', ' ']).ok_or_else(|| bad("no value"))?;
    let name = &line[..name_end];
    let valid_name = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if !valid_name {
        return Err(bad("bad metric name"));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find("=\"").ok_or_else(|| bad("bad label"))?;
            let lname = &rest[..eq];
            if lname.is_empty() || !lname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(bad("bad label name"));
            }
            let mut value = String::new();
            let mut chars = rest[eq + 2..].char_indices();
            let end = loop {
                match chars.next() {
                    None => return Err(bad("unterminated label value")),
                    Some((i, '"')) => break eq + 2 + i + 1,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        _ => return Err(bad("bad escape in a label value")),
                    },
                    Some((_, c)) => value.push(c),
                }
            };
            labels.push((lname, value));
            rest = &rest[end..];
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else if !rest.starts_with('}') {
                return Err(bad("bad label separator"));
            }
        }
    }
    let rest = rest
        .strip_prefix(' ')
        .ok_or_else(|| bad("no space before the value"))?;
    let mut fields = rest.split(' ');
    let value = fields.next().unwrap_or("");
    let value: f64 = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v if v.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) && !v.is_empty() => {
            v.parse().map_err(|_| bad("unparseable value"))?
        }
        _ => return Err(bad("unparseable value")),
    };
    match fields.next() {
        None => {}
        Some(ts) if ts.parse::<f64>().is_ok() && fields.next().is_none() => {}
        Some(_) => return Err(bad("trailing garbage")),
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// A series' identity: its name and labels (as written, `le` included).
fn series_key(name: &str, labels: &[(&str, String)]) -> String {
    let mut l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    l.sort();
    format!("{name}{{{}}}", l.join(","))
}

/// Figures of one checked body.
#[derive(Debug, Default)]
struct BodyFacts {
    samples: usize,
    histogram_series: usize,
    /// Counters' samples, histogram buckets and counts: series -> value.
    monotone: HashMap<String, f64>,
}

/// The family a sample belongs to, given the declared types.
fn family_of<'a>(name: &str, types: &'a HashMap<String, String>) -> Option<(&'a str, &'a str)> {
    if let Some((n, t)) = types.get_key_value(name) {
        return Some((n, t));
    }
    ["_total", "_bucket", "_count", "_sum", "_created", "_info"]
        .iter()
        .find_map(|suffix| {
            let base = name.strip_suffix(suffix)?;
            types
                .get_key_value(base)
                .map(|(n, t)| (n.as_str(), t.as_str()))
        })
}

/// Checks a body's structure; returns its facts or the first problem.
fn check_body(body: &str, format: Format) -> Result<BodyFacts, String> {
    let mut lines: Vec<&str> = body.split('\n').collect();
    if lines.pop() != Some("") {
        return Err("the body does not end with a newline".into());
    }
    if format == Format::OpenMetrics && lines.pop() != Some("# EOF") {
        return Err("the OpenMetrics body does not end with \"# EOF\\n\"".into());
    }
    let mut facts = BodyFacts::default();
    let mut types: HashMap<String, String> = HashMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    // Histogram series (family + labels without `le`) -> (last le, last
    // bucket value, count of the +Inf bucket).
    let mut buckets: HashMap<String, (f64, f64, Option<f64>)> = HashMap::new();
    let mut counts: HashMap<String, f64> = HashMap::new();
    let mut sums: HashSet<String> = HashSet::new();
    for line in lines {
        if line.is_empty() {
            return Err("an empty line".into());
        }
        if let Some(c) = line.strip_prefix('#') {
            if c == " EOF" {
                return Err("\"# EOF\" before the end".into());
            }
            if let Some(t) = c.strip_prefix(" TYPE ") {
                let (n, t) = t
                    .split_once(' ')
                    .ok_or_else(|| format!("bad TYPE line {line:?}"))?;
                if types.insert(n.to_string(), t.to_string()).is_some() {
                    return Err(format!("family {n} declared twice"));
                }
            }
            continue;
        }
        let s = parse_sample(line)?;
        facts.samples += 1;
        if !seen.insert(series_key(s.name, &s.labels)) {
            return Err(format!("series twice: {line:?}"));
        }
        let Some((fam, kind)) = family_of(s.name, &types) else {
            return Err(format!("sample of an undeclared family: {line:?}"));
        };
        match kind {
            "counter" if !s.name.ends_with("_created") => {
                if s.value.is_nan() || s.value < 0.0 {
                    return Err(format!("negative or NaN counter: {line:?}"));
                }
                facts
                    .monotone
                    .insert(series_key(s.name, &s.labels), s.value);
            }
            "histogram" => {
                let rest = &s.name[fam.len()..];
                let without_le: Vec<(&str, String)> = s
                    .labels
                    .iter()
                    .filter(|(k, _)| *k != "le")
                    .cloned()
                    .collect();
                let hkey = series_key(fam, &without_le);
                match rest {
                    "_bucket" => {
                        let le = s
                            .labels
                            .iter()
                            .find(|(k, _)| *k == "le")
                            .ok_or_else(|| format!("bucket without le: {line:?}"))?;
                        let le: f64 = match le.1.as_str() {
                            "+Inf" => f64::INFINITY,
                            v => v.parse().map_err(|_| format!("bad le: {line:?}"))?,
                        };
                        if counts.contains_key(&hkey) {
                            return Err(format!("bucket after its _count: {line:?}"));
                        }
                        let e = buckets
                            .entry(hkey)
                            .or_insert((f64::NEG_INFINITY, 0.0, None));
                        if e.2.is_some() {
                            return Err(format!("bucket after +Inf: {line:?}"));
                        }
                        if le.is_nan() || le <= e.0 {
                            return Err(format!("le not increasing: {line:?}"));
                        }
                        if s.value.is_nan() || s.value < e.1 {
                            return Err(format!(
                                "bucket not cumulative ({} before): {line:?}",
                                e.1
                            ));
                        }
                        *e = (le, s.value, le.is_infinite().then_some(s.value));
                        facts
                            .monotone
                            .insert(series_key(s.name, &s.labels), s.value);
                    }
                    "_count" => {
                        let inf = buckets
                            .get(&hkey)
                            .and_then(|b| b.2)
                            .ok_or_else(|| format!("_count without a +Inf bucket: {line:?}"))?;
                        if s.value != inf {
                            return Err(format!(
                                "_count {} != +Inf bucket {inf}: {line:?}",
                                s.value
                            ));
                        }
                        counts.insert(hkey.clone(), s.value);
                        facts
                            .monotone
                            .insert(series_key(s.name, &s.labels), s.value);
                    }
                    "_sum" => {
                        sums.insert(hkey);
                    }
                    "_created" => {}
                    _ => return Err(format!("odd histogram sample: {line:?}")),
                }
            }
            _ => {}
        }
    }
    for (k, b) in &buckets {
        if b.2.is_none() {
            return Err(format!("histogram {k} has no +Inf bucket"));
        }
        if !counts.contains_key(k) {
            return Err(format!("histogram {k} has no _count"));
        }
        if !sums.contains(k) {
            return Err(format!("histogram {k} has no _sum"));
        }
    }
    facts.histogram_series = buckets.len();
    Ok(facts)
}

// ----- promtool ------------------------------------------------------------------

/// `promtool check metrics` on a body. It has no OpenMetrics parser, but
/// its text parser reads OpenMetrics once `\"` in HELP is undone; its lint
/// findings on OpenMetrics (`_total` / `_created` read as families without
/// help) are expected, so for OpenMetrics only a parse failure (exit 1)
/// counts. A text body must parse and lint clean.
fn promtool(body: &str, format: Format) -> Result<(), String> {
    let input: String = match format {
        Format::Text => body.to_string(),
        Format::OpenMetrics => body
            .lines()
            .map(|l| match l.strip_prefix("# HELP ") {
                Some(h) => format!("# HELP {}\n", h.replace("\\\"", "\"")),
                None => format!("{l}\n"),
            })
            .collect(),
    };
    let (code, text) = promtool_check(&input);
    let ok = match format {
        Format::Text => code == 0 && text.trim().is_empty(),
        Format::OpenMetrics => {
            (code == 0 || code == 3)
                && text.lines().filter(|l| !l.trim().is_empty()).all(|l| {
                    l.strip_suffix(" no help text")
                        .is_some_and(|n| n.ends_with("_total") || n.ends_with("_created"))
                })
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "promtool check metrics ({format:?}) exit {code}:\n{text}"
        ))
    }
}

// ----- the scraper -----------------------------------------------------------------

/// What the scraping thread saw.
#[derive(Default)]
struct ScrapeReport {
    scrapes: u64,
    by_format: [u64; 2],
    max_samples: usize,
    max_histograms: usize,
    /// Bodies kept for promtool.
    kept: Vec<(Format, String)>,
    error: Option<String>,
}

fn scraper(addr: SocketAddr, stop: Arc<AtomicBool>, count: Arc<AtomicU64>) -> ScrapeReport {
    let mut report = ScrapeReport::default();
    let mut last: [HashMap<String, f64>; 2] = [HashMap::new(), HashMap::new()];
    while !stop.load(SeqCst) {
        let n = report.scrapes;
        let format = if n % 2 == 0 {
            Format::Text
        } else {
            Format::OpenMetrics
        };
        let fi = n as usize % 2;
        let r = scrape(addr, format).and_then(|(status, ct, body)| {
            if status != 200 {
                return Err(format!("status {status}: {body}"));
            }
            if !ct.starts_with(format.content_type_prefix()) {
                return Err(format!("Content-Type {ct:?} for {format:?}"));
            }
            let facts = check_body(&body, format)?;
            for (k, v) in &facts.monotone {
                if let Some(before) = last[fi].get(k) {
                    if v < before {
                        return Err(format!("{k} went down: {before} -> {v}"));
                    }
                }
            }
            last[fi].extend(facts.monotone.iter().map(|(k, v)| (k.clone(), *v)));
            report.max_samples = report.max_samples.max(facts.samples);
            report.max_histograms = report.max_histograms.max(facts.histogram_series);
            // Keep the first of each format and then one every 16 per
            // format, up to PROMTOOL_SAMPLES each.
            let per_format = n / 2;
            let kept_of_format = report.kept.iter().filter(|(f, _)| *f == format).count();
            if per_format % 16 == 0 && kept_of_format < PROMTOOL_SAMPLES {
                report.kept.push((format, body));
            }
            Ok(())
        });
        report.scrapes += 1;
        report.by_format[fi] += 1;
        if let Err(e) = r {
            report.error = Some(format!("scrape #{} ({format:?}): {e}", report.scrapes));
            break;
        }
        count.store(report.scrapes, SeqCst);
    }
    report
}

#[test]
fn scrapes_stay_valid_under_sigkill() {
    // Fail early, not after the storm, if promtool is missing.
    promtool(
        "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n",
        Format::Text,
    )
    .expect("promtool on a trivial body");

    let dir = tempdir();
    let path = dir.path().join("store");
    let opts = Options {
        max_series: 8192,
        max_writers: 64,
        ..Options::default()
    };
    let _store = create_store(&path, &opts);
    let exporter = TestServer::start(&path, |_| {});
    let min_kills: u64 = if long_mode() { 2_000 } else { 100 };

    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let scraper_thread = {
        let (stop, count, addr) = (stop.clone(), count.clone(), exporter.addr);
        std::thread::spawn(move || scraper(addr, stop, count))
    };

    let ack_path = |i: usize| dir.path().join(format!("ack-{i}"));
    let spawn = |i: usize| Worker::spawn("churn", &path, &ack_path(i), true, &[]);
    let mut workers: Vec<Worker> = (0..WORKERS).map(spawn).collect();
    let mut rng = Rng::from_entropy();
    let mut kills = 0u64;
    // Kill until enough kills and enough scrapes, or the scraper failed;
    // bounded, so that a stuck scraper fails the test instead of hanging.
    let deadline = Instant::now() + PATIENCE * 10;
    while (kills < min_kills || count.load(SeqCst) < MIN_SCRAPES) && !scraper_thread.is_finished() {
        assert!(
            Instant::now() < deadline,
            "only {} scrapes after {kills} kills in {:?}",
            count.load(SeqCst),
            PATIENCE * 10
        );
        std::thread::sleep(Duration::from_micros(rng.range(500, 4000)));
        let i = rng.below(WORKERS as u64) as usize;
        workers[i].kill_expecting_running();
        kills += 1;
        workers[i] = spawn(i);
    }
    for w in &mut workers {
        w.wait_word(word::READY, 1);
    }
    // A few scrapes more with every worker running, then stop all.
    let target = count.load(SeqCst) + 4;
    while count.load(SeqCst) < target && !scraper_thread.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
    }
    for w in &mut workers {
        w.stop();
    }
    stop.store(true, SeqCst);
    let report = scraper_thread.join().expect("the scraper thread panicked");
    exporter.stop();
    eprintln!(
        "scrape during kills: {kills} kills, {} scrapes ({} text, {} OpenMetrics), \
         up to {} samples and {} histogram series a page, {} bodies through promtool",
        report.scrapes,
        report.by_format[0],
        report.by_format[1],
        report.max_samples,
        report.max_histograms,
        report.kept.len()
    );

    assert_eq!(report.error, None, "a scrape failed its checks");
    assert!(kills >= min_kills);
    assert!(
        report.scrapes >= MIN_SCRAPES,
        "only {} scrapes",
        report.scrapes
    );
    // The pages held the churn families: 1,000 histogram series at least.
    assert!(
        report.max_histograms >= shmetrics_testkit::proto::CHURN_SERIES,
        "pages held only {} histogram series",
        report.max_histograms
    );
    let promtooled = |f: Format| report.kept.iter().filter(|(g, _)| *g == f).count();
    assert!(promtooled(Format::Text) >= 2 && promtooled(Format::OpenMetrics) >= 2);
    for (i, (format, body)) in report.kept.iter().enumerate() {
        if let Err(e) = promtool(body, *format) {
            let file = std::env::temp_dir().join(format!("scrape-during-kills-{i}.txt"));
            let _ = std::fs::write(&file, body);
            panic!("{e}\n(body saved to {})", file.display());
        }
    }
}

#[test]
fn the_body_check_catches_broken_pages() {
    let good = "# TYPE h histogram\nh_bucket{a=\"x\",le=\"1\"} 1\nh_bucket{a=\"x\",le=\"+Inf\"} 3\nh_count{a=\"x\"} 3\nh_sum{a=\"x\"} 2.5\n# TYPE c counter\nc_total{b=\"q\\\"\"} 7\n";
    let facts = check_body(good, Format::Text).unwrap();
    assert_eq!((facts.samples, facts.histogram_series), (5, 1));
    check_body(&format!("{good}# EOF\n"), Format::OpenMetrics).unwrap();
    for (bad, why) in [
        (good.replace("le=\"1\"} 1", "le=\"1\"} 4"), "not cumulative"),
        (
            good.replace("h_count{a=\"x\"} 3", "h_count{a=\"x\"} 2"),
            "count",
        ),
        (
            good.replace(" 7\n", " 7\nc_total{b=\"q\\\"\"} 8\n"),
            "twice",
        ),
        (good.replace(" 7\n", " seven\n"), "value"),
        (good.replace("le=\"+Inf\"", "le=\"0.5\""), "le"),
        (good[..good.len() - 1].to_string(), "newline"),
    ] {
        assert!(check_body(&bad, Format::Text).is_err(), "{why}: {bad}");
    }
    assert!(check_body(good, Format::OpenMetrics).is_err(), "no # EOF");
}

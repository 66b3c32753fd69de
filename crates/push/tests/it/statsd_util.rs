//! Shared helpers of the StatsD tests: the real Etsy StatsD server (npm's
//! `statsd`, run with Node.js and read through its management interface),
//! a strict parser of the DogStatsD datagram format with UDP and Unix
//! datagram receivers, and waits on the exporter's flushes.
//!
//! Etsy StatsD comes from npm: set `SHMETRICS_STATSD_JS` to its
//! `stats.js`, or the tests run `npm install statsd@0.9.0` once into the
//! target directory. Node.js and npm (Debian's `nodejs` and `npm`) must
//! be installed: a missing one fails the test, it never skips.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::util::{find_metric, spawn_logged, wait_for, KillOnDrop, Serve, IO_TIMEOUT};

/// How long a flush or a datagram may take to show up.
pub const FLUSH_WAIT: Duration = Duration::from_secs(60);

// ----- Etsy StatsD ------------------------------------------------------------

/// The version of npm's `statsd` the tests install.
pub const STATSD_NPM: &str = "statsd@0.9.0";

/// `stats.js` of npm's `statsd`: `$SHMETRICS_STATSD_JS`, or installed
/// once with npm under the target directory.
pub fn statsd_js() -> PathBuf {
    static JS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    JS.get_or_init(|| {
        if let Some(p) = std::env::var_os("SHMETRICS_STATSD_JS") {
            let p = PathBuf::from(p);
            return if p.is_file() {
                Ok(p)
            } else {
                Err(format!("SHMETRICS_STATSD_JS={} is not a file", p.display()))
            };
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("npm-statsd");
        let js = dir.join("node_modules/statsd/stats.js");
        if js.is_file() {
            return Ok(js);
        }
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = Command::new("npm")
            .current_dir(&dir)
            .args(["install", "--no-audit", "--no-fund", "--ignore-scripts"])
            .args(["--no-save", "--prefix", "."])
            .arg(STATSD_NPM)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                format!("cannot run npm ({e}): install Debian's `nodejs` and `npm` packages")
            })?;
        if !out.status.success() || !js.is_file() {
            return Err(format!(
                "npm install {STATSD_NPM} failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(js)
    })
    .clone()
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A UDP port on loopback that was free a moment ago.
pub fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Etsy StatsD on loopback, killed when dropped. It never flushes to a
/// backend during a test (its flush interval is an hour), so its counters
/// are the sums of everything received since it started.
pub struct EtsyStatsd {
    _process: KillOnDrop,
    /// The UDP address it receives on.
    pub addr: SocketAddr,
    /// Its management interface (TCP).
    pub mgmt: SocketAddr,
    log: PathBuf,
}

impl EtsyStatsd {
    /// Starts it with its config and log under `dir`.
    pub fn start(dir: &Path) -> EtsyStatsd {
        let js = statsd_js();
        std::fs::create_dir_all(dir).unwrap();
        for attempt in 0..4 {
            let addr: SocketAddr = format!("127.0.0.1:{}", free_udp_port()).parse().unwrap();
            let mgmt: SocketAddr = format!("127.0.0.1:{}", crate::util::free_port())
                .parse()
                .unwrap();
            let config = dir.join(format!("config-{attempt}.js"));
            std::fs::write(
                &config,
                format!(
                    "{{\n  address: \"127.0.0.1\",\n  port: {},\n  mgmt_address: \"127.0.0.1\",\n  \
                     mgmt_port: {},\n  flushInterval: 3600000,\n  backends: [],\n  \
                     dumpMessages: true\n}}\n",
                    addr.port(),
                    mgmt.port()
                ),
            )
            .unwrap();
            let log = dir.join(format!("statsd-{attempt}.log"));
            let process = spawn_logged(
                Command::new("node").arg(&js).arg(&config),
                &log,
                "Debian's `nodejs` package",
            );
            let mut s = EtsyStatsd {
                _process: process,
                addr,
                mgmt,
                log,
            };
            let start = Instant::now();
            loop {
                if let Some(status) = s._process.0.try_wait().unwrap() {
                    eprintln!("statsd exited ({status}); retrying:\n{}", s.log());
                    break;
                }
                if let Ok(r) = s.command("health") {
                    if r.trim() == "health: up" {
                        return s;
                    }
                }
                if start.elapsed() > Duration::from_secs(60) {
                    panic!("statsd did not answer on {mgmt} within 60 s:\n{}", s.log());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("statsd did not start");
    }

    /// What it logged (every line received: `dumpMessages`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// One management command's answer, up to its `END` (or the first line
    /// for `health`).
    pub fn command(&self, cmd: &str) -> std::io::Result<String> {
        let mut s = TcpStream::connect_timeout(&self.mgmt, IO_TIMEOUT)?;
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.write_all(format!("{cmd}\n").as_bytes())?;
        let mut r = BufReader::new(s);
        let mut out = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                break;
            }
            if line.trim_end() == "END" {
                break;
            }
            out.push_str(&line);
            if cmd == "health" {
                break;
            }
        }
        Ok(out)
    }

    fn object(&self, cmd: &str) -> BTreeMap<String, f64> {
        let text = self
            .command(cmd)
            .unwrap_or_else(|e| panic!("statsd management command {cmd}: {e}"));
        parse_inspect(&text).unwrap_or_else(|e| panic!("{cmd}: {e} in {text:?}"))
    }

    /// Its counters (`counters`): name to total.
    pub fn counters(&self) -> BTreeMap<String, f64> {
        self.object("counters")
    }

    /// Its gauges (`gauges`): name to value.
    pub fn gauges(&self) -> BTreeMap<String, f64> {
        self.object("gauges")
    }
}

/// Parses what Node's `util.inspect` prints for an object of numbers:
/// `{ 'a.b': 1, c: -2.5 }`, over several lines.
pub fn parse_inspect(text: &str) -> Result<BTreeMap<String, f64>, String> {
    let body = text.trim();
    let body = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or("not an object")?;
    let mut out = BTreeMap::new();
    for entry in body.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (key, value) = entry
            .rsplit_once(':')
            .ok_or_else(|| format!("no ':' in {entry:?}"))?;
        let key = key.trim();
        let key = key
            .strip_prefix('\'')
            .and_then(|k| k.strip_suffix('\''))
            .unwrap_or(key);
        let value = match value.trim() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| format!("bad number {v:?}"))?,
        };
        out.insert(key.to_string(), value);
    }
    Ok(out)
}

// ----- the exporter's flushes ---------------------------------------------------

/// The value of one of the exporter's own metrics (0 if absent).
pub fn self_metric(serve: &Serve, series: &str) -> f64 {
    find_metric(&serve.exporter_metrics(), series).unwrap_or(0.0)
}

/// Flushes made so far.
pub fn flushes(serve: &Serve) -> u64 {
    self_metric(serve, "shmetrics_statsd_flushes_total") as u64
}

/// Waits until the exporter has made more than `after` flushes.
pub fn wait_flush_after(serve: &Serve, after: u64) -> u64 {
    wait_for(
        &format!("a StatsD flush after flush {after}"),
        FLUSH_WAIT,
        Duration::from_millis(20),
        || match flushes(serve) {
            n if n > after => Ok(n),
            n => Err(format!("{n} flushes\n{}", serve.stderr())),
        },
    )
}

/// Waits until the clock is `fraction` of the way into an interval:
/// flushes happen at multiples of the interval, so updates made then
/// all land in the next flush.
pub fn mid_interval(interval: Duration, fraction: f64) {
    let step = interval.as_nanos() as u64;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let target = (step as f64 * fraction) as u64;
    let into = now % step;
    let wait = if into <= target {
        target - into
    } else {
        step - into + target
    };
    std::thread::sleep(Duration::from_nanos(wait));
}

// ----- DogStatsD: a strict parser and receivers ----------------------------------

/// The metric types the exporter sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Count,
    Gauge,
    Distribution,
}

/// One parsed line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub name: String,
    pub values: Vec<f64>,
    /// The values as written.
    pub raw_values: Vec<String>,
    pub ty: Type,
    /// As written after `@`, if present.
    pub rate: Option<String>,
    pub tags: Vec<(String, String)>,
    /// The line as received.
    pub text: String,
}

impl Line {
    /// How many samples each value stands for, as the Datadog agent
    /// computes it: `1/rate`, truncated (its sketches' `uint(1/rate)`);
    /// fails unless rounding gives the same count (its counters use the
    /// float).
    pub fn weight(&self) -> Result<u64, String> {
        let Some(rate) = &self.rate else { return Ok(1) };
        let r: f64 = rate.parse().map_err(|_| format!("rate {rate}"))?;
        let inv = 1.0 / r;
        let (t, n) = (inv as u64, inv.round() as u64);
        if t != n || (inv - n as f64).abs() > 1e-6 * n as f64 {
            return Err(format!(
                "rate {rate} gives 1/rate = {inv}: truncated {t}, rounded {n}"
            ));
        }
        Ok(t)
    }

    /// The tags as `k:v,...` (for map keys).
    pub fn tag_string(&self) -> String {
        self.tags
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A number as the exporter writes it: `-?digits(.digits)?(e-?digits)?`,
/// no leading zeros, no `+`, finite.
fn strict_number(s: &str) -> Result<f64, String> {
    let err = || format!("bad number {s:?}");
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int = &b[int_start..i];
    if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return Err(err());
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == f {
            return Err(err());
        }
    }
    if i < b.len() && b[i] == b'e' {
        i += 1;
        if i < b.len() && b[i] == b'-' {
            i += 1;
        }
        let e = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == e {
            return Err(err());
        }
    }
    if i != b.len() {
        return Err(err());
    }
    let v: f64 = s.parse().map_err(|_| err())?;
    if !v.is_finite() {
        return Err(err());
    }
    Ok(v)
}

/// A tag's key or value as the datagram format can carry it: not empty,
/// no separator (`,` `|`), no line break, and no `:` in a key.
fn tag_part_ok(s: &str, value: bool) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| !matches!(c, ',' | '|' | '\n' | '\r') && (value || c != ':'))
}

/// Parses one line strictly: `name:v[:v...]|type[|@rate][|#k:v,...]`.
pub fn parse_line(text: &str) -> Result<Line, String> {
    let bad = |why: &str| Err(format!("{why} in line {text:?}"));
    let mut fields = text.split('|');
    let head = fields.next().unwrap_or("");
    let Some((name, values)) = head.split_once(':') else {
        return bad("no ':'");
    };
    if name.is_empty()
        || !name.starts_with(|c: char| c.is_ascii_alphabetic())
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    {
        return bad("bad name");
    }
    let raw_values: Vec<String> = values.split(':').map(str::to_string).collect();
    let mut parsed = Vec::new();
    for v in &raw_values {
        parsed.push(strict_number(v).map_err(|e| format!("{e} in line {text:?}"))?);
    }
    let ty = match fields.next() {
        Some("c") => Type::Count,
        Some("g") => Type::Gauge,
        Some("d") => Type::Distribution,
        other => return bad(&format!("unexpected type {other:?}")),
    };
    if ty != Type::Distribution && parsed.len() != 1 {
        return bad("several values in a count or gauge");
    }
    let mut rate = None;
    let mut tags = Vec::new();
    let mut seen_tags = false;
    for f in fields {
        if let Some(r) = f.strip_prefix('@') {
            if rate.is_some() || seen_tags {
                return bad("'@' twice or after '#'");
            }
            let v = strict_number(r).map_err(|e| format!("{e} in line {text:?}"))?;
            if !(v > 0.0 && v < 1.0) || r.contains('e') {
                return bad("sample rate not in (0, 1) as plain decimal");
            }
            rate = Some(r.to_string());
        } else if let Some(t) = f.strip_prefix('#') {
            if seen_tags {
                return bad("'#' twice");
            }
            seen_tags = true;
            for tag in t.split(',') {
                let Some((k, v)) = tag.split_once(':') else {
                    return bad("a tag without ':'");
                };
                if !tag_part_ok(k, false) || !tag_part_ok(v, true) {
                    return bad(&format!("bad tag {tag:?}"));
                }
                tags.push((k.to_string(), v.to_string()));
            }
        } else {
            return bad(&format!("unexpected field {f:?}"));
        }
    }
    Ok(Line {
        name: name.to_string(),
        values: parsed,
        raw_values,
        ty,
        rate,
        tags,
        text: text.to_string(),
    })
}

/// Parses a datagram strictly: UTF-8, at most `max` bytes, lines joined
/// by single `\n`s (no empty line, no trailing newline), and a negative
/// gauge always right after `name:0|g` with the same tags.
pub fn parse_datagram(d: &[u8], max: usize) -> Result<Vec<Line>, String> {
    if d.is_empty() || d.len() > max {
        return Err(format!("datagram of {} bytes (max {max})", d.len()));
    }
    let text = std::str::from_utf8(d).map_err(|e| e.to_string())?;
    let mut lines: Vec<Line> = Vec::new();
    for l in text.split('\n') {
        if l.is_empty() {
            return Err(format!("empty line in datagram {text:?}"));
        }
        let line = parse_line(l)?;
        if line.ty == Type::Gauge && line.values[0] < 0.0 {
            let prev = lines.last();
            let ok = prev.is_some_and(|p| {
                p.ty == Type::Gauge
                    && p.name == line.name
                    && p.tags == line.tags
                    && p.raw_values == ["0"]
            });
            if !ok {
                return Err(format!("negative gauge not preceded by a zero in {text:?}"));
            }
        }
        lines.push(line);
    }
    Ok(lines)
}

/// A receiver thread that keeps every datagram it gets.
pub struct Collector {
    datagrams: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Where it listens: `HOST:PORT` or `unix:///path`.
    pub address: String,
}

enum Sock {
    Udp(UdpSocket),
    Unix(UnixDatagram),
}

impl Collector {
    /// On a UDP port of loopback.
    pub fn udp() -> Collector {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let address = s.local_addr().unwrap().to_string();
        Collector::spawn(Sock::Udp(s), address)
    }

    /// On a Unix datagram socket at `path`.
    pub fn unix(path: &Path) -> Collector {
        let s = UnixDatagram::bind(path).unwrap();
        Collector::spawn(Sock::Unix(s), format!("unix://{}", path.display()))
    }

    fn spawn(sock: Sock, address: String) -> Collector {
        let datagrams = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d, s) = (datagrams.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 70_000];
            let timeout = Some(Duration::from_millis(50));
            match &sock {
                Sock::Udp(u) => u.set_read_timeout(timeout).unwrap(),
                Sock::Unix(u) => u.set_read_timeout(timeout).unwrap(),
            }
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let r = match &sock {
                    Sock::Udp(u) => u.recv(&mut buf),
                    Sock::Unix(u) => u.recv(&mut buf),
                };
                if let Ok(n) = r {
                    d.lock().unwrap().push(buf[..n].to_vec());
                }
            }
        });
        Collector {
            datagrams,
            stop,
            thread: Some(thread),
            address,
        }
    }

    /// Datagrams received so far.
    pub fn count(&self) -> usize {
        self.datagrams.lock().unwrap().len()
    }

    /// Datagrams from index `from` on.
    pub fn since(&self, from: usize) -> Vec<Vec<u8>> {
        self.datagrams.lock().unwrap()[from..].to_vec()
    }

    /// Waits until `n` datagrams in all have arrived.
    pub fn wait_count(&self, n: usize) {
        wait_for(
            &format!("{n} datagrams"),
            FLUSH_WAIT,
            Duration::from_millis(10),
            || match self.count() {
                c if c >= n => Ok(()),
                c => Err(format!("{c} datagrams")),
            },
        );
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

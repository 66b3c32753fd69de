//! Shared helpers: the receivers (Debian's `prometheus` and
//! `victoria-metrics`), the `shmetrics` binary, a small blocking HTTP
//! client, and bounded waits.
//!
//! Every wait here is bounded: when a bound is reached the test fails, it
//! never hangs and never skips. A missing receiver fails the test and says
//! which Debian package to install.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The upper bound for one HTTP exchange.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a pushed value may take to show up in a receiver.
pub const ARRIVAL: Duration = Duration::from_secs(120);

/// Polls `f` every `every` until it returns `Some`, for at most `limit`;
/// panics with `what` (and the last state `f` described) at the limit.
pub fn wait_for<T>(
    what: &str,
    limit: Duration,
    every: Duration,
    mut f: impl FnMut() -> Result<T, String>,
) -> T {
    let start = Instant::now();
    loop {
        let last = match f() {
            Ok(v) => return v,
            Err(last) => last,
        };
        if start.elapsed() > limit {
            panic!("timed out after {limit:?} waiting for {what}; last: {last}");
        }
        std::thread::sleep(every);
    }
}

// ----- HTTP -------------------------------------------------------------------

/// A response: status and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// One request on a new connection (`Connection: close`); the body is
/// read to the end of the stream.
pub fn request(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<Response> {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    let length = if method == "POST" {
        "Content-Length: 0\r\n"
    } else {
        ""
    };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{length}\r\n"
    )?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut chunked = false;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        let l = line.to_ascii_lowercase();
        if l.starts_with("transfer-encoding:") && l.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?;
        }
    } else {
        r.read_to_end(&mut body)?;
    }
    Ok(Response {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// `GET`; panics on an I/O error.
pub fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path).unwrap_or_else(|e| panic!("GET http://{addr}{path} failed: {e}"))
}

/// Percent-encodes a query parameter.
pub fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

// ----- processes ------------------------------------------------------------------

/// A process killed (SIGKILL) and reaped when dropped.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (bounded) for a process to exit; kills it and panics at the limit.
pub fn wait_exit(p: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = p.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = p.kill();
            let _ = p.wait();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ----- receivers ----------------------------------------------------------------

/// Which receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Debian's `prometheus`, with `--web.enable-remote-write-receiver`
    /// unless `receiver` is false.
    Prometheus { receiver: bool },
    /// Debian's `victoria-metrics`.
    Victoria,
}

/// A receiver on a loopback port, killed when dropped. It can be stopped
/// and started again on the same port and data directory.
pub struct Receiver {
    kind: Peer,
    process: Option<KillOnDrop>,
    /// Where it listens.
    pub addr: SocketAddr,
    dir: PathBuf,
    starts: u32,
    /// Further arguments, passed on every start.
    pub extra_args: Vec<String>,
}

impl Receiver {
    /// Starts a receiver with its data under `dir`, on a free port.
    pub fn start(kind: Peer, dir: &Path) -> Receiver {
        Receiver::start_with(kind, dir, &[])
    }

    /// Starts a receiver with further arguments.
    pub fn start_with(kind: Peer, dir: &Path, extra_args: &[&str]) -> Receiver {
        std::fs::create_dir_all(dir).unwrap();
        // The port was free a moment ago; if another process took it in
        // between, the receiver exits and gets another one.
        for attempt in 0..4 {
            let mut r = Receiver {
                kind,
                process: None,
                addr: format!("127.0.0.1:{}", free_port()).parse().unwrap(),
                dir: dir.to_path_buf(),
                starts: 0,
                extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            };
            match r.try_start() {
                Ok(()) => return r,
                Err(e) if attempt < 3 => eprintln!("{kind:?} did not start ({e}); retrying"),
                Err(e) => panic!("{kind:?} did not start: {e}"),
            }
        }
        unreachable!()
    }

    /// The remote-write URL.
    pub fn write_url(&self) -> String {
        match self.kind {
            Peer::Prometheus { .. } => format!("http://{}/api/v1/write", self.addr),
            Peer::Victoria => format!("http://{}/api/v1/write", self.addr),
        }
    }

    fn binary(&self) -> (&'static str, &'static str) {
        match self.kind {
            Peer::Prometheus { .. } => ("/usr/bin/prometheus", "prometheus"),
            Peer::Victoria => ("/usr/bin/victoria-metrics", "victoria-metrics"),
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("receiver-{}.log", self.starts))
    }

    /// What it logged in its last run.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn try_start(&mut self) -> Result<(), String> {
        self.starts += 1;
        let (bin, package) = self.binary();
        let data = self.dir.join("data");
        let mut cmd = Command::new(bin);
        match self.kind {
            Peer::Prometheus { receiver } => {
                let config = self.dir.join("prometheus.yml");
                std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
                cmd.arg(format!("--config.file={}", config.display()))
                    .arg(format!("--storage.tsdb.path={}", data.display()))
                    .arg(format!("--web.listen-address={}", self.addr));
                if receiver {
                    cmd.arg("--web.enable-remote-write-receiver");
                }
            }
            Peer::Victoria => {
                cmd.arg(format!("-httpListenAddr={}", self.addr))
                    .arg(format!("-storageDataPath={}", data.display()))
                    // Show samples as soon as they are flushed, not 30 s
                    // later, and do not cache responses.
                    .arg("-search.latencyOffset=0s")
                    .arg("-search.disableCache");
            }
        }
        cmd.args(&self.extra_args);
        let log = std::fs::File::create(self.log_path()).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run {bin} ({e}): install the Debian package `{package}`")
            });
        self.process = Some(KillOnDrop(child));
        let ready_path = match self.kind {
            Peer::Prometheus { .. } => "/-/ready",
            Peer::Victoria => "/health",
        };
        let started = Instant::now();
        loop {
            let p = self.process.as_mut().unwrap();
            if let Some(status) = p.0.try_wait().unwrap() {
                self.process = None;
                return Err(format!("{bin} exited ({status}):\n{}", self.log()));
            }
            if let Ok(r) = request(self.addr, "GET", ready_path) {
                if r.status == 200 {
                    return Ok(());
                }
            }
            if started.elapsed() > Duration::from_secs(120) {
                return Err(format!("{bin} not ready within 120 s:\n{}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills it (SIGKILL, as a crash would) and waits until it is gone.
    pub fn stop(&mut self) {
        let mut p = self.process.take().expect("a running receiver");
        p.0.kill().unwrap();
        wait_exit(&mut p.0, IO_TIMEOUT, "the receiver");
    }

    /// Starts it again on the same port and data directory; panics if it
    /// cannot (for example if another process took the port meanwhile).
    pub fn restart(&mut self) {
        assert!(self.process.is_none(), "stop it first");
        self.try_start()
            .unwrap_or_else(|e| panic!("the receiver did not restart on {}: {e}", self.addr));
    }

    /// An instant query's result vector.
    pub fn query(&self, q: &str) -> Result<Vec<serde_json::Value>, String> {
        if self.kind == Peer::Victoria {
            // Make what was received searchable.
            let r = get(self.addr, "/internal/force_flush");
            if r.status != 200 {
                return Err(format!("force_flush: {} {}", r.status, r.body));
            }
        }
        let path = format!("/api/v1/query?query={}", url_encode(q));
        let r = request(self.addr, "GET", &path).map_err(|e| e.to_string())?;
        if r.status != 200 {
            return Err(format!("query {q}: {} {}", r.status, r.body));
        }
        let v: serde_json::Value = serde_json::from_str(&r.body).map_err(|e| e.to_string())?;
        if v["status"] != "success" || v["data"]["resultType"] != "vector" {
            return Err(format!("query {q}: {}", r.body));
        }
        Ok(v["data"]["result"].as_array().unwrap().clone())
    }

    /// The value of a query that returns exactly one sample.
    pub fn value(&self, q: &str) -> Result<f64, String> {
        let result = self.query(q)?;
        if result.len() != 1 {
            return Err(format!(
                "query {q} returned {} series: {result:?}",
                result.len()
            ));
        }
        result[0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("query {q}: odd value in {result:?}"))
    }

    /// Polls until the query returns exactly `want`.
    pub fn wait_value(&self, q: &str, want: f64) {
        wait_for(
            &format!("{q} == {want} in {:?}", self.kind),
            ARRIVAL,
            Duration::from_millis(250),
            || match self.value(q) {
                Ok(v) if v == want => Ok(()),
                Ok(v) => Err(format!("{v}")),
                Err(e) => Err(e),
            },
        );
    }
}

// ----- the `shmetrics` binary -------------------------------------------------------

/// The `shmetrics` binary of this build, built on first use with
/// `cargo build -p shmetrics --bin shmetrics` into this test binary's
/// target directory and profile. Panics if the build fails.
pub fn shmetrics_bin() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(build_shmetrics)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn build_shmetrics() -> Result<PathBuf, String> {
    // This executable is <target>/<profile dir>/deps/tests-<hash>.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the profile directory")?
        .to_path_buf();
    let target_dir = profile_dir
        .parent()
        .ok_or("cannot find the target directory")?
        .to_path_buf();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(other) => other.to_string(),
        None => return Err("odd profile directory".into()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(&cargo)
        .current_dir(&workspace)
        .args(["build", "--quiet", "-p", "shmetrics", "--bin", "shmetrics"])
        .arg("--profile")
        .arg(&profile)
        .arg("--target-dir")
        .arg(&target_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cargo:?} to build shmetrics: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo build -p shmetrics failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let bin = profile_dir.join("shmetrics");
    if !bin.is_file() {
        return Err(format!("{} was not built", bin.display()));
    }
    Ok(bin)
}

/// A running `shmetrics serve`, killed when dropped.
pub struct Serve {
    pub process: KillOnDrop,
    /// Where its /metrics is.
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts `shmetrics serve --listen 127.0.0.1:0 ARGS...` and waits
    /// (bounded) for it to print its address.
    pub fn start<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Serve {
        let mut p = Command::new(shmetrics_bin())
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start shmetrics serve");
        let stderr = p.stderr.take().unwrap();
        let process = KillOnDrop(p);
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut line = String::new();
            let mut tx = Some(tx);
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                log2.lock().unwrap().push_str(&line);
                if let Some(rest) = line.strip_prefix("shmetrics: serving ") {
                    if let Some(addr) = rest
                        .split("://")
                        .nth(1)
                        .and_then(|rest| rest.split('/').next())
                        .and_then(|a| a.parse::<SocketAddr>().ok())
                    {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(addr);
                        }
                    }
                }
                line.clear();
            }
        });
        let addr = rx.recv_timeout(IO_TIMEOUT).unwrap_or_else(|_| {
            panic!(
                "shmetrics serve did not report its address:\n{}",
                log.lock().unwrap()
            )
        });
        Serve {
            process,
            addr,
            stderr: log,
        }
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Its /metrics, as text.
    pub fn metrics(&self) -> String {
        let r = get(self.addr, "/metrics");
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }

    /// The value of `series` (`name{labels}` exactly as the text format
    /// writes it) in its /metrics.
    pub fn metric(&self, series: &str) -> f64 {
        let body = self.metrics();
        find_metric(&body, series).unwrap_or_else(|| {
            panic!(
                "no {series} in /metrics:\n{body}\n--- stderr:\n{}",
                self.stderr()
            )
        })
    }
}

/// The value of `series` (`name{labels}` as written) in a text exposition.
pub fn find_metric(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| {
        l.strip_prefix(series)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

//! Shared helpers: an in-process exporter, a small blocking HTTP/1.1
//! client, the reference tools (promtool, prometheus_client), child worker
//! processes, and the `shmetrics` binary.
//!
//! Every wait here is bounded: when a bound is reached the test fails, it
//! never hangs and never skips.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child as Process, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

use shmetrics_exporter::{Config, Renderer, Server};

/// The upper bound for one HTTP exchange with a server under test.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);

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

/// The text format's Content-Type.
pub const CT_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// OpenMetrics' Content-Type.
pub const CT_OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The protobuf format's Content-Type.
pub const CT_PROTOBUF: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// Polls `f` until it returns `Some`, every `every`, for at most `limit`;
/// panics naming `what` when the limit is reached.
pub fn wait_for<T>(
    what: &str,
    limit: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if start.elapsed() > limit {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(every);
    }
}

// ----- the in-process exporter ---------------------------------------------

/// An exporter running on its own tokio runtime in a thread of the test
/// process. Dropping it asks it to stop and does not wait.
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its renderer, for the statistics.
    pub renderer: Arc<Renderer>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl TestServer {
    /// Binds 127.0.0.1:0 and runs the exporter over `store`, with
    /// `tweak` applied to the default configuration.
    pub fn start(store: &Path, tweak: impl FnOnce(&mut Config)) -> TestServer {
        let mut config = Config::new(store.to_path_buf());
        config.listen = "127.0.0.1:0".parse().unwrap();
        tweak(&mut config);
        let (tx, rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || -> Result<(), String> {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move {
                let server = match Server::bind(config).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return Ok(());
                    }
                };
                let _ = tx.send(Ok((server.local_addr(), server.renderer())));
                server
                    .run(async move {
                        let _ = stop_rx.await;
                    })
                    .await
                    .map_err(|e| e.to_string())
            })
        });
        let (addr, renderer) = rx
            .recv_timeout(IO_TIMEOUT)
            .expect("the exporter thread did not report")
            .unwrap_or_else(|e| panic!("Server::bind failed: {e}"));
        TestServer {
            addr,
            renderer,
            shutdown: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Stops the server and waits (bounded) for `run` to return; panics
    /// if it failed or did not return.
    pub fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let thread = self.thread.take().unwrap();
        wait_for(
            "the exporter to stop",
            IO_TIMEOUT,
            Duration::from_millis(20),
            || thread.is_finished().then_some(()),
        );
        thread
            .join()
            .expect("the exporter thread panicked")
            .expect("Server::run failed");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
    }
}

// ----- a minimal HTTP/1.1 client ---------------------------------------------

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers, names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body as sent (still compressed if it was).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header of that (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every header of that name.
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as UTF-8, decompressed if `Content-Encoding: gzip`.
    pub fn text(&self) -> String {
        let bytes = if self.header("content-encoding") == Some("gzip") {
            gunzip(&self.body)
        } else {
            self.body.clone()
        };
        String::from_utf8(bytes).expect("a UTF-8 body")
    }
}

/// Decompresses a gzip stream (one member, nothing after it).
pub fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .expect("a valid gzip body");
    out
}

/// Connects with the I/O timeouts set.
pub fn try_connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(s)
}

/// Connects with the I/O timeouts set; panics on failure.
pub fn connect(addr: SocketAddr) -> TcpStream {
    try_connect(addr).unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"))
}

/// The bytes of a request head (`Host` added).
pub fn request_head(method: &str, path: &str, headers: &[(&str, &str)], close: bool) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// One request on a new connection (`Connection: close`).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Response> {
    let mut s = try_connect(addr)?;
    s.write_all(&request_head(method, path, headers, true))?;
    let mut r = BufReader::new(s);
    read_response(&mut r, method == "HEAD")
}

/// `GET path` on a new connection; panics on an I/O error.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
    request(addr, "GET", path, headers)
        .unwrap_or_else(|e| panic!("GET http://{addr}{path} failed: {e}"))
}

/// Reads one response: head, then a body by `Content-Length`, chunked, or
/// to the end of the stream.
pub fn read_response<R: BufRead>(r: &mut R, head_only: bool) -> std::io::Result<Response> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed before a response",
        ));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(bad("connection closed in the response head".into()));
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| bad(format!("bad header {l:?}")))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if head_only {
        // A response to HEAD has no body, whatever its headers say.
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the blank line.
                loop {
                    line.clear();
                    if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?;
        }
    } else if let Some(n) = find("content-length") {
        let n: usize = n
            .parse()
            .map_err(|_| bad(format!("bad content-length {n:?}")))?;
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Whether the peer has closed `s`: waits up to `limit` for end of stream
/// or a reset, draining whatever the server sends first (an error
/// response). Returns what was drained, or `None` if the connection was
/// still open at the limit.
pub fn wait_closed(s: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            return None;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None
            }
            Err(_) => return Some(got), // reset: closed
        }
    }
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

/// Runs `promtool check metrics` on `body`; returns its exit code and
/// output. Panics if promtool cannot be run.
pub fn promtool_check(body: &str) -> (i32, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}): install it (Debian package `prometheus`; ./run-tests does)")
        });
    let mut stdin = child.stdin.take().unwrap();
    let body = body.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A number distinct for each call in this process.
pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

// ----- processes ---------------------------------------------------------------

/// A process killed (SIGKILL) and reaped when dropped.
pub struct KillOnDrop(pub Process);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (bounded) for a process to exit; kills it and panics at the limit.
pub fn wait_exit(p: &mut Process, limit: Duration, what: &str) -> std::process::ExitStatus {
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

/// Sends a signal to a process.
pub fn signal(p: &Process, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(p.id()).unwrap();
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our
    // own child, not yet reaped.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// Set in worker processes: the worker mode (see `tests.rs`).
pub const WORKER_MODE: &str = "SHMETRICS_IT_WORKER";
/// Set in worker processes: the store path.
pub const WORKER_STORE: &str = "SHMETRICS_IT_STORE";
/// Set in worker processes: a mode-specific argument.
pub const WORKER_ARG: &str = "SHMETRICS_IT_ARG";
/// What a worker prints once it has done its writes.
pub const READY: &str = "SHMETRICS_IT_WORKER_READY";

/// Called by a worker when its writes are done: prints [`READY`].
pub fn worker_ready() {
    println!("{READY}");
    std::io::stdout().flush().unwrap();
}

/// A worker process: this test binary run again as `worker_process`.
/// Dropping it closes its standard input, which tells it to exit, and
/// checks that it succeeded.
pub struct Worker {
    process: Process,
    stdout: Option<BufReader<ChildStdout>>,
}

impl Worker {
    /// Starts a worker and waits (bounded) until it has written.
    pub fn start(mode: &str, store: &Path, arg: &str) -> Worker {
        let mut process = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "worker_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WORKER_MODE, mode)
            .env(WORKER_STORE, store)
            .env(WORKER_ARG, arg)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = process.stdout.take().unwrap();
        // Read on a thread so that the wait is bounded.
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                    let _ = tx.send(false);
                    return stdout;
                }
                // The harness prints `test worker_process ... ` first.
                if line.trim_end().ends_with(READY) {
                    let _ = tx.send(true);
                    return stdout;
                }
            }
        });
        match rx.recv_timeout(IO_TIMEOUT) {
            Ok(true) => {}
            Ok(false) => panic!("worker {mode} ended before writing: {:?}", process.wait()),
            Err(_) => {
                let _ = process.kill();
                panic!("worker {mode} did not get ready within {IO_TIMEOUT:?}");
            }
        }
        let stdout = Some(reader.join().unwrap());
        Worker { process, stdout }
    }

    /// Tells it to exit, waits (bounded), checks that it succeeded and
    /// returns what it printed after [`READY`].
    pub fn finish(mut self) -> String {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> String {
        drop(self.process.stdin.take());
        // Read on a thread so that a worker that never exits cannot hang
        // the test: the wait below is bounded and kills it.
        let mut stdout = self.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stdout.read_to_string(&mut rest);
            rest
        });
        let status = wait_exit(&mut self.process, IO_TIMEOUT, "a worker process");
        let rest = reader.join().unwrap();
        if !std::thread::panicking() {
            assert!(status.success(), "worker process failed: {status}\n{rest}");
        }
        rest
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.process.stdin.is_some() {
            self.finish_inner();
        }
    }
}

/// Blocks until standard input is closed (a worker's signal to exit).
pub fn wait_stdin_closed() {
    std::io::copy(&mut std::io::stdin(), &mut std::io::sink()).unwrap();
}

// ----- the `shmetrics` binary ------------------------------------------------

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
    let mut child = Command::new(&cargo)
        .current_dir(&workspace)
        .args(["build", "--quiet", "-p", "shmetrics", "--bin", "shmetrics"])
        .arg("--profile")
        .arg(&profile)
        .arg("--target-dir")
        .arg(&target_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {cargo:?} to build shmetrics: {e}"))?;
    let mut stderr = child.stderr.take().unwrap();
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = wait_exit(
        &mut child,
        Duration::from_secs(600),
        "cargo build -p shmetrics",
    );
    let errs = errs.join().unwrap();
    if !status.success() {
        return Err(format!(
            "cargo build -p shmetrics failed ({status}):\n{errs}"
        ));
    }
    let bin = profile_dir.join("shmetrics");
    if !bin.is_file() {
        return Err(format!("{} was not built", bin.display()));
    }
    Ok(bin)
}

/// A running `shmetrics serve`, killed when dropped.
pub struct ServeProcess {
    pub process: KillOnDrop,
    pub addr: SocketAddr,
    stderr: Arc<std::sync::Mutex<String>>,
}

impl ServeProcess {
    /// Starts `shmetrics serve --store P --listen 127.0.0.1:0 EXTRA...` and
    /// waits (bounded) for it to print its address (`http://` or
    /// `https://`).
    pub fn start(store: &Path, extra: &[&str]) -> ServeProcess {
        let mut p = Command::new(shmetrics_bin())
            .arg("serve")
            .arg("--store")
            .arg(store)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start shmetrics serve");
        let stderr = p.stderr.take().unwrap();
        let process = KillOnDrop(p);
        let log = Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut line = String::new();
            let mut tx = Some(tx);
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                log2.lock().unwrap().push_str(&line);
                if let Some(addr) = line
                    .split("://")
                    .nth(1)
                    .and_then(|rest| rest.split('/').next())
                    .and_then(|a| a.parse::<SocketAddr>().ok())
                {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
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
        ServeProcess {
            process,
            addr,
            stderr: log,
        }
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

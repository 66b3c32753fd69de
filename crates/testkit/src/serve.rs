//! A real `shmetrics serve` process on a loopback port.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{ChildStderr, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};

use crate::binary::shmetrics_bin;
use crate::http::{get, IO_TIMEOUT};
use crate::process::KillOnDrop;

/// A running `shmetrics serve`, killed when dropped.
#[derive(Debug)]
pub struct Serve {
    /// The process.
    pub process: KillOnDrop,
    /// Where its /metrics is.
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts `shmetrics serve --web.listen-address 127.0.0.1:0 ARGS...`
    /// and waits (bounded) for it to print the address it serves on
    /// (`http://` or `https://`).
    pub fn start<S: AsRef<OsStr>>(args: &[S]) -> Serve {
        Serve::with_bin(&shmetrics_bin(), args)
    }

    /// [`Serve::start`] with another `shmetrics` binary (a release build,
    /// say).
    pub fn with_bin<S: AsRef<OsStr>>(bin: &Path, args: &[S]) -> Serve {
        let mut p = Command::new(bin)
            .arg("serve")
            .args(["--web.listen-address", "127.0.0.1:0"])
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
        std::thread::spawn(move || read_log(stderr, &log2, tx));
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

    /// Starts `shmetrics serve --store STORE ... EXTRA...` (see
    /// [`Serve::start`]).
    pub fn on_store(store: &Path, extra: &[&str]) -> Serve {
        let mut args = vec![OsStr::new("--store"), store.as_os_str()];
        args.extend(extra.iter().map(OsStr::new));
        Serve::start(&args)
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Its own metrics (`/exporter-metrics`), as text.
    pub fn exporter_metrics(&self) -> String {
        let r = get(self.addr, "/exporter-metrics", &[]);
        assert_eq!(r.status, 200, "{}", r.text());
        r.text()
    }

    /// Its /metrics, as text.
    pub fn metrics(&self) -> String {
        let r = get(self.addr, "/metrics", &[]);
        assert_eq!(r.status, 200, "{}", r.text());
        r.text()
    }

    /// The value of `series` (`name{labels}` exactly as the text format
    /// writes it) in its /metrics.
    /// (A `shmetrics_*` series is read from `/exporter-metrics`, where
    /// the exporter's own metrics are.)
    pub fn metric(&self, series: &str) -> f64 {
        let body = if series.starts_with("shmetrics_") {
            self.exporter_metrics()
        } else {
            self.metrics()
        };
        find_metric(&body, series).unwrap_or_else(|| {
            panic!(
                "no {series} on its pages:\n{body}\n--- stderr:\n{}",
                self.stderr()
            )
        })
    }
}

/// Appends every line of `stderr` to `log`; sends the address of the
/// first `serving STORE on scheme://ADDR/PATH` line (not the address of a
/// push target, which it may print too).
fn read_log(stderr: ChildStderr, log: &Mutex<String>, tx: mpsc::Sender<SocketAddr>) {
    let mut r = BufReader::new(stderr);
    let mut line = String::new();
    let mut tx = Some(tx);
    while r.read_line(&mut line).unwrap_or(0) > 0 {
        log.lock().unwrap().push_str(&line);
        let addr = line
            .split_once("serving ")
            .and_then(|(_, rest)| rest.rsplit_once(" on "))
            .and_then(|(_, url)| url.split_once("://"))
            .and_then(|(_, rest)| rest.split_once('/'))
            .and_then(|(addr, _)| addr.parse().ok());
        if let Some(addr) = addr {
            if let Some(tx) = tx.take() {
                let _ = tx.send(addr);
            }
        }
        line.clear();
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

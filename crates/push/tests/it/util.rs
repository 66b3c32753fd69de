//! The push tests' own helpers, the receivers (Debian's `prometheus` and
//! `victoria-metrics`); with the test kit's (the `shmetrics` binary, an
//! HTTP client, processes, bounded waits), re-exported.
//!
//! Every wait here is bounded: when a bound is reached the test fails, it
//! never hangs and never skips. A missing receiver fails the test and says
//! which Debian package to install.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub use shmetrics_testkit::http::*;
pub use shmetrics_testkit::process::{spawn_logged, wait_exit, KillOnDrop};
pub use shmetrics_testkit::serve::{find_metric, Serve};
pub use shmetrics_testkit::shmetrics_bin;
pub use shmetrics_testkit::wait::wait_for;
/// How long a pushed value may take to show up in a receiver.
pub const ARRIVAL: Duration = Duration::from_secs(120);

// ----- receivers ----------------------------------------------------------------

/// Which receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Debian's `prometheus`, with `--web.enable-remote-write-receiver`
    /// unless `receiver` is false.
    Prometheus { receiver: bool },
    /// Debian's `victoria-metrics`.
    Victoria,
    /// Prometheus 3 (built by `scripts/build-peers.sh`), with its remote
    /// write and OTLP receivers.
    Prometheus3,
}

/// The Prometheus 3 binary: `$SHMETRICS_PROMETHEUS3`, else where
/// `scripts/build-peers.sh` puts it under the target directory.
pub fn prometheus3_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SHMETRICS_PROMETHEUS3") {
        return PathBuf::from(p);
    }
    // CARGO_TARGET_TMPDIR is <target>/tmp.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("peers/prometheus-v0.316.0/bin/prometheus")
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
        format!("http://{}/api/v1/write", self.addr)
    }

    /// The OTLP/HTTP metrics URL (Prometheus 3).
    pub fn otlp_url(&self) -> String {
        format!("http://{}/api/v1/otlp/v1/metrics", self.addr)
    }

    /// The binary, and what installs it.
    fn binary(&self) -> (PathBuf, &'static str) {
        match self.kind {
            Peer::Prometheus { .. } => (
                "/usr/bin/prometheus".into(),
                "the Debian package `prometheus`",
            ),
            Peer::Victoria => (
                "/usr/bin/victoria-metrics".into(),
                "the Debian package `victoria-metrics`",
            ),
            Peer::Prometheus3 => (
                prometheus3_bin(),
                "Prometheus 3 with scripts/build-peers.sh (./run-tests does)",
            ),
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
        let (bin, missing) = self.binary();
        let bin = bin.display().to_string();
        let data = self.dir.join("data");
        let mut cmd = Command::new(&bin);
        match self.kind {
            Peer::Prometheus { .. } | Peer::Prometheus3 => {
                let config = self.dir.join("prometheus.yml");
                std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
                cmd.arg(format!("--config.file={}", config.display()))
                    .arg(format!("--storage.tsdb.path={}", data.display()))
                    .arg(format!("--web.listen-address={}", self.addr));
                if matches!(
                    self.kind,
                    Peer::Prometheus { receiver: true } | Peer::Prometheus3
                ) {
                    cmd.arg("--web.enable-remote-write-receiver");
                }
                if self.kind == Peer::Prometheus3 {
                    cmd.arg("--web.enable-otlp-receiver");
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
        self.process = Some(spawn_logged(&mut cmd, &self.log_path(), missing));
        let ready_path = match self.kind {
            Peer::Prometheus { .. } | Peer::Prometheus3 => "/-/ready",
            Peer::Victoria => "/health",
        };
        let started = Instant::now();
        loop {
            let p = self.process.as_mut().unwrap();
            if let Some(status) = p.0.try_wait().unwrap() {
                self.process = None;
                return Err(format!("{bin} exited ({status}):\n{}", self.log()));
            }
            if let Ok(r) = request(self.addr, "GET", ready_path, &[]) {
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
            let r = get(self.addr, "/internal/force_flush", &[]);
            if r.status != 200 {
                return Err(format!("force_flush: {} {}", r.status, r.text()));
            }
        }
        let path = format!("/api/v1/query?query={}", url_encode(q));
        let r = request(self.addr, "GET", &path, &[]).map_err(|e| e.to_string())?;
        let body = r.text();
        if r.status != 200 {
            return Err(format!("query {q}: {} {body}", r.status));
        }
        let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        if v["status"] != "success" || v["data"]["resultType"] != "vector" {
            return Err(format!("query {q}: {body}"));
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

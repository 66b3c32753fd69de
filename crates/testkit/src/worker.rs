//! The multi-process tests' worker: a `shmetrics-testworker` process
//! that records each acknowledged update in its [`AckFile`], spawned,
//! killed and waited for with a deadline.

use std::fs::OpenOptions;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::binary::testworker_bin;
use crate::proto::word;
use crate::wait::PATIENCE;
use crate::AckFile;

/// A running (or finished) worker process.
#[derive(Debug)]
pub struct Worker {
    /// The process.
    pub child: Child,
    /// Its ack file.
    pub ack: AckFile,
    /// Where its stderr goes.
    pub log: PathBuf,
    /// Its mode and arguments, for messages.
    pub label: String,
    reaped: Option<ExitStatus>,
}

impl Worker {
    /// Spawns `shmetrics-testworker mode store ack args...`. The ack file
    /// is created fresh unless `keep_ack` is set and it exists; stderr goes
    /// to `<ack>.log` (appended).
    pub fn spawn(mode: &str, store: &Path, ack: &Path, keep_ack: bool, args: &[String]) -> Worker {
        let ack_file = if keep_ack && ack.exists() {
            AckFile::open(ack).unwrap()
        } else {
            AckFile::create(ack).unwrap()
        };
        // Per-incarnation flags start clear.
        for w in [word::STOP, word::DONE, word::READY, word::PID] {
            ack_file.set(w, 0);
        }
        let log = ack.with_extension("log");
        let err = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let bin = testworker_bin();
        let child = Command::new(&bin)
            .arg(mode)
            .arg(store)
            .arg(ack)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        Worker {
            label: format!("{mode} {}", args.join(" ")),
            child,
            ack: ack_file,
            log,
            reaped: None,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails the test: the worker (label and pid) `what`, then its stderr.
    fn fail(&self, what: std::fmt::Arguments<'_>) -> ! {
        panic!(
            "worker {} (pid {}){what}; its stderr:\n{}",
            self.label,
            self.pid(),
            self.log_text()
        );
    }

    /// The worker's stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test if the worker has exited on its own (it only exits on
    /// STOP, or when killed).
    pub fn assert_running(&mut self) {
        if let Some(st) = self.child.try_wait().unwrap() {
            self.reaped = Some(st);
            self.fail(format_args!(" exited unexpectedly with {st:?}"));
        }
    }

    /// SIGKILLs the worker and reaps it; returns how it ended.
    pub fn kill(&mut self) -> ExitStatus {
        if let Some(st) = self.reaped {
            return st;
        }
        // Our own child, not reaped yet: its pid cannot have been reused.
        let _ = self.child.kill();
        self.wait(PATIENCE)
    }

    /// Kills the worker, and fails the test unless SIGKILL is what ended it.
    pub fn kill_expecting_running(&mut self) {
        let st = self.kill();
        if st.signal() != Some(libc::SIGKILL) {
            self.fail(format_args!(" was not running when killed: {st:?}"));
        }
    }

    /// Waits for the worker to exit, at most `timeout` (then fails).
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        if let Some(st) = self.reaped {
            return st;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                self.reaped = Some(st);
                return st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                self.fail(format_args!(" did not exit within {timeout:?} (hung?)"));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Sets STOP and waits for a clean exit.
    pub fn stop(&mut self) {
        self.ack.set(word::STOP, 1);
        let st = self.wait(PATIENCE);
        if !st.success() {
            self.fail(format_args!(" did not stop cleanly: {st:?}"));
        }
    }

    /// Waits until ack word `w` is at least `min`, at most PATIENCE; fails
    /// if the worker exits first.
    pub fn wait_word(&mut self, w: usize, min: u64) {
        let deadline = Instant::now() + PATIENCE;
        while self.ack.get(w) < min {
            self.assert_running();
            if Instant::now() > deadline {
                self.fail(format_args!(
                    ": ack word {w} stayed at {} < {min} for {PATIENCE:?}",
                    self.ack.get(w)
                ));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Waits for a worker that exits by itself; fails unless it exits 0.
    pub fn wait_success(&mut self) {
        let st = self.wait(PATIENCE);
        if !st.success() {
            self.fail(format_args!(" failed: {st:?}"));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Never leave a worker behind, whatever the test's outcome.
        if self.reaped.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

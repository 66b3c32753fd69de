//! Worker processes that are the running test binary itself, run again
//! with `--exact worker_process`: a test crate declares a `#[test] fn
//! worker_process` that does nothing unless [`WORKER_MODE`] is set, and
//! otherwise does the worker's writes, calls [`worker_ready`], and waits
//! for [`wait_stdin_closed`].

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;

use crate::http::IO_TIMEOUT;
use crate::process::wait_exit;

/// Set in worker processes: the worker mode, which the test crate's
/// `worker_process` dispatches on.
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
#[derive(Debug)]
pub struct Rerun {
    process: Child,
    stdout: Option<BufReader<ChildStdout>>,
}

impl Rerun {
    /// Starts a worker and waits (bounded) until it has written.
    pub fn start(mode: &str, store: &Path, arg: &str) -> Rerun {
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
        Rerun { process, stdout }
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

impl Drop for Rerun {
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

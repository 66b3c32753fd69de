//! Spawning, killing and waiting for worker processes, always with a
//! deadline: a test fails rather than hangs.

use std::fs::OpenOptions;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

use shmetrics_core::{Options, Snapshot, Store};
use shmetrics_testkit::check::{check_snapshot, Monotone};
use shmetrics_testkit::AckFile;

/// The worker binary.
pub const WORKER: &str = env!("CARGO_BIN_EXE_shmetrics-testworker");

/// How long any single wait may take before the test fails. Generous: it
/// only has to catch hangs, on a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Whether the long mode (`SHMETRICS_LONG=1`) is on.
pub fn long_mode() -> bool {
    std::env::var("SHMETRICS_LONG").is_ok_and(|v| v == "1")
}

/// A temporary directory for a test's store, ack and log files. Under
/// /dev/shm when it exists (as in production), else the system default.
pub fn tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("shmetrics-tk-")
            .tempdir_in(shm)
        {
            return d;
        }
    }
    tempfile::Builder::new()
        .prefix("shmetrics-tk-")
        .tempdir()
        .unwrap()
}

/// Creates a store at `path` with `opts`.
pub fn create_store(path: &Path, opts: &Options) -> Store {
    Store::open(path, opts).unwrap_or_else(|e| panic!("create store: {e}"))
}

/// What [`checking_reader`] saw: how many snapshots, and the first
/// problem, if any.
#[derive(Debug)]
pub struct ReaderReport {
    pub snapshots: u64,
    pub error: Option<String>,
}

/// Opens the store at `path` read-only and snapshots it until `stop`,
/// fresh snapshots and refreshes of one kept snapshot in turn, checking
/// each for consistency and every series' counts for monotonicity (per
/// label set: a series that comes back under the same labels must not
/// come back lower). Run it on a thread of its own.
pub fn checking_reader(path: PathBuf, stop: Arc<AtomicBool>) -> ReaderReport {
    let opts = Options {
        read_only: true,
        create: false,
        ..Options::default()
    };
    let store = Store::open(&path, &opts).expect("reader open");
    let mut kept = Snapshot::default();
    let (mut mono_fresh, mut mono_kept) = (Monotone::default(), Monotone::default());
    let mut snapshots = 0;
    let error = loop {
        if stop.load(SeqCst) {
            break None;
        }
        let r = if snapshots % 2 == 0 {
            store
                .snapshot()
                .map_err(|e| format!("snapshot: {e}"))
                .and_then(|s| {
                    check_snapshot(&s)?;
                    mono_fresh.check(&s)
                })
        } else {
            store
                .snapshot_into(&mut kept)
                .map_err(|e| format!("snapshot_into: {e}"))
                .and_then(|()| {
                    check_snapshot(&kept)?;
                    mono_kept.check(&kept)
                })
        };
        snapshots += 1;
        if let Err(e) = r {
            break Some(format!("snapshot #{snapshots}: {e}"));
        }
    };
    ReaderReport { snapshots, error }
}

/// A kill storm's set-up: a store in a new directory, a
/// [`checking_reader`] on it, and `n` workers of one mode, each with an
/// ack file that its later incarnations keep adding to.
pub struct Storm {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub store: Store,
    pub workers: Vec<Worker>,
    mode: &'static str,
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<ReaderReport>>,
}

impl Storm {
    /// Creates the store with `opts`, starts the reader, then the workers.
    pub fn start(mode: &'static str, n: usize, opts: &Options) -> Storm {
        let dir = tempdir();
        let path = dir.path().join("store");
        let store = create_store(&path, opts);
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || checking_reader(path, stop))
        };
        let mut storm = Storm {
            dir,
            path,
            store,
            workers: Vec::with_capacity(n),
            mode,
            stop,
            reader: Some(reader),
        };
        for i in 0..n {
            let w = storm.spawn(i);
            storm.workers.push(w);
        }
        storm
    }

    fn ack_path(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("ack-{i}"))
    }

    fn spawn(&self, i: usize) -> Worker {
        Worker::spawn(self.mode, &self.path, &self.ack_path(i), true, &[])
    }

    /// SIGKILLs worker `i` (failing the test if it had exited by itself)
    /// and starts its next incarnation. Returns whether the killed one
    /// had said it was ready.
    pub fn kill_and_restart(&mut self, i: usize) -> bool {
        let was_ready = self.workers[i]
            .ack
            .get(shmetrics_testkit::proto::word::READY)
            != 0;
        self.workers[i].kill_expecting_running();
        self.workers[i] = self.spawn(i);
        was_ready
    }

    /// Ack word `w` summed over every worker's ack file.
    pub fn acks(&self, w: usize) -> u64 {
        (0..self.workers.len())
            .map(|i| AckFile::open(self.ack_path(i)).unwrap().get(w))
            .sum()
    }

    /// Lets every last incarnation get going, stops all workers cleanly
    /// (failing the test if one does not exit 0), then the reader, and
    /// returns what the reader saw.
    pub fn finish(&mut self) -> ReaderReport {
        for w in &mut self.workers {
            w.wait_word(shmetrics_testkit::proto::word::READY, 1);
        }
        std::thread::sleep(Duration::from_millis(20));
        for w in &mut self.workers {
            w.stop();
        }
        self.stop.store(true, SeqCst);
        self.reader
            .take()
            .expect("finish runs once")
            .join()
            .expect("reader thread panicked")
    }
}

/// A running (or finished) worker process.
pub struct Worker {
    pub child: Child,
    pub ack: AckFile,
    pub log: PathBuf,
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
        for w in [
            shmetrics_testkit::proto::word::STOP,
            shmetrics_testkit::proto::word::DONE,
            shmetrics_testkit::proto::word::READY,
            shmetrics_testkit::proto::word::PID,
        ] {
            ack_file.set(w, 0);
        }
        let log = ack.with_extension("log");
        let err = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let child = Command::new(WORKER)
            .arg(mode)
            .arg(store)
            .arg(ack)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {WORKER}: {e}"));
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

    /// The worker's stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test if the worker has exited on its own (it only exits on
    /// STOP, or when killed).
    pub fn assert_running(&mut self) {
        if let Some(st) = self.child.try_wait().unwrap() {
            self.reaped = Some(st);
            panic!(
                "worker {} (pid {}) exited unexpectedly with {st:?}; its stderr:\n{}",
                self.label,
                self.pid(),
                self.log_text()
            );
        }
    }

    /// SIGKILLs the worker and reaps it; returns how it ended.
    pub fn kill(&mut self) -> ExitStatus {
        if let Some(st) = self.reaped {
            return st;
        }
        // SAFETY: kill(2) on our own child, which we have not reaped yet,
        // so its pid cannot have been reused.
        unsafe { libc::kill(self.pid() as i32, libc::SIGKILL) };
        self.wait(PATIENCE)
    }

    /// Kills the worker, and fails the test unless SIGKILL is what ended it.
    pub fn kill_expecting_running(&mut self) {
        let st = self.kill();
        if st.signal() != Some(libc::SIGKILL) {
            panic!(
                "worker {} (pid {}) was not running when killed: {st:?}; its stderr:\n{}",
                self.label,
                self.pid(),
                self.log_text()
            );
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
                // SAFETY: as in `kill`.
                unsafe { libc::kill(self.pid() as i32, libc::SIGKILL) };
                let _ = self.child.wait();
                panic!(
                    "worker {} (pid {}) did not exit within {timeout:?} (hung?); its stderr:\n{}",
                    self.label,
                    self.pid(),
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Sets STOP and waits for a clean exit.
    pub fn stop(&mut self) {
        self.ack.set(shmetrics_testkit::proto::word::STOP, 1);
        let st = self.wait(PATIENCE);
        if !st.success() {
            panic!(
                "worker {} (pid {}) did not stop cleanly: {st:?}; its stderr:\n{}",
                self.label,
                self.pid(),
                self.log_text()
            );
        }
    }

    /// Waits until ack word `w` is at least `min`, at most PATIENCE; fails
    /// if the worker exits first.
    pub fn wait_word(&mut self, w: usize, min: u64) {
        let deadline = Instant::now() + PATIENCE;
        while self.ack.get(w) < min {
            self.assert_running();
            if Instant::now() > deadline {
                panic!(
                    "worker {} (pid {}): ack word {w} stayed at {} < {min} for {PATIENCE:?}; its stderr:\n{}",
                    self.label,
                    self.pid(),
                    self.ack.get(w),
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Waits for a worker that exits by itself; fails unless it exits 0.
    pub fn wait_success(&mut self) {
        let st = self.wait(PATIENCE);
        if !st.success() {
            panic!(
                "worker {} (pid {}) failed: {st:?}; its stderr:\n{}",
                self.label,
                self.pid(),
                self.log_text()
            );
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Never leave a worker behind, whatever the test's outcome.
        if self.reaped.is_none() {
            // SAFETY: as in `kill`.
            unsafe { libc::kill(self.pid() as i32, libc::SIGKILL) };
            let _ = self.child.wait();
        }
    }
}

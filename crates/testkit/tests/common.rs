//! What the multi-process tests share beyond the test kit: the long mode,
//! a checking reader, and kill storms.

use std::path::PathBuf;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

use shmetrics_core::{Options, Snapshot, Store};
use shmetrics_testkit::check::{check_snapshot, Monotone};
use shmetrics_testkit::AckFile;
pub use shmetrics_testkit::{create_store, tempdir, Worker, PATIENCE};

/// Whether the long mode (`SHMETRICS_LONG=1`) is on.
pub fn long_mode() -> bool {
    std::env::var("SHMETRICS_LONG").is_ok_and(|v| v == "1")
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
    let opts = Options::reader();
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

//! Bench fixtures: a store with many series written by many processes.
//!
//! Writer processes are made with `fork()`, which is only safe while the
//! bench process has a single thread: build fixtures before criterion runs
//! anything, or check [`threads`] first.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use shmetrics_core::{FamilyDesc, Kind, Options, Series, Store};

/// Series per family.
pub const PER_FAMILY: usize = 1000;
/// Histogram bounds: 11, so 12 buckets with +Inf.
pub const BOUNDS: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Observed values spread over the 12 buckets (and beyond the last bound).
pub fn spread_values() -> [f64; 1024] {
    std::array::from_fn(|i| {
        let bucket = i % 12;
        let lo = if bucket == 0 { 0.0 } else { BOUNDS[bucket - 1] };
        let hi = BOUNDS.get(bucket).copied().unwrap_or(10.0);
        lo + (hi - lo) * ((i * 37 % 100) as f64 / 100.0)
    })
}

/// Threads of this process (from /proc/self/status).
pub fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A temporary directory under /dev/shm (where stores live), else /tmp.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("shmetrics-bench-")
        .tempdir_in("/dev/shm")
        .or_else(|_| {
            tempfile::Builder::new()
                .prefix("shmetrics-bench-")
                .tempdir()
        })
        .expect("temporary directory")
}

/// Forks `n` children that each run `f(i)` and `_exit` (0 on success);
/// waits for all, and panics if one failed. At most `parallel` run at once.
pub fn fork_children(n: usize, parallel: usize, f: impl Fn(usize)) {
    assert_eq!(
        threads(),
        1,
        "fork() needs a single-threaded process; build fixtures before criterion starts"
    );
    let mut running = Vec::new();
    for i in 0..n {
        if running.len() >= parallel {
            wait_child(running.remove(0));
        }
        // SAFETY: this process is single-threaded (checked above), so the
        // child may do anything; it ends with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))).is_ok();
            // SAFETY: ends the child at once, without running the parent's
            // destructors or atexit handlers; the store slot stays claimed
            // by a dead process, as after a crash.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        running.push(pid);
    }
    for pid in running {
        wait_child(pid);
    }
}

fn wait_child(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: waitpid on our own child, with a valid status pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid, "waitpid: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "a writer child failed (status {status:#x})"
    );
}

/// The families of a store of `n` series: one in five families is a
/// histogram, the others counters; 1,000 series each.
pub fn families(n: usize) -> Vec<FamilyDesc> {
    (0..n.div_ceil(PER_FAMILY))
        .map(|i| {
            if i % 5 == 4 {
                FamilyDesc::new(format!("bench_latency_{i}_seconds"), Kind::Histogram)
                    .help("Request latency.")
                    .labels(&["route"])
                    .buckets(&BOUNDS)
            } else {
                FamilyDesc::new(format!("bench_requests_{i}"), Kind::Counter)
                    .help("Requests.")
                    .labels(&["route", "status"])
            }
        })
        .collect()
}

/// Label values of series `j` of a family.
pub fn labels(desc: &FamilyDesc, j: usize) -> Vec<String> {
    if desc.kind == Kind::Histogram {
        vec![format!("/api/v1/resource/{j}")]
    } else {
        vec![
            format!("/api/v1/resource/{}", j / 5),
            format!("{}", 200 + j % 5),
        ]
    }
}

/// A store with `n` series, mixed counters and histograms.
pub struct Fixture {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub n: usize,
    /// A writable instance, used only to create series and to fork
    /// writers; it never writes itself.
    pub writer: Store,
    /// A read-only instance, as an exporter has.
    pub reader: Store,
    /// Every series, as handles of `writer`, for forked children.
    pub handles: Vec<Series>,
}

impl Fixture {
    /// Creates the store and its `n` series (in this process).
    pub fn create(n: usize) -> Fixture {
        let dir = tempdir();
        let path = dir.path().join("store");
        let fams = families(n);
        let hists = fams.iter().filter(|f| f.kind == Kind::Histogram).count();
        // Cells per series: a counter takes 2, a histogram 13.
        let cells = ((fams.len() - hists) * 2 + hists * 13) * (PER_FAMILY + 1);
        let opts = Options {
            max_families: fams.len() as u32 + 16,
            max_series: (fams.len() * (PER_FAMILY + 1)) as u32 + 1024,
            label_bytes: (n as u64 + 1024) * 64,
            max_writers: 64,
            cells_per_writer: cells as u64 + 4096,
            ..Options::default()
        };
        let writer = Store::open(&path, &opts).expect("create store");
        let mut handles = Vec::with_capacity(n);
        for desc in &fams {
            let f = writer.register(desc).unwrap();
            for j in 0..PER_FAMILY {
                let l = labels(desc, j);
                let l: Vec<&str> = l.iter().map(String::as_str).collect();
                handles.push(writer.series(&f, &l).unwrap());
            }
        }
        let reader = Store::open(&path, &Options::reader()).unwrap();
        Fixture {
            dir,
            path,
            n,
            writer,
            reader,
            handles,
        }
    }

    /// Forks `slots` writer processes; each opens the store itself, looks
    /// every series up and updates each once, then exits (its slot stays
    /// in use, owned by a dead process).
    pub fn write_from_processes(&self, slots: usize) {
        let path = self.path.clone();
        let n = self.n;
        fork_children(slots, slots, move |child| {
            write_all(&path, n, child);
        });
    }
}

/// Opens the store and updates every series once.
fn write_all(path: &Path, n: usize, child: usize) {
    let store = Store::open(
        path,
        &Options {
            create: false,
            ..Options::default()
        },
    )
    .unwrap();
    for desc in families(n) {
        let f = store.register(&desc).unwrap();
        for j in 0..PER_FAMILY {
            let l = labels(&desc, j);
            let l: Vec<&str> = l.iter().map(String::as_str).collect();
            let s = store.series(&f, &l).unwrap();
            if desc.kind == Kind::Histogram {
                let v = ((j * 7 + child * 13) % 4096) as f64 / 1000.0;
                store.observe(s, v).unwrap();
            } else {
                store.counter_inc(s).unwrap();
            }
        }
    }
    std::mem::forget(store); // as if killed: the slot is not released
}

/// Median of `runs` timings of `f`, in seconds.
pub fn median_secs(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let start = std::time::Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// This thread's CPU time.
pub fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

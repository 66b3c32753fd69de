//! Scale (issue 36): what a store and its exporter cost as series and
//! writers grow. For each size (1k, 10k, 100k series; 1M with
//! `SCALE_1M=1`; or the sizes listed in `SCALE_SIZES`), each number of writer processes (1, 16, 64) and each
//! share of the series every writer touches (100 % and 10 %, a random
//! tenth per writer; or the percentages listed in `SCALE_TOUCH`), it
//! prints:
//!
//! - the store's memory: the file's allocated bytes after the series were
//!   created (their records), after the writers wrote, and what the
//!   writers added per series per writer;
//! - `shmetrics dump` time (the whole store rendered as text, in a fresh
//!   process) and the HTTP scrape time of `shmetrics serve` (median of
//!   `SCALE_SCRAPES` scrapes, default 5; gzip, as Prometheus asks), the
//!   writers alive meanwhile, and the compressed page's size;
//! - the exporter's resident memory after those scrapes: its own (the
//!   `Anonymous` pages of smaps_rollup: heap and stacks; not "private",
//!   which also counts the store's file pages that no other process has
//!   mapped) and in all (VmRSS, the store's pages it read included);
//!   with `SCALE_MEMORY_EVERY=N`, its own memory after every N scrapes
//!   too, and with `SCALE_IDLE=S`, after S seconds without a scrape
//!   (both on stderr).
//!
//! With `SCALE_TOTALS_OF=64`, the writers of every row leave the totals
//! that 64 writers of that touch leave (writer `v` of the 64 writes
//! through writer `v % writers`): the page a scrape renders and
//! compresses is then the same whatever the number of writers, and the
//! scrape times differ by what reading more writers costs. Without it,
//! 64 writers leave larger and more varied counts than one, whose page
//! compresses to more bytes, and gzip takes longer over it. (The bytes a
//! writer adds then count the shares it writes, not one writer's.)
//!
//! The shape is the issue's: counters, 8 label sets per family. Run it
//! with `benches/scale.sh`, which builds the release `shmetrics` and passes
//! its path in `SHMETRICS_BIN`. Figures only, no threshold.

#![allow(missing_docs)]

// Its `percentile`; the flood itself is not used here.
#[allow(dead_code)]
#[path = "../tests/it/flood_load.rs"]
mod flood_load;

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use shmetrics_core::{Family, FamilyDesc, Kind, Options, Store};
use shmetrics_testkit::http::get;
use shmetrics_testkit::serve::Serve;

/// Label sets per family.
const PER_FAMILY: usize = 8;

fn options(series: usize, writers: usize) -> Options {
    Options {
        max_families: (series / PER_FAMILY + 64) as u32,
        // Each family keeps a series for its overflow.
        max_series: (series + series / PER_FAMILY + 1024) as u32,
        label_bytes: (series as u64 * 48).max(1 << 20),
        max_writers: (writers + 4) as u32,
        ..Options::default()
    }
}

fn families(store: &Store, series: usize) -> Vec<Family> {
    (0..series.div_ceil(PER_FAMILY))
        .map(|i| {
            store
                .register(
                    &FamilyDesc::new(format!("scale_requests_{i}_total"), Kind::Counter)
                        .help("Requests.")
                        .labels(&["code"]),
                )
                .unwrap()
        })
        .collect()
}

fn label(k: usize) -> String {
    format!("{}", 200 + k % PER_FAMILY)
}

/// The file's allocated bytes (a store file is sparse).
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.blocks() * 512)
}

/// A small deterministic generator: which series a writer touches.
fn touches(writer: usize, k: usize, percent: usize) -> bool {
    if percent >= 100 {
        return true;
    }
    let mut x = (writer as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k as u64;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x % 100) < percent as u64
}

/// Writer processes, alive until dropped (their pipe closes).
struct Writers {
    pids: Vec<libc::pid_t>,
    release: Option<std::fs::File>,
}

impl Drop for Writers {
    fn drop(&mut self) {
        drop(self.release.take());
        for pid in &self.pids {
            let mut status = 0;
            // SAFETY: waits for a child this process forked.
            unsafe { libc::waitpid(*pid, &mut status, 0) };
        }
    }
}

/// Who writes what: each writer its own share (`touches`), or the shares
/// of `totals_of` writers dealt out to the real ones.
#[derive(Clone, Copy)]
enum Shares {
    Own,
    /// Writer `v` of `totals_of` writes through real writer `v % writers`,
    /// so that the store ends with the totals that `totals_of` writers
    /// leave, however many write them: the same page to render and
    /// compress, and only the writers' number differs.
    TotalsOf(usize),
}

impl Shares {
    fn from_env() -> Shares {
        match std::env::var("SCALE_TOTALS_OF") {
            Ok(n) => Shares::TotalsOf(n.parse().expect("SCALE_TOTALS_OF: a number of writers")),
            Err(_) => Shares::Own,
        }
    }

    /// How many times real writer `w` of `writers` increments series `k`.
    fn incs(self, w: usize, writers: usize, k: usize, percent: usize) -> usize {
        match self {
            Shares::Own => usize::from(touches(w, k, percent)),
            Shares::TotalsOf(n) => (w..n)
                .step_by(writers)
                .filter(|v| touches(*v, k, percent))
                .count(),
        }
    }
}

/// Forks `writers` children that each open the store, increment the
/// series of their share, report that they are done and stay alive.
fn start_writers(
    path: &Path,
    series: usize,
    writers: usize,
    percent: usize,
    shares: Shares,
) -> Writers {
    let mut fds = [0; 2];
    let mut done = [0; 2];
    // SAFETY: two arrays of two descriptors, as pipe(2) takes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    assert_eq!(unsafe { libc::pipe(done.as_mut_ptr()) }, 0);
    let mut pids = Vec::new();
    for w in 0..writers {
        // SAFETY: this bench has no other thread when it forks (the
        // exporter is a separate process, started later); the child
        // leaves through `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let store = Store::open(path, &options(series, writers)).unwrap();
            let fams = families(&store, series);
            for k in 0..series {
                let incs = shares.incs(w, writers, k, percent);
                if incs == 0 {
                    continue;
                }
                let s = store.series(&fams[k / PER_FAMILY], &[&label(k)]).unwrap();
                for _ in 0..incs {
                    store.counter_inc(s).unwrap();
                }
            }
            // SAFETY: descriptors of the pipes made above.
            unsafe {
                libc::write(done[1], b"x".as_ptr().cast(), 1);
                let mut b = [0u8; 1];
                // Blocks until the parent closes its end.
                libc::close(fds[1]);
                libc::read(fds[0], b.as_mut_ptr().cast(), 1);
                libc::_exit(0);
            }
        }
        pids.push(pid);
    }
    // SAFETY: descriptors of the pipes made above, owned from here on.
    let (mut done_rx, release) = unsafe {
        libc::close(fds[0]);
        libc::close(done[1]);
        use std::os::fd::FromRawFd;
        (
            std::fs::File::from_raw_fd(done[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    let mut got = vec![0u8; writers];
    done_rx.read_exact(&mut got).expect("a writer failed");
    Writers {
        pids,
        release: Some(release),
    }
}

fn own_and_total_kib(pid: u32) -> (u64, u64) {
    let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_default();
    let field = |text: &str, name: &str| -> u64 {
        text.lines()
            .filter_map(|l| l.strip_prefix(name))
            .filter_map(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    };
    let rollup = read("smaps_rollup");
    (
        field(&rollup, "Anonymous:"),
        field(&read("status"), "VmRSS:"),
    )
}

struct Row {
    records: u64,
    total: u64,
    dump: Duration,
    scrape: Duration,
    /// The last scrape's body (gzip) in bytes.
    page: usize,
    own_kib: u64,
    total_kib: u64,
}

fn measure(bin: &Path, dir: &Path, series: usize, writers: usize, percent: usize) -> Row {
    let path = dir.join(format!("scale-{series}-{writers}-{percent}"));
    let _ = std::fs::remove_file(&path);
    // The records, made by this process, which takes a writer slot and a
    // block per series in it when it makes their handles (as a preload
    // master would): counted with the records. Kept open while the
    // writers run, so that no writer takes over its slot (and its blocks).
    let maker = Store::open(&path, &options(series, writers)).unwrap();
    let fams = families(&maker, series);
    for k in 0..series {
        maker.series(&fams[k / PER_FAMILY], &[&label(k)]).unwrap();
    }
    let records = allocated(&path);
    let _writers = start_writers(&path, series, writers, percent, Shares::from_env());
    let total = allocated(&path);

    let t = Instant::now();
    let out = Command::new(bin)
        .args(["dump", "--store"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = t.elapsed();

    let serve = Serve::with_bin(bin, &[std::ffi::OsStr::new("--store"), path.as_os_str()]);
    let scrapes = env_number("SCALE_SCRAPES", 5);
    let every = env_number("SCALE_MEMORY_EVERY", 0);
    let pid = serve.process.0.id();
    let mut took = Vec::new();
    let mut page = 0;
    for i in 1..=scrapes {
        let t = Instant::now();
        // As Prometheus scrapes: compressed.
        let r = get(
            serve.addr,
            "/metrics",
            &[("Accept", "text/plain"), ("Accept-Encoding", "gzip")],
        );
        assert_eq!(r.status, 200);
        took.push(t.elapsed());
        page = r.body.len();
        if every > 0 && i % every == 0 {
            let own = own_and_total_kib(pid).0;
            eprintln!(
                "  after scrape {i}: exporter's own memory {:.1} MiB",
                own as f64 / 1024.0
            );
        }
    }
    let (own_kib, total_kib) = own_and_total_kib(pid);
    let idle = env_number("SCALE_IDLE", 0);
    if idle > 0 {
        std::thread::sleep(Duration::from_secs(idle as u64));
        let own = own_and_total_kib(pid).0;
        eprintln!(
            "  after {idle} s idle: exporter's own memory {:.1} MiB",
            own as f64 / 1024.0
        );
    }
    drop(serve);
    let _ = std::fs::remove_file(&path);
    Row {
        records,
        total,
        dump,
        scrape: flood_load::percentile(&took, 50.0),
        page,
        own_kib,
        total_kib,
    }
}

/// The number in environment variable `name`, else `default`.
fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}: not a number: {v}"))
    })
}

/// The comma-separated numbers in environment variable `name`, else in
/// `default`.
fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect()
}

fn main() {
    let bin = std::path::PathBuf::from(
        std::env::var("SHMETRICS_BIN").expect("SHMETRICS_BIN: run benches/scale.sh"),
    );
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let mut sizes = env_list("SCALE_SIZES", "1000,10000,100000");
    if std::env::var("SCALE_1M").as_deref() == Ok("1") {
        sizes.push(1_000_000);
    }
    let writers = env_list("SCALE_WRITERS", "1,16,64");
    let touches = env_list("SCALE_TOUCH", "100,10");
    println!(
        "{:>9} {:>7} {:>6} {:>11} {:>11} {:>13} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "series",
        "writers",
        "touch",
        "records",
        "store",
        "B/series/wr",
        "dump",
        "scrape",
        "gzip page",
        "RSS own",
        "RSS total"
    );
    for &n in &sizes {
        for &w in &writers {
            for &percent in &touches {
                let r = measure(&bin, dir.path(), n, w, percent);
                let per = (r.total - r.records) as f64 / (n * w) as f64;
                println!(
                    "{n:>9} {w:>7} {:>5}% {:>8.1} MiB {:>7.1} MiB {per:>13.1} {:>7.1} ms {:>7.1} ms {:>6.2} MiB {:>8.1} MiB {:>8.1} MiB",
                    percent,
                    r.records as f64 / (1 << 20) as f64,
                    r.total as f64 / (1 << 20) as f64,
                    r.dump.as_secs_f64() * 1e3,
                    r.scrape.as_secs_f64() * 1e3,
                    r.page as f64 / (1 << 20) as f64,
                    r.own_kib as f64 / 1024.0,
                    r.total_kib as f64 / 1024.0,
                );
                let _ = std::io::stdout().flush();
            }
        }
    }
}

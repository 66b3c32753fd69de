//! Summaries and native histograms, beside classic histograms: what an
//! observation costs, how accurate summary quantiles are, and what
//! rendering many series of each costs.
//!
//! ```text
//! cargo bench -p shmetrics-testkit --bench distributions
//! ```
//!
//! 1. **Accuracy table** (printed first): 8 writer processes per
//!    distribution (uniform, lognormal, bimodal latencies) observe 25,000
//!    values each into one summary series; the merged quantiles are
//!    compared with the exact quantiles of all 200,000 values at the same
//!    ranks.
//! 2. **Observe cost** (criterion group `observe`), side by side in one
//!    run: a classic histogram with 12 buckets, a native histogram
//!    (schema 3, client_golang's bucket factor 1.1), a summary with count
//!    and sum only, and a summary with 3 quantiles over the default window
//!    (10 minutes in 5 age buckets).
//! 3. **Render at 10k series** (criterion group `render_10k`): 10,000
//!    series written by 4 processes (64 lognormal values each); one scrape
//!    refreshes a kept snapshot (merging every slot) and encodes it, as
//!    the exporter does: summaries with 3 quantiles and without (text
//!    format), native histograms (protobuf, the format that carries them)
//!    and classic 12-bucket histograms (text and protobuf), in the same
//!    run.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::Criterion;
use shmetrics_core::{FamilyDesc, Kind, NativeOpts, Options, Snapshot, Store, Value};

/// Sketch cells of one summary set: its counts and its 16 exact values.
const SUMMARY_CELLS: u64 = 4229 + 16;
use shmetrics_expo::{encode, Format};
use shmetrics_testkit::proto;

const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];
const BOUNDS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

fn tempdir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// Runs `f(i)` in `n` child processes at once and waits for them all.
/// Only called before criterion starts any thread.
fn in_processes(n: usize, f: impl Fn(usize)) {
    let mut pids = Vec::new();
    for i in 0..n {
        // SAFETY: no other thread runs (criterion has not started), and
        // the child leaves through `_exit` without running the parent's
        // destructors.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))).is_ok();
            // SAFETY: ends the child at once, as intended.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        pids.push(pid);
    }
    for pid in pids {
        let mut status = 0;
        // SAFETY: waits for a child this process forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}

fn accuracy_table() {
    const WRITERS: usize = 8;
    const PER_WRITER: usize = 25_000;
    let dir = tempdir();
    let path = dir.path().join("store");
    let opts = Options {
        max_writers: 32,
        sketch_cells_per_writer: 1 << 17,
        ..Options::default()
    };
    Store::open(&path, &opts).unwrap();
    let dists = ["uniform", "lognormal", "bimodal"];
    let seed = |d: usize, w: usize| (1000 * d + w + 1) as u64;
    in_processes(WRITERS * dists.len(), |i| {
        let (d, w) = (i / WRITERS, i % WRITERS);
        let store = Store::open(&path, &opts).unwrap();
        let f = store.register(&proto::summary()).unwrap();
        let s = store.series(&f, &[dists[d]]).unwrap();
        for v in proto::latencies(dists[d], seed(d, w), PER_WRITER).unwrap() {
            store.observe(s, v).unwrap();
        }
    });
    let store = Store::open(&path, &opts).unwrap();
    let snap = store.snapshot().unwrap();
    let fam = snap.family(proto::SUMMARY).unwrap();
    println!("accuracy: {WRITERS} processes x {PER_WRITER} values per distribution, merged");
    println!(
        "{:>10} {:>6} {:>12} {:>12} {:>8}",
        "dist", "q", "exact", "estimate", "error"
    );
    for (d, dist) in dists.iter().enumerate() {
        let mut exact: Vec<f64> = (0..WRITERS)
            .flat_map(|w| proto::latencies(dist, seed(d, w), PER_WRITER).unwrap())
            .collect();
        exact.sort_by(f64::total_cmp);
        let series = fam
            .series()
            .find(|s| s.label_values().next() == Some(dist))
            .unwrap();
        let Value::Summary { quantiles, .. } = series.value() else {
            unreachable!()
        };
        let mut worst = 0.0f64;
        for q in quantiles {
            let want = exact[(q.quantile * (exact.len() - 1) as f64).floor() as usize];
            let err = ((q.value - want) / want).abs();
            worst = worst.max(err);
            println!(
                "{dist:>10} {:>6} {want:>12.6} {:>12.6} {:>7.3}%",
                q.quantile,
                q.value,
                err * 100.0
            );
        }
        println!("{dist:>10} worst relative error {:.3}%", worst * 100.0);
    }
}

fn observe_costs(c: &mut Criterion) {
    let dir = tempdir();
    let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
    let hist = store
        .register(&FamilyDesc::new("h_seconds", Kind::Histogram).buckets(&BOUNDS))
        .unwrap();
    let plain = store
        .register(&FamilyDesc::new("s_seconds", Kind::Summary))
        .unwrap();
    let quant = store
        .register(&FamilyDesc::new("q_seconds", Kind::Summary).quantiles(&QUANTILES))
        .unwrap();
    let native = store
        .register(&FamilyDesc::new("n_seconds", Kind::Histogram).native(NativeOpts::default()))
        .unwrap();
    let values = proto::latencies("lognormal", 3, 1024).unwrap();
    let mut g = c.benchmark_group("observe");
    for (name, fam) in [
        ("histogram (12 buckets)", hist),
        ("native histogram (schema 3)", native),
        ("summary (count, sum)", plain),
        ("summary (3 quantiles, 10 min window)", quant),
    ] {
        let s = store.series(&fam, &[]).unwrap();
        store.observe(s, 1.0).unwrap(); // claims the slot, rotates the set
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) & 1023;
                store.observe(black_box(s), values[i]).unwrap()
            })
        });
    }
    g.finish();
}

/// What a render fixture's 10k series are.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Series {
    Summary,
    SummaryQuantiles,
    Classic,
    Native,
}

struct RenderFixture {
    _dir: tempfile::TempDir,
    store: Store,
    what: Series,
}

fn render_fixture(what: Series) -> RenderFixture {
    const SERIES: usize = 10_000;
    const WRITERS: usize = 4;
    const PER_SERIES: usize = 64;
    let dir = tempdir();
    let path = dir.path().join("store");
    let opts = Options {
        max_writers: 8,
        max_series: 2 * SERIES as u32,
        sketch_cells_per_writer: match what {
            Series::SummaryQuantiles => (SERIES as u64 + 1) * 5 * SUMMARY_CELLS,
            // Schema 3: 1,024 buckets a side.
            Series::Native => (SERIES as u64 + 1) * 2048,
            _ => 0,
        },
        ..Options::default()
    };
    let desc = match what {
        Series::Summary => FamilyDesc::new("rpc_seconds", Kind::Summary),
        Series::SummaryQuantiles => {
            FamilyDesc::new("rpc_seconds", Kind::Summary).quantiles(&QUANTILES)
        }
        Series::Classic => FamilyDesc::new("rpc_seconds", Kind::Histogram).buckets(&BOUNDS),
        Series::Native => {
            FamilyDesc::new("rpc_seconds", Kind::Histogram).native(NativeOpts::default())
        }
    }
    .help("RPC latency.")
    .labels(&["method"]);
    {
        let store = Store::open(&path, &opts).unwrap();
        let f = store.register(&desc).unwrap();
        for i in 0..SERIES {
            store.series(&f, &[&format!("m{i}")]).unwrap();
        }
    }
    let t = Instant::now();
    in_processes(WRITERS, |w| {
        let store = Store::open(&path, &opts).unwrap();
        let f = store.register(&desc).unwrap();
        let values = proto::latencies("lognormal", w as u64, PER_SERIES * SERIES).unwrap();
        for i in 0..SERIES {
            let s = store.series(&f, &[&format!("m{i}")]).unwrap();
            for v in &values[i * PER_SERIES..(i + 1) * PER_SERIES] {
                store.observe(s, *v).unwrap();
            }
        }
    });
    eprintln!(
        "render fixture: {SERIES} series ({what:?}), {WRITERS} writers x {PER_SERIES} observations each, written in {:.2?}",
        t.elapsed()
    );
    let store = Store::open(&path, &Options::reader()).unwrap();
    RenderFixture {
        _dir: dir,
        store,
        what,
    }
}

fn render(c: &mut Criterion, fixtures: &[RenderFixture]) {
    let mut g = c.benchmark_group("render_10k");
    g.sample_size(20);
    let cases = fixtures.iter().flat_map(|f| {
        let formats: &[(&str, Format)] = match f.what {
            Series::Summary => &[("summaries, count and sum, text", Format::PrometheusText)],
            Series::SummaryQuantiles => &[("summaries, 3 quantiles, text", Format::PrometheusText)],
            Series::Classic => &[
                ("classic histograms, text", Format::PrometheusText),
                ("classic histograms, protobuf", Format::Protobuf),
            ],
            Series::Native => &[("native histograms, protobuf", Format::Protobuf)],
        };
        formats
            .iter()
            .map(move |(name, format)| (f, *name, *format))
    });
    for (f, name, format) in cases {
        let mut snap = Snapshot::default();
        let mut out = Vec::new();
        let t = Instant::now();
        f.store.snapshot_into(&mut snap).unwrap();
        encode(&snap, format, &mut out);
        eprintln!(
            "{name}: first scrape (fresh snapshot) {:.2?}, {} bytes",
            t.elapsed(),
            out.len()
        );
        g.bench_function(name, |b| {
            b.iter(|| {
                f.store.snapshot_into(&mut snap).unwrap();
                out.clear();
                encode(black_box(&snap), format, &mut out);
                black_box(out.len())
            })
        });
    }
    g.finish();
}

fn main() {
    // Every fork happens before criterion starts a thread.
    accuracy_table();
    let fixtures = [
        Series::Summary,
        Series::SummaryQuantiles,
        Series::Classic,
        Series::Native,
    ]
    .map(render_fixture);
    let mut c = Criterion::default().configure_from_args();
    observe_costs(&mut c);
    render(&mut c, &fixtures);
    c.final_summary();
}

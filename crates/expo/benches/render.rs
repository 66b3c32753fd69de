//! Rendering throughput, in two shapes of store, each written by 16
//! processes (so 16 writer slots are in use) and encoded as Prometheus text
//! and as OpenMetrics.
//!
//! - `render_100k_series` (and `render_1M_series` with
//!   `SHMETRICS_BENCH_1M=1`): 100k store series, 60% counters with three
//!   long labels and 40% histograms with the 11 default buckets. Each
//!   histogram is 14 lines, so the page is ~60 MB: a stress case.
//! - `render_issue_100k_series` and `render_issue_1M_series`: the shape of
//!   the rendering target ("100k series, counters and histograms mixed,
//!   ≤ 15 ms; 1M series ≤ 200 ms; a 100k-series page is ~5 MB"). A series
//!   is one sample line, as Prometheus counts them: 80% of the lines are
//!   counters with two short labels (`route`, `code`), 20% are lines of
//!   histograms with 5 bounds (8 lines each: 6 buckets, sum, count). About
//!   50 bytes a line, so ~5 MB per 100k series in the text format
//!   (OpenMetrics adds a `_created` line per counter and histogram).
//!
//! ```text
//! cargo bench -p shmetrics-expo --bench render
//! SHMETRICS_BENCH_1M=1 cargo bench -p shmetrics-expo --bench render   # also the 60 MB-per-100k shape at 1M
//! cargo bench -p shmetrics-expo --bench render -- render_issue        # only the target's shape
//! ```
//!
//! `prometheus_text` and `openmetrics` measure the encoding alone: the
//! snapshot is taken once beforehand (its time is printed), and the output
//! buffer is reused between iterations, as an exporter that keeps its
//! buffer would. For the target's shape, `scrape_prometheus_text` measures
//! what the exporter does per scrape: refresh a kept snapshot from the
//! store (`Store::snapshot_into`, which merges the 16 slots) and encode.
//! Throughput is in bytes of exposition.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::{Criterion, Throughput};
use shmetrics_core::{Family, FamilyDesc, Kind, Options, Snapshot, Store};
use shmetrics_expo::{encode, Format};

/// Processes that write, each through its own slot.
const WRITERS: usize = 16;

/// A store's shape: its families, and each series' family and labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// 60% counters with three long labels, 40% default-bucket histograms
    /// (store series).
    Heavy,
    /// The rendering target's shape: ~50-byte lines, 80% counter lines
    /// and 20% histogram lines (exposition series).
    Issue,
}

// ----- the target's shape ------------------------------------------------------

const ISSUE_COUNTER_FAMILIES: usize = 8;
const ISSUE_HISTOGRAM_FAMILIES: usize = 2;
const ISSUE_BOUNDS: [f64; 5] = [0.005, 0.025, 0.1, 0.5, 2.5];
/// Lines of one such histogram: 6 buckets, sum, count.
const ISSUE_HISTOGRAM_LINES: usize = ISSUE_BOUNDS.len() + 3;
const CODES: [&str; 5] = ["200", "201", "302", "404", "500"];

fn issue_descs() -> Vec<FamilyDesc> {
    let mut v = Vec::new();
    for i in 0..ISSUE_COUNTER_FAMILIES {
        v.push(
            FamilyDesc::new(format!("http_requests_{i}_total"), Kind::Counter)
                .help("Requests served, by route and code.")
                .labels(&["route", "code"]),
        );
    }
    for i in 0..ISSUE_HISTOGRAM_FAMILIES {
        v.push(
            FamilyDesc::new(format!("http_latency_{i}_seconds"), Kind::Histogram)
                .help("Request latency, by route.")
                .labels(&["route"])
                .buckets(&ISSUE_BOUNDS),
        );
    }
    v
}

/// For `lines` exposition series: (counter store series, histogram store
/// series).
fn issue_counts(lines: usize) -> (usize, usize) {
    let histogram_lines = lines / 5;
    (
        lines - histogram_lines,
        histogram_lines / ISSUE_HISTOGRAM_LINES,
    )
}

/// Store series `k` of the target's shape with `lines` exposition series.
fn issue_series_of(k: usize, lines: usize) -> (usize, [String; 3]) {
    let (counters, _) = issue_counts(lines);
    if k < counters {
        // (family, route, code) is unique per k.
        let fam = k % ISSUE_COUNTER_FAMILIES;
        let rest = k / ISSUE_COUNTER_FAMILIES;
        let code = CODES[rest % CODES.len()].to_string();
        let route = format!("/api/r{}", rest / CODES.len());
        (fam, [route, code, String::new()])
    } else {
        let h = k - counters;
        (
            ISSUE_COUNTER_FAMILIES + h % ISSUE_HISTOGRAM_FAMILIES,
            [
                format!("/api/r{}", h / ISSUE_HISTOGRAM_FAMILIES),
                String::new(),
                String::new(),
            ],
        )
    }
}

impl Shape {
    fn descs(self) -> Vec<FamilyDesc> {
        match self {
            Shape::Heavy => descs(),
            Shape::Issue => issue_descs(),
        }
    }

    /// Store series for a fixture of `size` (store series for `Heavy`,
    /// exposition series for `Issue`).
    fn store_series(self, size: usize) -> usize {
        match self {
            Shape::Heavy => size,
            Shape::Issue => {
                let (c, h) = issue_counts(size);
                c + h
            }
        }
    }

    fn series_of(self, k: usize, size: usize) -> (usize, [String; 3]) {
        match self {
            Shape::Heavy => series_of(k, size),
            Shape::Issue => issue_series_of(k, size),
        }
    }

    fn counter_families(self) -> usize {
        match self {
            Shape::Heavy => COUNTER_FAMILIES,
            Shape::Issue => ISSUE_COUNTER_FAMILIES,
        }
    }

    fn label_values(self, fam: usize, v: &[String; 3]) -> Vec<&str> {
        let n = match self {
            Shape::Heavy if fam < COUNTER_FAMILIES => 3,
            Shape::Heavy => 2,
            Shape::Issue if fam < ISSUE_COUNTER_FAMILIES => 2,
            Shape::Issue => 1,
        };
        v[..n].iter().map(String::as_str).collect()
    }
}

// ----- the stress shape --------------------------------------------------------
const COUNTER_FAMILIES: usize = 6;
const HISTOGRAM_FAMILIES: usize = 4;

const METHODS: [&str; 4] = ["GET", "POST", "PUT", "DELETE"];
const STATUSES: [&str; 5] = ["200", "201", "404", "500", "503"];

/// The families; 60% of the series are counters, 40% histograms.
fn descs() -> Vec<FamilyDesc> {
    let mut v = Vec::new();
    for i in 0..COUNTER_FAMILIES {
        v.push(
            FamilyDesc::new(format!("bench_http_requests_{i}_total"), Kind::Counter)
                .help("Requests served, by route, method and status.")
                .labels(&["route", "method", "status"]),
        );
    }
    for i in 0..HISTOGRAM_FAMILIES {
        v.push(
            FamilyDesc::new(
                format!("bench_request_duration_{i}_seconds"),
                Kind::Histogram,
            )
            .help("Request latency, by route and method.")
            .unit("seconds")
            .labels(&["route", "method"]),
        );
    }
    v
}

/// Series `k` of `total`: its family and label values.
fn series_of(k: usize, total: usize) -> (usize, [String; 3]) {
    // (route, method, status) is unique per k, and so is (route, method)
    // for the histograms' k.
    let counters = total * 6 / 10;
    let method = METHODS[k % 4].to_string();
    if k < counters {
        let route = format!("/api/v1/resource_{}/items", k / 20);
        let status = STATUSES[(k / 4) % 5].to_string();
        (k % COUNTER_FAMILIES, [route, method, status])
    } else {
        let route = format!("/api/v1/resource_{}/items", k / 4);
        (
            COUNTER_FAMILIES + k % HISTOGRAM_FAMILIES,
            [route, method, String::new()],
        )
    }
}

fn open(path: &Path, total: usize) -> Store {
    let opts = Options {
        max_families: 64,
        max_series: total as u32 + 1024,
        label_bytes: (total as u64 * 96).max(1 << 20),
        max_writers: WRITERS as u32 + 4,
        ..Options::default()
    };
    Store::open(path, &opts).expect("open the bench store")
}

/// One writer process's share: series `[from, to)`, each updated a few
/// times.
fn write_block(shape: Shape, store: &Store, fams: &[Family], size: usize, from: usize, to: usize) {
    for k in from..to {
        let (fam, values) = shape.series_of(k, size);
        let s = store
            .series(&fams[fam], &shape.label_values(fam, &values))
            .unwrap();
        if fam < shape.counter_families() {
            store.counter_add(s, (k % 1000) as f64).unwrap();
            store.counter_inc(s).unwrap();
        } else {
            for j in 0..3 {
                store.observe(s, ((k + j) % 400) as f64 * 0.025).unwrap();
            }
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    shape: Shape,
    /// The size it was built for (see [`Shape::store_series`]).
    size: usize,
    store: Store,
    snapshot: Snapshot,
}

/// Creates every series in this process, then forks `WRITERS` children
/// that each open the store and write a block of the series. Must run
/// before any thread is started.
fn build(shape: Shape, size: usize) -> Fixture {
    let total = shape.store_series(size);
    let dir = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm")
    } else {
        tempfile::tempdir()
    }
    .unwrap();
    let path = dir.path().join("bench-store");
    let t = Instant::now();
    {
        let store = open(&path, total);
        let fams = register_all(shape, &store);
        for k in 0..total {
            let (fam, values) = shape.series_of(k, size);
            store
                .series(&fams[fam], &shape.label_values(fam, &values))
                .unwrap();
        }
    }
    write_from_children(shape, &path, size, total);
    let built = t.elapsed();

    let store = Store::open(&path, &Options::reader()).unwrap();
    let t = Instant::now();
    let snapshot = store.snapshot().unwrap();
    let snap_time = t.elapsed();
    assert_eq!(snapshot.series_count(), total);
    assert!(snapshot.stats().writer_claims_total >= WRITERS as u64);
    eprintln!(
        "{shape:?} shape, {total} store series: written by {WRITERS} processes in {built:.2?}; snapshot took {snap_time:.2?}"
    );
    Fixture {
        _dir: dir,
        shape,
        size,
        store,
        snapshot,
    }
}

fn register_all(shape: Shape, store: &Store) -> Vec<Family> {
    shape
        .descs()
        .iter()
        .map(|d| store.register(d).unwrap())
        .collect()
}

/// Forks `WRITERS` children that each open the store and write their
/// block of its `total` series, and waits for them.
fn write_from_children(shape: Shape, path: &Path, size: usize, total: usize) {
    let mut children = Vec::new();
    for w in 0..WRITERS {
        // SAFETY: no other thread exists yet (this runs before criterion
        // starts), and the child leaves through `_exit` without unwinding
        // or running the parent's destructors.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = std::panic::catch_unwind(|| {
                let store = open(path, total);
                let fams = register_all(shape, &store);
                let (start, end) = (w * total / WRITERS, (w + 1) * total / WRITERS);
                write_block(shape, &store, &fams, size, start, end);
            })
            .is_ok();
            // SAFETY: ends the child at once, as intended.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        children.push(pid);
    }
    for pid in children {
        let mut status = 0;
        // SAFETY: waits for a child this process forked.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "writer {pid} failed: status {status}"
        );
    }
}

fn label(n: usize) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else {
        format!("{}k", n / 1000)
    }
}

fn bench(c: &mut Criterion, f: &Fixture) {
    let name = match f.shape {
        Shape::Heavy => format!("render_{}_series", label(f.size)),
        Shape::Issue => format!("render_issue_{}_series", label(f.size)),
    };
    let mut group = c.benchmark_group(name);
    group.sample_size(if f.size >= 1_000_000 { 10 } else { 30 });
    for (name, format) in [
        ("prometheus_text", Format::PrometheusText),
        ("openmetrics", Format::OpenMetrics),
        ("protobuf", Format::Protobuf),
    ] {
        let mut out = Vec::new();
        let t = Instant::now();
        encode(&f.snapshot, format, &mut out);
        let first = t.elapsed();
        if !format.is_text() {
            eprintln!(
                "{:?} shape, {name}: {} store series, {} bytes ({:.1} MiB, {:.0} bytes a series); first render (fresh buffer) {first:.2?}",
                f.shape,
                f.snapshot.series_count(),
                out.len(),
                out.len() as f64 / (1 << 20) as f64,
                out.len() as f64 / f.snapshot.series_count().max(1) as f64,
            );
        }
        let lines = out.iter().filter(|b| **b == b'\n').count();
        let samples = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty() && l[0] != b'#')
            .count();
        if format.is_text() {
            eprintln!(
            "{:?} shape, {name}: {} store series, {samples} sample lines ({lines} lines), {} bytes ({:.1} MiB, {:.0} bytes a sample line); first render (fresh buffer) {first:.2?}",
            f.shape,
            f.snapshot.series_count(),
            out.len(),
            out.len() as f64 / (1 << 20) as f64,
            out.len() as f64 / samples as f64,
        );
        }
        group.throughput(Throughput::Bytes(out.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                encode(black_box(&f.snapshot), format, &mut out);
                black_box(out.len())
            })
        });
        if f.shape == Shape::Issue && format == Format::PrometheusText {
            // What the exporter does per scrape: refresh the kept
            // snapshot (merging 16 slots), then encode.
            let mut snap = Snapshot::default();
            f.store.snapshot_into(&mut snap).unwrap();
            group.bench_function("scrape_prometheus_text", |b| {
                b.iter(|| {
                    f.store.snapshot_into(&mut snap).unwrap();
                    out.clear();
                    encode(black_box(&snap), format, &mut out);
                    black_box(out.len())
                })
            });
        }
    }
    group.finish();
}

fn main() {
    let mut fixtures = vec![(Shape::Heavy, 100_000)];
    if std::env::var("SHMETRICS_BENCH_1M").as_deref() == Ok("1") {
        fixtures.push((Shape::Heavy, 1_000_000));
    }
    fixtures.push((Shape::Issue, 100_000));
    fixtures.push((Shape::Issue, 1_000_000));
    // Every fork happens here, before criterion starts any thread.
    let fixtures: Vec<Fixture> = fixtures
        .into_iter()
        .map(|(shape, size)| build(shape, size))
        .collect();
    let mut c = Criterion::default().configure_from_args();
    for f in &fixtures {
        bench(&mut c, f);
    }
    c.final_summary();
}

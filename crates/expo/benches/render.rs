//! Rendering throughput: a store of 100k series (counters and default-bucket
//! histograms, mixed), written by 16 processes, so that 16 writer slots are
//! in use, encoded as Prometheus text and as OpenMetrics.
//!
//! ```text
//! cargo bench -p shmetrics-expo --bench render
//! SHMETRICS_BENCH_1M=1 cargo bench -p shmetrics-expo --bench render   # also 1M series
//! ```
//!
//! Only the encoding is measured: the snapshot is taken once beforehand
//! (its time is printed), and the output buffer is reused between
//! iterations, as an exporter that keeps its buffer would. Throughput is in
//! bytes of exposition.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::{Criterion, Throughput};
use shmetrics_core::{Family, FamilyDesc, Kind, Options, Snapshot, Store};
use shmetrics_expo::{encode, Format};

/// Processes that write, each through its own slot.
const WRITERS: usize = 16;
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

fn label_values(fam: usize, v: &[String; 3]) -> Vec<&str> {
    let n = if fam < COUNTER_FAMILIES { 3 } else { 2 };
    v[..n].iter().map(String::as_str).collect()
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
fn write_block(store: &Store, fams: &[Family], total: usize, from: usize, to: usize) {
    for k in from..to {
        let (fam, values) = series_of(k, total);
        let s = store
            .series(&fams[fam], &label_values(fam, &values))
            .unwrap();
        if fam < COUNTER_FAMILIES {
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
    series: usize,
    snapshot: Snapshot,
}

/// Creates every series in this process, then forks `WRITERS` children
/// that each open the store and write a block of the series. Must run
/// before any thread is started.
fn build(total: usize) -> Fixture {
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
        let fams: Vec<Family> = descs().iter().map(|d| store.register(d).unwrap()).collect();
        for k in 0..total {
            let (fam, values) = series_of(k, total);
            store
                .series(&fams[fam], &label_values(fam, &values))
                .unwrap();
        }
    }
    let mut children = Vec::new();
    for w in 0..WRITERS {
        // SAFETY: no other thread exists yet (this runs before criterion
        // starts), and the child leaves through `_exit` without unwinding
        // or running the parent's destructors.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = std::panic::catch_unwind(|| {
                let store = open(&path, total);
                let fams: Vec<Family> =
                    descs().iter().map(|d| store.register(d).unwrap()).collect();
                write_block(
                    &store,
                    &fams,
                    total,
                    w * total / WRITERS,
                    (w + 1) * total / WRITERS,
                );
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
    let built = t.elapsed();

    let store = Store::open(
        &path,
        &Options {
            create: false,
            read_only: true,
            ..Options::default()
        },
    )
    .unwrap();
    let t = Instant::now();
    let snapshot = store.snapshot().unwrap();
    let snap_time = t.elapsed();
    assert_eq!(snapshot.series_count(), total);
    assert!(snapshot.stats().writer_claims_total >= WRITERS as u64);
    eprintln!(
        "{total} series: store written by {WRITERS} processes in {built:.2?}; snapshot took {snap_time:.2?}"
    );
    Fixture {
        _dir: dir,
        series: total,
        snapshot,
    }
}

fn label(n: usize) -> String {
    if n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else {
        format!("{}k", n / 1000)
    }
}

fn bench(c: &mut Criterion, f: &Fixture) {
    let mut group = c.benchmark_group(format!("render_{}_series", label(f.series)));
    group.sample_size(if f.series >= 1_000_000 { 10 } else { 30 });
    for (name, format) in [
        ("prometheus_text", Format::PrometheusText),
        ("openmetrics", Format::OpenMetrics),
    ] {
        let mut out = Vec::new();
        let t = Instant::now();
        encode(&f.snapshot, format, &mut out);
        let first = t.elapsed();
        let lines = out.iter().filter(|b| **b == b'\n').count();
        eprintln!(
            "{name}, {} series: {} bytes ({:.1} MiB), {lines} lines; first render (fresh buffer) {first:.2?}",
            f.series,
            out.len(),
            out.len() as f64 / (1 << 20) as f64
        );
        group.throughput(Throughput::Bytes(out.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                encode(black_box(&f.snapshot), format, &mut out);
                black_box(out.len())
            })
        });
    }
    group.finish();
}

fn main() {
    let mut sizes = vec![100_000];
    if std::env::var("SHMETRICS_BENCH_1M").as_deref() == Ok("1") {
        sizes.push(1_000_000);
    }
    // Every fork happens here, before criterion starts any thread.
    let fixtures: Vec<Fixture> = sizes.into_iter().map(build).collect();
    let mut c = Criterion::default().configure_from_args();
    for f in &fixtures {
        bench(&mut c, f);
    }
    c.final_summary();
}

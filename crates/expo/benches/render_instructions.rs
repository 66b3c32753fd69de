//! Instructions of one render per format, for callgrind: the "issue" shape
//! of `render.rs` (100k exposition series: counters with two labels, 80 %
//! of the lines, and histograms with 5 bounds), written by this one
//! process, rendered once as Prometheus text, OpenMetrics and protobuf,
//! each from a function of its own, whose inclusive count callgrind gives
//! (collect everything: with `--toggle-collect` the bench profile's
//! inlining misattributes the counts):
//!
//! ```text
//! cargo bench -p shmetrics-expo --bench render_instructions --no-run   # prints the binary
//! valgrind --tool=callgrind target/release/deps/render_instructions-<hash>
//! callgrind_annotate --inclusive=yes callgrind.out.<pid> | grep render_instructions::render_
//! ```
//!
//! It uses only the public API, so the same file builds in an older tree
//! for a before/after comparison. Prints the page sizes.

#![allow(missing_docs)]

use shmetrics_core::{FamilyDesc, Kind, Options, Snapshot, Store};
use shmetrics_expo::{encode, Format};

const BOUNDS: [f64; 5] = [0.005, 0.025, 0.1, 0.5, 2.5];
const CODES: [&str; 5] = ["200", "201", "302", "404", "500"];
const LINES: usize = 100_000;

#[inline(never)]
fn render_text(s: &Snapshot, out: &mut Vec<u8>) {
    out.clear();
    encode(s, Format::PrometheusText, out);
}

#[inline(never)]
fn render_openmetrics(s: &Snapshot, out: &mut Vec<u8>) {
    out.clear();
    encode(s, Format::OpenMetrics, out);
}

#[inline(never)]
fn render_protobuf(s: &Snapshot, out: &mut Vec<u8>) {
    out.clear();
    encode(s, Format::Protobuf, out);
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_families: 64,
        max_series: LINES as u32,
        label_bytes: 16 << 20,
        ..Options::default()
    };
    let store = Store::open(dir.path().join("store"), &opts).unwrap();
    let mut fams = Vec::new();
    for i in 0..8 {
        let d = FamilyDesc::new(format!("http_requests_{i}_total"), Kind::Counter)
            .help("Requests served, by route and code.")
            .labels(&["route", "code"]);
        fams.push(store.register(&d).unwrap());
    }
    for i in 0..2 {
        let d = FamilyDesc::new(format!("http_latency_{i}_seconds"), Kind::Histogram)
            .help("Request latency, by route.")
            .labels(&["route"])
            .buckets(&BOUNDS);
        fams.push(store.register(&d).unwrap());
    }
    // 20 % of the lines are histograms' (8 lines each), 80 % counters'.
    let counters = LINES - LINES / 5;
    for k in 0..counters {
        let rest = k / 8;
        let route = format!("/api/r{}", rest / 5);
        let s = store
            .series(&fams[k % 8], &[&route, CODES[rest % 5]])
            .unwrap();
        store.counter_add(s, (k % 1000) as f64).unwrap();
    }
    for h in 0..LINES / 5 / 8 {
        let route = format!("/api/r{}", h / 2);
        let s = store.series(&fams[8 + h % 2], &[&route]).unwrap();
        for j in 0..3 {
            store.observe(s, ((h + j) % 400) as f64 * 0.025).unwrap();
        }
    }
    let snap = store.snapshot().unwrap();
    let mut out = Vec::with_capacity(64 << 20);
    render_text(&snap, &mut out);
    println!("text: {} bytes", out.len());
    render_openmetrics(&snap, &mut out);
    println!("openmetrics: {} bytes", out.len());
    render_protobuf(&snap, &mut out);
    println!("protobuf: {} bytes", out.len());
}

//! Writes the seed corpus of the `open_store` fuzz target: a few valid
//! stores created with tiny capacities, so that libFuzzer mutates real
//! headers, families and series rather than noise.
//!
//! Run from crates/core/fuzz: `cargo +nightly run --bin seed_corpus
//! [DIR]` (default `corpus/open_store`).

use std::path::{Path, PathBuf};

use shmetrics_core::{FamilyDesc, GaugeMode, Kind, NativeOpts, Options, Store};

/// The smallest capacities that still hold one of each kind of family.
fn tiny() -> Options {
    Options {
        max_families: 4,
        max_series: 8,
        label_bytes: 512,
        max_writers: 1,
        cells_per_writer: 64,
        sketch_cells_per_writer: 1024,
        ..Options::default()
    }
}

/// One family of each kind, each with one labelled series updated once.
fn families() -> [FamilyDesc; 4] {
    [
        FamilyDesc::new("jobs_total", Kind::Counter)
            .help("Jobs done.")
            .labels(&["queue"])
            .exemplars(true),
        FamilyDesc::new("workers", Kind::Gauge)
            .labels(&["pool"])
            .gauge_mode(GaugeMode::LiveSum),
        FamilyDesc::new("wait_seconds", Kind::Histogram)
            .labels(&["queue"])
            .buckets(&[0.5, 2.0])
            .native(NativeOpts {
                bucket_factor: 16.0,
                max_buckets: 2,
                ..NativeOpts::default()
            }),
        FamilyDesc::new("body_bytes", Kind::Summary).labels(&["kind"]),
    ]
}

fn fill(store: &Store) -> shmetrics_core::Result<()> {
    for desc in families() {
        let family = store.register(&desc)?;
        let series = store.series(&family, &["a"])?;
        match desc.kind {
            Kind::Counter => store.counter_add_with_exemplar(series, 3.0, &[("trace_id", "7")])?,
            Kind::Gauge => store.gauge_set(series, -1.5)?,
            Kind::Histogram | Kind::Summary => {
                for v in [0.1, 1.0, 40.0] {
                    store.observe(series, v)?;
                }
            }
        }
    }
    Ok(())
}

/// Creates a store at `scratch`, lets `build` fill it, and copies its bytes
/// (the store closed) to `out`.
fn seed(
    scratch: &Path,
    out: PathBuf,
    build: impl Fn(&Store) -> shmetrics_core::Result<()>,
) -> Result<(), Box<dyn std::error::Error>> {
    let _ = std::fs::remove_file(scratch);
    {
        let store = Store::open(scratch, &tiny())?;
        build(&store)?;
    }
    std::fs::copy(scratch, &out)?;
    std::fs::remove_file(scratch)?;
    println!(
        "{} ({} bytes)",
        out.display(),
        std::fs::metadata(&out)?.len()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or("corpus/open_store".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let scratch = std::env::temp_dir().join(format!("shmetrics-seed-{}", std::process::id()));
    seed(&scratch, dir.join("empty"), |_| Ok(()))?;
    seed(&scratch, dir.join("populated"), fill)?;
    Ok(())
}

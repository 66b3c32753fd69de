//! Fuzz target: the input is a store file. It is written with mode 0600
//! (so the trust check passes and the layout checks are what is tested),
//! opened read-only and read-write, and whatever opens is snapshotted and
//! rendered in every exposition format. Then the same again with the
//! header's checksum made to match, so that mutated header fields reach
//! the checks behind it. Errors are fine; a panic, a crash or a hang is a
//! finding.
#![no_main]

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shmetrics_core::{Options, Store};
use shmetrics_expo::Format;

/// The file every input is written to: one per fuzzing process.
fn store_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("shmetrics-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz directory");
        dir.join("store")
    })
}

fn write_input(data: &[u8]) {
    let path = store_path();
    let _ = std::fs::remove_file(path);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .expect("create the store file");
    file.write_all(data).expect("write the store file");
}

/// Snapshots and renders an opened store; errors are fine.
fn exercise(store: &Store) {
    let Ok(snapshot) = store.snapshot() else {
        return;
    };
    let mut out = Vec::new();
    for format in [
        Format::PrometheusText,
        Format::OpenMetrics,
        Format::Protobuf,
    ] {
        out.clear();
        shmetrics_expo::encode(&snapshot, format, &mut out);
    }
}

/// The header's checksum, at this offset, covers the bytes before it.
const CHECKSUM: usize = 184;

/// `data` with its header checksum recomputed, if it has a header and the
/// checksum differed.
fn resealed(data: &[u8]) -> Option<Vec<u8>> {
    let head = data.get(..CHECKSUM + 8)?;
    let sum = xxhash_rust::xxh3::xxh3_64(&head[..CHECKSUM]).to_ne_bytes();
    if head[CHECKSUM..] == sum {
        return None;
    }
    let mut data = data.to_vec();
    data[CHECKSUM..CHECKSUM + 8].copy_from_slice(&sum);
    Some(data)
}

fn open_all_ways(data: &[u8]) {
    write_input(data);
    for read_only in [true, false] {
        let options = Options {
            create: false,
            read_only,
            ..Options::default()
        };
        if let Ok(store) = Store::open(store_path(), &options) {
            exercise(&store);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    open_all_ways(data);
    if let Some(data) = resealed(data) {
        open_all_ways(&data);
    }
});

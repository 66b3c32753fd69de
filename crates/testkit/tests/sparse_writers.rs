//! Test 12: writers that each touch a tenth of the series take about a
//! tenth of the value cells of writers that touch them all (issue 36: at
//! most a quarter), and the totals stay exact either way.

use shmetrics_core::Options;
use shmetrics_testkit::check::totals;
use shmetrics_testkit::proto::{self, word};

use crate::common::{create_store, tempdir, Worker};

const SERIES: u64 = 4000;
const WRITERS: u64 = 8;

/// The writer slots' value cells after `WRITERS` workers touched
/// `percent` of the series each, with the store's total checked against
/// what they acknowledged.
fn writer_cells(percent: u64) -> u64 {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store = create_store(&path, &Options::default());
    // All alive at once, so that each has a slot of its own.
    let mut workers: Vec<Worker> = (0..WRITERS)
        .map(|w| {
            let args = [
                format!("series={SERIES}"),
                format!("writer={w}"),
                format!("percent={percent}"),
            ];
            let ack = dir.path().join(format!("ack-{w}"));
            Worker::spawn("touch", &path, &ack, false, &args)
        })
        .collect();
    let mut acked = 0;
    for w in &mut workers {
        w.wait_word(word::DONE, 1);
        acked += w.ack.get(word::COUNTER);
    }
    let expected: u64 = (0..WRITERS)
        .map(|w| {
            (0..SERIES)
                .filter(|k| proto::touches(w, *k, percent))
                .count() as u64
        })
        .sum();
    assert_eq!(acked, expected);
    let snap = store.snapshot().unwrap();
    assert_eq!(totals(&snap, "tk_touch").count, expected as f64);
    let writers = store.writers();
    assert_eq!(writers.len() as u64, WRITERS);
    for w in &mut workers {
        w.stop();
    }
    writers.iter().map(|w| w.cells_used).sum()
}

#[test]
fn sparse_writers_take_cells_for_what_they_touch() {
    let full = writer_cells(100);
    let sparse = writer_cells(10);
    // A block per series touched: a header, the count, the float cell.
    assert_eq!(full, WRITERS * SERIES * 3);
    assert!(
        sparse * 4 <= full,
        "writers touching 10 % took {sparse} cells, touching all {full}"
    );
    assert!(sparse > 0);
}

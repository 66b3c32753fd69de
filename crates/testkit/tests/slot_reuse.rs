//! Test 3: a thousand short-lived writers, a few at a time. Counters stay
//! exact and the number of writer slots stays at the concurrency, not at
//! the number of processes that ever lived.

use shmetrics_core::Options;
use shmetrics_testkit::check::{check_snapshot, totals};
use shmetrics_testkit::proto::{self, word};
use shmetrics_testkit::AckFile;

use crate::common::{create_store, tempdir, Worker};

const PROCESSES: usize = 1000;
const LANES: usize = 4;
const INCS: u64 = 50;

#[test]
fn a_thousand_short_lived_writers_reuse_slots() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store = create_store(&path, &Options::default());
    let ack_path = |lane: usize| dir.path().join(format!("ack-{lane}"));
    for lane in 0..LANES {
        AckFile::create(ack_path(lane)).unwrap();
    }
    // Three ways to go: drop the store (releasing the slot), exit without
    // dropping it (the slot's owner is then found dead), or be SIGKILLed
    // after acknowledging every increment.
    let ends = ["release", "exit", "hold"];
    let mut spawned = 0;
    let mut max_writers_seen = 0;
    while spawned < PROCESSES {
        let batch: Vec<(usize, &str)> = (0..LANES)
            .take(PROCESSES - spawned)
            .map(|lane| (lane, ends[(spawned + lane) % ends.len()]))
            .collect();
        let mut running: Vec<(Worker, &str)> = batch
            .iter()
            .map(|&(lane, end)| {
                let args = [format!("n={INCS}"), format!("end={end}")];
                (
                    Worker::spawn("incs", &path, &ack_path(lane), true, &args),
                    end,
                )
            })
            .collect();
        spawned += running.len();
        for (w, end) in &mut running {
            if *end == "hold" {
                w.wait_word(word::DONE, 1);
                w.kill_expecting_running();
            } else {
                w.wait_success();
            }
        }
        if spawned % 100 == 0 {
            max_writers_seen = max_writers_seen.max(store.writers().len());
        }
    }

    let acked: u64 = (0..LANES)
        .map(|lane| AckFile::open(ack_path(lane)).unwrap().get(word::COUNTER))
        .sum();
    let snap = store.snapshot().unwrap();
    check_snapshot(&snap).unwrap();
    let t = totals(&snap, proto::REUSE_COUNTER);
    let writers = store.writers();
    let stats = store.stats();
    eprintln!(
        "slot reuse: {PROCESSES} processes, {} slots used, {} claims, {} reuses",
        writers.len(),
        stats.writer_claims_total,
        stats.writer_reuses_total
    );
    assert_eq!(
        acked,
        PROCESSES as u64 * INCS,
        "every increment was acknowledged"
    );
    assert_eq!(
        t.count, acked as f64,
        "counter total vs acknowledged increments"
    );
    let bound = LANES + 2;
    assert!(
        writers.len() <= bound && max_writers_seen <= bound,
        "{} writer slots (max {max_writers_seen} seen) for {LANES} concurrent processes: {writers:?}",
        writers.len()
    );
    assert!(writers.iter().all(|w| !w.live));
    assert_eq!(
        stats.writer_claims_total, PROCESSES as u64,
        "one claim per process"
    );
    assert_eq!(
        stats.writer_reuses_total,
        PROCESSES as u64 - writers.len() as u64,
        "every claim but the first of each slot reuses a slot"
    );
    assert_eq!(stats.writers_exhausted_total, 0);
}

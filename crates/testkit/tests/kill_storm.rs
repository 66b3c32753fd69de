//! Test 1: eight workers update counters and histograms while a random one
//! is SIGKILLed every few milliseconds and restarted; a reader snapshots
//! all along. No acknowledged update may be lost, and at most one
//! unacknowledged update per kill may appear.

use std::time::Duration;

use shmetrics_core::Options;
use shmetrics_testkit::check::{check_snapshot, totals};
use shmetrics_testkit::proto::{self, word};
use shmetrics_testkit::rng::Rng;

use crate::common::{long_mode, Storm};

const WORKERS: usize = 8;

#[test]
fn counters_and_histograms_stay_exact_under_sigkill() {
    let opts = Options {
        max_series: 8192,
        max_writers: 64,
        ..Options::default()
    };
    let mut storm = Storm::start("churn", WORKERS, &opts);
    let min_kills: u64 = if long_mode() { 10_000 } else { 200 };
    let mut rng = Rng::from_entropy();
    let (mut kills, mut kills_after_ready) = (0u64, 0u64);
    let mut max_writers_seen = 0;
    while kills < min_kills {
        std::thread::sleep(Duration::from_micros(rng.range(500, 4000)));
        if storm.kill_and_restart(rng.below(WORKERS as u64) as usize) {
            kills_after_ready += 1;
        }
        kills += 1;
        if kills % 50 == 0 {
            max_writers_seen = max_writers_seen.max(storm.store.writers().len());
        }
    }
    let report = storm.finish();
    let (store, acks) = (&storm.store, |w| storm.acks(w));
    let (acked_c, acked_h, acked_sum) = (
        acks(word::COUNTER) as f64,
        acks(word::HIST) as f64,
        acks(word::HIST_SUM) as f64 / proto::SUM_SCALE,
    );
    let snap = store.snapshot().expect("final snapshot");
    let c = totals(&snap, proto::CHURN_COUNTER);
    let h = totals(&snap, proto::CHURN_HIST);
    let writers = store.writers();
    let stats = store.stats();
    eprintln!(
        "kill storm: {kills} kills ({kills_after_ready} after the worker was ready), \
         acked {acked_c} incs / {acked_h} observes, store {} / {}, \
         {} reader snapshots, {} writer slots used, {} claims, {} lock recoveries",
        c.count,
        h.count,
        report.snapshots,
        writers.len(),
        stats.writer_claims_total,
        stats.lock_recoveries_total
    );

    assert_eq!(
        report.error, None,
        "the reader saw an inconsistent snapshot"
    );
    assert!(report.snapshots > 0);
    check_snapshot(&snap).unwrap();
    assert_eq!(c.series, proto::CHURN_SERIES, "counter series");
    assert_eq!(h.series, proto::CHURN_SERIES, "histogram series");
    let k = kills as f64;
    assert!(
        acked_c > k,
        "the workers made too little progress to test anything: {acked_c} acks"
    );
    assert!(
        acked_c <= c.count && c.count <= acked_c + k,
        "counter total {} outside [acked {acked_c}, acked + kills {}]",
        c.count,
        acked_c + k
    );
    assert!(
        acked_h <= h.count && h.count <= acked_h + k,
        "histogram count {} outside [acked {acked_h}, acked + kills {}]",
        h.count,
        acked_h + k
    );
    // A kill between an observation's bucket and its sum, or between the
    // two acks, moves the sum by at most one value per kill.
    let slack = k * proto::MAX_OBSERVED as f64;
    assert!(
        (h.sum - acked_sum).abs() <= slack,
        "histogram sum {} vs acked {acked_sum}: off by more than {slack}",
        h.sum
    );

    // Slots: at most WORKERS alive at once (each killed worker is reaped
    // before its successor starts), so at most WORKERS slots, plus a
    // little slack; far below the number of incarnations.
    let bound = WORKERS + 2;
    assert!(
        writers.len() <= bound && max_writers_seen <= bound,
        "{} writer slots used (max {max_writers_seen} seen during the storm) for {WORKERS} \
         concurrent workers: {writers:?}",
        writers.len()
    );
    assert!(writers.iter().all(|w| w.slot as usize <= bound));
    assert!(
        writers.iter().all(|w| !w.live),
        "all workers stopped: {writers:?}"
    );
    assert_eq!(stats.writers_exhausted_total, 0);
}

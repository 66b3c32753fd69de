//! Series TTL under SIGKILL: eight workers keep the series of one TTL
//! family busy and keep adding short-lived series to another, whose TTL
//! is 200 ms and whose series limit is far below what they add; a random
//! worker but the first is SIGKILLed every few milliseconds (in the middle of updates,
//! of a series' creation under the lock, or of a sweep) and restarted,
//! while a reader checks snapshots (a short-lived series' label is never
//! used again, so a reused record shows as a new series to its
//! monotonicity check). The busy series lose no acknowledged
//! update, the short-lived family never overflows (its expired records
//! are reused), updates of short-lived series past their TTL fail as
//! stale (expiring them first, under the lock, where no sweep had), and
//! no snapshot is inconsistent.

use std::time::Duration;

use shmetrics_core::Options;
use shmetrics_testkit::check::{check_snapshot, totals};
use shmetrics_testkit::proto::{self, word};
use shmetrics_testkit::rng::Rng;

use crate::common::{long_mode, Storm};

const WORKERS: usize = 8;

#[test]
fn ttl_families_stay_exact_and_reuse_records_under_sigkill() {
    let opts = Options {
        max_series: 4096,
        max_writers: 64,
        ..Options::default()
    };
    let mut storm = Storm::start("ttl", WORKERS, &opts);
    let min_kills: u64 = if long_mode() { 5_000 } else { 200 };
    let mut rng = Rng::from_entropy();
    let mut kills = 0u64;
    // Kill until the workers have added several times the short-lived
    // family's limit, so that it could not have held them without reuse.
    let need = 3 * u64::from(proto::TTL_CHURN_MAX);
    while kills < min_kills || storm.acks(word::CREATED) < need {
        std::thread::sleep(Duration::from_micros(rng.range(500, 6000)));
        // Worker 0 is spared: it lives long enough to update its
        // short-lived series past their TTL (the others seldom do).
        storm.kill_and_restart(1 + rng.below(WORKERS as u64 - 1) as usize);
        kills += 1;
    }
    let report = storm.finish();
    let (store, acks) = (&storm.store, |w| storm.acks(w));

    let acked_hot = acks(word::COUNTER) as f64;
    let created = acks(word::CREATED);
    let stale = acks(word::STALE);
    let snap = store.snapshot().expect("final snapshot");
    check_snapshot(&snap).unwrap();
    let hot = totals(&snap, proto::TTL_HOT);
    let stats = store.stats();
    eprintln!(
        "ttl kill storm: {kills} kills, {acked_hot} acked increments of busy series (store {}), \
         {created} short-lived series added ({} visible now), {stale} late updates found them \
         expired, {} expired, {} overflows, \
         {} series records allocated, {} lock recoveries, {} reader snapshots",
        hot.count,
        totals(&snap, proto::TTL_CHURN).series,
        stats.series_expired_total,
        stats.overflows_total,
        stats.series_allocated,
        stats.lock_recoveries_total,
        report.snapshots,
    );
    assert_eq!(
        report.error, None,
        "the reader saw an inconsistent snapshot"
    );
    assert!(report.snapshots > 0);
    let k = kills as f64;
    assert!(
        acked_hot > k,
        "too little progress to test anything: {acked_hot} acks"
    );
    assert_eq!(hot.series, proto::TTL_HOT_SERIES, "busy series expired");
    assert!(
        acked_hot <= hot.count && hot.count <= acked_hot + k,
        "busy series total {} outside [acked {acked_hot}, acked + kills {}]",
        hot.count,
        acked_hot + k
    );
    // Every creation succeeded (a worker that got an overflow exits with
    // an error, which kill_expecting_running and stop report), so the
    // family held `created` series in `TTL_CHURN_MAX` records.
    assert!(created >= need, "{created} short-lived series added");
    // Late updates ran into expired series (expiring them first where no
    // sweep had), and none of them failed otherwise: an error other than
    // StaleHandle stops the worker, which fails the test.
    assert!(stale > 0, "no late update found its series expired");
    assert_eq!(stats.overflows_total, 0);
    assert!(
        stats.series_expired_total >= created - u64::from(proto::TTL_CHURN_MAX),
        "{} expired of {created} added",
        stats.series_expired_total
    );
    // The records: the busy series, at most the family's limit of
    // short-lived ones, and the two families' overflow series.
    let bound = proto::TTL_HOT_SERIES as u32 + proto::TTL_CHURN_MAX + 2;
    assert!(
        stats.series_allocated <= bound,
        "{} series records allocated, at most {bound} expected",
        stats.series_allocated
    );

    // Once idle for the TTL, every short-lived series goes; the busy
    // series' counts stay as they were.
    std::thread::sleep(Duration::from_millis(3 * proto::TTL_CHURN_MS));
    store.expire_idle().unwrap();
    let after = store.snapshot().unwrap();
    assert_eq!(totals(&after, proto::TTL_CHURN).series, 0);
    assert_eq!(totals(&after, proto::TTL_HOT), hot);
}

//! Test 2: four workers observe into histograms as fast as they can while
//! the test takes thousands of snapshots. Every snapshot is consistent, and
//! no count goes down from one snapshot to the next.

use shmetrics_core::{Options, Snapshot, Store};
use shmetrics_testkit::check::{check_snapshot, totals, Monotone};
use shmetrics_testkit::proto::{self, word};

use crate::common::{create_store, long_mode, tempdir, Worker};

const WORKERS: usize = 4;

#[test]
fn snapshots_stay_consistent_during_observes() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let writer = create_store(&path, &Options::default());
    let mut workers: Vec<Worker> = (0..WORKERS)
        .map(|i| {
            let ack = dir.path().join(format!("ack-{i}"));
            Worker::spawn("observe", &path, &ack, false, &[])
        })
        .collect();
    // Start reading at once, while the workers register and create their
    // series: creation races with reading, too.
    let reader = Store::open(&path, &Options::reader()).unwrap();
    let rounds = if long_mode() { 50_000 } else { 4_000 };
    let mut kept = Snapshot::default();
    let (mut mono_fresh, mut mono_kept) = (Monotone::default(), Monotone::default());
    let mut first_count = None;
    for i in 0..rounds {
        if i % 2 == 0 {
            let snap = reader.snapshot().unwrap();
            check_snapshot(&snap).unwrap_or_else(|e| panic!("snapshot {i}: {e}"));
            mono_fresh
                .check(&snap)
                .unwrap_or_else(|e| panic!("snapshot {i}: {e}"));
            if first_count.is_none() && totals(&snap, proto::OBS_HIST).series == proto::OBS_SERIES {
                first_count = Some(totals(&snap, proto::OBS_HIST).count);
            }
        } else {
            reader.snapshot_into(&mut kept).unwrap();
            check_snapshot(&kept).unwrap_or_else(|e| panic!("refresh {i}: {e}"));
            mono_kept
                .check(&kept)
                .unwrap_or_else(|e| panic!("refresh {i}: {e}"));
        }
        if i % 512 == 0 {
            for w in &mut workers {
                w.assert_running();
            }
        }
    }
    let during = totals(&reader.snapshot().unwrap(), proto::OBS_HIST).count;
    for w in &mut workers {
        w.stop();
    }

    // Quiet now: the store holds exactly what was acknowledged.
    let acked: u64 = workers.iter().map(|w| w.ack.get(word::HIST)).sum();
    let acked_sum: u64 = workers.iter().map(|w| w.ack.get(word::HIST_SUM)).sum();
    let snap = reader.snapshot().unwrap();
    check_snapshot(&snap).unwrap();
    let t = totals(&snap, proto::OBS_HIST);
    eprintln!(
        "concurrent read: {rounds} snapshots, {acked} observations, first full count {first_count:?}"
    );
    assert_eq!(t.series, proto::OBS_SERIES);
    assert!(
        first_count.is_some_and(|c| c < during),
        "the workers did not observe while the snapshots were taken \
         (first {first_count:?}, later {during})"
    );
    assert_eq!(t.count, acked as f64, "histogram count vs acknowledged");
    assert_eq!(
        t.sum * proto::SUM_SCALE,
        acked_sum as f64,
        "histogram sum vs acknowledged"
    );

    // A snapshot kept and refreshed across the whole run must end up
    // showing what a fresh one shows.
    reader.snapshot_into(&mut kept).unwrap();
    let kt = totals(&kept, proto::OBS_HIST);
    assert_eq!(
        (kt.series, kt.count),
        (t.series, t.count),
        "a refreshed snapshot differs from a fresh one"
    );
    drop(writer);
}

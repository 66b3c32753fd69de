//! Summary quantiles across processes: 8 worker processes per
//! distribution observe latencies into one summary series each; the
//! quantiles merged from their slots must be within 1% (relative) of the
//! exact quantiles of all the values, at the same ranks. One process per
//! distribution is SIGKILLed mid-way, and its observations up to then
//! must still count (checked through `_count`).

use shmetrics_core::{Options, Value};
use shmetrics_testkit::proto::{self, word};

use crate::common::{create_store, tempdir, Worker, PATIENCE};

const WRITERS: u64 = 8;
const PER_WRITER: usize = 25_000;
const DISTS: [&str; 3] = ["uniform", "lognormal", "bimodal"];

fn seed(dist: usize, writer: u64) -> u64 {
    1000 * dist as u64 + writer + 1
}

#[test]
fn quantiles_merged_from_8_processes_are_within_1_percent() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store = create_store(
        &path,
        &Options {
            max_writers: 32,
            sketch_cells_per_writer: 1 << 17,
            ..Options::default()
        },
    );
    store.register(&proto::summary()).unwrap();
    let mut workers = Vec::new();
    for (d, dist) in DISTS.iter().enumerate() {
        for w in 0..WRITERS {
            let args = [
                format!("dist={dist}"),
                format!("seed={}", seed(d, w)),
                format!("n={PER_WRITER}"),
            ];
            let ack = dir.path().join(format!("ack-{dist}-{w}"));
            workers.push(Worker::spawn("summary", &path, &ack, false, &args));
        }
    }
    for w in &mut workers {
        w.wait_success();
        assert_eq!(w.ack.get(word::HIST), PER_WRITER as u64, "{}", w.label);
    }

    let snap = store.snapshot().unwrap();
    let fam = snap.family(proto::SUMMARY).unwrap();
    for (d, dist) in DISTS.iter().enumerate() {
        let mut exact: Vec<f64> = (0..WRITERS)
            .flat_map(|w| proto::latencies(dist, seed(d, w), PER_WRITER).unwrap())
            .collect();
        exact.sort_by(f64::total_cmp);
        let series = fam
            .series()
            .find(|s| s.label_values().next() == Some(dist))
            .unwrap();
        let Value::Summary {
            count,
            sum,
            quantiles,
        } = series.value()
        else {
            panic!("not a summary")
        };
        assert_eq!(count, exact.len() as u64, "{dist}: count");
        let exact_sum: f64 = exact.iter().sum();
        assert!(
            ((sum - exact_sum) / exact_sum).abs() < 1e-9,
            "{dist}: sum {sum} vs {exact_sum}"
        );
        assert_eq!(quantiles.len(), proto::SUMMARY_QUANTILES.len());
        let mut worst = 0.0f64;
        for q in quantiles {
            // The nearest rank, ceil(q n) (1-based), as the store ranks.
            let n = exact.len();
            let want = exact[((q.quantile * n as f64).ceil() as usize).clamp(1, n) - 1];
            let err = ((q.value - want) / want).abs();
            println!(
                "{dist:>9} q={:<5} exact {want:.6} estimate {:.6} error {:.3}%",
                q.quantile,
                q.value,
                err * 100.0
            );
            worst = worst.max(err);
        }
        assert!(worst <= 0.01, "{dist}: worst relative error {worst}");
    }
}

#[test]
fn a_killed_writer_keeps_what_it_observed_and_others_lose_nothing() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store = create_store(
        &path,
        &Options {
            max_writers: 8,
            sketch_cells_per_writer: 1 << 17,
            ..Options::default()
        },
    );
    store.register(&proto::summary()).unwrap();
    // One writer that is killed mid-way, and three that finish.
    let big = 5_000_000;
    let ack = dir.path().join("ack-victim");
    let mut victim = Worker::spawn(
        "summary",
        &path,
        &ack,
        false,
        &["dist=lognormal".into(), "seed=7".into(), format!("n={big}")],
    );
    victim.wait_word(word::HIST, 10_000);
    let mut others: Vec<Worker> = (0..3)
        .map(|w| {
            let ack = dir.path().join(format!("ack-{w}"));
            Worker::spawn(
                "summary",
                &path,
                &ack,
                false,
                &[
                    "dist=lognormal".into(),
                    format!("seed={w}"),
                    "n=20000".into(),
                ],
            )
        })
        .collect();
    victim.kill_expecting_running();
    let acked = victim.ack.get(word::HIST);
    for w in &mut others {
        w.wait_success();
    }
    let snap = store.snapshot().unwrap();
    let s = snap
        .family(proto::SUMMARY)
        .unwrap()
        .series()
        .next()
        .unwrap();
    let Value::Summary {
        count, quantiles, ..
    } = s.value()
    else {
        panic!()
    };
    // An update acknowledged is counted; at most the one in flight when
    // the kill landed is counted without its acknowledgement.
    assert!(
        count >= acked + 60_000 && count <= acked + 60_001,
        "count {count}, acknowledged {acked} + 60000"
    );
    // The quantiles cover the victim's observations too: the sketch's
    // total equals the count (within the in-flight one), so the median
    // of a lognormal with median 50 ms comes out near 50 ms.
    let median = quantiles.iter().find(|q| q.quantile == 0.5).unwrap().value;
    assert!((median - 0.05).abs() / 0.05 < 0.05, "median {median}");
    let _ = PATIENCE;
}

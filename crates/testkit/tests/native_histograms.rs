//! Native histograms across processes: 6 worker processes observe known
//! values into one native histogram series; the buckets merged from their
//! slots must equal, bucket by bucket, the buckets computed here from all
//! the values. Meanwhile this process snapshots in a loop: in every
//! snapshot the count equals the zero count plus every bucket, and never
//! goes down. A writer SIGKILLed mid-way keeps what it observed.

use std::collections::BTreeMap;

use shmetrics_core::{NativeBuckets, Options, Snapshot, Store, Value};
use shmetrics_testkit::proto::{self, word};

use crate::common::{create_store, tempdir, Worker};

const WRITERS: u64 = 6;
const PER_WRITER: usize = 30_000;

/// The bucket of `v` at schema 3, from the definition (bucket `i` holds
/// `(2^((i-1)/8), 2^(i/8)]`), by another route than the store's:
/// `ceil(8 log2 |v|)`, corrected at the boundaries with `powf`.
fn expected_index(v: f64) -> i32 {
    let upper = |i: i32| 2f64.powf(f64::from(i) / 8.0);
    let mut i = (v.abs().log2() * 8.0).ceil() as i32;
    while v.abs() > upper(i) {
        i += 1;
    }
    while v.abs() <= upper(i - 1) {
        i -= 1;
    }
    i
}

/// Zero count, positive and negative buckets (non-empty only), count.
type Merged = (u64, BTreeMap<i32, u64>, BTreeMap<i32, u64>, u64);

fn merged(snap: &Snapshot) -> Merged {
    let s = snap.family(proto::NATIVE).unwrap().series().next().unwrap();
    let Value::Histogram {
        cumulative,
        native:
            Some(NativeBuckets {
                schema,
                zero_count,
                positive,
                negative,
                ..
            }),
        ..
    } = s.value()
    else {
        panic!("not a native histogram")
    };
    assert_eq!(schema, 3);
    let side = |r: shmetrics_core::BucketRun<'_>| -> BTreeMap<i32, u64> {
        r.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0)
            .map(|(k, c)| (r.offset + k as i32, *c))
            .collect()
    };
    (zero_count, side(positive), side(negative), cumulative[0])
}

fn consistent((zero, pos, neg, count): &Merged) -> bool {
    zero + pos.values().sum::<u64>() + neg.values().sum::<u64>() == *count
}

#[test]
fn buckets_merged_from_6_processes_are_exact() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store = create_store(
        &path,
        &Options {
            max_writers: 16,
            ..Options::default()
        },
    );
    store.register(&proto::native_hist()).unwrap();
    let mut workers: Vec<Worker> = (0..WRITERS)
        .map(|w| {
            let ack = dir.path().join(format!("ack-{w}"));
            let args = [format!("seed={}", w + 1), format!("n={PER_WRITER}")];
            Worker::spawn("native", &path, &ack, false, &args)
        })
        .collect();
    // Snapshots while they write.
    let mut snap = Snapshot::default();
    let (mut reads, mut last) = (0u64, 0u64);
    while workers.iter().any(|w| w.ack.get(word::DONE) == 0) {
        // The workers create the series: until the first one has, the
        // family (registered above) has none.
        let created = |s: &Snapshot| {
            s.family(proto::NATIVE)
                .is_some_and(|f| f.series().len() > 0)
        };
        if store.snapshot_into(&mut snap).is_ok() && created(&snap) {
            let m = merged(&snap);
            assert!(consistent(&m), "count != zero + buckets mid-write: {m:?}");
            assert!(m.3 >= last, "the count went down: {} after {last}", m.3);
            last = m.3;
            reads += 1;
        }
    }
    for w in &mut workers {
        w.wait_success();
        assert_eq!(w.ack.get(word::HIST), PER_WRITER as u64, "{}", w.label);
    }
    println!("{reads} snapshots while writing, all consistent");

    let all: Vec<f64> = (0..WRITERS)
        .flat_map(|w| proto::native_values(w + 1, PER_WRITER))
        .collect();
    let (mut want_pos, mut want_neg) = (BTreeMap::new(), BTreeMap::new());
    let mut want_zero = 0;
    for v in &all {
        if *v == 0.0 {
            want_zero += 1;
            continue;
        }
        let side = if *v > 0.0 {
            &mut want_pos
        } else {
            &mut want_neg
        };
        *side.entry(expected_index(*v)).or_insert(0u64) += 1;
    }
    let (zero, pos, neg, count) = merged(&store.snapshot().unwrap());
    assert_eq!(count, all.len() as u64);
    assert_eq!(zero, want_zero);
    assert_eq!(pos, want_pos);
    assert_eq!(neg, want_neg);
    println!(
        "{} values in {} positive and {} negative buckets, {zero} zeros",
        all.len(),
        pos.len(),
        neg.len()
    );
}

#[test]
fn a_killed_writer_keeps_its_native_buckets() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store: Store = create_store(
        &path,
        &Options {
            max_writers: 8,
            ..Options::default()
        },
    );
    store.register(&proto::native_hist()).unwrap();
    let ack = dir.path().join("ack-victim");
    let big = 5_000_000;
    let mut victim = Worker::spawn(
        "native",
        &path,
        &ack,
        false,
        &["seed=99".into(), format!("n={big}")],
    );
    victim.wait_word(word::HIST, 10_000);
    let mut others: Vec<Worker> = (0..3)
        .map(|w| {
            let ack = dir.path().join(format!("ack-{w}"));
            Worker::spawn(
                "native",
                &path,
                &ack,
                false,
                &[format!("seed={w}"), "n=20000".into()],
            )
        })
        .collect();
    victim.kill_expecting_running();
    let acked = victim.ack.get(word::HIST);
    for w in &mut others {
        w.wait_success();
    }
    let m = merged(&store.snapshot().unwrap());
    assert!(consistent(&m), "{m:?}");
    // Acknowledged observations count; at most the one in flight when
    // the kill landed counts without its acknowledgement.
    assert!(
        m.3 >= acked + 60_000 && m.3 <= acked + 60_001,
        "count {}, acknowledged {acked} + 60000",
        m.3
    );
    // The victim's first values are all there: its prefix, bucket by
    // bucket, is at most what was merged.
    let prefix = proto::native_values(99, acked as usize);
    let mut want = BTreeMap::new();
    for v in prefix.iter().filter(|v| **v > 0.0) {
        *want.entry(expected_index(*v)).or_insert(0u64) += 1;
    }
    for (i, n) in want {
        assert!(m.1.get(&i).copied().unwrap_or(0) >= n, "bucket {i}");
    }
}

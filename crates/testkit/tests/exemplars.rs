//! Exemplars across processes: the latest per counter series and per
//! histogram bucket over every writer slot; a process that exited keeps
//! its exemplars where none is newer, including when its slot is reused.

use shmetrics_core::{Options, Snapshot, Store};
use shmetrics_testkit::proto::{self, word};

use crate::common::{create_store, tempdir, Worker};

/// The trace id and value of every place: the counter, then the
/// histogram's three buckets.
fn latest(snap: &Snapshot) -> Vec<Option<(String, f64)>> {
    let one = |name: &str| {
        let s = snap.family(name).unwrap().series().next().unwrap();
        s.exemplars()
            .map(|e| {
                e.map(|e| {
                    let l: Vec<_> = e.labels().collect();
                    assert_eq!(l.len(), 1);
                    assert_eq!(l[0].0, "trace_id");
                    (l[0].1.to_string(), e.value())
                })
            })
            .collect::<Vec<_>>()
    };
    let mut v = one(proto::EXEMPLAR_COUNTER);
    v.extend(one(proto::EXEMPLAR_HIST));
    v
}

fn some(trace: &str, v: f64) -> Option<(String, f64)> {
    Some((trace.to_string(), v))
}

#[test]
fn latest_exemplars_over_processes() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store: Store = create_store(
        &path,
        &Options {
            max_writers: 8,
            ..Options::default()
        },
    );
    let c = store.register(&proto::exemplar_counter()).unwrap();
    let h = store.register(&proto::exemplar_hist()).unwrap();
    let (c, h) = (
        store.series(&c, &[]).unwrap(),
        store.series(&h, &[]).unwrap(),
    );
    store
        .counter_add_with_exemplar(c, 1.0, &[("trace_id", "main-0")])
        .unwrap();
    assert_eq!(
        latest(&store.snapshot().unwrap()),
        [some("main-0", 1.0), None, None, None]
    );

    // Worker 1: 99 updates over the three buckets, then it exits.
    let ack = dir.path().join("ack-1");
    let args = ["w=1".to_string(), "n=99".to_string()];
    let mut w1 = Worker::spawn("exemplars", &path, &ack, false, &args);
    w1.wait_success();
    assert_eq!(w1.ack.get(word::HIST), 99);
    let v = proto::exemplar_value;
    assert_eq!(
        latest(&store.snapshot().unwrap()),
        [
            some("w1-98", 1.0),
            some("w1-96", v(0)),
            some("w1-97", v(1)),
            some("w1-98", v(2)),
        ]
    );

    // Worker 2 (which may reuse worker 1's slot): bucket 0 only. The
    // other buckets keep worker 1's exemplars.
    let ack = dir.path().join("ack-2");
    let args = ["w=2".into(), "n=10".into(), "buckets=1".into()];
    let mut w2 = Worker::spawn("exemplars", &path, &ack, false, &args);
    w2.wait_success();
    assert_eq!(
        latest(&store.snapshot().unwrap()),
        [
            some("w2-9", 1.0),
            some("w2-9", v(0)),
            some("w1-97", v(1)),
            some("w1-98", v(2)),
        ]
    );

    // This process, in its own slot, records the latest in bucket 1.
    store
        .observe_with_exemplar(h, v(1), &[("trace_id", "main-1")])
        .unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(
        latest(&snap),
        [
            some("w2-9", 1.0),
            some("w2-9", v(0)),
            some("main-1", v(1)),
            some("w1-98", v(2)),
        ]
    );
    // The values are all there too: 1 + 99 + 10 increments.
    let s = snap
        .family(proto::EXEMPLAR_COUNTER)
        .unwrap()
        .series()
        .next()
        .unwrap();
    assert_eq!(s.value(), shmetrics_core::Value::Counter(110.0));
}

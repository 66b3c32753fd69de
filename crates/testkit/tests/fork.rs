//! Test 6: a single-threaded worker updates, forks a child that updates
//! too and one that does not, and updates again. Parent and child write
//! through different slots, the child that never updated does not release
//! the parent's slot, and the totals are exact.

use shmetrics_core::Options;
use shmetrics_testkit::check::totals;
use shmetrics_testkit::proto::{self, word};

use crate::common::{create_store, tempdir, Worker};

#[test]
fn parent_and_child_write_through_different_slots() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store = create_store(&path, &Options::default());
    let (n1, n2, n3) = (1000u64, 2000u64, 3000u64);
    let args = [format!("n1={n1}"), format!("n2={n2}"), format!("n3={n3}")];
    let mut w = Worker::spawn("fork", &path, &dir.path().join("ack"), false, &args);
    w.wait_word(word::DONE, 1);

    let parent = w.pid();
    let child_a = w.ack.get(word::CHILD_A_PID) as u32;
    let child_b = w.ack.get(word::CHILD_B_PID) as u32;
    // waitpid statuses (plus one): both children exited with code 0.
    assert_eq!(
        w.ack.get(word::CHILD_A_STATUS),
        1,
        "child A failed; stderr:\n{}",
        w.log_text()
    );
    assert_eq!(
        w.ack.get(word::CHILD_B_STATUS),
        1,
        "child B failed; stderr:\n{}",
        w.log_text()
    );

    let writers = store.writers();
    let slot_of = |pid: u32| writers.iter().find(|x| x.pid == pid);
    let p = slot_of(parent).unwrap_or_else(|| panic!("no slot for the parent: {writers:?}"));
    let a = slot_of(child_a).unwrap_or_else(|| panic!("no slot for child A: {writers:?}"));
    assert_ne!(p.slot, a.slot, "parent and child share a slot: {writers:?}");
    assert!(p.live, "the parent's slot must still be live: {writers:?}");
    assert!(!a.live, "child A has exited: {writers:?}");
    assert!(
        slot_of(child_b).is_none(),
        "child B never updated, yet has a slot: {writers:?}"
    );
    assert_eq!(writers.len(), 2, "{writers:?}");

    let acked = w.ack.get(word::COUNTER) + w.ack.get(word::CHILD_A_ACKS);
    assert_eq!(acked, n1 + n2 + n3);
    let total = totals(
        &store.snapshot().unwrap(),
        proto::fork_counter().name.as_str(),
    )
    .count;
    assert_eq!(total, acked as f64);

    w.stop();
    let writers = store.writers();
    assert!(
        writers.iter().all(|x| !x.live),
        "the parent stopped: {writers:?}"
    );
}

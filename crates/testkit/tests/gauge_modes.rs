//! Test 4: every gauge mode across processes, some of them killed, one
//! slot reused and one process stopped cleanly. The merged value must
//! follow the mode's definition at each step.

use std::collections::BTreeMap;

use shmetrics_core::{GaugeMode, Options, Store, Value};
use shmetrics_testkit::proto::{self, word};

use crate::common::{create_store, tempdir, Worker};

/// A process that set the gauges, as the test expects the store to see it.
#[derive(Clone, Debug)]
struct Proc {
    pid: u32,
    value: f64,
    /// Still running.
    alive: bool,
    /// Its slot was not reused (its gauge values are still in the store).
    retained: bool,
}

/// What a family should export: label sets (beyond `g="x"`) to values.
type Expected = BTreeMap<Vec<(String, String)>, f64>;

/// The expected series of a mode's family. `procs` are in the order they
/// set the gauges.
fn expected(mode: GaugeMode, set_family: bool, procs: &[Proc]) -> Expected {
    let base = vec![("g".to_string(), "x".to_string())];
    let mut out = Expected::new();
    if mode == GaugeMode::Shared {
        // One cell for everyone, untouched by deaths and slot reuse: a set
        // overwrites it (the last set wins), an add adds to it.
        let v = if set_family {
            procs.last().unwrap().value
        } else {
            procs.iter().map(|p| p.value).sum()
        };
        out.insert(base, v);
        return out;
    }
    let counted: Vec<&Proc> = procs
        .iter()
        .filter(|p| p.retained && (p.alive || !mode.live_only()))
        .collect();
    let values = counted.iter().map(|p| p.value);
    let v = match mode {
        GaugeMode::All | GaugeMode::LiveAll => {
            for p in &counted {
                let mut labels = base.clone();
                labels.push(("pid".to_string(), p.pid.to_string()));
                out.insert(labels, p.value);
            }
            return out;
        }
        GaugeMode::Sum | GaugeMode::LiveSum => values.sum(),
        GaugeMode::Max | GaugeMode::LiveMax => values.fold(f64::MIN, f64::max),
        GaugeMode::Min | GaugeMode::LiveMin => values.fold(f64::MAX, f64::min),
        GaugeMode::MostRecent | GaugeMode::LiveMostRecent => counted.last().unwrap().value,
        GaugeMode::LiveAverage => values.sum::<f64>() / counted.len() as f64,
        GaugeMode::Shared => unreachable!(),
    };
    out.insert(base, v);
    out
}

fn actual(store: &Store, family: &str) -> Expected {
    let snap = store.snapshot().unwrap();
    let fam = snap
        .family(family)
        .unwrap_or_else(|| panic!("family {family} missing"));
    let mut out = Expected::new();
    for s in fam.series() {
        let Value::Gauge(v) = s.value() else {
            panic!("{family}: not a gauge value");
        };
        let labels: Vec<(String, String)> = s
            .labels()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert!(
            out.insert(labels.clone(), v).is_none(),
            "{family}: label set {labels:?} appears twice"
        );
    }
    out
}

fn check_all(store: &Store, procs: &[Proc], step: &str) {
    let mut failures = Vec::new();
    for mode in GaugeMode::ALL {
        for (set_family, desc) in [
            (true, proto::gauge_set_family(mode)),
            (false, proto::gauge_inc_family(mode)),
        ] {
            let want = expected(mode, set_family, procs);
            let got = actual(store, &desc.name);
            if want != got {
                failures.push(format!("{}: expected {want:?}, got {got:?}", desc.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{step}: processes {procs:?}:\n{}",
        failures.join("\n")
    );
}

#[test]
fn gauge_modes_across_live_and_killed_processes() {
    let dir = tempdir();
    let path = dir.path().join("store");
    let store = create_store(&path, &Options::default());
    // The killed ones (1 and 3) hold the largest value and the most recent
    // set, so that live and non-live modes disagree.
    let values = [20.0, 40.0, 10.0, 5.0];
    let mut workers = Vec::new();
    let mut procs = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let ack = dir.path().join(format!("ack-{i}"));
        // One after the other, so that "most recent" is well defined.
        let mut w = Worker::spawn("gauge", &path, &ack, false, &[format!("value={v}")]);
        w.wait_word(word::DONE, 1);
        procs.push(Proc {
            pid: w.pid(),
            value: *v,
            alive: true,
            retained: true,
        });
        workers.push(w);
    }
    check_all(&store, &procs, "all four alive");

    for i in [1, 3] {
        workers[i].kill_expecting_running();
        procs[i].alive = false;
    }
    check_all(&store, &procs, "1 and 3 killed");

    // A new process claims a slot: it reuses a dead one, whose gauges go.
    let slots_before: BTreeMap<u32, u32> =
        store.writers().iter().map(|w| (w.slot, w.pid)).collect();
    let ack = dir.path().join("ack-claim");
    let mut claimer = Worker::spawn("gauge", &path, &ack, false, &["claim=1".to_string()]);
    claimer.wait_word(word::DONE, 1);
    let writers = store.writers();
    let slot = writers
        .iter()
        .find(|w| w.pid == claimer.pid())
        .expect("the claimer has a slot")
        .slot;
    let previous = slots_before.get(&slot).copied();
    let reused = procs
        .iter()
        .position(|p| Some(p.pid) == previous)
        .unwrap_or_else(|| {
            panic!("the claimer took slot {slot}, which was not a dead worker's: {slots_before:?}")
        });
    assert!(
        !procs[reused].alive,
        "slot {slot} of a live process was reused: {writers:?}"
    );
    procs[reused].retained = false;
    check_all(&store, &procs, "a dead slot reused");

    // A clean exit releases the slot: live modes drop the value at once;
    // the others keep it until the slot is reused.
    workers[0].stop();
    procs[0].alive = false;
    check_all(&store, &procs, "worker 0 stopped cleanly");

    workers[2].stop();
    claimer.stop();
}

//! The exporter checks the store's owner before it serves it (issue 23,
//! item 5): a store owned by another user is reported on /healthz and in
//! the log, naming the owner and mode, until `--store.owner` or
//! `--store.group` names it. Runs as root (`chown` needs it).

use std::os::unix::fs::chown;
use std::time::Duration;

use shmetrics_core::{user_id, FamilyDesc, Kind, Options, Store};

use shmetrics_testkit::PATIENCE;

use crate::util::*;

#[test]
fn a_store_of_another_owner_is_served_only_when_expected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::open(&path, &Options::default()).unwrap();
    let f = store
        .register(&FamilyDesc::new("owned_jobs_total", Kind::Counter))
        .unwrap();
    store.counter_inc(store.series(&f, &[]).unwrap()).unwrap();
    let nobody = user_id("nobody").unwrap();
    chown(&path, Some(nobody), Some(nobody)).unwrap();

    let serve = Serve::on_store(&path, &[]);
    let r = get(serve.addr, "/healthz", &[]);
    assert_eq!(r.status, 503);
    let body = r.text();
    assert!(body.contains("owned by user nobody (uid 65534)"), "{body}");
    assert!(body.contains("mode 0600"), "{body}");
    assert!(body.contains("--store.owner"), "{body}");
    wait_for(
        "the log to name the owner",
        PATIENCE,
        Duration::from_millis(20),
        || {
            serve
                .stderr()
                .contains("untrusted store file")
                .then_some(())
        },
    );
    drop(serve);

    for flag in [["--store.owner", "nobody"], ["--store.group", "65534"]] {
        let serve = Serve::on_store(&path, &flag);
        let r = get(serve.addr, "/metrics", &[("Accept", "text/plain")]);
        assert_eq!(r.status, 200);
        assert!(
            r.text().contains("\nowned_jobs_total 1\n"),
            "{flag:?}: {}",
            r.text()
        );
        assert_eq!(get(serve.addr, "/healthz", &[]).status, 200, "{flag:?}");
    }

    // `dump` and `inspect` take the same flags, and refuse the same store
    // without them.
    let run = |args: &[&str]| {
        std::process::Command::new(shmetrics_bin())
            .args(args)
            .arg("--store")
            .arg(&path)
            .output()
            .unwrap()
    };
    for cmd in ["dump", "inspect"] {
        let out = run(&[cmd]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd} read a store of nobody's");
        assert!(err.contains("--store.owner"), "{cmd}: {err}");
        for flag in [["--store.owner", "nobody"], ["--store.group", "65534"]] {
            let out = run(&[cmd, flag[0], flag[1]]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{cmd} {flag:?}: {out:?}");
            assert!(text.contains("owned_jobs"), "{cmd} {flag:?}: {text}");
        }
    }
}

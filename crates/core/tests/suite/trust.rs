//! Planted store files are refused (issue 23, item 5): a store owned by
//! another user, a symbolic link at the store path, a group-writable
//! store, a FIFO. Each gives `ErrorKind::Untrusted` with a message naming
//! the owner and mode, unless an option names that owner or group. The
//! tests run as root, as the workers did (`chown` needs it).

use std::os::unix::fs::{chown, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use shmetrics_core::{group_id, user_id, ErrorKind, Options, Store};

use crate::common::{existing, expect_err, read_only, tempdir};

fn nobody() -> u32 {
    user_id("nobody").unwrap()
}

fn nogroup() -> u32 {
    group_id("nogroup").unwrap()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A store made by this process, then handed to `uid`:`gid` with `mode`.
fn planted(dir: &Path, uid: u32, gid: u32, mode: u32) -> std::path::PathBuf {
    let path = dir.join("store");
    Store::open(&path, &Options::default()).unwrap();
    chown(&path, Some(uid), Some(gid)).unwrap();
    chmod(&path, mode);
    path
}

#[test]
fn a_store_owned_by_another_user_is_refused_unless_named() {
    let dir = tempdir();
    let path = planted(dir.path(), nobody(), nobody(), 0o600);
    for opts in [Options::default(), existing(), read_only()] {
        let e = expect_err(Store::open(&path, &opts), ErrorKind::Untrusted);
        let msg = e.to_string();
        assert!(msg.contains("user nobody (uid 65534)"), "{msg}");
        assert!(msg.contains("mode 0600"), "{msg}");
        assert!(msg.contains("--store.owner"), "{msg}");
        assert_eq!(e.path(), Some(path.as_path()));
    }
    let named = Options {
        owner: Some(nobody()),
        ..Options::default()
    };
    let store = Store::open(&path, &named).unwrap();
    store
        .register(&shmetrics_core::FamilyDesc::new(
            "c",
            shmetrics_core::Kind::Counter,
        ))
        .unwrap();
    // Another named owner does not make this one trusted.
    let other = Options {
        owner: Some(nobody() - 1),
        ..read_only()
    };
    expect_err(Store::open(&path, &other), ErrorKind::Untrusted);
    // A reader told the store's group serves it whoever owns it.
    let by_group = Options {
        group: Some(nobody()),
        ..read_only()
    };
    Store::open(&path, &by_group).unwrap();
}

#[test]
fn a_root_owned_store_is_trusted() {
    let dir = tempdir();
    let path = planted(dir.path(), 0, 0, 0o600);
    Store::open(&path, &existing()).unwrap();
}

#[test]
fn a_group_writable_store_is_refused_by_writers_unless_the_group_is_named() {
    let dir = tempdir();
    let path = planted(dir.path(), 0, nogroup(), 0o660);
    for opts in [Options::default(), existing()] {
        let e = expect_err(Store::open(&path, &opts), ErrorKind::Untrusted);
        let msg = e.to_string();
        assert!(msg.contains("group nogroup (gid 65534)"), "{msg}");
        assert!(msg.contains("mode 0660"), "{msg}");
        assert!(msg.contains("every member of the group"), "{msg}");
    }
    // Asking for a group-writable store trusts one's own group only.
    let own = Options {
        mode: 0o660,
        ..existing()
    };
    expect_err(Store::open(&path, &own), ErrorKind::Untrusted);
    // A reader does not write: it only checks the owner.
    Store::open(&path, &read_only()).unwrap();
    let named = Options {
        group: Some(nogroup()),
        ..existing()
    };
    Store::open(&path, &named).unwrap();
    // The process's own group, with mode 0660 asked for.
    chown(&path, None, Some(0)).unwrap();
    Store::open(&path, &own).unwrap();
    expect_err(Store::open(&path, &existing()), ErrorKind::Untrusted);
}

#[test]
fn a_world_writable_store_is_refused_even_by_readers() {
    let dir = tempdir();
    let path = planted(dir.path(), 0, 0, 0o606);
    for opts in [existing(), read_only()] {
        let e = expect_err(Store::open(&path, &opts), ErrorKind::Untrusted);
        assert!(e.message().contains("every user may write it"), "{e}");
    }
}

#[test]
fn a_symbolic_link_at_the_store_path_is_never_followed() {
    let dir = tempdir();
    let real = dir.path().join("real");
    Store::open(&real, &Options::default()).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    for opts in [Options::default(), existing(), read_only()] {
        let e = expect_err(Store::open(&link, &opts), ErrorKind::Untrusted);
        assert!(e.message().contains("symbolic link"), "{e}");
    }
    // A dangling link: nothing is created where it points.
    let target = dir.path().join("target");
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(&target, &dangling).unwrap();
    expect_err(
        Store::open(&dangling, &Options::default()),
        ErrorKind::Untrusted,
    );
    assert!(!target.exists(), "the store was created through the link");
}

#[test]
fn a_fifo_at_the_store_path_is_refused_at_once() {
    let dir = tempdir();
    let path = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    // Opening a FIFO for reading blocks until a writer comes: the store
    // must not. Run it in a thread so that a hang fails the test.
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.clone();
    std::thread::spawn(move || {
        let kinds: Vec<_> = [Options::default(), existing(), read_only()]
            .iter()
            .map(|o| Store::open(&p, o).err().map(|e| (e.kind(), e.to_string())))
            .collect();
        tx.send(kinds).unwrap();
    });
    let kinds = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("opening a FIFO hung");
    for k in kinds {
        let (kind, msg) = k.expect("a FIFO was opened as a store");
        assert_eq!(kind, ErrorKind::Untrusted, "{msg}");
        assert!(msg.contains("a FIFO, not a regular file"), "{msg}");
    }
}

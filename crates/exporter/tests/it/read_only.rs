//! The exporter only ever reads the store: it opens it read-only, maps it
//! without write permission, and scraping leaves the file byte for byte
//! as it was.

use std::time::Duration;

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use crate::util::*;

#[test]
fn exporter_never_writes_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    {
        let store = Store::open(
            &path,
            &Options {
                max_series: 128,
                max_writers: 4,
                ..Options::default()
            },
        )
        .unwrap();
        let c = store
            .register(
                &FamilyDesc::new("reads_total", Kind::Counter)
                    .help("Reads.")
                    .labels(&["kind"]),
            )
            .unwrap();
        store
            .counter_add(store.series(&c, &["disk"]).unwrap(), 11.0)
            .unwrap();
        let h = store
            .register(&FamilyDesc::new("read_seconds", Kind::Histogram).help("Read time."))
            .unwrap();
        store.observe(store.series(&h, &[]).unwrap(), 0.2).unwrap();
        let g = store
            .register(&FamilyDesc::new("open_files", Kind::Gauge).help("Open files."))
            .unwrap();
        store
            .gauge_set(store.series(&g, &[]).unwrap(), 3.0)
            .unwrap();
        // The writer is gone from here on (its slot stays, marked dead
        // once the exporter looks): nothing else writes the file.
    }
    // Read-only for everyone. (Root ignores file modes, so what proves the
    // point below is the mapping's permissions and the unchanged bytes.)
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o400)).unwrap();
    let before = std::fs::read(&path).unwrap();
    let meta_before = std::fs::metadata(&path).unwrap();

    // In process: the exporter's store handle is read-only.
    let server = TestServer::start(&path, |_| {});
    assert!(server.renderer.store().expect("attached").is_read_only());
    let r = get(server.addr, "/metrics", &[("Accept", ACCEPT_PROM3)]);
    assert_eq!(r.status, 200);
    assert!(r.text().contains("\nreads_total{kind=\"disk\"} 11\n"));
    server.stop();

    // The real binary: it maps the store without write permission.
    let mut serve = Serve::on_store(&path, &[]);
    let pid = serve.process.0.id();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let store_maps: Vec<&str> = maps
        .lines()
        .filter(|l| l.ends_with(&path.display().to_string()))
        .collect();
    assert!(
        !store_maps.is_empty(),
        "shmetrics serve has no mapping of the store:\n{maps}"
    );
    for m in &store_maps {
        let perms = m.split_whitespace().nth(1).unwrap();
        assert!(
            perms.starts_with("r-"),
            "a writable mapping of the store: {m}"
        );
    }
    // No open descriptor of the store with write access either.
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        let fd = fd.unwrap();
        if std::fs::read_link(fd.path()).ok().as_deref() == Some(path.as_path()) {
            let info = std::fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                fd.file_name().to_string_lossy()
            ))
            .unwrap();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .unwrap()
                .trim();
            let flags = u32::from_str_radix(flags, 8).unwrap();
            assert_eq!(
                flags & libc::O_ACCMODE as u32,
                libc::O_RDONLY as u32,
                "the store is open for writing: {info}"
            );
        }
    }
    for i in 0..20 {
        let accept = if i % 2 == 0 {
            ACCEPT_PROM2
        } else {
            "text/plain"
        };
        let r = get(
            serve.addr,
            "/metrics",
            &[("Accept", accept), ("Accept-Encoding", "gzip")],
        );
        assert_eq!(r.status, 200);
        assert!(r.text().contains("reads_total{kind=\"disk\"} 11\n"));
    }
    assert_eq!(get(serve.addr, "/healthz", &[]).status, 200);
    assert_eq!(get(serve.addr, "/", &[]).status, 200);
    signal(&serve.process.0, libc::SIGTERM);
    let status = wait_exit(
        &mut serve.process.0,
        Duration::from_secs(30),
        "shmetrics serve",
    );
    assert!(status.success(), "{status}: {}", serve.stderr());

    let after = std::fs::read(&path).unwrap();
    let meta_after = std::fs::metadata(&path).unwrap();
    assert_eq!(
        meta_after.len(),
        meta_before.len(),
        "the store changed size"
    );
    assert_eq!(
        meta_after.modified().unwrap(),
        meta_before.modified().unwrap(),
        "the store's mtime changed"
    );
    if let Some(at) = before.iter().zip(&after).position(|(a, b)| a != b) {
        panic!("the exporter modified the store at byte {at}");
    }
    assert_eq!(before.len(), after.len());
}

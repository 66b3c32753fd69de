//! Every printing command of `shmetrics`, its standard output a pipe that
//! the reader closes after a few bytes (`shmetrics inspect | head`): the
//! command ends quietly with status 0 (as ripgrep does), no panic and no
//! backtrace.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

/// Families in the store: enough that every listing is far larger than a
/// pipe's buffer (64 KiB), so the command is still writing when the
/// reader goes.
const FAMILIES: u32 = 3000;

fn big_store(path: &Path) -> Store {
    let store = Store::open(
        path,
        &Options {
            create: true,
            max_families: FAMILIES + 16,
            max_series: 4 * FAMILIES,
            max_writers: 2,
            ..Options::default()
        },
    )
    .unwrap();
    for i in 0..FAMILIES {
        let desc = FamilyDesc::new(format!("broken_pipe_family_{i:05}_total"), Kind::Counter)
            .help("A family that makes the listing long enough to fill a pipe.");
        let f = store.register(&desc).unwrap();
        store
            .counter_add(store.series(&f, &[]).unwrap(), 1.0)
            .unwrap();
    }
    store
}

/// Runs `shmetrics args`, reads `keep` bytes of its output, closes the
/// pipe, and returns the exit code, what was read and standard error.
fn run_closing_early(args: &[&str], keep: usize) -> (Option<i32>, Vec<u8>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shmetrics"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = vec![0u8; keep];
    stdout.read_exact(&mut head).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{args:?} did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    (status.code(), head, stderr)
}

#[test]
fn every_command_exits_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = big_store(&path);
    let store = path.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["inspect", "--store", store], "store "),
        (&["dump", "--store", store], "# HELP "),
        (
            &["dump", "--store", store, "--format", "openmetrics"],
            "# TYPE ",
        ),
        (&["dump", "--store", store, "--format", "protobuf"], ""),
    ];
    for (args, starts) in cases {
        let (code, head, stderr) = run_closing_early(args, 16);
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with(starts), "{args:?} printed {head:?}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("backtrace"),
            "{args:?} panicked:\n{stderr}"
        );
        assert_eq!(code, Some(0), "{args:?} exit status; stderr:\n{stderr}");
        assert!(stderr.is_empty(), "{args:?} wrote to stderr:\n{stderr}");
    }
    // Help and version are short: they fit in the pipe, and must still
    // exit 0 whether or not they were read.
    for args in [&["--help"][..], &["--version"], &["inspect", "--help"]] {
        let (code, _, stderr) = run_closing_early(args, 1);
        assert!(!stderr.contains("panicked"), "{args:?}:\n{stderr}");
        assert_eq!(code, Some(0), "{args:?}; stderr:\n{stderr}");
    }
}

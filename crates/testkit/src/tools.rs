//! The reference tools that check what the exporter serves.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `promtool check metrics` on `body`; returns its exit code and
/// output. Panics if promtool cannot be run.
pub fn promtool_check(body: &str) -> (i32, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}): install it (Debian package `prometheus`; ./run-tests does)")
        });
    let mut stdin = child.stdin.take().unwrap();
    let body = body.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

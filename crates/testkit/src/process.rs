//! Child processes that cannot outlive the test: killed on drop, waited
//! for with a deadline.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A process killed (SIGKILL) and reaped when dropped.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `cmd` with standard input closed and its output (stdout and
/// stderr) in a new file `log`. Panics if it cannot run, saying what to
/// `install`.
pub fn spawn_logged(cmd: &mut Command, log: &Path, install: &str) -> KillOnDrop {
    let out = File::create(log).unwrap_or_else(|e| panic!("create {}: {e}", log.display()));
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| {
            let program = cmd.get_program().to_string_lossy();
            panic!("cannot run {program} ({e}): install {install}")
        });
    KillOnDrop(child)
}

/// Waits (bounded) for a process to exit; kills it and panics at the limit.
pub fn wait_exit(p: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = p.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = p.kill();
            let _ = p.wait();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends signal `sig` to a child that has not been reaped yet; panics if
/// kill(2) fails.
pub fn signal(p: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(p.id()).unwrap();
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our
    // own child, not yet reaped, so it cannot have been reused.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

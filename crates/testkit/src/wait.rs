//! Waiting with a deadline: when a bound is reached the test fails, it
//! never hangs.

use std::time::{Duration, Instant};

/// How long any single wait for a process may take before the test fails.
/// Generous: it only has to catch hangs, on a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// What one poll of [`wait_for`] returns: the value once it is there, or
/// (as `None`, or `Err` describing the state seen) not yet.
pub trait Poll<T> {
    /// The value, or a description of the state seen instead.
    fn into_result(self) -> Result<T, String>;
}

impl<T> Poll<T> for Option<T> {
    fn into_result(self) -> Result<T, String> {
        self.ok_or_else(|| "not yet".to_string())
    }
}

impl<T> Poll<T> for Result<T, String> {
    fn into_result(self) -> Result<T, String> {
        self
    }
}

/// Polls `f` every `every` until it returns a value (`Some` or `Ok`), for
/// at most `limit`; at the limit, panics naming `what` and the last state
/// that `f` described.
pub fn wait_for<T, P: Poll<T>>(
    what: &str,
    limit: Duration,
    every: Duration,
    mut f: impl FnMut() -> P,
) -> T {
    let start = Instant::now();
    loop {
        let last = match f().into_result() {
            Ok(v) => return v,
            Err(last) => last,
        };
        if start.elapsed() > limit {
            panic!("timed out after {limit:?} waiting for {what}; last: {last}");
        }
        std::thread::sleep(every);
    }
}

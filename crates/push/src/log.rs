//! Where the pushers say what went wrong: one line on standard error per
//! change of state, so that a receiver that stays down is reported once,
//! not once a request. Every message goes through [`say`], as a `tracing`
//! event (the `shmetrics` command installs the logger).

/// Logs `{what}: {message}` as a warning, with `what` (the pusher) as the
/// `push` field too.
pub(crate) fn say(what: &str, message: &str) {
    tracing::warn!(push = what, "{what}: {message}");
}

/// The last problem reported, so that the same one is not repeated.
#[derive(Debug, Default)]
pub(crate) struct Repeats(Option<String>);

impl Repeats {
    /// Reports `problem` under `what`, unless it is the one reported last.
    pub(crate) fn report(&mut self, what: &str, problem: String) {
        if self.is_new(&problem) {
            say(what, &problem);
        }
    }

    /// Whether `problem` differs from the last one; it is the last one
    /// from now on.
    pub(crate) fn is_new(&mut self, problem: &str) -> bool {
        if self.0.as_deref() == Some(problem) {
            return false;
        }
        self.0 = Some(problem.to_string());
        true
    }

    /// Forgets the last problem; `true` if there was one (the caller may
    /// then say that it is over).
    pub(crate) fn clear(&mut self) -> bool {
        self.0.take().is_some()
    }
}

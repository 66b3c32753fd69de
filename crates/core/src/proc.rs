//! Which processes are alive: a pid plus its start time, read from
//! `/proc/<pid>/stat`, so that a reused pid is not taken for the process
//! that died.

use std::time::{SystemTime, UNIX_EPOCH};

/// What `/proc/<pid>/stat` says of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProcStat {
    /// The one-letter state (`R`, `S`, `Z`, ...).
    pub state: u8,
    /// Start time in clock ticks after boot (field 22).
    pub start_time: u64,
}

/// Parses the contents of a `/proc/<pid>/stat` file. The command name is
/// in parentheses and may itself contain spaces and parentheses, so the
/// fields are counted from the last `)`.
pub(crate) fn parse_stat(s: &str) -> Option<ProcStat> {
    let rest = &s[s.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    // After the state come fields 4..; the start time is field 22, that is
    // the 19th after the state.
    let start_time = fields.nth(18)?.parse().ok()?;
    Some(ProcStat { state, start_time })
}

/// Reads `/proc/<pid>/stat`.
pub(crate) fn stat(pid: u32) -> Option<ProcStat> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&s)
}

/// Whether the process `pid` that started at `start_time` is still running.
/// Zombies count as dead: they will never write again.
pub(crate) fn is_alive(pid: u32, start_time: u64) -> bool {
    if pid == 0 {
        return false;
    }
    match stat(pid) {
        Some(st) => st.start_time == start_time && st.state != b'Z' && st.state != b'X',
        None => false,
    }
}

/// This process's start time.
pub(crate) fn own_start_time() -> u64 {
    stat(std::process::id()).map(|s| s.start_time).unwrap_or(0)
}

/// Nanoseconds since the Unix epoch.
pub(crate) fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let line = "1234 (my (odd) proc) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        let st = parse_stat(line).unwrap();
        assert_eq!(st.state, b'S');
        assert_eq!(st.start_time, 98765);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_process_is_alive_and_pid_reuse_is_detected() {
        let me = std::process::id();
        let start = own_start_time();
        assert!(start > 0);
        assert!(is_alive(me, start));
        assert!(
            !is_alive(me, start + 1),
            "another start time means another process"
        );
        assert!(!is_alive(0, 0));
    }
}

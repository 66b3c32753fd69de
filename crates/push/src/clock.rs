//! The wall clock every protocol stamps its data and counters with.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    unix_ns() / 1_000_000
}

//! The flusher's own counters, shown under `shmetrics_statsd_` in the
//! exporter's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use shmetrics_expo::{ExtraFamily, Families};

/// Counters of a [`Flusher`](super::Flusher).
#[derive(Debug, Default)]
pub struct Stats {
    /// Flushes made (each took a snapshot and sent what it had).
    pub flushes: AtomicU64,
    /// Datagrams sent.
    pub datagrams_sent: AtomicU64,
    /// Bytes in the datagrams sent.
    pub bytes_sent: AtomicU64,
    /// Lines in the datagrams sent.
    pub lines_sent: AtomicU64,
    /// Datagrams that could not be sent: the socket could not be opened,
    /// a send failed, or a send timed out and the rest of that flush was
    /// given up.
    pub send_errors: AtomicU64,
    /// Lines left out because one line was larger than a datagram.
    pub lines_too_long: AtomicU64,
    /// Values left out because StatsD cannot carry them (NaN, infinities).
    pub values_not_finite: AtomicU64,
    /// Snapshots that could not be taken (the store could not be read).
    pub snapshot_failures: AtomicU64,
    /// Series whose last sent value the flusher remembers.
    pub series: AtomicU64,
    /// When the last flush ended, in milliseconds since the Unix epoch; 0
    /// before the first.
    pub last_flush_unix_ms: AtomicU64,
}

impl Stats {
    /// The counters as families for the exporter's own metrics.
    pub fn families(&self) -> Vec<ExtraFamily<'_>> {
        let n = |v: &AtomicU64| v.load(Relaxed) as f64;
        let mut f = Families::default();
        f.counter("shmetrics_statsd_flushes", "StatsD flushes made.")
            .value(n(&self.flushes));
        f.counter("shmetrics_statsd_datagrams_sent", "StatsD datagrams sent.")
            .value(n(&self.datagrams_sent));
        f.counter(
            "shmetrics_statsd_bytes_sent",
            "Bytes in the StatsD datagrams sent.",
        )
        .value(n(&self.bytes_sent));
        f.counter(
            "shmetrics_statsd_lines_sent",
            "Lines (metrics) in the StatsD datagrams sent.",
        )
        .value(n(&self.lines_sent));
        f.counter("shmetrics_statsd_send_errors", "StatsD datagrams that could not be sent (no socket, a failed send, or given up after a send timed out).")
            .value(n(&self.send_errors));
        f.counter("shmetrics_statsd_lines_dropped", "StatsD lines left out: longer than a datagram, or a value StatsD cannot carry (NaN, infinity).")
            .by(&[], "reason", &[("too_long", n(&self.lines_too_long)), ("not_finite", n(&self.values_not_finite))]);
        f.counter(
            "shmetrics_statsd_snapshot_failures",
            "StatsD flushes that could not read the store.",
        )
        .value(n(&self.snapshot_failures));
        f.gauge(
            "shmetrics_statsd_series",
            "Series whose last sent value the StatsD flusher remembers.",
        )
        .value(n(&self.series));
        f.gauge("shmetrics_statsd_last_flush_timestamp_seconds", "When the last StatsD flush ended, in seconds since the Unix epoch; 0 before the first.")
            .value(n(&self.last_flush_unix_ms) / 1e3);
        f.into_vec()
    }
}

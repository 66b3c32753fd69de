//! The flusher's own counters, shown under `shmetrics_statsd_` in the
//! exporter's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use shmetrics_core::Kind;
use shmetrics_expo::{ExtraFamily, ExtraSample};

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
        let one = |name, help, kind, v: &AtomicU64| ExtraFamily {
            name,
            help,
            kind,
            samples: vec![ExtraSample {
                labels: vec![],
                value: v.load(Relaxed) as f64,
            }],
        };
        vec![
            one(
                "shmetrics_statsd_flushes",
                "StatsD flushes made.",
                Kind::Counter,
                &self.flushes,
            ),
            one(
                "shmetrics_statsd_datagrams_sent",
                "StatsD datagrams sent.",
                Kind::Counter,
                &self.datagrams_sent,
            ),
            one(
                "shmetrics_statsd_bytes_sent",
                "Bytes in the StatsD datagrams sent.",
                Kind::Counter,
                &self.bytes_sent,
            ),
            one(
                "shmetrics_statsd_lines_sent",
                "Lines (metrics) in the StatsD datagrams sent.",
                Kind::Counter,
                &self.lines_sent,
            ),
            one(
                "shmetrics_statsd_send_errors",
                "StatsD datagrams that could not be sent (no socket, a failed send, or given up after a send timed out).",
                Kind::Counter,
                &self.send_errors,
            ),
            ExtraFamily {
                name: "shmetrics_statsd_lines_dropped",
                help: "StatsD lines left out: longer than a datagram, or a value StatsD cannot carry (NaN, infinity).",
                kind: Kind::Counter,
                samples: vec![
                    ExtraSample {
                        labels: vec![("reason", "too_long")],
                        value: self.lines_too_long.load(Relaxed) as f64,
                    },
                    ExtraSample {
                        labels: vec![("reason", "not_finite")],
                        value: self.values_not_finite.load(Relaxed) as f64,
                    },
                ],
            },
            one(
                "shmetrics_statsd_snapshot_failures",
                "StatsD flushes that could not read the store.",
                Kind::Counter,
                &self.snapshot_failures,
            ),
            one(
                "shmetrics_statsd_series",
                "Series whose last sent value the StatsD flusher remembers.",
                Kind::Gauge,
                &self.series,
            ),
            ExtraFamily {
                name: "shmetrics_statsd_last_flush_timestamp_seconds",
                help: "When the last StatsD flush ended, in seconds since the Unix epoch; 0 before the first.",
                kind: Kind::Gauge,
                samples: vec![ExtraSample {
                    labels: vec![],
                    value: self.last_flush_unix_ms.load(Relaxed) as f64 / 1e3,
                }],
            },
        ]
    }
}

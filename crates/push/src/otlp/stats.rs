//! The OTLP exporter's own counters, shown under `shmetrics_otlp_` in the
//! exporter's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use shmetrics_core::Kind;
use shmetrics_expo::{ExtraFamily, ExtraSample};

/// Counters of the OTLP export.
#[derive(Debug)]
pub struct Stats {
    url: String,
    /// Data points in requests the receiver took (2xx), those it reported
    /// as rejected included.
    pub points_sent: AtomicU64,
    /// Data points a 2xx answer reported as rejected (`partial_success`).
    pub points_rejected: AtomicU64,
    /// Data points in requests refused with a status that is not retried:
    /// dropped.
    pub points_failed: AtomicU64,
    /// Data points dropped unsent because the queue was full.
    pub points_dropped: AtomicU64,
    /// Requests that failed and were tried again (429, 502, 503, 504, no
    /// connection, timeout).
    pub retries: AtomicU64,
    /// Batches queued, the one being sent included.
    pub queue_batches: AtomicU64,
    /// The most batches the queue holds.
    pub queue_capacity: u64,
    /// When a request last succeeded, in milliseconds since the Unix
    /// epoch; 0 if none has yet.
    pub last_success_unix_ms: AtomicU64,
    /// Snapshots taken and queued.
    pub batches: AtomicU64,
    /// Snapshots that could not be taken (the store could not be read).
    pub snapshot_failures: AtomicU64,
}

impl Stats {
    pub(crate) fn new(url: String, queue_capacity: usize) -> Stats {
        Stats {
            url,
            points_sent: AtomicU64::new(0),
            points_rejected: AtomicU64::new(0),
            points_failed: AtomicU64::new(0),
            points_dropped: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            queue_batches: AtomicU64::new(0),
            queue_capacity: queue_capacity as u64,
            last_success_unix_ms: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            snapshot_failures: AtomicU64::new(0),
        }
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One line for the exporter's status page.
    pub fn status_line(&self) -> String {
        let last = self.last_success_unix_ms.load(Relaxed);
        format!(
            "{}: {} data points sent, {} rejected, {} failed, {} dropped; queue {} of {} batches; {}",
            self.url,
            self.points_sent.load(Relaxed),
            self.points_rejected.load(Relaxed),
            self.points_failed.load(Relaxed),
            self.points_dropped.load(Relaxed),
            self.queue_batches.load(Relaxed),
            self.queue_capacity,
            if last == 0 {
                "no success yet".to_string()
            } else {
                format!("last success at {:.3} (Unix time)", last as f64 / 1e3)
            }
        )
    }

    /// The counters as families for the exporter's own metrics, each
    /// series with a `url` label.
    pub fn families(&self) -> Vec<ExtraFamily<'_>> {
        let url = || vec![("url", self.url.as_str())];
        let family = |name, help, kind, value: f64| ExtraFamily {
            name,
            help,
            kind,
            samples: vec![ExtraSample {
                labels: url(),
                value,
            }],
        };
        let n = |v: &AtomicU64| v.load(Relaxed) as f64;
        vec![
            family(
                "shmetrics_otlp_data_points_sent",
                "Data points in OTLP requests the receiver took (2xx), those it reported as rejected included.",
                Kind::Counter,
                n(&self.points_sent),
            ),
            family(
                "shmetrics_otlp_data_points_rejected",
                "Data points a 2xx OTLP answer reported as rejected (partial success).",
                Kind::Counter,
                n(&self.points_rejected),
            ),
            family(
                "shmetrics_otlp_data_points_failed",
                "Data points in OTLP requests refused with a status that is not retried (other than 429, 502, 503, 504); they are dropped.",
                Kind::Counter,
                n(&self.points_failed),
            ),
            family(
                "shmetrics_otlp_data_points_dropped",
                "Data points dropped unsent because the OTLP queue was full.",
                Kind::Counter,
                n(&self.points_dropped),
            ),
            family(
                "shmetrics_otlp_retries",
                "OTLP requests that failed (429, 502, 503, 504, connection error, timeout) and were tried again.",
                Kind::Counter,
                n(&self.retries),
            ),
            ExtraFamily {
                name: "shmetrics_otlp_queue_batches",
                help: "OTLP batches waiting or being sent, and the queue's capacity.",
                kind: Kind::Gauge,
                samples: vec![
                    ExtraSample {
                        labels: vec![("url", self.url.as_str()), ("kind", "used")],
                        value: n(&self.queue_batches),
                    },
                    ExtraSample {
                        labels: vec![("url", self.url.as_str()), ("kind", "capacity")],
                        value: self.queue_capacity as f64,
                    },
                ],
            },
            family(
                "shmetrics_otlp_last_success_timestamp_seconds",
                "When an OTLP request last succeeded, in seconds since the Unix epoch; 0 if none has.",
                Kind::Gauge,
                self.last_success_unix_ms.load(Relaxed) as f64 / 1e3,
            ),
            family(
                "shmetrics_otlp_batches",
                "Snapshots of the store taken and queued for OTLP.",
                Kind::Counter,
                n(&self.batches),
            ),
            family(
                "shmetrics_otlp_snapshot_failures",
                "Snapshots for OTLP that could not be taken because the store could not be read.",
                Kind::Counter,
                n(&self.snapshot_failures),
            ),
        ]
    }
}

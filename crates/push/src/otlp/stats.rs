//! The OTLP exporter's own counters, shown under `shmetrics_otlp_` in the
//! exporter's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use shmetrics_expo::{ExtraFamily, Families};

use crate::queue::{QueueStats, SnapshotStats};

/// Counters of the OTLP export.
#[derive(Debug)]
pub struct Stats {
    /// The queue's counters; its samples are data points, and those
    /// sent include those the receiver reported as rejected.
    pub queue: Arc<QueueStats>,
    /// Data points a 2xx answer reported as rejected (`partial_success`).
    pub points_rejected: AtomicU64,
    /// Snapshots taken and queued, and those that could not be taken.
    pub snapshots: Arc<SnapshotStats>,
}

fn n(v: &AtomicU64) -> f64 {
    v.load(Relaxed) as f64
}

impl Stats {
    pub(crate) fn new(queue: Arc<QueueStats>) -> Stats {
        Stats {
            queue,
            points_rejected: AtomicU64::new(0),
            snapshots: Arc::default(),
        }
    }

    /// The URL.
    pub fn url(&self) -> &str {
        self.queue.url()
    }

    /// One line for the exporter's status page.
    pub fn status_line(&self) -> String {
        let rejected = self.points_rejected.load(Relaxed);
        self.queue.status_line("data points", Some(rejected))
    }

    /// The counters as families for the exporter's own metrics, each
    /// series with a `url` label.
    pub fn families(&self) -> Vec<ExtraFamily<'_>> {
        let (q, url) = (&self.queue, &[("url", self.queue.url())][..]);
        let mut f = Families::default();
        f.counters(
            url,
            &[
                ("shmetrics_otlp_data_points_sent", "Data points in OTLP requests the receiver took (2xx), those it reported as rejected included.", n(&q.samples_sent)),
                ("shmetrics_otlp_data_points_rejected", "Data points a 2xx OTLP answer reported as rejected (partial success).", n(&self.points_rejected)),
                ("shmetrics_otlp_data_points_failed", "Data points in OTLP requests refused with a status that is not retried (other than 429, 502, 503, 504); they are dropped.", n(&q.samples_failed)),
                ("shmetrics_otlp_data_points_dropped", "Data points dropped unsent because the OTLP queue was full.", n(&q.samples_dropped)),
                ("shmetrics_otlp_retries", "OTLP requests that failed (429, 502, 503, 504, connection error, timeout) and were tried again.", n(&q.retries)),
            ],
        );
        f.counter(
            "shmetrics_otlp_request_failures",
            "OTLP requests that failed, by reason: connection, timeout, tls (an untrusted or wrong certificate), auth (credentials refused with 401 or 403, or unreadable), status (another status).",
        )
        .by(url, "reason", &q.failures_by_reason());
        f.gauge(
            "shmetrics_otlp_queue_batches",
            "OTLP batches waiting or being sent, and the queue's capacity.",
        )
        .used_and_capacity(url, n(&q.queue_batches), q.queue_capacity as f64);
        f.gauge(
            "shmetrics_otlp_last_success_timestamp_seconds",
            "When an OTLP request last succeeded, in seconds since the Unix epoch; 0 if none has.",
        )
        .sample(url, n(&q.last_success_unix_ms) / 1e3);
        f.counters(
            url,
            &[
                ("shmetrics_otlp_batches", "Snapshots of the store taken and queued for OTLP.", n(&self.snapshots.batches)),
                ("shmetrics_otlp_snapshot_failures", "Snapshots for OTLP that could not be taken because the store could not be read.", n(&self.snapshots.snapshot_failures)),
            ],
        );
        f.into_vec()
    }
}

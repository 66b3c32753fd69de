//! The pusher's own counters, shown under `shmetrics_remote_write_` in the
//! exporter's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use shmetrics_expo::{ExtraFamily, Families, Family};

use crate::queue::{QueueStats, SnapshotStats};

/// Counters for one URL, in samples.
pub type EndpointStats = QueueStats;

/// Counters for every URL, and for the snapshots taken.
#[derive(Debug)]
pub struct Stats {
    endpoints: Vec<Arc<EndpointStats>>,
    /// Per URL (in the order of `endpoints`): samples, histograms and
    /// exemplars a 2xx remote write 2.0 answer reported as not written
    /// (its `X-Prometheus-Remote-Write-*-Written` headers).
    pub(crate) rejected: Vec<AtomicU64>,
    /// Per URL: times a remote write 2.0 receiver turned 2.0 down and
    /// was sent 1.0 from then on (at most once a run).
    pub(crate) fallbacks: Vec<AtomicU64>,
    /// Snapshots taken and queued for every URL, and those that could
    /// not be taken.
    pub snapshots: Arc<SnapshotStats>,
}

fn n(v: &AtomicU64) -> f64 {
    v.load(Relaxed) as f64
}

impl Stats {
    pub(crate) fn new(endpoints: Vec<Arc<EndpointStats>>) -> Stats {
        Stats {
            rejected: endpoints.iter().map(|_| AtomicU64::new(0)).collect(),
            fallbacks: endpoints.iter().map(|_| AtomicU64::new(0)).collect(),
            endpoints,
            snapshots: Arc::default(),
        }
    }

    /// Per-URL counters, in the order the URLs were given.
    pub fn endpoints(&self) -> &[Arc<EndpointStats>] {
        &self.endpoints
    }

    /// A series per URL, read from its counters by `read`.
    fn per_url<'a>(&'a self, f: Family<'_, 'a>, read: fn(&EndpointStats) -> f64) {
        let urls = self.endpoints.iter();
        urls.fold(f, |f, e| f.sample(&[("url", e.url())], read(e)));
    }

    /// The counters as families for the exporter's own metrics, each
    /// series with a `url` label.
    pub fn families(&self) -> Vec<ExtraFamily<'_>> {
        let mut f = Families::default();
        self.per_url(
            f.counter(
                "shmetrics_remote_write_samples_sent",
                "Samples the remote-write receiver accepted.",
            ),
            |e| n(&e.samples_sent),
        );
        let rejected = f.counter(
            "shmetrics_remote_write_samples_rejected",
            "Samples, histograms and exemplars a remote write 2.0 receiver took (2xx) but reported as not written.",
        );
        self.endpoints
            .iter()
            .zip(&self.rejected)
            .fold(rejected, |f, (e, r)| f.sample(&[("url", e.url())], n(r)));
        let fallbacks = f.counter(
            "shmetrics_remote_write_fallbacks",
            "Times a receiver sent remote write 2.0 turned it down (415, or 2xx without the X-Prometheus-Remote-Write-*-Written headers, as a 1.0 receiver answers) and was sent 1.0 from then on.",
        );
        self.endpoints
            .iter()
            .zip(&self.fallbacks)
            .fold(fallbacks, |f, (e, c)| f.sample(&[("url", e.url())], n(c)));
        self.per_url(
            f.counter("shmetrics_remote_write_samples_failed", "Samples in requests the receiver refused with a status that is not retried (4xx other than 429); they are dropped."),
            |e| n(&e.samples_failed),
        );
        self.per_url(
            f.counter(
                "shmetrics_remote_write_samples_dropped",
                "Samples dropped unsent because the URL's queue was full.",
            ),
            |e| n(&e.samples_dropped),
        );
        self.per_url(
            f.counter(
                "shmetrics_remote_write_retries",
                "Requests that failed (5xx, 429, connection error, timeout) and were tried again.",
            ),
            |e| n(&e.retries),
        );
        let failures = f.counter(
            "shmetrics_remote_write_request_failures",
            "Requests that failed, by reason: connection, timeout, tls (an untrusted or wrong certificate), auth (credentials refused with 401 or 403, or unreadable), status (another status).",
        );
        self.endpoints.iter().fold(failures, |f, e| {
            f.by(&[("url", e.url())], "reason", &e.failures_by_reason())
        });
        let queue = f.gauge(
            "shmetrics_remote_write_queue_batches",
            "Batches waiting or being sent, and the queue's capacity.",
        );
        self.endpoints.iter().fold(queue, |q, e| {
            q.used_and_capacity(
                &[("url", e.url())],
                n(&e.queue_batches),
                e.queue_capacity as f64,
            )
        });
        self.per_url(
            f.gauge("shmetrics_remote_write_last_success_timestamp_seconds", "When a request to the URL last succeeded, in seconds since the Unix epoch; 0 if none has."),
            |e| n(&e.last_success_unix_ms) / 1e3,
        );
        f.counter(
            "shmetrics_remote_write_batches",
            "Snapshots of the store taken and queued for every URL.",
        )
        .value(n(&self.snapshots.batches));
        f.counter(
            "shmetrics_remote_write_snapshot_failures",
            "Snapshots that could not be taken because the store could not be read.",
        )
        .value(n(&self.snapshots.snapshot_failures));
        f.into_vec()
    }
}

//! The pusher's own counters, shown under `shmetrics_remote_write_` in the
//! exporter's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use shmetrics_core::Kind;
use shmetrics_expo::{ExtraFamily, ExtraSample};

/// Counters for one URL.
#[derive(Debug)]
pub struct EndpointStats {
    url: String,
    /// Samples the receiver accepted (2xx).
    pub samples_sent: AtomicU64,
    /// Samples in requests the receiver refused with a status that is not
    /// retried (4xx other than 429): dropped.
    pub samples_failed: AtomicU64,
    /// Samples dropped unsent because the queue was full.
    pub samples_dropped: AtomicU64,
    /// Requests that failed and were tried again (5xx, 429, no connection,
    /// timeout).
    pub retries: AtomicU64,
    /// Batches queued, the one being sent included.
    pub queue_batches: AtomicU64,
    /// The most batches the queue holds.
    pub queue_capacity: u64,
    /// When a request last succeeded, in milliseconds since the Unix
    /// epoch; 0 if none has yet.
    pub last_success_unix_ms: AtomicU64,
}

impl EndpointStats {
    pub(crate) fn new(url: String, queue_capacity: usize) -> EndpointStats {
        EndpointStats {
            url,
            samples_sent: AtomicU64::new(0),
            samples_failed: AtomicU64::new(0),
            samples_dropped: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            queue_batches: AtomicU64::new(0),
            queue_capacity: queue_capacity as u64,
            last_success_unix_ms: AtomicU64::new(0),
        }
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Counters for every URL, and for the snapshots taken.
#[derive(Debug)]
pub struct Stats {
    endpoints: Vec<Arc<EndpointStats>>,
    /// Snapshots taken and queued for every URL.
    pub batches: AtomicU64,
    /// Snapshots that could not be taken (the store could not be read).
    pub snapshot_failures: AtomicU64,
}

impl Stats {
    pub(crate) fn new(endpoints: Vec<Arc<EndpointStats>>) -> Stats {
        Stats {
            endpoints,
            batches: AtomicU64::new(0),
            snapshot_failures: AtomicU64::new(0),
        }
    }

    /// Per-URL counters, in the order the URLs were given.
    pub fn endpoints(&self) -> &[Arc<EndpointStats>] {
        &self.endpoints
    }

    /// The counters as families for the exporter's own metrics, each
    /// series with a `url` label.
    pub fn families(&self) -> Vec<ExtraFamily<'_>> {
        let per_url = |f: &dyn Fn(&EndpointStats) -> f64| -> Vec<ExtraSample<'_>> {
            self.endpoints
                .iter()
                .map(|e| ExtraSample {
                    labels: vec![("url", e.url.as_str())],
                    value: f(e),
                })
                .collect()
        };
        let family = |name, help, kind, samples| ExtraFamily {
            name,
            help,
            kind,
            samples,
        };
        let one = |v: &AtomicU64| {
            vec![ExtraSample {
                labels: vec![],
                value: v.load(Relaxed) as f64,
            }]
        };
        vec![
            family(
                "shmetrics_remote_write_samples_sent",
                "Samples the remote-write receiver accepted.",
                Kind::Counter,
                per_url(&|e| e.samples_sent.load(Relaxed) as f64),
            ),
            family(
                "shmetrics_remote_write_samples_failed",
                "Samples in requests the receiver refused with a status that is not retried (4xx other than 429); they are dropped.",
                Kind::Counter,
                per_url(&|e| e.samples_failed.load(Relaxed) as f64),
            ),
            family(
                "shmetrics_remote_write_samples_dropped",
                "Samples dropped unsent because the URL's queue was full.",
                Kind::Counter,
                per_url(&|e| e.samples_dropped.load(Relaxed) as f64),
            ),
            family(
                "shmetrics_remote_write_retries",
                "Requests that failed (5xx, 429, connection error, timeout) and were tried again.",
                Kind::Counter,
                per_url(&|e| e.retries.load(Relaxed) as f64),
            ),
            family(
                "shmetrics_remote_write_queue_batches",
                "Batches waiting or being sent, and the queue's capacity.",
                Kind::Gauge,
                self.endpoints
                    .iter()
                    .flat_map(|e| {
                        [
                            ExtraSample {
                                labels: vec![("url", e.url.as_str()), ("kind", "used")],
                                value: e.queue_batches.load(Relaxed) as f64,
                            },
                            ExtraSample {
                                labels: vec![("url", e.url.as_str()), ("kind", "capacity")],
                                value: e.queue_capacity as f64,
                            },
                        ]
                    })
                    .collect(),
            ),
            family(
                "shmetrics_remote_write_last_success_timestamp_seconds",
                "When a request to the URL last succeeded, in seconds since the Unix epoch; 0 if none has.",
                Kind::Gauge,
                per_url(&|e| e.last_success_unix_ms.load(Relaxed) as f64 / 1e3),
            ),
            family(
                "shmetrics_remote_write_batches",
                "Snapshots of the store taken and queued for every URL.",
                Kind::Counter,
                one(&self.batches),
            ),
            family(
                "shmetrics_remote_write_snapshot_failures",
                "Snapshots that could not be taken because the store could not be read.",
                Kind::Counter,
                one(&self.snapshot_failures),
            ),
        ]
    }
}

//! A receiver's bounded queue of batches, and its counters.
//!
//! The front entry is the one being sent, a request at a time, in order.
//! When a batch arrives and the queue is full, the front (oldest) one is
//! dropped, even while a request of it is in flight: that request's fate
//! is then counted by the sender when it ends. Memory stays bounded
//! however long a receiver is down.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::clock::unix_ms;
use crate::http::SendError;

/// One snapshot's data, as a protocol queues it: `units()` samples or
/// data points, sent in requests of consecutive units.
pub(crate) trait Batch: Send + Sync + 'static {
    /// Numbered in the order they were taken.
    fn id(&self) -> u64;
    /// Samples or data points in it.
    fn units(&self) -> usize;
    /// Where the request that starts at unit `start` ends, with at most
    /// `max` units in a request.
    fn request_end(&self, start: usize, max: usize) -> usize;
}

/// A queue's counters. Its samples are remote_write's samples or OTLP's
/// data points.
#[derive(Debug)]
pub struct QueueStats {
    url: String,
    /// Samples the receiver accepted (2xx).
    pub samples_sent: AtomicU64,
    /// Samples in requests the receiver refused with a status that is not
    /// retried: dropped.
    pub samples_failed: AtomicU64,
    /// Samples dropped unsent because the queue was full.
    pub samples_dropped: AtomicU64,
    /// Requests that failed and were tried again.
    pub retries: AtomicU64,
    /// Batches queued, the one being sent included.
    pub queue_batches: AtomicU64,
    /// The most batches the queue holds.
    pub queue_capacity: u64,
    /// When a request last succeeded, in milliseconds since the Unix
    /// epoch; 0 if none has yet.
    pub last_success_unix_ms: AtomicU64,
    /// Requests that failed, by reason, in the order of
    /// [`FailureReason::ALL`].
    pub failures: [AtomicU64; FailureReason::ALL.len()],
}

/// Why a request failed, as the `reason` label of the failure counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureReason {
    /// No connection, or it broke.
    Connection,
    /// No answer in time.
    Timeout,
    /// The TLS handshake failed (an untrusted or wrong certificate).
    Tls,
    /// The receiver refused the credentials (401, 403), or they could not
    /// be read.
    Auth,
    /// Another status than 2xx.
    Status,
}

impl FailureReason {
    /// Every reason.
    pub const ALL: [FailureReason; 5] = [
        FailureReason::Connection,
        FailureReason::Timeout,
        FailureReason::Tls,
        FailureReason::Auth,
        FailureReason::Status,
    ];

    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            FailureReason::Connection => "connection",
            FailureReason::Timeout => "timeout",
            FailureReason::Tls => "tls",
            FailureReason::Auth => "auth",
            FailureReason::Status => "status",
        }
    }

    /// The reason of `e`.
    pub fn of(e: &SendError) -> FailureReason {
        match e {
            SendError::Transport(_) => FailureReason::Connection,
            SendError::Timeout(_) => FailureReason::Timeout,
            SendError::Tls(_) => FailureReason::Tls,
            SendError::Credentials(_) | SendError::Unauthorized { .. } => FailureReason::Auth,
            SendError::Status { .. } => FailureReason::Status,
        }
    }
}

impl QueueStats {
    pub(crate) fn new(url: String, queue_capacity: usize) -> QueueStats {
        QueueStats {
            url,
            samples_sent: AtomicU64::new(0),
            samples_failed: AtomicU64::new(0),
            samples_dropped: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            queue_batches: AtomicU64::new(0),
            queue_capacity: queue_capacity as u64,
            last_success_unix_ms: AtomicU64::new(0),
            failures: Default::default(),
        }
    }

    /// Counts a failed request.
    pub(crate) fn count_failure(&self, e: &SendError) {
        let i = FailureReason::ALL
            .iter()
            .position(|r| *r == FailureReason::of(e));
        // UNWRAP: ALL holds every reason.
        self.failures[i.expect("every reason is in ALL")].fetch_add(1, Relaxed);
    }

    /// The failure counts, by reason name.
    pub fn failures_by_reason(&self) -> Vec<(&'static str, f64)> {
        FailureReason::ALL
            .iter()
            .zip(&self.failures)
            .map(|(r, n)| (r.name(), n.load(Relaxed) as f64))
            .collect()
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One line for the exporter's status page, counting in `units`
    /// (with `rejected` among those sent, if the protocol reports them).
    pub fn status_line(&self, units: &str, rejected: Option<u64>) -> String {
        let last = self.last_success_unix_ms.load(Relaxed);
        format!(
            "{}: {} {units} sent, {}{} failed, {} dropped; queue {} of {} batches; {}",
            self.url,
            self.samples_sent.load(Relaxed),
            rejected.map_or(String::new(), |r| format!("{r} rejected, ")),
            self.samples_failed.load(Relaxed),
            self.samples_dropped.load(Relaxed),
            self.queue_batches.load(Relaxed),
            self.queue_capacity,
            if last == 0 {
                "no success yet".to_string()
            } else {
                format!("last success at {:.3} (Unix time)", last as f64 / 1e3)
            }
        )
    }
}

/// The counters of the snapshots a pusher takes.
#[derive(Debug, Default)]
pub struct SnapshotStats {
    /// Snapshots taken and queued.
    pub batches: AtomicU64,
    /// Snapshots that could not be taken (the store could not be read).
    pub snapshot_failures: AtomicU64,
}

/// A batch in the queue, with how far the sender got in it.
#[derive(Debug)]
struct Entry<B> {
    batch: Arc<B>,
    /// Units delivered (or refused) so far.
    done: usize,
    /// Units in the request in flight (0 if none is).
    in_flight: usize,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Sent,
    Refused,
    Retry,
}

/// One receiver's bounded queue.
#[derive(Debug)]
pub(crate) struct Queue<B> {
    entries: Mutex<VecDeque<Entry<B>>>,
    capacity: usize,
    pub(crate) ready: Notify,
    pub(crate) stats: Arc<QueueStats>,
}

impl<B: Batch> Queue<B> {
    /// A queue of at most `stats.queue_capacity` batches (at least 1).
    pub(crate) fn new(stats: Arc<QueueStats>) -> Queue<B> {
        let capacity = (stats.queue_capacity as usize).max(1);
        Queue {
            entries: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
            ready: Notify::new(),
            stats,
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Entry<B>>> {
        // A poisoned lock: the queue is consistent after every operation.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn push(&self, batch: Arc<B>) {
        let mut q = self.lock();
        while q.len() >= self.capacity {
            let Some(old) = q.pop_front() else { break };
            let lost = old.batch.units().saturating_sub(old.done + old.in_flight);
            self.stats.samples_dropped.fetch_add(lost as u64, Relaxed);
        }
        q.push_back(Entry {
            batch,
            done: 0,
            in_flight: 0,
        });
        self.stats.queue_batches.store(q.len() as u64, Relaxed);
        drop(q);
        self.ready.notify_one();
    }

    /// The front batch and the units of its next request (at most
    /// `max`), marked in flight.
    pub(crate) fn next(&self, max: usize) -> Option<(Arc<B>, Range<usize>)> {
        let mut q = self.lock();
        let e = q.front_mut()?;
        let end = e.batch.request_end(e.done, max.max(1));
        e.in_flight = end - e.done;
        Some((e.batch.clone(), e.done..end))
    }

    /// Records how the request for units `range` of batch `id` ended.
    pub(crate) fn settle(&self, id: u64, range: Range<usize>, outcome: Outcome) {
        let s = &self.stats;
        let units = range.len() as u64;
        let mut q = self.lock();
        match q
            .front_mut()
            .filter(|e| e.batch.id() == id && e.done == range.start)
        {
            Some(e) => {
                e.in_flight = 0;
                match outcome {
                    Outcome::Sent => s.samples_sent.fetch_add(units, Relaxed),
                    Outcome::Refused => s.samples_failed.fetch_add(units, Relaxed),
                    Outcome::Retry => s.retries.fetch_add(1, Relaxed),
                };
                if outcome != Outcome::Retry {
                    e.done = range.end;
                }
                if e.done >= e.batch.units() {
                    q.pop_front();
                }
            }
            // The batch was dropped from the full queue while this request
            // was in flight; the queue left it for us to count.
            None => {
                match outcome {
                    Outcome::Sent => s.samples_sent.fetch_add(units, Relaxed),
                    Outcome::Refused => s.samples_failed.fetch_add(units, Relaxed),
                    Outcome::Retry => s.samples_dropped.fetch_add(units, Relaxed),
                };
            }
        }
        if outcome == Outcome::Sent {
            s.last_success_unix_ms.store(unix_ms(), Relaxed);
        }
        s.queue_batches.store(q.len() as u64, Relaxed);
    }
}

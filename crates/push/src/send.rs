//! The queues and the loops: one producer taking snapshots at the
//! interval, one sender per URL.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, CONTENT_ENCODING, CONTENT_TYPE, USER_AGENT};
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use shmetrics_core::Snapshot;
use tokio::sync::{watch, Notify};

use crate::encode::{encode, timeseries, Chunk};
use crate::stats::EndpointStats;
use crate::{Config, Endpoint, Source, Stats};

/// The `User-Agent` sent with every request.
pub const USER_AGENT_VALUE: &str = concat!("shmetrics/", env!("CARGO_PKG_VERSION"));

/// Why a request did not succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// No connection, or it broke.
    #[error("cannot reach the receiver: {0}")]
    Transport(String),
    /// No complete answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The receiver answered with a status other than 2xx.
    #[error("the receiver answered {status}: {body}")]
    Status {
        /// The status.
        status: StatusCode,
        /// The start of the response body.
        body: String,
    },
}

impl SendError {
    /// Whether the request is tried again: on 5xx, 429, no connection and
    /// time-outs. Other statuses drop the request.
    pub fn is_retryable(&self) -> bool {
        match self {
            SendError::Transport(_) | SendError::Timeout(_) => true,
            SendError::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
        }
    }
}

/// One snapshot, encoded, shared by every URL's queue.
#[derive(Debug)]
struct Batch {
    id: u64,
    chunks: Vec<Chunk>,
}

/// A batch in one URL's queue, with how far that URL got in it.
#[derive(Debug)]
struct Entry {
    batch: Arc<Batch>,
    /// Chunks delivered (or refused) so far.
    next: usize,
    /// Whether chunk `next` is being sent now.
    in_flight: bool,
}

/// One URL's bounded queue. The front entry is the one being sent; when a
/// batch arrives and the queue is full, the front (oldest) one is dropped,
/// even while a chunk of it is in flight: that chunk's fate is then
/// counted by the sender when the request ends.
#[derive(Debug)]
struct Queue {
    entries: Mutex<VecDeque<Entry>>,
    capacity: usize,
    ready: Notify,
    stats: Arc<EndpointStats>,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Sent,
    Refused,
    Retry,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Entry>> {
        // A poisoned lock: the queue is consistent after every operation.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, batch: Arc<Batch>) {
        let mut q = self.lock();
        while q.len() >= self.capacity {
            let Some(old) = q.pop_front() else { break };
            let from = old.next + usize::from(old.in_flight);
            let lost: u64 = old.batch.chunks[from.min(old.batch.chunks.len())..]
                .iter()
                .map(|c| c.samples)
                .sum();
            self.stats.samples_dropped.fetch_add(lost, Relaxed);
        }
        q.push_back(Entry {
            batch,
            next: 0,
            in_flight: false,
        });
        self.stats.queue_batches.store(q.len() as u64, Relaxed);
        drop(q);
        self.ready.notify_one();
    }

    /// The next chunk to send: (batch id, chunk), marked in flight.
    fn next(&self) -> Option<(u64, Chunk)> {
        let mut q = self.lock();
        let e = q.front_mut()?;
        e.in_flight = true;
        Some((e.batch.id, e.batch.chunks[e.next].clone()))
    }

    /// Records how the request for batch `id`'s current chunk ended.
    fn settle(&self, id: u64, samples: u64, outcome: Outcome) {
        let s = &self.stats;
        let mut q = self.lock();
        match q.front_mut().filter(|e| e.batch.id == id) {
            Some(e) => {
                e.in_flight = false;
                match outcome {
                    Outcome::Sent => {
                        s.samples_sent.fetch_add(samples, Relaxed);
                        e.next += 1;
                    }
                    Outcome::Refused => {
                        s.samples_failed.fetch_add(samples, Relaxed);
                        e.next += 1;
                    }
                    Outcome::Retry => {
                        s.retries.fetch_add(1, Relaxed);
                    }
                }
                if e.next >= e.batch.chunks.len() {
                    q.pop_front();
                }
            }
            // The batch was dropped from the full queue while this chunk
            // was in flight; the queue left the chunk for us to count.
            None => match outcome {
                Outcome::Sent => {
                    s.samples_sent.fetch_add(samples, Relaxed);
                }
                Outcome::Refused => {
                    s.samples_failed.fetch_add(samples, Relaxed);
                }
                Outcome::Retry => {
                    s.samples_dropped.fetch_add(samples, Relaxed);
                }
            },
        }
        if outcome == Outcome::Sent {
            s.last_success_unix_ms.store(unix_ms() as u64, Relaxed);
        }
        s.queue_batches.store(q.len() as u64, Relaxed);
    }
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Pushes snapshots of a store to remote_write receivers.
///
/// Every [`Config::interval`] it takes a snapshot, encodes it once, and
/// queues it for every URL. Each URL has a sender that POSTs its queue in
/// order, retrying 5xx, 429 and connection errors with a doubling backoff
/// (capped), and dropping (and counting) requests refused with another
/// status. Each URL's queue holds at most [`Config::queue_batches`]
/// batches: when it is full the oldest is dropped and counted, so memory
/// stays bounded however long a receiver is down.
#[derive(Debug)]
pub struct RemoteWriter {
    config: Config,
    stats: Arc<Stats>,
    queues: Vec<Arc<Queue>>,
}

impl RemoteWriter {
    /// A writer for `config`; nothing runs until [`RemoteWriter::run`].
    pub fn new(config: Config) -> RemoteWriter {
        let queues: Vec<Arc<Queue>> = config
            .endpoints
            .iter()
            .map(|e| {
                Arc::new(Queue {
                    entries: Mutex::new(VecDeque::with_capacity(config.queue_batches)),
                    capacity: config.queue_batches.max(1),
                    ready: Notify::new(),
                    stats: Arc::new(EndpointStats::new(e.to_string(), config.queue_batches)),
                })
            })
            .collect();
        let stats = Arc::new(Stats::new(queues.iter().map(|q| q.stats.clone()).collect()));
        RemoteWriter {
            config,
            stats,
            queues,
        }
    }

    /// The counters (for the exporter's own metrics).
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Pushes snapshots of `source` until `shutdown` completes. The first
    /// snapshot is taken at once. Requests in flight at shutdown are
    /// abandoned.
    pub async fn run(
        self,
        source: Arc<dyn Source>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build(HttpConnector::new());
        let mut senders = Vec::new();
        for (queue, endpoint) in self.queues.iter().zip(&self.config.endpoints) {
            senders.push(tokio::spawn(sender(
                queue.clone(),
                endpoint.clone(),
                client.clone(),
                self.config.clone(),
                stop_rx.clone(),
            )));
        }
        let mut shutdown = std::pin::pin!(shutdown);
        tokio::select! {
            () = producer(&self, source) => {}
            () = &mut shutdown => {}
        }
        let _ = stop_tx.send(true);
        for s in senders {
            let _ = s.await;
        }
    }
}

/// Takes a snapshot every interval and queues it for every URL.
async fn producer(w: &RemoteWriter, source: Arc<dyn Source>) {
    let mut ticker = tokio::time::interval(w.config.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let next_id = AtomicU64::new(0);
    let mut snap = Some(Snapshot::default());
    let mut last_error: Option<String> = None;
    loop {
        ticker.tick().await;
        let source = source.clone();
        let external = w.config.external_labels.clone();
        let max = w.config.max_samples_per_request;
        let native = w.config.native_histograms;
        let mut s = snap.take().unwrap_or_default();
        // Reading the store and encoding are CPU work: off the runtime.
        let work = tokio::task::spawn_blocking(move || {
            let timestamp = unix_ms();
            let r = match source.refresh(&mut s) {
                Ok(true) => Ok(Some(encode(
                    timeseries(&s, &external, timestamp, native),
                    max,
                ))),
                Ok(false) => Ok(None),
                Err(e) => Err(e.to_string()),
            };
            (s, r)
        });
        let Ok((s, result)) = work.await else {
            w.stats.snapshot_failures.fetch_add(1, Relaxed);
            continue;
        };
        snap = Some(s);
        let chunks = match result {
            Ok(Some(chunks)) => chunks,
            // The store does not exist yet: the exporter says so.
            Ok(None) => continue,
            Err(e) => {
                w.stats.snapshot_failures.fetch_add(1, Relaxed);
                if last_error.as_deref() != Some(e.as_str()) {
                    eprintln!("shmetrics: remote write: cannot read the store: {e}");
                    last_error = Some(e);
                }
                continue;
            }
        };
        last_error = None;
        if chunks.is_empty() {
            continue; // no series yet
        }
        let batch = Arc::new(Batch {
            id: next_id.fetch_add(1, Relaxed),
            chunks,
        });
        w.stats.batches.fetch_add(1, Relaxed);
        for q in &w.queues {
            q.push(batch.clone());
        }
    }
}

/// Sends one URL's queue, in order, until told to stop.
async fn sender(
    queue: Arc<Queue>,
    endpoint: Endpoint,
    client: Client<HttpConnector, Full<Bytes>>,
    config: Config,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = config.min_backoff;
    let mut failing: Option<String> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        let Some((id, chunk)) = queue.next() else {
            tokio::select! {
                () = queue.ready.notified() => {}
                _ = stop.changed() => {}
            }
            continue;
        };
        let result = tokio::select! {
            r = post(&client, &endpoint, chunk.body, config.timeout) => r,
            _ = stop.changed() => return,
        };
        let outcome = match &result {
            Ok(()) => Outcome::Sent,
            Err(e) if e.is_retryable() => Outcome::Retry,
            Err(_) => Outcome::Refused,
        };
        queue.settle(id, chunk.samples, outcome);
        match result {
            Ok(()) => {
                if failing.take().is_some() {
                    eprintln!("shmetrics: remote write to {endpoint}: sending again");
                }
                backoff = config.min_backoff;
            }
            Err(e) => {
                let what = if e.is_retryable() {
                    format!("{e}; retrying with backoff")
                } else {
                    format!("{e}; dropped {} samples", chunk.samples)
                };
                if failing.as_deref() != Some(what.as_str()) {
                    eprintln!("shmetrics: remote write to {endpoint}: {what}");
                    failing = Some(what);
                }
                if e.is_retryable() {
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => return,
                    }
                    backoff = (backoff * 2).min(config.max_backoff);
                }
            }
        }
    }
}

/// One POST of an encoded request, with the headers the specification
/// requires.
async fn post(
    client: &Client<HttpConnector, Full<Bytes>>,
    endpoint: &Endpoint,
    body: Bytes,
    timeout: Duration,
) -> Result<(), SendError> {
    let mut req = Request::post(endpoint.uri().clone())
        .body(Full::new(body))
        .map_err(|e| SendError::Transport(e.to_string()))?;
    let h = req.headers_mut();
    h.insert(CONTENT_ENCODING, HeaderValue::from_static("snappy"));
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-protobuf"),
    );
    h.insert(
        "x-prometheus-remote-write-version",
        HeaderValue::from_static("0.1.0"),
    );
    h.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
    let exchange = async {
        let resp = client
            .request(req)
            .await
            .map_err(|e| SendError::Transport(error_chain(&e)))?;
        let status = resp.status();
        // Read (a bounded part of) the body, so that the connection can be
        // reused and an error can say what the receiver said.
        let body = Limited::new(resp.into_body(), 1024)
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).trim().to_string())
            .unwrap_or_default();
        if status.is_success() {
            Ok(())
        } else {
            Err(SendError::Status { status, body })
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or(Err(SendError::Timeout(timeout)))
}

/// An error with its sources: hyper's own messages are terse ("client
/// error (Connect)").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

//! The queue and the loops: a producer taking snapshots at the interval,
//! and a sender POSTing them in order. The queue bounds and drops exactly
//! as remote_write's does (`crate::send`); what differs is what is retried
//! (the OTLP/HTTP specification's list), `Retry-After`, and delta
//! temporality, which is computed when a batch is sent, from what the
//! receiver took last.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use prost::Message;
use shmetrics_core::Snapshot;
use tokio::sync::{watch, Notify};

use super::batch::{Batch, Tracker};
use super::encode::{Baselines, Encoded, Encoder};
use super::proto::{ExportMetricsServiceResponse, Status};
use super::{Config, Stats};
use crate::{Endpoint, Source, USER_AGENT_VALUE};

/// The content type of requests (and of the answers that are decoded).
pub const PROTOBUF: &str = "application/x-protobuf";

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
    #[error("the receiver answered {status}: {message}")]
    Status {
        /// The status.
        status: StatusCode,
        /// The `google.rpc.Status` message of the answer, or the start of
        /// its body.
        message: String,
        /// How long the receiver asked to wait (`Retry-After`).
        retry_after: Option<Duration>,
    },
}

impl SendError {
    /// Whether the request is tried again, as the OTLP/HTTP specification
    /// says: on 429, 502, 503 and 504, and when the receiver cannot be
    /// reached or does not answer in time. Every other status drops it.
    pub fn is_retryable(&self) -> bool {
        match self {
            SendError::Transport(_) | SendError::Timeout(_) => true,
            SendError::Status { status, .. } => is_retryable_status(*status),
        }
    }

    /// The `Retry-After` the receiver sent, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            SendError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// 429, 502, 503 and 504: the statuses the OTLP/HTTP specification
/// retries.
pub fn is_retryable_status(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

/// A `Retry-After` value: delay-seconds or an HTTP date (a date in the
/// past is no wait). `None` if it is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A request that went through: the receiver's partial success, if it
/// reported one.
#[derive(Debug, Default)]
struct Accepted {
    rejected: u64,
    message: String,
}

/// A batch in the queue, with how far the sender got in it.
#[derive(Debug)]
struct Entry {
    batch: Arc<Batch>,
    /// Points delivered (or refused) so far.
    done: usize,
    /// Points in the request in flight (0 if none is).
    in_flight: usize,
}

/// The bounded queue. The front entry is the one being sent; when a batch
/// arrives and the queue is full, the front (oldest) one is dropped, even
/// while a request of it is in flight: that request's fate is then
/// counted by the sender when it ends.
#[derive(Debug)]
struct Queue {
    entries: Mutex<VecDeque<Entry>>,
    capacity: usize,
    ready: Notify,
    stats: Arc<Stats>,
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
            let lost = old.batch.points.saturating_sub(old.done + old.in_flight);
            self.stats.points_dropped.fetch_add(lost as u64, Relaxed);
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

    /// The front batch and the points of its next request (at most
    /// `max`), marked in flight.
    fn next(&self, max: usize) -> Option<(Arc<Batch>, Range<usize>)> {
        let mut q = self.lock();
        let e = q.front_mut()?;
        let end = e.batch.points.min(e.done + max.max(1));
        e.in_flight = end - e.done;
        Some((e.batch.clone(), e.done..end))
    }

    /// Records how the request for points `range` of batch `id` ended.
    fn settle(&self, id: u64, range: Range<usize>, outcome: Outcome) {
        let s = &self.stats;
        let points = range.len() as u64;
        let mut q = self.lock();
        match q
            .front_mut()
            .filter(|e| e.batch.id == id && e.done == range.start)
        {
            Some(e) => {
                e.in_flight = 0;
                match outcome {
                    Outcome::Sent => {
                        s.points_sent.fetch_add(points, Relaxed);
                        e.done = range.end;
                    }
                    Outcome::Refused => {
                        s.points_failed.fetch_add(points, Relaxed);
                        e.done = range.end;
                    }
                    Outcome::Retry => {
                        s.retries.fetch_add(1, Relaxed);
                    }
                }
                if e.done >= e.batch.points {
                    q.pop_front();
                }
            }
            // The batch was dropped from the full queue while this request
            // was in flight; the queue left it for us to count.
            None => match outcome {
                Outcome::Sent => {
                    s.points_sent.fetch_add(points, Relaxed);
                }
                Outcome::Refused => {
                    s.points_failed.fetch_add(points, Relaxed);
                }
                Outcome::Retry => {
                    s.points_dropped.fetch_add(points, Relaxed);
                }
            },
        }
        if outcome == Outcome::Sent {
            s.last_success_unix_ms.store(unix_ns() / 1_000_000, Relaxed);
        }
        s.queue_batches.store(q.len() as u64, Relaxed);
    }
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Exports snapshots of a store over OTLP/HTTP (protobuf).
///
/// Every [`Config::interval`] it takes a snapshot and queues its data
/// points. The sender POSTs the queue in order, at most
/// [`Config::max_points_per_request`] points a request. It retries 429,
/// 502, 503, 504, connection errors and time-outs, waiting what
/// `Retry-After` says (up to [`Config::max_retry_after`]) or else a
/// doubling backoff with jitter (capped); it drops, and counts, requests
/// refused with any other status. The queue holds at most
/// [`Config::queue_batches`] batches: when it is full the oldest is
/// dropped and counted, so memory stays bounded however long the receiver
/// is down.
///
/// With delta temporality a batch is encoded when it is sent, against
/// what the receiver took last; a refused or dropped batch's increments
/// go out with the next one.
#[derive(Debug)]
pub struct OtlpExporter {
    config: Config,
    stats: Arc<Stats>,
    queue: Arc<Queue>,
}

impl OtlpExporter {
    /// An exporter for `config`; nothing runs until
    /// [`OtlpExporter::run`].
    pub fn new(config: Config) -> OtlpExporter {
        let stats = Arc::new(Stats::new(
            config.endpoint.to_string(),
            config.queue_batches.max(1),
        ));
        let queue = Arc::new(Queue {
            entries: Mutex::new(VecDeque::with_capacity(config.queue_batches.max(1))),
            capacity: config.queue_batches.max(1),
            ready: Notify::new(),
            stats: stats.clone(),
        });
        OtlpExporter {
            config,
            stats,
            queue,
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

    /// Exports snapshots of `source` until `shutdown` completes. The first
    /// snapshot is taken at once. A request in flight at shutdown is
    /// abandoned.
    pub async fn run(
        self,
        source: Arc<dyn Source>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build(HttpConnector::new());
        let sender = tokio::spawn(sender(
            self.queue.clone(),
            client,
            self.config.clone(),
            stop_rx,
        ));
        let mut shutdown = std::pin::pin!(shutdown);
        tokio::select! {
            () = producer(&self, source) => {}
            () = &mut shutdown => {}
        }
        let _ = stop_tx.send(true);
        let _ = sender.await;
    }
}

/// Takes a snapshot every interval and queues its points.
async fn producer(x: &OtlpExporter, source: Arc<dyn Source>) {
    let mut ticker = tokio::time::interval(x.config.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_id = 0u64;
    let mut state = Some((Snapshot::default(), Tracker::default()));
    let mut last_error: Option<String> = None;
    loop {
        ticker.tick().await;
        let source = source.clone();
        let (mut snap, mut tracker) = state.take().unwrap_or_default();
        let id = next_id;
        // Reading the store is CPU work: off the runtime.
        let work = tokio::task::spawn_blocking(move || {
            let r = match source.refresh(&mut snap) {
                Ok(true) => Ok(Some(tracker.batch(id, &snap, unix_ns()))),
                Ok(false) => Ok(None),
                Err(e) => Err(e.to_string()),
            };
            (snap, tracker, r)
        });
        let Ok((snap, tracker, result)) = work.await else {
            x.stats.snapshot_failures.fetch_add(1, Relaxed);
            continue;
        };
        state = Some((snap, tracker));
        let batch = match result {
            Ok(Some(batch)) => batch,
            // The store does not exist yet: the exporter says so.
            Ok(None) => continue,
            Err(e) => {
                x.stats.snapshot_failures.fetch_add(1, Relaxed);
                if last_error.as_deref() != Some(e.as_str()) {
                    eprintln!("shmetrics: otlp: cannot read the store: {e}");
                    last_error = Some(e);
                }
                continue;
            }
        };
        last_error = None;
        if batch.points == 0 {
            continue; // no series yet
        }
        next_id += 1;
        x.stats.batches.fetch_add(1, Relaxed);
        x.queue.push(Arc::new(batch));
    }
}

/// A small xorshift for the backoff's jitter (no need for a good one).
#[derive(Debug)]
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        Jitter(unix_ns() ^ (u64::from(std::process::id()) << 32) | 1)
    }

    /// `d` scaled by a factor in [0.5, 1.0).
    fn apply(&mut self, d: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let f = 0.5 + (self.0 >> 11) as f64 / (1u64 << 53) as f64 / 2.0;
        d.mul_f64(f)
    }
}

/// Sends the queue, in order, until told to stop.
async fn sender(
    queue: Arc<Queue>,
    client: Client<HttpConnector, Full<Bytes>>,
    config: Config,
    mut stop: watch::Receiver<bool>,
) {
    let endpoint = &config.endpoint;
    let encoder = Encoder::new(config.temporality, &config.resource);
    let mut baselines = Baselines::default();
    // The last request encoded, kept for retries: (batch, first point,
    // request).
    let mut pending: Option<(u64, usize, Encoded)> = None;
    let mut started: Option<u64> = None;
    let mut backoff = config.min_backoff;
    let mut jitter = Jitter::new();
    let mut failing: Option<String> = None;
    let mut last_partial: Option<String> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        let Some((batch, range)) = queue.next(config.max_points_per_request) else {
            tokio::select! {
                () = queue.ready.notified() => {}
                _ = stop.changed() => {}
            }
            continue;
        };
        if started != Some(batch.id) {
            // A new batch: forget the series it no longer has.
            started = Some(batch.id);
            baselines.keep_only(&batch);
        }
        let encoded = match pending.take() {
            Some(p) if p.0 == batch.id && p.1 == range.start => p.2,
            _ => encoder.encode(&batch, range.clone(), &baselines),
        };
        let result = tokio::select! {
            r = post(&client, endpoint, encoded.body.clone(), config.timeout) => r,
            _ = stop.changed() => return,
        };
        let outcome = match &result {
            Ok(_) => Outcome::Sent,
            Err(e) if e.is_retryable() => Outcome::Retry,
            Err(_) => Outcome::Refused,
        };
        queue.settle(batch.id, range.clone(), outcome);
        match result {
            Ok(accepted) => {
                baselines.apply(encoded.updates);
                if failing.take().is_some() {
                    eprintln!("shmetrics: otlp export to {endpoint}: sending again");
                }
                if accepted.rejected > 0 {
                    queue
                        .stats
                        .points_rejected
                        .fetch_add(accepted.rejected, Relaxed);
                    if last_partial.as_deref() != Some(accepted.message.as_str()) {
                        eprintln!(
                            "shmetrics: otlp export to {endpoint}: the receiver rejected {} of {} data points: {}",
                            accepted.rejected, encoded.points, accepted.message
                        );
                        last_partial = Some(accepted.message);
                    }
                }
                backoff = config.min_backoff;
            }
            Err(e) => {
                let retry = e.is_retryable();
                let what = if retry {
                    format!("{e}; retrying")
                } else {
                    format!("{e}; dropped {} data points", encoded.points)
                };
                if failing.as_deref() != Some(what.as_str()) {
                    eprintln!("shmetrics: otlp export to {endpoint}: {what}");
                    failing = Some(what);
                }
                if retry {
                    let wait = match e.retry_after() {
                        Some(d) => d.min(config.max_retry_after),
                        None => {
                            let d = jitter.apply(backoff);
                            backoff = (backoff * 2).min(config.max_backoff);
                            d
                        }
                    };
                    pending = Some((batch.id, range.start, encoded));
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        _ = stop.changed() => return,
                    }
                }
            }
        }
    }
}

/// One POST of an encoded request.
async fn post(
    client: &Client<HttpConnector, Full<Bytes>>,
    endpoint: &Endpoint,
    body: Bytes,
    timeout: Duration,
) -> Result<Accepted, SendError> {
    let mut req = Request::post(endpoint.uri().clone())
        .body(Full::new(body))
        .map_err(|e| SendError::Transport(e.to_string()))?;
    let h = req.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(PROTOBUF));
    h.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
    let exchange = async {
        let resp = client
            .request(req)
            .await
            .map_err(|e| SendError::Transport(error_chain(&e)))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        // Read (a bounded part of) the body, so that the connection can be
        // reused, a partial success be counted and an error say what the
        // receiver said.
        let body = Limited::new(resp.into_body(), 64 * 1024)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let protobuf = is_protobuf(&headers);
        if status.is_success() {
            let partial = protobuf
                .then(|| ExportMetricsServiceResponse::decode(body).ok())
                .flatten()
                .and_then(|r| r.partial_success);
            Ok(partial.map_or_else(Accepted::default, |p| Accepted {
                rejected: p.rejected_data_points.max(0) as u64,
                message: p.error_message,
            }))
        } else {
            let message = protobuf
                .then(|| Status::decode(body.clone()).ok())
                .flatten()
                .map(|s| s.message)
                .unwrap_or_else(|| {
                    let end = body.len().min(1024);
                    String::from_utf8_lossy(&body[..end]).trim().to_string()
                });
            let retry_after = headers
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now()));
            Err(SendError::Status {
                status,
                message,
                retry_after,
            })
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or(Err(SendError::Timeout(timeout)))
}

fn is_protobuf(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(PROTOBUF))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retried_statuses_are_the_specifications() {
        let retried: Vec<u16> = (100..600)
            .filter(|c| is_retryable_status(StatusCode::from_u16(*c).unwrap()))
            .collect();
        assert_eq!(retried, [429, 502, 503, 504]);
        let s = |code| SendError::Status {
            status: StatusCode::from_u16(code).unwrap(),
            message: String::new(),
            retry_after: None,
        };
        assert!(!s(500).is_retryable());
        assert!(!s(400).is_retryable());
        assert!(s(503).is_retryable());
        assert!(SendError::Transport("x".into()).is_retryable());
        assert!(SendError::Timeout(Duration::from_secs(1)).is_retryable());
    }

    #[test]
    fn retry_after() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        // 2015-10-21 07:28:00 UTC is `now`; 90 s later.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:29:30 GMT", now),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn jitter_stays_in_range() {
        let mut j = Jitter::new();
        for _ in 0..1000 {
            let d = j.apply(Duration::from_millis(1000));
            assert!(d >= Duration::from_millis(500) && d < Duration::from_millis(1000));
        }
    }
}

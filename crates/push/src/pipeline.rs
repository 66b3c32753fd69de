//! The loops of a pusher that POSTs (remote_write and OTLP): a producer
//! that takes a snapshot every interval and queues it for every receiver,
//! and a sender per receiver that POSTs its queue in order, retrying with
//! a backoff. A [`Batcher`] and a [`Exchange`] say what differs.

use std::future::Future;
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::StatusCode;
use shmetrics_core::Snapshot;
use tokio::sync::watch;

use crate::http::{Backoff, Client, HttpSettings, Response, SendError};
use crate::log::{say, Repeats};
use crate::queue::{Batch, Outcome, Queue, SnapshotStats};
use crate::{Endpoint, Source};

/// Turns snapshots into batches (on a blocking thread).
pub(crate) trait Batcher: Send + Sync + 'static {
    /// What it queues.
    type Batch: Batch;
    /// What it keeps from one snapshot to the next; made anew if making a
    /// batch panicked.
    type State: Default + Send + 'static;
    /// The batch of `snap`, numbered `id`.
    fn batch(&self, state: &mut Self::State, id: u64, snap: &Snapshot) -> Self::Batch;
}

/// How requests are made and answers read.
pub(crate) trait Exchange: Send + 'static {
    /// What it sends.
    type Batch: Batch;
    /// One request's body and what goes with it; kept for a retry.
    type Request: Send + 'static;
    /// What a 2xx answer said.
    type Accepted: Send;
    /// How it is named in messages (`remote write`).
    const NAME: &'static str;
    /// Which protocol it is (named in configuration errors).
    const PROTOCOL: crate::Protocol;
    /// A sender's messages start with `{SENDER} {url}` (`remote write
    /// to`).
    const SENDER: &'static str;
    /// Said after an error that is retried.
    const RETRYING: &'static str;
    /// What a batch holds (`samples`).
    const UNITS: &'static str;
    /// The request headers.
    const HEADERS: &'static [(&'static str, &'static str)];
    /// The headers of the next request ([`HEADERS`](Exchange::HEADERS)
    /// unless the exchange changed how it sends).
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        Self::HEADERS
    }
    /// The most bytes of an answer read.
    const ANSWER_LIMIT: usize;
    /// Whether a request answered with `status` is tried again.
    fn retried(status: StatusCode) -> bool;
    /// A batch comes to the front of the queue.
    fn start(&mut self, _batch: &Self::Batch) {}
    /// The request for units `range` of `batch`.
    fn encode(&mut self, batch: &Self::Batch, range: Range<usize>) -> Self::Request;
    /// Its body.
    fn body(request: &Self::Request) -> Bytes;
    /// What the answer means.
    fn answer(&self, response: Response) -> Result<Self::Accepted, SendError>;
    /// The receiver took `request`; `who` starts messages.
    fn accepted(&mut self, _request: Self::Request, _accepted: Self::Accepted, _who: &str) {}
    /// Whether the exchange, after `error`, changes how it sends (remote
    /// write 2.0 falling back to 1.0), so that the same units are
    /// encoded and sent again at once; `who` starts messages.
    fn sends_otherwise(&mut self, _error: &SendError, _who: &str) -> bool {
        false
    }
}

/// How the loops run, from the protocol's settings.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub interval: Duration,
    pub http: HttpSettings,
    /// Most units in one request.
    pub max_per_request: usize,
    /// Whether backoff waits are jittered.
    pub jitter: bool,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl Settings {
    /// Without jitter, and without a `Retry-After` to honour.
    pub(crate) fn new(interval: Duration, http: &HttpSettings, max_per_request: usize) -> Settings {
        Settings {
            interval,
            http: http.clone(),
            max_per_request,
            jitter: false,
            max_retry_after: Duration::ZERO,
        }
    }
}

/// One receiver: its queue, its URL, and the protocol's state for it.
#[derive(Debug)]
pub(crate) struct Sender<P: Exchange> {
    pub queue: Arc<Queue<P::Batch>>,
    pub endpoint: Endpoint,
    pub protocol: P,
}

/// Pushes snapshots of `source` until `shutdown` completes. The first
/// snapshot is taken at once. Requests in flight at shutdown are
/// abandoned.
pub(crate) async fn run<M, P>(
    batcher: M,
    senders: Vec<Sender<P>>,
    settings: Settings,
    stats: Arc<SnapshotStats>,
    source: Arc<dyn Source>,
    shutdown: impl Future<Output = ()>,
) where
    M: Batcher,
    P: Exchange<Batch = M::Batch>,
{
    let client = match Client::new(&settings.http, P::PROTOCOL) {
        Ok(c) => c,
        Err(e) => {
            // Checked when the settings were made: a file changed since.
            say(P::NAME, &format!("cannot start: {e}"));
            return;
        }
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let queues: Vec<_> = senders.iter().map(|s| s.queue.clone()).collect();
    let tasks: Vec<_> = senders
        .into_iter()
        .map(|s| tokio::spawn(send(s, client.clone(), settings.clone(), stop_rx.clone())))
        .collect();
    let producer = Producer {
        batcher: Arc::new(batcher),
        queues,
        stats,
        name: P::NAME,
    };
    let mut shutdown = std::pin::pin!(shutdown);
    tokio::select! {
        () = producer.run(source, settings.interval) => {}
        () = &mut shutdown => {}
    }
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = t.await;
    }
}

struct Producer<M: Batcher> {
    batcher: Arc<M>,
    queues: Vec<Arc<Queue<M::Batch>>>,
    stats: Arc<SnapshotStats>,
    name: &'static str,
}

impl<M: Batcher> Producer<M> {
    /// Takes a snapshot every interval and queues it for every receiver.
    async fn run(&self, source: Arc<dyn Source>, interval: Duration) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut next_id = 0u64;
        let mut kept = Some((Snapshot::default(), M::State::default()));
        let mut failing = Repeats::default();
        loop {
            ticker.tick().await;
            let (source, batcher) = (source.clone(), self.batcher.clone());
            let (mut snap, mut state) = kept.take().unwrap_or_default();
            let id = next_id;
            // Reading the store and encoding are CPU work: off the runtime.
            let work = tokio::task::spawn_blocking(move || {
                let r = match source.refresh(&mut snap) {
                    Ok(true) => Ok(Some(batcher.batch(&mut state, id, &snap))),
                    Ok(false) => Ok(None),
                    Err(e) => Err(e.to_string()),
                };
                (snap, state, r)
            });
            let Ok((snap, state, result)) = work.await else {
                self.stats.snapshot_failures.fetch_add(1, Relaxed);
                continue;
            };
            kept = Some((snap, state));
            let batch = match result {
                Ok(Some(batch)) => batch,
                // The store does not exist yet: the exporter says so.
                Ok(None) => continue,
                Err(e) => {
                    self.stats.snapshot_failures.fetch_add(1, Relaxed);
                    failing.report(self.name, format!("cannot read the store: {e}"));
                    continue;
                }
            };
            failing.clear();
            if batch.units() == 0 {
                continue; // no series yet
            }
            next_id += 1;
            self.stats.batches.fetch_add(1, Relaxed);
            let batch = Arc::new(batch);
            for q in &self.queues {
                q.push(batch.clone());
            }
        }
    }
}

/// Sends one receiver's queue, in order, until told to stop.
async fn send<P: Exchange>(
    mut s: Sender<P>,
    client: Client,
    settings: Settings,
    mut stop: watch::Receiver<bool>,
) {
    let who = format!("{} {}", P::SENDER, s.endpoint);
    let h = &settings.http;
    let mut backoff = Backoff::new(h.min_backoff, h.max_backoff, settings.jitter);
    let mut failing = Repeats::default();
    // The last request encoded, kept for retries: (batch, first unit,
    // request).
    let mut pending: Option<(u64, usize, P::Request)> = None;
    let mut started: Option<u64> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        let Some((batch, range)) = s.queue.next(settings.max_per_request) else {
            tokio::select! {
                () = s.queue.ready.notified() => {}
                _ = stop.changed() => {}
            }
            continue;
        };
        if started != Some(batch.id()) {
            started = Some(batch.id());
            s.protocol.start(&batch);
        }
        let request = match pending.take() {
            Some((id, start, r)) if id == batch.id() && start == range.start => r,
            _ => s.protocol.encode(&batch, range.clone()),
        };
        let post = client.post(
            &s.endpoint,
            s.protocol.headers(),
            P::body(&request),
            P::ANSWER_LIMIT,
            settings.http.timeout,
        );
        let result = tokio::select! {
            r = post => r,
            _ = stop.changed() => return,
        }
        .and_then(|response| s.protocol.answer(response));
        if let Err(e) = &result {
            if s.protocol.sends_otherwise(e, &who) {
                // Encoded again, the other way, and sent at once.
                s.queue.settle(batch.id(), range, Outcome::Retry);
                continue;
            }
        }
        let outcome = match &result {
            Ok(_) => Outcome::Sent,
            Err(e) if e.is_retryable_with(P::retried) => Outcome::Retry,
            Err(_) => Outcome::Refused,
        };
        s.queue.settle(batch.id(), range.clone(), outcome);
        let e = match result {
            Ok(accepted) => {
                if failing.clear() {
                    say(&who, "sending again");
                }
                s.protocol.accepted(request, accepted, &who);
                backoff.reset();
                continue;
            }
            Err(e) => e,
        };
        s.queue.stats.count_failure(&e);
        if outcome == Outcome::Refused {
            failing.report(&who, format!("{e}; dropped {} {}", range.len(), P::UNITS));
            continue;
        }
        failing.report(&who, format!("{e}; {}", P::RETRYING));
        let wait = match e.retry_after() {
            Some(d) => d.min(settings.max_retry_after),
            None => backoff.wait(),
        };
        pending = Some((batch.id(), range.start, request));
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.changed() => return,
        }
    }
}

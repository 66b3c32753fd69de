//! remote_write (1.0 and 2.0) over the shared loops
//! ([`crate::pipeline`]): what a batch is, the headers, and which answers
//! are retried.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use hyper::StatusCode;
use shmetrics_core::Snapshot;

use std::sync::atomic::Ordering::Relaxed;

use super::encode::{encode, timeseries, timeseries_with_meta, Chunk};
use super::encode_v2::encode_v2;
use super::{Config, ExternalLabels, Stats, Version};
use crate::clock::unix_ms;
use crate::http::{Response, SendError};
use crate::log::Repeats;
use crate::pipeline::{self, Batcher, Exchange, Sender, Settings};
use crate::pusher::{Push, Pusher, Sealed};
use crate::queue::{self, Queue, QueueStats};
use crate::Source;

/// One snapshot, encoded, shared by every URL's queue.
#[derive(Debug)]
pub(crate) struct Batch {
    id: u64,
    chunks: Vec<Chunk>,
    /// Where each chunk's samples end, counted from the batch's start.
    ends: Vec<usize>,
}

impl Batch {
    fn new(id: u64, chunks: Vec<Chunk>) -> Batch {
        let mut end = 0;
        let ends = chunks
            .iter()
            .map(|c| {
                end += c.samples as usize;
                end
            })
            .collect();
        Batch { id, chunks, ends }
    }

    /// The chunk whose samples start at `start`.
    fn chunk_at(&self, start: usize) -> &Chunk {
        &self.chunks[self.ends.partition_point(|&e| e <= start)]
    }
}

impl queue::Batch for Batch {
    fn id(&self) -> u64 {
        self.id
    }

    fn units(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Chunks are already at most `max_samples_per_request`.
    fn request_end(&self, start: usize, _max: usize) -> usize {
        start + self.chunk_at(start).samples as usize
    }
}

/// Encodes each snapshot once, for every URL.
#[derive(Debug)]
struct Encoding {
    external: ExternalLabels,
    max_samples: usize,
    native_histograms: bool,
    custom_buckets: bool,
    version: Version,
}

impl Batcher for Encoding {
    type Batch = Batch;
    type State = ();

    fn batch(&self, _: &mut (), id: u64, snap: &Snapshot) -> Batch {
        let now = unix_ms() as i64;
        let (native, custom) = (self.native_histograms, self.custom_buckets);
        let chunks = match self.version {
            Version::V1 if !custom => encode(
                timeseries(snap, &self.external, now, native),
                self.max_samples,
            ),
            Version::V1 => encode(
                timeseries_with_meta(snap, &self.external, now, native, custom).0,
                self.max_samples,
            ),
            Version::V2 => encode_v2(snap, &self.external, now, native, custom, self.max_samples),
        };
        Batch::new(id, chunks)
    }
}

/// 5xx and 429 are retried; other statuses drop the request.
fn retried(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
}

/// remote_write 1.0: the [`Push`] protocol of [`RemoteWriter`], and its
/// requests.
#[derive(Debug)]
pub struct RemoteWrite;

impl Exchange for RemoteWrite {
    type Batch = Batch;
    type Request = Chunk;
    type Accepted = ();
    const NAME: &'static str = "remote write";
    const PROTOCOL: crate::Protocol = crate::Protocol::RemoteWrite;
    const SENDER: &'static str = "remote write to";
    const RETRYING: &'static str = "retrying with backoff";
    const UNITS: &'static str = "samples";
    /// The headers the specification requires.
    const HEADERS: &'static [(&'static str, &'static str)] = &[
        ("content-encoding", "snappy"),
        ("content-type", "application/x-protobuf"),
        ("x-prometheus-remote-write-version", "0.1.0"),
    ];
    const ANSWER_LIMIT: usize = 1024;

    fn retried(status: StatusCode) -> bool {
        retried(status)
    }

    fn encode(&mut self, batch: &Batch, range: Range<usize>) -> Chunk {
        batch.chunk_at(range.start).clone()
    }

    fn body(request: &Chunk) -> Bytes {
        request.body.clone()
    }

    fn answer(&self, response: Response) -> Result<(), SendError> {
        if response.status.is_success() {
            Ok(())
        } else {
            Err(response.refused(response.body_text(), None))
        }
    }
}

/// remote write 2.0's exchange: 1.0's, with 2.0's headers, and the
/// receiver's count of what it wrote, which a 2xx answer may give in
/// `X-Prometheus-Remote-Write-{Samples,Histograms,Exemplars}-Written`.
/// What it says it did not write is counted
/// (`shmetrics_remote_write_samples_rejected_total`) and logged. A
/// receiver that does not take 2.0 answers 415, which is not retried:
/// the log says to use `--remote-write.protocol 1.0` with it.
#[derive(Debug)]
pub struct RemoteWrite2 {
    stats: Arc<Stats>,
    /// The URL's index in `stats`.
    url: usize,
    last: Repeats,
}

/// What a 2.0 receiver said it wrote, for the headers it sent.
#[derive(Debug, Default)]
pub struct Written {
    samples: Option<u64>,
    histograms: Option<u64>,
    exemplars: Option<u64>,
}

fn written(headers: &hyper::HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

impl Exchange for RemoteWrite2 {
    type Batch = Batch;
    type Request = Chunk;
    type Accepted = Written;
    const NAME: &'static str = "remote write";
    const PROTOCOL: crate::Protocol = crate::Protocol::RemoteWrite;
    const SENDER: &'static str = "remote write to";
    const RETRYING: &'static str = "retrying with backoff";
    const UNITS: &'static str = "samples";
    /// The headers the 2.0 specification requires.
    const HEADERS: &'static [(&'static str, &'static str)] = &[
        ("content-encoding", "snappy"),
        (
            "content-type",
            "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        ),
        ("x-prometheus-remote-write-version", "2.0.0"),
    ];
    const ANSWER_LIMIT: usize = 1024;

    fn retried(status: StatusCode) -> bool {
        retried(status)
    }

    fn encode(&mut self, batch: &Batch, range: Range<usize>) -> Chunk {
        batch.chunk_at(range.start).clone()
    }

    fn body(request: &Chunk) -> Bytes {
        request.body.clone()
    }

    fn answer(&self, response: Response) -> Result<Written, SendError> {
        let h = &response.headers;
        if response.status.is_success() {
            return Ok(Written {
                samples: written(h, "x-prometheus-remote-write-samples-written"),
                histograms: written(h, "x-prometheus-remote-write-histograms-written"),
                exemplars: written(h, "x-prometheus-remote-write-exemplars-written"),
            });
        }
        let mut message = response.body_text();
        if response.status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            message.push_str(" (the receiver does not take remote write 2.0: use --remote-write.protocol 1.0 with it)");
        }
        Err(response.refused(message, None))
    }

    fn accepted(&mut self, request: Chunk, w: Written, who: &str) {
        // A receiver that sends none of the headers says nothing.
        let Some(samples) = w.samples.map(|s| s + w.histograms.unwrap_or(0)) else {
            return;
        };
        let lost = request.samples.saturating_sub(samples)
            + request
                .exemplars
                .saturating_sub(w.exemplars.unwrap_or(request.exemplars));
        if lost == 0 {
            return;
        }
        self.stats.rejected[self.url].fetch_add(lost, Relaxed);
        self.last.report(
            who,
            format!(
                "the receiver wrote {samples} of {} samples and {} of {} exemplars",
                request.samples,
                w.exemplars.unwrap_or(request.exemplars),
                request.exemplars
            ),
        );
    }
}

/// Pushes snapshots of a store to remote_write receivers.
///
/// Every [`Config::interval`] it takes a snapshot, encodes it once, and
/// queues it for every URL. Each URL has a sender that POSTs its queue in
/// order, retrying 5xx, 429 and connection errors with a doubling backoff
/// (capped), and dropping (and counting) requests refused with another
/// status. Each URL's queue holds at most [`Config::queue_batches`]
/// batches: when it is full the oldest is dropped and counted, so memory
/// stays bounded however long a receiver is down. Requests in flight at
/// shutdown are abandoned.
pub type RemoteWriter = Pusher<RemoteWrite>;

impl Sealed for RemoteWrite {}

impl Push for RemoteWrite {
    type Config = Config;
    type Stats = Stats;
    type Parts = ();

    fn prepare(config: &Config) -> (Arc<Stats>, ()) {
        let queues = config
            .endpoints
            .iter()
            .map(|e| Arc::new(QueueStats::new(e.to_string(), config.queue_batches)));
        (Arc::new(Stats::new(queues.collect())), ())
    }

    async fn run(
        pusher: RemoteWriter,
        source: Arc<dyn Source>,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        let (c, stats) = (pusher.config, pusher.stats);
        let settings = Settings::new(c.interval, &c.http, c.max_samples_per_request);
        let batcher = Encoding {
            external: c.external_labels,
            max_samples: c.max_samples_per_request,
            native_histograms: c.native_histograms,
            custom_buckets: c.custom_buckets,
            version: c.version,
        };
        let snapshots = stats.snapshots.clone();
        match c.version {
            Version::V1 => {
                let senders = senders(&stats, &c.endpoints, |_| RemoteWrite);
                pipeline::run(batcher, senders, settings, snapshots, source, shutdown).await;
            }
            Version::V2 => {
                let senders = senders(&stats, &c.endpoints, |url| RemoteWrite2 {
                    stats: stats.clone(),
                    url,
                    last: Repeats::default(),
                });
                pipeline::run(batcher, senders, settings, snapshots, source, shutdown).await;
            }
        }
    }
}

/// A sender per URL, each with its own queue, speaking `protocol(i)` for
/// the `i`th URL.
fn senders<E: Exchange>(
    stats: &Stats,
    endpoints: &[crate::Endpoint],
    protocol: impl Fn(usize) -> E,
) -> Vec<Sender<E>> {
    stats
        .endpoints()
        .iter()
        .zip(endpoints.iter().cloned())
        .enumerate()
        .map(|(i, (queue, endpoint))| Sender {
            queue: Arc::new(Queue::new(queue.clone())),
            endpoint,
            protocol: protocol(i),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sender() -> RemoteWrite2 {
        let queue = Arc::new(QueueStats::new("http://r/api/v1/write".into(), 10));
        RemoteWrite2 {
            stats: Arc::new(Stats::new(vec![queue])),
            url: 0,
            last: Repeats::default(),
        }
    }

    fn chunk(samples: u64, exemplars: u64) -> Chunk {
        Chunk {
            body: Bytes::new(),
            samples,
            exemplars,
        }
    }

    fn rejected(s: &RemoteWrite2) -> u64 {
        s.stats.rejected[0].load(Relaxed)
    }

    #[test]
    fn what_a_2_0_receiver_did_not_write_is_counted() {
        let mut s = sender();
        // All written (samples and histograms add up to the request's).
        let all = Written {
            samples: Some(8),
            histograms: Some(2),
            exemplars: Some(2),
        };
        s.accepted(chunk(10, 2), all, "test");
        assert_eq!(rejected(&s), 0);
        // No headers: the receiver says nothing, nothing is counted.
        s.accepted(chunk(10, 2), Written::default(), "test");
        assert_eq!(rejected(&s), 0);
        // 7 + 1 of 10 samples, 1 of 2 exemplars: 3 not written.
        let short = Written {
            samples: Some(7),
            histograms: Some(1),
            exemplars: Some(1),
        };
        s.accepted(chunk(10, 2), short, "test");
        assert_eq!(rejected(&s), 3);
        // Samples given without an exemplar count: exemplars not judged.
        let no_ex = Written {
            samples: Some(10),
            histograms: None,
            exemplars: None,
        };
        s.accepted(chunk(10, 2), no_ex, "test");
        assert_eq!(rejected(&s), 3);
    }
}

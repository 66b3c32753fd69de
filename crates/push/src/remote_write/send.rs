//! remote_write over the shared loops ([`crate::pipeline`]): what a
//! batch is, the headers, and which answers are retried.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use hyper::StatusCode;
use shmetrics_core::Snapshot;

use super::encode::{encode, timeseries, Chunk};
use super::{Config, ExternalLabels, Stats};
use crate::clock::unix_ms;
use crate::http::{Response, SendError};
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
}

impl Batcher for Encoding {
    type Batch = Batch;
    type State = ();

    fn batch(&self, _: &mut (), id: u64, snap: &Snapshot) -> Batch {
        let series = timeseries(
            snap,
            &self.external,
            unix_ms() as i64,
            self.native_histograms,
        );
        Batch::new(id, encode(series, self.max_samples))
    }
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

    /// 5xx and 429; other statuses drop the request.
    fn retried(status: StatusCode) -> bool {
        status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
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
        let senders = stats
            .endpoints()
            .iter()
            .zip(c.endpoints.iter().cloned())
            .map(|(queue, endpoint)| Sender {
                queue: Arc::new(Queue::new(queue.clone())),
                endpoint,
                protocol: RemoteWrite,
            })
            .collect();
        let settings = Settings::new(c.interval, &c.http, c.max_samples_per_request);
        let batcher = Encoding {
            external: c.external_labels,
            max_samples: c.max_samples_per_request,
            native_histograms: c.native_histograms,
        };
        let snapshots = stats.snapshots.clone();
        pipeline::run(batcher, senders, settings, snapshots, source, shutdown).await;
    }
}

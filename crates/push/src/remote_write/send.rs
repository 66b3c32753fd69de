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

use super::downgrade::to_v1;
use super::encode::{encode, timeseries, timeseries_with_meta, Chunk};
use super::encode_v2::encode_v2;
use super::{Config, ExternalLabels, Stats, Version};
use crate::clock::unix_ms;
use crate::http::{Response, SendError};
use crate::log::{say, Repeats};
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
/// receiver's count of what it wrote, which a 2xx answer gives in
/// `X-Prometheus-Remote-Write-{Samples,Histograms,Exemplars}-Written`.
/// What it says it did not write is counted
/// (`shmetrics_remote_write_samples_rejected_total`) and logged.
///
/// A receiver that does not take 2.0 answers 415, or (a 1.0 receiver
/// that does not look at the content type, such as Prometheus 2 or
/// VictoriaMetrics 1.x) reads the request as an empty 1.0 one and
/// answers 2xx without any of those headers, which the specification
/// says to take as 415. Either way the URL falls back to 1.0: the
/// request is sent again at once as 1.0 (`to_v1`), and so is every
/// later one; it is logged once and counted in
/// `shmetrics_remote_write_fallbacks_total`.
#[derive(Debug)]
pub struct RemoteWrite2 {
    stats: Arc<Stats>,
    /// The URL's index in `stats`.
    url: usize,
    last: Repeats,
    /// The receiver turned 2.0 down: it gets 1.0.
    fallen_back: bool,
}

impl RemoteWrite2 {
    fn new(stats: Arc<Stats>, url: usize) -> RemoteWrite2 {
        RemoteWrite2 {
            stats,
            url,
            last: Repeats::default(),
            fallen_back: false,
        }
    }
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

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        if self.fallen_back {
            RemoteWrite::HEADERS
        } else {
            Self::HEADERS
        }
    }

    fn encode(&mut self, batch: &Batch, range: Range<usize>) -> Chunk {
        let chunk = batch.chunk_at(range.start);
        if self.fallen_back {
            to_v1(chunk)
        } else {
            chunk.clone()
        }
    }

    fn body(request: &Chunk) -> Bytes {
        request.body.clone()
    }

    fn answer(&self, response: Response) -> Result<Written, SendError> {
        if self.fallen_back {
            return RemoteWrite.answer(response).map(|()| Written::default());
        }
        let h = &response.headers;
        if !response.status.is_success() {
            return Err(response.refused(response.body_text(), None));
        }
        let w = Written {
            samples: written(h, "x-prometheus-remote-write-samples-written"),
            histograms: written(h, "x-prometheus-remote-write-histograms-written"),
            exemplars: written(h, "x-prometheus-remote-write-exemplars-written"),
        };
        if w.samples.is_none() && w.histograms.is_none() && w.exemplars.is_none() {
            return Err(SendError::Status {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                message: format!(
                    "{} without any X-Prometheus-Remote-Write-*-Written header, as a 1.0 receiver answers when it reads a 2.0 request as an empty 1.0 one (taken as 415)",
                    response.status
                ),
                retry_after: None,
            });
        }
        Ok(w)
    }

    fn sends_otherwise(&mut self, error: &SendError, who: &str) -> bool {
        let unsupported = matches!(
            error,
            SendError::Status { status, .. } if *status == StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        if self.fallen_back || !unsupported {
            return false;
        }
        self.fallen_back = true;
        self.stats.fallbacks[self.url].fetch_add(1, Relaxed);
        say(
            who,
            &format!("{error}; it does not take remote write 2.0, so it gets 1.0 from now on (--remote-write.protocol 1.0 sends it 1.0 from the start)"),
        );
        true
    }

    fn accepted(&mut self, request: Chunk, w: Written, who: &str) {
        // A 1.0 receiver (fallen back to) sends none of the headers.
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
                let senders = senders(&stats, &c.endpoints, |url| {
                    RemoteWrite2::new(stats.clone(), url)
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
        RemoteWrite2::new(Arc::new(Stats::new(vec![queue])), 0)
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

    fn response(status: u16, headers: &[(&'static str, &'static str)]) -> Response {
        let mut map = hyper::HeaderMap::new();
        for (n, v) in headers {
            map.insert(*n, hyper::header::HeaderValue::from_static(v));
        }
        Response {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: Bytes::new(),
            credentials: None,
        }
    }

    fn fallbacks(s: &RemoteWrite2) -> u64 {
        s.stats.fallbacks[0].load(Relaxed)
    }

    #[test]
    fn a_2xx_without_written_headers_is_a_415_and_either_falls_back_to_1_0_once() {
        let mut s = sender();
        let written = [("x-prometheus-remote-write-samples-written", "3")];
        assert!(s.answer(response(204, &written)).is_ok());
        // What Prometheus 2 and VictoriaMetrics 1.x answer to a 2.0 request.
        let e = s.answer(response(204, &[])).unwrap_err();
        assert!(
            matches!(e, SendError::Status { status, .. } if status == StatusCode::UNSUPPORTED_MEDIA_TYPE),
            "{e}"
        );
        assert_eq!(s.headers(), RemoteWrite2::HEADERS);
        // Another status does not change the protocol.
        let bad = s.answer(response(400, &[])).unwrap_err();
        assert!(!s.sends_otherwise(&bad, "test"));
        assert_eq!(fallbacks(&s), 0);
        assert!(s.sends_otherwise(&e, "test"));
        assert_eq!(fallbacks(&s), 1);
        assert_eq!(s.headers(), RemoteWrite::HEADERS);
        // 1.0 from now on: no Written headers expected, a 415 is refused.
        assert!(s.answer(response(204, &[])).is_ok());
        let e = s.answer(response(415, &[])).unwrap_err();
        assert!(!s.sends_otherwise(&e, "test"));
        assert_eq!(fallbacks(&s), 1);
        // A real 415 falls back too.
        let mut s = sender();
        let e = s.answer(response(415, &[])).unwrap_err();
        assert!(s.sends_otherwise(&e, "test"));
        assert_eq!(s.headers(), RemoteWrite::HEADERS);
    }
}

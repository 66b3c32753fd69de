//! OTLP over the shared loops ([`crate::pipeline`]). What differs from
//! remote_write is what is retried (the OTLP/HTTP specification's list),
//! `Retry-After`, partial success, and delta temporality, which is
//! computed when a batch is sent, from what the receiver took last.

use std::future::Future;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use hyper::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use hyper::StatusCode;
use prost::Message;

use super::batch::{Batch, Tracking};
use super::encode::{Baselines, Encoded, Encoder};
use super::proto::{ExportMetricsServiceResponse, Status};
use super::{Compression, Config, Stats};
use crate::http::{parse_retry_after, Response, SendError};
use crate::log::{say, Repeats};
use crate::pipeline::{self, Exchange, Sender, Settings};
use crate::pusher::{Push, Pusher, Sealed};
use crate::queue::{Queue, QueueStats};
use crate::Source;

/// The content type of requests (and of the answers that are decoded).
pub const PROTOBUF: &str = "application/x-protobuf";

/// 429, 502, 503 and 504: the statuses the OTLP/HTTP specification
/// retries (and a request the receiver cannot be reached for, or that it
/// does not answer in time). Every other status drops it.
pub fn is_retryable_status(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

/// `body` compressed as `compression` says. gzip at its fastest level:
/// OTLP bodies repeat their attribute keys and values, so even that level
/// takes most of the bytes away (see benches/push/README.md).
pub(super) fn compress(body: Bytes, compression: Compression) -> Bytes {
    match compression {
        Compression::None => body,
        Compression::Gzip => {
            let out = Vec::with_capacity(body.len() / 4);
            let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
            // UNWRAP: writing to a Vec cannot fail.
            gz.write_all(&body).expect("gzip into memory");
            // UNWRAP: as above.
            Bytes::from(gz.finish().expect("gzip into memory"))
        }
    }
}

/// A request that went through: the receiver's partial success, if it
/// reported one.
#[derive(Debug, Default)]
struct Accepted {
    rejected: u64,
    message: String,
}

/// The sender's state: how points are encoded, and (delta) what the
/// receiver took last.
#[derive(Debug)]
struct OtlpSender {
    encoder: Encoder,
    compression: Compression,
    baselines: Baselines,
    stats: Arc<Stats>,
    last_partial: Repeats,
}

impl Exchange for OtlpSender {
    type Batch = Batch;
    type Request = Encoded;
    type Accepted = Accepted;
    const NAME: &'static str = "otlp";
    const PROTOCOL: crate::Protocol = crate::Protocol::Otlp;
    const SENDER: &'static str = "otlp export to";
    const RETRYING: &'static str = "retrying";
    const UNITS: &'static str = "data points";
    /// Without compression; see [`Exchange::headers`].
    const HEADERS: &'static [(&'static str, &'static str)] = &[("content-type", PROTOBUF)];
    /// Enough for a partial success or a `google.rpc.Status`.
    const ANSWER_LIMIT: usize = 64 * 1024;

    fn retried(status: StatusCode) -> bool {
        is_retryable_status(status)
    }

    /// A new batch: forget the series it no longer has.
    fn start(&mut self, batch: &Batch) {
        self.baselines.keep_only(batch);
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        match self.compression {
            Compression::None => Self::HEADERS,
            Compression::Gzip => &[("content-type", PROTOBUF), ("content-encoding", "gzip")],
        }
    }

    fn encode(&mut self, batch: &Batch, range: Range<usize>) -> Encoded {
        let mut e = self.encoder.encode(batch, range, &self.baselines);
        e.body = compress(e.body, self.compression);
        e
    }

    fn body(request: &Encoded) -> Bytes {
        request.body.clone()
    }

    fn answer(&self, r: Response) -> Result<Accepted, SendError> {
        let protobuf = is_protobuf(&r.headers);
        if r.status.is_success() {
            let partial = protobuf
                .then(|| ExportMetricsServiceResponse::decode(r.body.clone()).ok())
                .flatten()
                .and_then(|r| r.partial_success);
            return Ok(partial.map_or_else(Accepted::default, |p| Accepted {
                rejected: p.rejected_data_points.max(0) as u64,
                message: p.error_message,
            }));
        }
        let message = protobuf
            .then(|| Status::decode(r.body.clone()).ok())
            .flatten()
            .map_or_else(|| r.body_text(), |s| s.message);
        let retry_after = r
            .headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        Err(r.refused(message, retry_after))
    }

    fn accepted(&mut self, request: Encoded, accepted: Accepted, who: &str) {
        self.baselines.apply(request.updates);
        if accepted.rejected == 0 {
            return;
        }
        self.stats
            .points_rejected
            .fetch_add(accepted.rejected, Relaxed);
        if self.last_partial.is_new(&accepted.message) {
            say(
                who,
                &format!(
                    "the receiver rejected {} of {} data points: {}",
                    accepted.rejected, request.points, accepted.message
                ),
            );
        }
    }
}

fn is_protobuf(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(PROTOBUF))
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
/// is down. A request in flight at shutdown is abandoned.
///
/// With delta temporality a batch is encoded when it is sent, against
/// what the receiver took last; a refused or dropped batch's increments
/// go out with the next one.
pub type OtlpExporter = Pusher<Otlp>;

/// OTLP/HTTP: the [`Push`] protocol of [`OtlpExporter`].
#[derive(Debug)]
pub struct Otlp;

impl Sealed for Otlp {}

impl Push for Otlp {
    type Config = Config;
    type Stats = Stats;
    type Parts = ();

    fn prepare(config: &Config) -> (Arc<Stats>, ()) {
        let capacity = config.queue_batches.max(1);
        let queue = QueueStats::new(config.endpoint.to_string(), capacity);
        (Arc::new(Stats::new(Arc::new(queue))), ())
    }

    async fn run(
        pusher: OtlpExporter,
        source: Arc<dyn Source>,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        let (c, stats) = (pusher.config, pusher.stats);
        let sender = Sender {
            queue: Arc::new(Queue::new(stats.queue.clone())),
            endpoint: c.endpoint.clone(),
            protocol: OtlpSender {
                encoder: Encoder::new(c.temporality, &c.resource),
                compression: c.compression,
                baselines: Baselines::default(),
                stats: stats.clone(),
                last_partial: Repeats::default(),
            },
        };
        let mut settings = Settings::new(c.interval, &c.http, c.max_points_per_request);
        settings.jitter = true;
        settings.max_retry_after = c.max_retry_after;
        let snapshots = stats.snapshots.clone();
        pipeline::run(
            Tracking {
                native: c.native_histograms,
            },
            vec![sender],
            settings,
            snapshots,
            source,
            shutdown,
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
        let is_retryable = |e: SendError| e.is_retryable_with(OtlpSender::retried);
        assert!(!is_retryable(s(500)));
        assert!(!is_retryable(s(400)));
        assert!(is_retryable(s(503)));
        assert!(is_retryable(SendError::Transport("x".into())));
        assert!(is_retryable(SendError::Timeout(Duration::from_secs(1))));
    }
}

//! The flush loop and the socket.

use std::future::Future;
use std::io;
use std::net::{ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use shmetrics_core::Snapshot;

use super::{Address, Config, Datagrams, Encoder, Stats};
use crate::clock::{unix_ms, unix_ns};
use crate::log::{say, Repeats};
use crate::pusher::{Push, Pusher, Sealed};
use crate::Source;

/// Why datagrams could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The host name did not resolve to any address.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host.
        host: String,
        /// Why.
        reason: String,
    },
    /// The socket could not be made or connected (for a Unix socket:
    /// nothing listens on the path yet).
    #[error("cannot open a socket to {address}: {source}")]
    Open {
        /// Where to.
        address: String,
        /// The system's error.
        source: io::Error,
    },
    /// A send failed.
    #[error("send to {address} failed: {source}")]
    Send {
        /// Where to.
        address: String,
        /// The system's error.
        source: io::Error,
    },
}

#[derive(Debug)]
enum Socket {
    Udp(UdpSocket),
    Unix(UnixDatagram),
}

impl Socket {
    fn open(address: &Address, timeout: Duration) -> Result<Socket, SendError> {
        let open_err = |source| SendError::Open {
            address: address.to_string(),
            source,
        };
        match address {
            Address::Udp { host, port } => {
                let target = (host.as_str(), *port)
                    .to_socket_addrs()
                    .map_err(|e| SendError::Resolve {
                        host: host.clone(),
                        reason: e.to_string(),
                    })?
                    .next()
                    .ok_or_else(|| SendError::Resolve {
                        host: host.clone(),
                        reason: "no address".into(),
                    })?;
                let local = if target.is_ipv4() {
                    "0.0.0.0:0"
                } else {
                    "[::]:0"
                };
                let s = UdpSocket::bind(local).map_err(open_err)?;
                s.connect(target).map_err(open_err)?;
                s.set_write_timeout(Some(timeout)).map_err(open_err)?;
                Ok(Socket::Udp(s))
            }
            Address::Unix(path) => {
                let s = UnixDatagram::unbound().map_err(open_err)?;
                s.connect(path).map_err(open_err)?;
                s.set_write_timeout(Some(timeout)).map_err(open_err)?;
                Ok(Socket::Unix(s))
            }
        }
    }

    fn send(&self, datagram: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Udp(s) => s.send(datagram),
            Socket::Unix(s) => s.send(datagram),
        }
    }
}

/// Flushes a store to a StatsD or DogStatsD agent at an interval.
///
/// The first flush is made at start (it sends gauges, and what series
/// created since gained); the next ones at every multiple of
/// [`Config::interval`] of the clock (at :00, :10, :20 for 10 s), so that
/// each of the agent's 10 s windows gets the same number; a last one when
/// the exporter stops. A flush takes a snapshot, turns it into lines
/// ([`Encoder`]), packs them into datagrams and sends them, one socket
/// call each.
///
/// Sending never waits long: a send that would block longer than
/// [`Config::send_timeout`] (a Unix socket whose reader is behind) gives
/// up the rest of that flush. If *no* datagram of a flush could be sent
/// (the agent's socket is not there yet, say), its deltas are not lost:
/// the next flush sends them with its own. Datagrams lost in a partly
/// failed flush are counted in [`Stats::send_errors`]. The socket is
/// opened again after an error (a restarted agent makes a new Unix
/// socket; a host name may resolve elsewhere).
///
/// Series created before the flusher was made count as already sent (see
/// [`Encoder`]).
pub type Flusher = Pusher<Statsd>;

/// StatsD and DogStatsD: the [`Push`] protocol of [`Flusher`].
#[derive(Debug)]
pub struct Statsd;

/// What the flush loop keeps between flushes; moved to a blocking thread
/// for each flush.
#[derive(Debug)]
struct Work {
    config: Config,
    encoder: Encoder,
    snap: Snapshot,
    datagrams: Datagrams,
    socket: Option<Socket>,
    failing: Repeats,
    source_error: Repeats,
}

impl Work {
    fn new(config: &Config, started_ns: u64) -> Work {
        Work {
            encoder: Encoder::new(config, started_ns),
            config: config.clone(),
            snap: Snapshot::default(),
            datagrams: Datagrams::new(config.max_datagram),
            socket: None,
            failing: Repeats::default(),
            source_error: Repeats::default(),
        }
    }

    fn flush(&mut self, source: &dyn Source, stats: &Stats) {
        match source.refresh(&mut self.snap) {
            Ok(true) => {
                self.source_error.clear();
            }
            // No store yet: the exporter says so.
            Ok(false) => return,
            Err(e) => {
                stats.snapshot_failures.fetch_add(1, Relaxed);
                self.source_error
                    .report("statsd", format!("cannot read the store: {e}"));
                return;
            }
        }
        self.datagrams.clear();
        let dropped = self.encoder.encode(&self.snap, &mut self.datagrams);
        stats.lines_too_long.fetch_add(dropped.too_long, Relaxed);
        stats
            .values_not_finite
            .fetch_add(dropped.not_finite, Relaxed);
        if self.datagrams.is_empty() || self.send(stats) > 0 {
            self.encoder.commit();
        }
        stats.series.store(self.encoder.tracked() as u64, Relaxed);
        stats.flushes.fetch_add(1, Relaxed);
        stats.last_flush_unix_ms.store(unix_ms(), Relaxed);
    }

    /// Sends the datagrams; returns how many were sent.
    fn send(&mut self, stats: &Stats) -> u64 {
        let total = self.datagrams.len() as u64;
        let socket = match self.socket.take() {
            Some(s) => s,
            None => match Socket::open(&self.config.address, self.config.send_timeout) {
                Ok(s) => s,
                Err(e) => {
                    stats.send_errors.fetch_add(total, Relaxed);
                    self.report(Some(e.to_string()));
                    return 0;
                }
            },
        };
        let mut sent = 0u64;
        let mut error: Option<io::Error> = None;
        let mut keep = true;
        for (i, d) in self.datagrams.iter().enumerate() {
            match socket.send(d) {
                Ok(_) => {
                    sent += 1;
                    stats.datagrams_sent.fetch_add(1, Relaxed);
                    stats.bytes_sent.fetch_add(d.len() as u64, Relaxed);
                    let lines = 1 + d.iter().filter(|&&b| b == b'\n').count() as u64;
                    stats.lines_sent.fetch_add(lines, Relaxed);
                }
                Err(e) => {
                    stats.send_errors.fetch_add(1, Relaxed);
                    let kind = e.kind();
                    error = Some(e);
                    let udp = matches!(socket, Socket::Udp(_));
                    // UDP reports an earlier datagram's ICMP "port
                    // unreachable" on a later send: nothing listens yet;
                    // go on with the others.
                    if udp && kind == io::ErrorKind::ConnectionRefused {
                        continue;
                    }
                    // A full Unix socket (the agent is behind): give up
                    // this flush rather than stall. Anything else: also
                    // open the socket again next time.
                    keep = matches!(kind, io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut);
                    let rest = total - i as u64 - 1;
                    stats.send_errors.fetch_add(rest, Relaxed);
                    break;
                }
            }
        }
        if keep {
            self.socket = Some(socket);
        }
        self.report(error.map(|source| {
            SendError::Send {
                address: self.config.address.to_string(),
                source,
            }
            .to_string()
        }));
        sent
    }

    /// Logs a failure once per distinct reason, and the recovery.
    fn report(&mut self, error: Option<String>) {
        match error {
            Some(e) => self.failing.report("statsd", e),
            None if self.failing.clear() => say(
                "statsd",
                &format!("sending to {} again", self.config.address),
            ),
            None => {}
        }
    }
}

/// How long until the next multiple of `interval` of the clock.
fn until_next_tick(interval: Duration) -> Duration {
    let step = interval.as_nanos().max(1) as u64;
    let now = unix_ns();
    Duration::from_nanos(step - now % step)
}

impl Sealed for Statsd {}

impl Push for Statsd {
    type Config = Config;
    type Stats = Stats;
    /// When the flusher was made, in nanoseconds since the Unix epoch.
    type Parts = u64;

    fn prepare(_: &Config) -> (Arc<Stats>, u64) {
        (Arc::new(Stats::default()), unix_ns())
    }

    /// Flushes until `shutdown` completes, then makes a last flush and
    /// returns.
    async fn run(
        pusher: Flusher,
        source: Arc<dyn Source>,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        let Pusher {
            config,
            stats,
            parts: started,
        } = pusher;
        let mut work = Some(Work::new(&config, started));
        let mut shutdown = std::pin::pin!(shutdown);
        let mut stopping = false;
        loop {
            let mut w = work.take().unwrap_or_else(|| Work::new(&config, started));
            let (source, stats) = (source.clone(), stats.clone());
            // Reading the store, encoding and sending are blocking work:
            // off the runtime.
            let done = tokio::task::spawn_blocking(move || {
                w.flush(&*source, &stats);
                w
            })
            .await;
            // A panic loses what was remembered; start over.
            work = done.ok();
            if stopping {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(until_next_tick(config.interval)) => {}
                () = &mut shutdown => stopping = true,
            }
        }
    }
}

//! A connection flood against an exporter, and a timed scraper: for the
//! flood test (`flood.rs`) and the benchmark (`benches/scrape_flood.rs`
//! includes this file). Standard library only. Every loop is bounded: by a
//! stop flag that the caller sets, and by socket timeouts.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a flood client waits to connect or for one read.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections that never send anything, reopened when the server closes
/// them, and connections that send half a request head and reconnect as
/// soon as they are closed. Stopped (and its sockets closed) by
/// [`Flood::stop`].
#[derive(Debug)]
pub struct Flood {
    stop: Arc<AtomicBool>,
    /// Connections opened so far (reopened ones included).
    pub opened: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Flood {
    /// Starts `idle` idle and `reconnecting` reconnecting connections to
    /// `addr`, and waits until each has connected once.
    pub fn start(addr: SocketAddr, idle: usize, reconnecting: usize) -> Flood {
        raise_open_files_limit();
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        let (stop2, opened2) = (stop.clone(), opened.clone());
        threads.push(std::thread::spawn(move || {
            hold_idle(addr, idle, &stop2, &opened2)
        }));
        for _ in 0..reconnecting {
            let (stop, opened) = (stop.clone(), opened.clone());
            threads.push(std::thread::spawn(move || reconnect(addr, &stop, &opened)));
        }
        let start = Instant::now();
        while opened.load(Relaxed) < (idle + reconnecting) as u64 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the flood could not open its connections"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Flood {
            stop,
            opened,
            threads,
        }
    }

    /// Stops the flood, closes its connections, and returns how many
    /// connections it opened.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Relaxed);
        for t in self.threads {
            t.join().expect("a flood thread panicked");
        }
        self.opened.load(Relaxed)
    }
}

/// The soft limit on open files raised to the hard limit: the flood holds
/// more connections than the usual 1024.
fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    setrlimit(Resource::Nofile, limit).expect("cannot raise RLIMIT_NOFILE");
}

fn open(addr: SocketAddr, opened: &AtomicU64) -> Option<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, CLIENT_TIMEOUT).ok()?;
    opened.fetch_add(1, Relaxed);
    Some(s)
}

/// Whether the server has closed `s` (non-blocking; `s` is non-blocking).
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    }
}

/// Holds `n` idle connections, reopening every 100 ms those the server
/// closed, until `stop`.
fn hold_idle(addr: SocketAddr, n: usize, stop: &AtomicBool, opened: &AtomicU64) {
    let mut conns: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    while !stop.load(Relaxed) {
        for c in conns.iter_mut() {
            if c.as_mut().is_none_or(closed) {
                *c = open(addr, opened);
                if let Some(s) = c {
                    s.set_nonblocking(true).expect("set_nonblocking");
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Connects, sends half a request head, waits until the server closes
/// the connection and connects again at once, until `stop`.
fn reconnect(addr: SocketAddr, stop: &AtomicBool, opened: &AtomicU64) {
    let mut buf = [0u8; 512];
    while !stop.load(Relaxed) {
        let Some(mut s) = open(addr, opened) else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */");
        while !stop.load(Relaxed) {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
    }
}

/// One `GET /metrics` on a new connection: the body and how long the
/// whole exchange took, or why it failed (a refused or closed connection,
/// a status other than 200).
pub fn timed_scrape(addr: SocketAddr, limit: Duration) -> Result<(String, Duration), String> {
    let start = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr, limit).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(limit)).map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut response = Vec::new();
    s.read_to_end(&mut response)
        .map_err(|e| format!("receive: {e}"))?;
    let took = start.elapsed();
    let response = String::from_utf8_lossy(&response);
    let Some((head, body)) = response.split_once("\r\n\r\n") else {
        return Err(format!("no complete response: {response:?}"));
    };
    if !head.starts_with("HTTP/1.1 200 ") {
        return Err(format!("answered {:?}", head.lines().next()));
    }
    Ok((body.to_string(), took))
}

/// The `p`-th percentile (0 to 100) of durations, by nearest rank.
pub fn percentile(durations: &[Duration], p: f64) -> Duration {
    let mut sorted = durations.to_vec();
    sorted.sort();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

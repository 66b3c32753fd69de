//! Basic auth under a flood of wrong passwords (issue 36, fault 1). Thirty
//! clients guessing passwords once kept a correct scrape from ever being
//! answered: every check waited its turn for the one bcrypt at a time.
//! Now a correct password is verified once and then cached, each client
//! address has at most one check pending, and checks past a small bound
//! are refused at once (429) without bcrypt.

use std::io::{BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use shmetrics_core::{FamilyDesc, Kind};
use shmetrics_exporter::WebConfig;

use crate::util::*;

const USER: &str = "prometheus";
const PASSWORD: &str = "scrape-me";
/// bcrypt's cost: about 0.1 s a check here, slower under load.
const COST: u32 = 10;
const FLOODERS: usize = 30;
/// How long a correct scrape may take during the flood.
const BOUND: Duration = Duration::from_secs(2);

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// A TCP connection to `dst` from the loopback address `src`, so that the
/// exporter sees another client address than the flood's.
fn connect_from(src: Ipv4Addr, dst: SocketAddr) -> TcpStream {
    let SocketAddr::V4(dst) = dst else {
        panic!("{dst} is not IPv4")
    };
    let sockaddr = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` is a socket this function owns; TcpStream closes it.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let (local, remote) = (sockaddr(src, 0), sockaddr(*dst.ip(), dst.port()));
    // SAFETY: both addresses are valid sockaddr_in of `len` bytes.
    let rc = unsafe { libc::bind(fd, (&raw const local).cast(), len) };
    assert_eq!(rc, 0, "bind {src}: {}", std::io::Error::last_os_error());
    // SAFETY: as above.
    let rc = unsafe { libc::connect(fd, (&raw const remote).cast(), len) };
    assert_eq!(rc, 0, "connect {dst}: {}", std::io::Error::last_os_error());
    stream
}

/// `GET /metrics` with `auth` over `stream`; the status and how long the
/// answer took.
fn scrape_over(mut stream: TcpStream, auth: &str) -> std::io::Result<(u16, Duration)> {
    let start = Instant::now();
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    stream.write_all(&request_head(
        "GET",
        "/metrics",
        &[("Authorization", auth)],
        true,
    ))?;
    let r = read_response(&mut BufReader::new(stream), false)?;
    Ok((r.status, start.elapsed()))
}

/// Clients from 127.0.0.1 sending a new wrong password on each request,
/// as fast as they are answered. Records each answer's status and time.
struct Flood {
    stop: Arc<AtomicBool>,
    answers: Arc<Mutex<Vec<(u16, Duration)>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Flood {
    fn start(addr: SocketAddr) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(Mutex::new(Vec::new()));
        let threads = (0..FLOODERS)
            .map(|t| {
                let (stop, answers) = (stop.clone(), answers.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        n += 1;
                        let auth = basic(USER, &format!("guess-{t}-{n}"));
                        let stream = connect_from(Ipv4Addr::LOCALHOST, addr);
                        if let Ok(answer) = scrape_over(stream, &auth) {
                            answers.lock().unwrap().push(answer);
                        }
                    }
                })
            })
            .collect();
        Flood {
            stop,
            answers,
            threads,
        }
    }

    fn stop(self) -> Vec<(u16, Duration)> {
        self.stop.store(true, Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        std::mem::take(&mut *self.answers.lock().unwrap())
    }
}

#[test]
fn a_correct_scrape_is_answered_during_a_wrong_password_flood() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("guarded_total", Kind::Counter),
        &[],
        3.0,
    );
    let config = dir.path().join("web.yml");
    let hash = bcrypt::hash(PASSWORD, COST).unwrap();
    std::fs::write(&config, format!("basic_auth_users:\n  {USER}: '{hash}'\n")).unwrap();
    let web = WebConfig::load(&config).unwrap_or_else(|e| panic!("{e}"));
    let server = TestServer::start(&path, |c| c.web = Some(Arc::new(web)));
    let auth = basic(USER, PASSWORD);

    let flood = Flood::start(server.addr);
    std::thread::sleep(Duration::from_secs(1));
    // The first correct scrape, from another address (another host, as
    // Prometheus is): its password is checked with bcrypt, within the
    // bound.
    let prometheus = Ipv4Addr::new(127, 0, 0, 2);
    let first = scrape_over(connect_from(prometheus, server.addr), &auth).unwrap();
    eprintln!("the first correct scrape during the flood: {first:?}");
    // Then from the flood's own address too: cached, so at once.
    let mut cached = Vec::new();
    for _ in 0..5 {
        cached.push(scrape_over(connect_from(Ipv4Addr::LOCALHOST, server.addr), &auth).unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("cached correct scrapes during the flood: {cached:?}");
    let answers = flood.stop();
    let refused = answers.iter().filter(|(s, _)| *s == 429).count();
    let slowest_refusal = answers
        .iter()
        .filter(|(s, _)| *s == 429)
        .map(|(_, t)| *t)
        .max();
    eprintln!(
        "the flood got {} answers: {} 401, {refused} 429 (the slowest {slowest_refusal:?})",
        answers.len(),
        answers.iter().filter(|(s, _)| *s == 401).count()
    );

    assert_eq!(first.0, 200, "the first correct scrape");
    assert!(
        first.1 < BOUND,
        "the first correct scrape took {:?}",
        first.1
    );
    for (status, took) in &cached {
        assert_eq!(*status, 200);
        assert!(*took < BOUND, "a cached correct scrape took {took:?}");
    }
    assert!(
        answers.iter().all(|(s, _)| [401, 429].contains(s)),
        "a wrong password got something else than 401 or 429"
    );
    // Failed attempts are bounded: most are refused without bcrypt.
    assert!(
        refused > answers.len() / 2,
        "{refused} of {} refused",
        answers.len()
    );
    server.stop();
}

//! A small blocking HTTP/1.1 client for tests, and free loopback ports.
//!
//! Every exchange is bounded by [`IO_TIMEOUT`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The upper bound for one HTTP exchange with a server under test.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers, names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body as sent (still compressed if it was).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header of that (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every header of that name.
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as UTF-8, decompressed if `Content-Encoding: gzip`.
    pub fn text(&self) -> String {
        let bytes = if self.header("content-encoding") == Some("gzip") {
            gunzip(&self.body)
        } else {
            self.body.clone()
        };
        String::from_utf8(bytes).expect("a UTF-8 body")
    }
}

/// Decompresses a gzip stream (one member, nothing after it).
pub fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .expect("a valid gzip body");
    out
}

/// Connects with the I/O timeouts set.
pub fn try_connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(s)
}

/// Connects with the I/O timeouts set; panics on failure.
pub fn connect(addr: SocketAddr) -> TcpStream {
    try_connect(addr).unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"))
}

/// The bytes of a request head (`Host` added).
pub fn request_head(method: &str, path: &str, headers: &[(&str, &str)], close: bool) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// One request on a new connection (`Connection: close`).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Response> {
    let mut s = try_connect(addr)?;
    s.write_all(&request_head(method, path, headers, true))?;
    let mut r = BufReader::new(s);
    read_response(&mut r, method == "HEAD")
}

/// `GET path` on a new connection; panics on an I/O error.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
    request(addr, "GET", path, headers)
        .unwrap_or_else(|e| panic!("GET http://{addr}{path} failed: {e}"))
}

/// Reads one response: head, then a body by `Content-Length`, chunked, or
/// to the end of the stream.
pub fn read_response<R: BufRead>(r: &mut R, head_only: bool) -> std::io::Result<Response> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed before a response",
        ));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(bad("connection closed in the response head".into()));
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| bad(format!("bad header {l:?}")))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if head_only {
        // A response to HEAD has no body, whatever its headers say.
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the blank line.
                loop {
                    line.clear();
                    if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?;
        }
    } else if let Some(n) = find("content-length") {
        let n: usize = n
            .parse()
            .map_err(|_| bad(format!("bad content-length {n:?}")))?;
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Whether the peer has closed `s`: waits up to `limit` for end of stream
/// or a reset, draining whatever the server sends first (an error
/// response). Returns what was drained, or `None` if the connection was
/// still open at the limit.
pub fn wait_closed(s: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            return None;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None
            }
            Err(_) => return Some(got), // reset: closed
        }
    }
}

/// Percent-encodes a query parameter.
pub fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

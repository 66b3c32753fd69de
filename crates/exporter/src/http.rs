//! The HTTP side: accepting with a connection limit, TLS, timeouts,
//! authentication, routes, and clean shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::page::PageBody;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ACCEPT, ACCEPT_ENCODING, AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE,
    RETRY_AFTER, VARY, WWW_AUTHENTICATE,
};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;

use crate::conns::{Admission, Conns, Slot, Watched};
use crate::render::Renderer;
use crate::status::ScrapeRecord;
use crate::web_config::Verdict;
use crate::{Config, Error};

/// A bound exporter, ready to run.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    renderer: Arc<Renderer>,
    config: Config,
    remote_write: Option<shmetrics_push::RemoteWriter>,
    statsd: Option<shmetrics_push::statsd::Flusher>,
    otlp: Option<shmetrics_push::otlp::OtlpExporter>,
}

impl Server {
    /// Binds the listen address and tries to open the store read-only. A
    /// store that cannot be opened yet is no error: requests try again
    /// (see [`Renderer::attach`]).
    pub async fn bind(mut config: Config) -> Result<Server, Error> {
        let budget = crate::conns::connection_budget();
        if config.max_connections > budget {
            tracing::warn!(
                "the limit on open files allows {budget} connections, not {}: serving at most {budget}",
                config.max_connections
            );
            config.max_connections = budget;
        }
        let listener = listen(config.listen).map_err(|source| Error::Bind {
            address: config.listen,
            source,
        })?;
        let renderer = Arc::new(
            Renderer::detached(config.store.clone())
                .expecting(config.store_owner, config.store_group),
        );
        renderer.exporter_metrics_on_page(config.exporter_metrics);
        renderer.family_metrics(config.family_metrics);
        let _ = renderer.attach();
        let remote_write = config
            .remote_write
            .clone()
            .map(shmetrics_push::RemoteWriter::new);
        if let Some(rw) = &remote_write {
            renderer.show_remote_write(rw.stats());
        }
        let statsd = config
            .statsd
            .clone()
            .map(shmetrics_push::statsd::Flusher::new);
        if let Some(sd) = &statsd {
            renderer.show_statsd(sd.stats());
        }
        let otlp = config
            .otlp
            .clone()
            .map(shmetrics_push::otlp::OtlpExporter::new);
        if let Some(x) = &otlp {
            renderer.show_otlp(x.stats());
        }
        Ok(Server {
            listener,
            renderer,
            config,
            remote_write,
            statsd,
            otlp,
        })
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.config.web.as_ref().is_some_and(|w| w.is_tls()) {
            "https"
        } else {
            "http"
        }
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        // UNWRAP: a bound TCP listener has a local address.
        self.listener.local_addr().expect("bound listener")
    }

    /// The renderer, for its statistics.
    pub fn renderer(&self) -> Arc<Renderer> {
        self.renderer.clone()
    }

    /// Serves (and pushes, with remote write or StatsD) until `shutdown`
    /// completes. Then it stops listening at once (new connections are
    /// refused, not left waiting), stops pushing (StatsD makes a last
    /// flush), asks every open connection to finish, and waits for
    /// requests in flight, for at most the request timeout.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
        let Server {
            listener,
            renderer,
            config,
            remote_write,
            statsd,
            otlp,
        } = self;
        let pushers = Pushers::start(&renderer, remote_write, statsd, otlp);
        let conns = Conns::new(config.max_connections);
        renderer.show_connections(conns.clone());
        let accept = Acceptor {
            tls: config.web.as_ref().and_then(|w| w.acceptor()),
            config: Arc::new(config),
            renderer,
            conns,
            graceful: GracefulShutdown::new(),
        };
        let idle = tokio::spawn(release_when_idle(accept.renderer.clone()));
        accept.serve(&listener, shutdown).await;
        idle.abort();
        drop(listener);
        pushers.stop(accept.config.request_timeout).await;
        let _ =
            tokio::time::timeout(accept.config.request_timeout, accept.graceful.shutdown()).await;
        Ok(())
    }
}

/// How long after the last render its pages' memory is given back.
const IDLE: Duration = Duration::from_secs(60);

/// Gives back the render's memory once scrapes stopped for [`IDLE`]
/// (checked every quarter of it, off the async threads).
async fn release_when_idle(renderer: Arc<Renderer>) {
    loop {
        tokio::time::sleep(IDLE / 4).await;
        let r = renderer.clone();
        let _ = tokio::task::spawn_blocking(move || r.release_idle(IDLE)).await;
    }
}

/// The push tasks (remote write, StatsD, OTLP) running beside the server.
struct Pushers {
    stop: tokio::sync::watch::Sender<bool>,
    remote_write: Option<JoinHandle<()>>,
    statsd: Option<JoinHandle<()>>,
    otlp: Option<JoinHandle<()>>,
}

impl Pushers {
    fn start(
        renderer: &Arc<Renderer>,
        remote_write: Option<shmetrics_push::RemoteWriter>,
        statsd: Option<shmetrics_push::statsd::Flusher>,
        otlp: Option<shmetrics_push::otlp::OtlpExporter>,
    ) -> Pushers {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let until_stopped = || {
            let mut rx = stopped.clone();
            async move {
                let _ = rx.wait_for(|stop| *stop).await;
            }
        };
        let source = || -> Arc<dyn shmetrics_push::Source> { renderer.clone() };
        Pushers {
            remote_write: remote_write.map(|x| tokio::spawn(x.run(source(), until_stopped()))),
            statsd: statsd.map(|x| tokio::spawn(x.run(source(), until_stopped()))),
            otlp: otlp.map(|x| tokio::spawn(x.run(source(), until_stopped()))),
            stop,
        }
    }

    /// Stops pushing; waits for the last StatsD flush for at most `limit`.
    async fn stop(self, limit: Duration) {
        let _ = self.stop.send(true);
        if let Some(p) = self.remote_write {
            let _ = p.await;
        }
        if let Some(f) = self.statsd {
            // The last flush sends without waiting long (see
            // `Config::send_timeout`); bound it all the same.
            let _ = tokio::time::timeout(limit, f).await;
        }
        if let Some(x) = self.otlp {
            let _ = x.await;
        }
    }
}

/// Accepts connections and serves each on its own task.
struct Acceptor {
    config: Arc<Config>,
    renderer: Arc<Renderer>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    conns: Arc<Conns>,
    graceful: GracefulShutdown,
}

impl Acceptor {
    /// Accepts until `shutdown` completes.
    async fn serve(&self, listener: &TcpListener, shutdown: impl Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = async {
                    self.conns.room_to_read().await;
                    listener.accept().await
                } => match accepted {
                    Ok(accepted) => accepted,
                    // Out of file descriptors and the like: close the
                    // oldest idle connection if there is one, else wait;
                    // then retry.
                    Err(_) => {
                        if self.conns.evict_oldest() {
                            self.renderer.stats.evicted_connections.fetch_add(1, Relaxed);
                        } else {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        tokio::task::yield_now().await;
                        continue;
                    }
                },
                () = &mut shutdown => return,
            };
            let stats = &self.renderer.stats;
            let slot = match self.conns.admit() {
                Admission::Admitted { slot, evicted } => {
                    if evicted {
                        stats.evicted_connections.fetch_add(1, Relaxed);
                    }
                    slot
                }
                Admission::Refused => {
                    stats.rejected_connections.fetch_add(1, Relaxed);
                    drop(stream);
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(connection(
                stream,
                peer.ip(),
                Arc::new(slot),
                self.renderer.clone(),
                self.config.clone(),
                self.tls.clone(),
                self.graceful.watcher(),
            ));
            // Let the connections run before accepting the next one: a
            // scrape reads its request head (and so can no longer be
            // closed to make room) before a flood of newer connections
            // can make it the oldest idle one.
            tokio::task::yield_now().await;
        }
    }
}

/// Serves one accepted connection: the TLS handshake if any, then one
/// request. The connection holds its place (`slot`) through the handshake
/// too. The whole exchange, handshake included, is cut off at the request
/// timeout; the handshake alone at the header timeout, as a slow request
/// head is. Until its request head has arrived, it is closed at once if
/// the table needs its place for a newer connection.
async fn connection(
    stream: TcpStream,
    peer: IpAddr,
    slot: Arc<Slot>,
    renderer: Arc<Renderer>,
    config: Arc<Config>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    watcher: Watcher,
) {
    let deadline = tokio::time::Instant::now() + config.request_timeout;
    let (slot2, renderer2) = (slot.clone(), renderer.clone());
    let stream = Watched::new(stream, slot.clone());
    let exchange = async {
        let Some(acceptor) = tls else {
            return serve_connection(stream, peer, slot2, renderer2, config.clone(), watcher).await;
        };
        match tokio::time::timeout(config.header_timeout, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => {
                serve_connection(stream, peer, slot2, renderer2, config.clone(), watcher).await
            }
            // A failed or slow handshake: drop the connection.
            Ok(Err(_)) | Err(_) => {
                renderer.stats.tls_handshake_failures.fetch_add(1, Relaxed);
            }
        }
    };
    tokio::select! {
        _ = tokio::time::timeout_at(deadline, exchange) => {}
        () = slot.evicted() => {}
    }
}

/// Connections the kernel may hold completed but not yet accepted (capped
/// by `net.core.somaxconn`): enough that a burst of connections does not
/// make a scraper's connection wait for a SYN retransmission.
const LISTEN_BACKLOG: u32 = 4096;

/// A listening socket on `addr` (with `SO_REUSEADDR`, as
/// `TcpListener::bind`), with a backlog of [`LISTEN_BACKLOG`].
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves one request on an accepted (and, with TLS, handshaken)
/// connection.
async fn serve_connection<S>(
    stream: S,
    peer: IpAddr,
    slot: Arc<Slot>,
    renderer: Arc<Renderer>,
    config: Arc<Config>,
    watcher: Watcher,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (header_timeout, max_buf) = (config.header_timeout, config.max_header_bytes.max(8192));
    let service = service_fn(move |req| {
        // The head has arrived: from now on the connection keeps its place.
        slot.mark_busy();
        handle(req, peer, renderer.clone(), config.clone())
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(max_buf)
        // One request per connection, so that the request timeout bounds
        // exactly one request and no idle connection lingers.
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    let _ = watcher.watch(conn).await;
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<PageBody> {
    let mut r = Response::new(PageBody::from(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Whether an `Accept-Encoding` header accepts gzip (and not with q=0).
fn accepts_gzip(header: Option<&HeaderValue>) -> bool {
    let Some(v) = header.and_then(|h| h.to_str().ok()) else {
        return false;
    };
    v.split(',').any(|part| {
        let mut it = part.split(';');
        let coding = it.next().unwrap_or("").trim();
        let q_zero = it.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .is_some_and(|q| q.trim().parse::<f64>().is_ok_and(|q| q == 0.0))
        });
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !q_zero
    })
}

async fn handle(
    req: Request<Incoming>,
    peer: IpAddr,
    renderer: Arc<Renderer>,
    config: Arc<Config>,
) -> Result<Response<PageBody>, Infallible> {
    let Some(web) = &config.web else {
        return Ok(route(req, renderer, &config.telemetry_path).await);
    };
    // As exporter-toolkit: basic auth guards every path, and the
    // configured headers go on every response, refusals included.
    let mut response = match web.authorize(req.headers().get(AUTHORIZATION), peer).await {
        Verdict::Allowed => route(req, renderer, &config.telemetry_path).await,
        Verdict::Denied => {
            let mut r = text(StatusCode::UNAUTHORIZED, "401 Unauthorized\n");
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
            r
        }
        // Too many password checks pending: refused without one.
        Verdict::Throttled => {
            let mut r = text(StatusCode::TOO_MANY_REQUESTS, "429 Too Many Requests\n");
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
    };
    for (name, value) in web.headers() {
        response.headers_mut().insert(name, value.clone());
    }
    Ok(response)
}

async fn route(
    req: Request<Incoming>,
    renderer: Arc<Renderer>,
    telemetry_path: &str,
) -> Response<PageBody> {
    let arrived = Instant::now();
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut()
            .insert("allow", HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match req.uri().path() {
        p if p == telemetry_path => scrape(req.headers(), renderer, arrived).await,
        crate::EXPORTER_METRICS_PATH => exporter_page(req.headers(), &renderer).await,
        "/healthz" => healthz(renderer).await,
        // As Prometheus: the process answers.
        "/-/healthy" => text(StatusCode::OK, "Healthy.\n"),
        // Ready once a store is attached (stale or not: it is served).
        "/-/ready" => match renderer.attach() {
            Ok(_) => text(StatusCode::OK, "Ready.\n"),
            Err(why) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {why}\n"),
            ),
        },
        "/" => {
            let r2 = renderer.clone();
            let status = tokio::task::spawn_blocking(move || r2.status(STATUS_READ_MAX_AGE)).await;
            let Ok(status) = status else {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the status page failed\n",
                );
            };
            let page = crate::landing::page(telemetry_path, &status);
            let mut r = Response::new(PageBody::from(Bytes::from(page)));
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            r
        }
        _ => text(
            StatusCode::NOT_FOUND,
            format!(
                "not found; try {telemetry_path}, {}, /healthz, /-/healthy, /-/ready or /\n",
                crate::EXPORTER_METRICS_PATH
            ),
        ),
    }
}

/// A scrape of the telemetry path: the page in the negotiated format,
/// rendered off the async threads.
async fn scrape(
    headers: &HeaderMap,
    renderer: Arc<Renderer>,
    arrived: Instant,
) -> Response<PageBody> {
    let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok());
    let accept = accept.map(str::to_owned);
    let gzip = accepts_gzip(headers.get(ACCEPT_ENCODING));
    let r2 = renderer.clone();
    let rendered =
        tokio::task::spawn_blocking(move || r2.get_for(accept.as_deref(), gzip, arrived)).await;
    match rendered {
        Ok(Ok((r, negotiated))) => {
            let format = negotiated.format;
            renderer.stats.count_scrape(format);
            renderer.stats.bytes.fetch_add(r.body.len() as u64, Relaxed);
            renderer.stats.recent.record(ScrapeRecord {
                at: SystemTime::now(),
                format,
                gzip,
                bytes: r.body.len(),
                render: r.took,
            });
            let mut resp = Response::new(PageBody::from(r.body));
            let h = resp.headers_mut();
            // UNWRAP: the content type is ASCII, built from constants.
            let ct =
                HeaderValue::from_str(&negotiated.content_type()).expect("an ASCII content type");
            h.insert(CONTENT_TYPE, ct);
            h.insert(VARY, HeaderValue::from_static("Accept, Accept-Encoding"));
            if gzip {
                h.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
            resp
        }
        Ok(Err(e)) => {
            let e = Error::from(e);
            tracing::debug!("a scrape failed: {e}");
            text(StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n"))
        }
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "the render failed\n"),
    }
}

/// [`crate::EXPORTER_METRICS_PATH`]: the exporter's own metrics in the
/// negotiated format (small: rendered on each request, never gzipped).
async fn exporter_page(headers: &HeaderMap, renderer: &Arc<Renderer>) -> Response<PageBody> {
    let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok());
    let negotiated = shmetrics_expo::negotiate_scrape(accept, true);
    let r2 = renderer.clone();
    let body = tokio::task::spawn_blocking(move || {
        r2.exporter_page(negotiated.format, negotiated.escaping)
    })
    .await;
    let Ok(body) = body else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "the render failed\n");
    };
    let mut resp = Response::new(PageBody::from(Bytes::from(body)));
    // UNWRAP: the content type is ASCII, built from constants.
    let ct = HeaderValue::from_str(&negotiated.content_type()).expect("an ASCII content type");
    resp.headers_mut().insert(CONTENT_TYPE, ct);
    resp.headers_mut()
        .insert(VARY, HeaderValue::from_static("Accept"));
    resp
}

/// How old a read of the store the status page may show instead of
/// reading again (so that a flood of requests for `/` costs at most a read
/// and a cardinality count a second).
const STATUS_READ_MAX_AGE: Duration = Duration::from_secs(1);

/// How old a read of the store `/healthz` may judge by instead of reading
/// again.
const HEALTH_READ_MAX_AGE: Duration = Duration::from_secs(1);

/// `/healthz`: the served store's size and writers, or why none is served.
async fn healthz(renderer: Arc<Renderer>) -> Response<PageBody> {
    // Unhealthy whenever a scrape fails: the store is read as a scrape
    // reads it (or a read at most `HEALTH_READ_MAX_AGE` old is judged),
    // off the async threads.
    let r2 = renderer.clone();
    let read = tokio::task::spawn_blocking(move || r2.check_read(HEALTH_READ_MAX_AGE))
        .await
        .unwrap_or_else(|_| Err("the read of the store failed".to_string()));
    match renderer.attach() {
        // A file cut short under the exporter is served by no scrape
        // (they answer 503 saying so): neither is it healthy.
        Ok(served) => match (renderer.stale(), served.store.check_file(), read) {
            (None, Ok(()), Err(why)) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("scrapes fail: cannot read the store: {why}\n"),
            ),
            (None, Ok(()), Ok(())) => {
                let st = served.store.stats();
                text(
                    StatusCode::OK,
                    format!(
                        "ok: {} series, {} live writers; {}\n",
                        st.series_allocated,
                        st.writers_live,
                        served.describe()
                    ),
                )
            }
            (None, Err(e), _) => text(StatusCode::SERVICE_UNAVAILABLE, format!("damaged: {e}\n")),
            (Some(why), _, _) => text(StatusCode::SERVICE_UNAVAILABLE, format!("stale: {why}\n")),
        },
        Err(why) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}

/// Runs the exporter until SIGTERM or SIGINT.
pub fn serve(config: Config) -> Result<(), Error> {
    if let Err(e) = crate::conns::raise_open_files_limit() {
        tracing::warn!("cannot raise the limit on open files: {e}");
    }
    // A read's merged cells and a render's pieces are given back to the
    // system when freed, not kept in the heap between scrapes.
    shmetrics_core::unmap_large_frees(1 << 20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    rt.block_on(async move {
        // Handlers first: a SIGTERM that arrives once the port answers must
        // start a clean shutdown, never kill the process by default action.
        let shutdown = shutdown_signal();
        let server = Server::bind(config).await?;
        let mut extras = String::new();
        if let Some(web) = &server.config.web {
            extras = format!(
                " ({}{}, from {})",
                if web.is_tls() { "TLS" } else { "no TLS" },
                if web.requires_basic_auth() {
                    ", basic auth"
                } else {
                    ""
                },
                web.path().display()
            );
        }
        tracing::info!(
            "serving {} on {}://{}{}{extras}",
            server.renderer.path().display(),
            server.scheme(),
            server.local_addr(),
            server.config.telemetry_path
        );
        if let Some(sd) = &server.statsd {
            let c = sd.config();
            tracing::info!(
                "{} to {} every {:?} (datagrams of at most {} bytes{})",
                c.flavor,
                c.address,
                c.interval,
                c.max_datagram,
                if c.prefix.is_empty() {
                    String::new()
                } else {
                    format!(", prefix {}", c.prefix)
                }
            );
        }
        if let Some(rw) = &server.remote_write {
            let c = rw.config();
            for e in &c.endpoints {
                tracing::info!(
                    "remote write to {e} every {:?} (queue of {} batches)",
                    c.interval,
                    c.queue_batches
                );
            }
        }
        if let Some(x) = &server.otlp {
            let c = x.config();
            tracing::info!(
                "otlp export to {} every {:?}, {} temporality (queue of {} batches)",
                c.endpoint,
                c.interval,
                c.temporality,
                c.queue_batches
            );
        }
        server.run(shutdown).await
    })
}

/// Installs the SIGTERM and SIGINT handlers now (in the runtime's
/// context), and returns a future that completes at the first of them.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match handlers {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_negotiation() {
        let h = |s: &'static str| Some(HeaderValue::from_static(s));
        assert!(accepts_gzip(h("gzip").as_ref()));
        assert!(accepts_gzip(h("deflate, gzip;q=0.5").as_ref()));
        assert!(accepts_gzip(h("*").as_ref()));
        assert!(!accepts_gzip(h("gzip;q=0").as_ref()));
        assert!(!accepts_gzip(h("identity").as_ref()));
        assert!(!accepts_gzip(None));
    }
}

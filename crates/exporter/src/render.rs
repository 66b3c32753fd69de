//! Rendering scrapes: one render shared by concurrent scrapes, and the
//! exporter's own metrics.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use shmetrics_core::{Options, PathNow, Snapshot, Store, StoreStats};
use shmetrics_expo::{Escaping, ExtraFamily, Families, Format, Negotiated};

use crate::attach::{Attached, Slot};
use crate::conns::Conns;
use crate::page::{Page, PageWriter, WeakPage, PIECE};
use crate::status::{RecentScrapes, Status};

/// A rendered exposition, shared by the scrapes that asked for it.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The response body (gzip-compressed if asked).
    pub body: Page,
    /// When the render started. A scrape reuses a render that started
    /// after the scrape arrived, so it never gets data older than itself.
    pub started: Instant,
    /// How long it took.
    pub took: Duration,
}

/// A render that the scrapes which waited for it can share, as long as a
/// response still holds its page.
#[derive(Clone, Debug)]
struct Shared {
    body: WeakPage,
    started: Instant,
    took: Duration,
}

impl Shared {
    fn of(r: &Rendered) -> Shared {
        Shared {
            body: r.body.downgrade(),
            started: r.started,
            took: r.took,
        }
    }

    fn upgrade(&self) -> Option<Rendered> {
        Some(Rendered {
            body: self.body.upgrade()?,
            started: self.started,
            took: self.took,
        })
    }
}

/// The exporter's own counters.
#[derive(Debug, Default)]
pub struct SelfStats {
    /// Scrapes of `/metrics` answered.
    pub scrapes: AtomicU64,
    /// Scrapes of `/metrics` answered, by format, in the order of
    /// [`Format::ALL`] (see [`SelfStats::count_scrape`]).
    pub scrapes_by_format: [AtomicU64; 3],
    /// Scrapes that reused a render started for another scrape.
    pub shared_renders: AtomicU64,
    /// Renders done.
    pub renders: AtomicU64,
    /// Time spent rendering, in nanoseconds.
    pub render_nanos: AtomicU64,
    /// Response body bytes sent for `/metrics`.
    pub bytes: AtomicU64,
    /// Connections closed at once because the limit was reached and every
    /// place served a request.
    pub rejected_connections: AtomicU64,
    /// Idle connections (no request head yet) closed to make room for a
    /// new one at the limit.
    pub evicted_connections: AtomicU64,
    /// TLS handshakes that failed or did not finish within the header
    /// timeout (a client without a required certificate, a plain-HTTP
    /// client on an HTTPS port, a stalled client).
    pub tls_handshake_failures: AtomicU64,
    /// The last render's duration in nanoseconds, and its size.
    pub last_render_nanos: AtomicU64,
    /// The last render's size in bytes (uncompressed).
    pub last_render_bytes: AtomicU64,
    /// Store files opened: the first, and each one found at the path in
    /// place of the file served.
    pub attaches: AtomicU64,
    /// The last scrapes, for the status page.
    pub recent: RecentScrapes,
}

impl SelfStats {
    /// Counts a scrape answered in `format`.
    pub fn count_scrape(&self, format: Format) {
        self.scrapes.fetch_add(1, Relaxed);
        let i = Format::ALL.iter().position(|f| *f == format);
        // UNWRAP: `Format::ALL` holds every format.
        self.scrapes_by_format[i.expect("every format is in Format::ALL")].fetch_add(1, Relaxed);
    }
}

struct State {
    /// The store `snap` was taken from: a snapshot is never reused for
    /// another store file.
    served: Option<Arc<Attached>>,
    snap: Snapshot,
    /// When `snap` was last read from the store, and whether no render
    /// has used that read yet (a render reuses it rather than reading
    /// again: [`Renderer::get_for`] read it to negotiate).
    snapped: Option<Instant>,
    fresh_for_render: bool,
    /// When the store was last read, and the read's error if it failed:
    /// what `/healthz` reports (see [`Renderer::check_read`]).
    last_read: Option<(Instant, Option<String>)>,
    /// The last render, with its format, escaping scheme and gzip: only
    /// scrapes already waiting when it started can share it. Its page is
    /// held by the responses sending it, not here: a million series' page
    /// is tens of megabytes that no later scrape would use.
    last: Option<((Format, Escaping, bool), Shared)>,
    /// The status page of the read made at that instant (its families'
    /// cardinality costs a pass over their series).
    status: Option<(Instant, Status)>,
}

/// Renders the store on demand; one render at a time.
///
/// The store may not exist yet: the renderer then attaches to it (opens it
/// read-only) on the first request that finds it, and until then renders
/// only the exporter's own metrics.
#[derive(Debug)]
pub struct Renderer {
    path: PathBuf,
    /// The owner and group the store is expected to have.
    expect: (Option<u32>, Option<u32>),
    /// The store file served, swapped for a new one when the path names
    /// another file (see [`crate::attach`]).
    slot: Mutex<Slot>,
    state: Mutex<State>,
    /// The exporter's own counters.
    pub stats: SelfStats,
    /// The remote-write counters, shown with the exporter's own metrics.
    remote_write: OnceLock<Arc<shmetrics_push::Stats>>,
    /// The StatsD flusher's counters, shown with the exporter's own
    /// metrics.
    statsd: OnceLock<Arc<shmetrics_push::statsd::Stats>>,
    /// The OTLP counters, likewise.
    otlp: OnceLock<Arc<shmetrics_push::otlp::Stats>>,
    /// The server's connection table, shown with the exporter's own
    /// metrics.
    connections: OnceLock<Arc<Conns>>,
    /// Whether the exporter's own metrics go on the telemetry page too
    /// (`--web.exporter-metrics`); they are always on
    /// [`crate::EXPORTER_METRICS_PATH`].
    own_on_page: AtomicBool,
    /// Whether the exporter's own metrics include each family's series
    /// (`--web.family-metrics`).
    family_metrics: AtomicBool,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("series", &self.snap.series_count())
            .finish()
    }
}

impl Renderer {
    /// A renderer over an opened (normally read-only) store.
    pub fn new(store: Store) -> Renderer {
        let r = Renderer::detached(store.path().to_path_buf());
        // Without an identity (fstat failed), the first request finds the
        // path naming "another" file and opens it again.
        let id = store.file_id().unwrap_or((0, 0));
        r.lock_slot().current = Some(Arc::new(Attached::new(store, id)));
        r.stats.attaches.store(1, Relaxed);
        r
    }

    /// A renderer for the store at `path`, not opened yet: it is opened
    /// read-only by [`Renderer::attach`].
    pub fn detached(path: PathBuf) -> Renderer {
        Renderer {
            path,
            expect: (None, None),
            slot: Mutex::new(Slot::default()),
            state: Mutex::new(State {
                served: None,
                snap: Snapshot::default(),
                snapped: None,
                fresh_for_render: false,
                last_read: None,
                last: None,
                status: None,
            }),
            stats: SelfStats::default(),
            remote_write: OnceLock::new(),
            statsd: OnceLock::new(),
            otlp: OnceLock::new(),
            connections: OnceLock::new(),
            own_on_page: AtomicBool::new(false),
            family_metrics: AtomicBool::new(false),
        }
    }

    /// Expects the store to be owned by `owner` or of group `group`
    /// (besides this process's user and root) when it attaches.
    pub fn expecting(mut self, owner: Option<u32>, group: Option<u32>) -> Renderer {
        self.expect = (owner, group);
        self
    }

    /// Shows a remote writer's counters with the exporter's own metrics
    /// (from the next render on). Only the first call has an effect.
    pub fn show_remote_write(&self, stats: Arc<shmetrics_push::Stats>) {
        let _ = self.remote_write.set(stats);
    }

    /// Shows a StatsD flusher's counters with the exporter's own metrics
    /// (from the next render on). Only the first call has an effect.
    pub fn show_statsd(&self, stats: Arc<shmetrics_push::statsd::Stats>) {
        let _ = self.statsd.set(stats);
    }

    /// Shows the OTLP exporter's counters with the exporter's own metrics
    /// (from the next render on). Only the first call has an effect.
    pub fn show_otlp(&self, stats: Arc<shmetrics_push::otlp::Stats>) {
        let _ = self.otlp.set(stats);
    }

    /// Shows the server's open connections with the exporter's own
    /// metrics (from the next render on). Only the first call has an
    /// effect.
    pub(crate) fn show_connections(&self, conns: Arc<Conns>) {
        let _ = self.connections.set(conns);
    }

    /// How many connections hold a place in the server's table now, in
    /// any state (`None` before the server runs): what the
    /// `shmetrics_exporter_connections` gauge shows, summed.
    pub fn open_connections(&self) -> Option<usize> {
        let c = self.connections.get()?.counts();
        Some(c.fresh + c.idle + c.closing + c.serving)
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store, if attached.
    pub fn store(&self) -> Option<Arc<Store>> {
        self.lock_slot().current.as_ref().map(|a| a.store.clone())
    }

    /// Why the served file is no longer the one at the store path (it was
    /// removed, or the file now there cannot be opened); `None` while it
    /// is.
    pub fn stale(&self) -> Option<String> {
        self.lock_slot().stale.clone()
    }

    fn lock_slot(&self) -> MutexGuard<'_, Slot> {
        // UNWRAP: the slot is consistent whenever the lock is released.
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store file to serve: the one attached, unless the path now
    /// names another file, which is then opened (read-only) and served
    /// instead; before the first success, whatever is at the path. Costs
    /// an `fstat` and an `lstat` once attached. On failure, says why (also
    /// printed on stderr when the reason changes).
    pub fn attach(&self) -> Result<Arc<Attached>, String> {
        let mut slot = self.lock_slot();
        if let Some(cur) = slot.current.clone() {
            match cur.store.path_now() {
                PathNow::Same => {
                    slot.stale = None;
                    return Ok(cur);
                }
                PathNow::Gone => {
                    slot.mark_stale(format!(
                        "the served store file {} was removed ({}); serving its last values \
                         until a store is created at that path again",
                        self.path.display(),
                        cur.describe()
                    ));
                    return Ok(cur);
                }
                PathNow::Other => {}
            }
        }
        let options = Options {
            owner: self.expect.0,
            group: self.expect.1,
            ..Options::reader()
        };
        match Attached::open(&self.path, &options) {
            Ok(new) => {
                let new = Arc::new(new);
                self.stats.attaches.fetch_add(1, Relaxed);
                slot.replace(new.clone(), &self.path);
                Ok(new)
            }
            Err(why) => match slot.current.clone() {
                Some(cur) => {
                    slot.mark_stale(format!(
                        "the store path {} names another file, which cannot be opened ({why}); \
                         serving the replaced file's last values",
                        self.path.display()
                    ));
                    Ok(cur)
                }
                None => {
                    slot.mark_error(why.clone());
                    Err(why)
                }
            },
        }
    }

    /// The exposition for a scrape that sent `accept`, in the format
    /// [`shmetrics_expo::negotiate_page`] picks for the store's page (the
    /// text format 0.0.4 when it holds a family with the `text_only` hint
    /// and the scraper accepts it), and what was negotiated. The store is
    /// read first (or a read no older than `arrived` is reused), so that
    /// the choice follows the families on the page served.
    pub fn get_for(
        &self,
        accept: Option<&str>,
        gzip: bool,
        arrived: Instant,
    ) -> Result<(Rendered, Negotiated), shmetrics_core::Error> {
        let text_only = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.snapped.is_none_or(|t| t < arrived) {
                self.refresh(&mut st)?;
            }
            shmetrics_expo::page_text_only(&st.snap)
        };
        let n = shmetrics_expo::negotiate_page(accept, true, text_only);
        Ok((self.get(n.format, n.escaping, gzip, arrived)?, n))
    }

    /// The exposition in `format`, names outside the legacy set written
    /// as `escaping` says, rendered no earlier than `arrived`. Blocks
    /// while another render runs, then reuses it if it is fresh enough.
    /// Call from a blocking thread.
    pub fn get(
        &self,
        format: Format,
        escaping: Escaping,
        gzip: bool,
        arrived: Instant,
    ) -> Result<Rendered, shmetrics_core::Error> {
        // UNWRAP: a poisoned lock means a render panicked; the state is
        // still consistent (it is rebuilt on every render), so carry on.
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let key = (format, escaping, gzip);
        let shared = (st.last.as_ref())
            .filter(|(k, r)| *k == key && r.started >= arrived)
            .and_then(|(_, r)| r.upgrade());
        if let Some(r) = shared {
            self.stats.shared_renders.fetch_add(1, Relaxed);
            return Ok(r);
        }
        // Only scrapes that arrived before a render started can share it,
        // and they wait for it: a render older than this one's start is
        // of no more use. Dropping it keeps at most one page in memory.
        st.last = None;
        let r = self.render(&mut st, format, escaping, gzip)?;
        st.last = Some((key, Shared::of(&r)));
        Ok(r)
    }

    /// Renders the page, compressed as it is rendered if `gzip`: the
    /// uncompressed page is never held whole (see [`crate::page`]).
    fn render(
        &self,
        st: &mut State,
        format: Format,
        escaping: Escaping,
        gzip: bool,
    ) -> Result<Rendered, shmetrics_core::Error> {
        // A read of the store no older than this render's start is used
        // as it is (`get_for` read it for the negotiation).
        let started = Instant::now();
        let attached = if std::mem::take(&mut st.fresh_for_render) {
            st.served.clone()
        } else {
            self.refresh(st)?
        };
        st.fresh_for_render = false;
        let started = st.snapped.unwrap_or(started);
        let own = if self.own_on_page.load(Relaxed) {
            self.own_metrics(
                attached.as_deref().map(|a| (a, st.snap.stats().clone())),
                &st.snap,
            )
        } else {
            Vec::new()
        };
        let mut page = PageWriter::new(gzip);
        let mut plain_bytes = 0;
        shmetrics_expo::encode_chunked(&st.snap, &own, format, escaping, PIECE, &mut |b| {
            plain_bytes += b.len();
            page.take(b);
        });
        let body = page.finish();
        let took = started.elapsed();
        self.stats.renders.fetch_add(1, Relaxed);
        self.stats
            .render_nanos
            .fetch_add(took.as_nanos() as u64, Relaxed);
        self.stats
            .last_render_nanos
            .store(took.as_nanos() as u64, Relaxed);
        self.stats
            .last_render_bytes
            .store(plain_bytes as u64, Relaxed);
        Ok(Rendered {
            body,
            started,
            took,
        })
    }

    /// The memory the kept snapshot of the store holds (see
    /// [`Snapshot::heap_bytes`]).
    pub fn snapshot_bytes(&self) -> usize {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.snap.heap_bytes()
    }

    /// Gives back the memory of the store's snapshot, then the
    /// allocator's free memory (see [`shmetrics_core::trim_heap`]), once
    /// no page was asked for in `idle` (the pages themselves went with
    /// their responses). Returns whether it did. The next scrape reads
    /// the store whole again: about as long as the first scrape, which a
    /// scraper that paused for longer than `idle` can afford, and a
    /// million series' snapshot is some 100 MB that nobody uses until
    /// then.
    pub fn release_idle(&self, idle: Duration) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st
            .last
            .as_ref()
            .is_none_or(|(_, r)| r.started.elapsed() < idle)
        {
            return false;
        }
        st.last = None;
        st.snap = Snapshot::default();
        st.snapped = None;
        st.fresh_for_render = false;
        st.status = None;
        drop(st);
        shmetrics_core::trim_heap();
        true
    }

    /// Whether the store can be read as a scrape reads it (a snapshot):
    /// the outcome of the last read, a scrape's or this check's, if it
    /// is no older than `max_age`, else of a read made now. The error is
    /// the one a scrape answers with. Call from a blocking thread.
    pub fn check_read(&self, max_age: Duration) -> Result<(), String> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, outcome)) = &st.last_read {
            if at.elapsed() <= max_age {
                return outcome.clone().map_or(Ok(()), Err);
            }
        }
        // The read records its outcome in `last_read`.
        let _ = self.refresh(&mut st);
        match &st.last_read {
            Some((_, Some(why))) => Err(why.clone()),
            _ => Ok(()),
        }
    }

    /// Puts the exporter's own metrics on the telemetry page too (off by
    /// default: a page holds only what the applications registered).
    pub fn exporter_metrics_on_page(&self, on: bool) {
        self.own_on_page.store(on, Relaxed);
    }

    /// Adds each family's series count to the exporter's own metrics
    /// (off by default).
    pub fn family_metrics(&self, on: bool) {
        self.family_metrics.store(on, Relaxed);
    }

    /// The page of [`crate::EXPORTER_METRICS_PATH`]: the exporter's and
    /// (once attached) the store's own metrics alone, the store's figures
    /// read at once (no snapshot of the series, unless the family metrics
    /// are on: then the store is read as a scrape reads it).
    pub fn exporter_page(&self, format: Format, escaping: Escaping) -> Vec<u8> {
        let attached = self.attach().ok();
        let stats = attached.as_deref().map(|a| (a, a.store.stats()));
        let mut out = Vec::with_capacity(8 << 10);
        let empty = Snapshot::default();
        if !self.family_metrics.load(Relaxed) {
            let own = self.own_metrics(stats, &empty);
            shmetrics_expo::encode_escaped(&empty, &own, format, escaping, &mut out);
            return out;
        }
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // A failed read leaves the last snapshot: its counts are shown.
        let _ = self.refresh(&mut st);
        let own = self.own_metrics(stats, &st.snap);
        shmetrics_expo::encode_escaped(&empty, &own, format, escaping, &mut out);
        out
    }

    /// Reads the store into `st.snap` (not attached: the snapshot stays
    /// empty). Returns the file read.
    fn refresh(&self, st: &mut State) -> Result<Option<Arc<Attached>>, shmetrics_core::Error> {
        let started = Instant::now();
        let attached = self.attach().ok();
        if let Some(a) = &attached {
            if !st.served.as_ref().is_some_and(|s| Arc::ptr_eq(s, a)) {
                // Another file: a fresh snapshot, nothing carried over.
                st.snap = Snapshot::default();
                st.served = Some(a.clone());
            }
            let read = a.store.snapshot_into(&mut st.snap);
            st.last_read = Some((started, read.as_ref().err().map(ToString::to_string)));
            read?;
        }
        st.snapped = Some(started);
        st.fresh_for_render = true;
        Ok(attached)
    }

    /// The exporter's and (once attached) the store's own metrics, under
    /// `shmetrics_`.
    fn own_metrics<'a>(
        &'a self,
        served: Option<(&'a Attached, StoreStats)>,
        snap: &'a Snapshot,
    ) -> Vec<ExtraFamily<'a>> {
        let mut f = Families::default();
        let b = &crate::BUILD_INFO;
        f.gauge(
            "shmetrics_build_info",
            "1, labelled with the exporter's version, the git revision it was built from and the Rust compiler that built it.",
        )
        .sample(
            &[
                ("version", b.version),
                ("revision", b.revision),
                ("rustc", b.rustc),
            ],
            1.0,
        );
        self.exporter_metrics(&mut f);
        f.gauge(
            "shmetrics_exporter_snapshot_bytes",
            "Memory the exporter's copy of the store's contents holds between scrapes (its buffers' capacity).",
        )
        .value(snap.heap_bytes() as f64);
        f.gauge(
            "shmetrics_store_attached",
            "1 once the store file has been opened; 0 while it does not exist yet or cannot be opened (see /healthz).",
        )
        .value(if served.is_some() { 1.0 } else { 0.0 });
        if let Some(rw) = self.remote_write.get() {
            f.extend(rw.families());
        }
        if let Some(sd) = self.statsd.get() {
            f.extend(sd.families());
        }
        if let Some(x) = self.otlp.get() {
            f.extend(x.families());
        }
        if let Some((att, snap)) = served {
            self.file_metrics(&mut f, att);
            Self::store_metrics(&mut f, &snap);
        }
        if self.family_metrics.load(Relaxed) {
            Self::family_metrics_of(&mut f, snap);
        }
        self.connection_metrics(&mut f);
        f.into_vec()
    }

    /// Each family's series and overflows (`--web.family-metrics`).
    fn family_metrics_of<'a>(f: &mut Families<'a>, snap: &'a Snapshot) {
        let mut series = f.gauge(
            "shmetrics_family_series",
            "Series of each family in the store, its overflow series included (--web.family-metrics).",
        );
        for fam in snap.families() {
            series = series.sample(&[("family", fam.name())], fam.series().len() as f64);
        }
        let mut overflows = f.counter(
            "shmetrics_family_overflows",
            "New label sets of each family sent to its overflow series (--web.family-metrics).",
        );
        for fam in snap.families() {
            overflows = overflows.sample(&[("family", fam.name())], fam.overflows() as f64);
        }
    }

    /// The exporter's scrape, render and connection-refusal counts.
    fn exporter_metrics<'a>(&'a self, f: &mut Families<'a>) {
        let s = &self.stats;
        let n = |v: &AtomicU64| v.load(Relaxed) as f64;
        f.counter(
            "shmetrics_exporter_scrapes",
            "Scrapes of /metrics answered.",
        )
        .value(n(&s.scrapes));
        let by_format: Vec<(&str, f64)> = Format::ALL
            .iter()
            .zip(&s.scrapes_by_format)
            .map(|(f, c)| (f.name(), n(c)))
            .collect();
        f.counter(
            "shmetrics_exporter_scrapes_by_format",
            "Scrapes of /metrics answered, by the format negotiated (text, openmetrics, protobuf).",
        )
        .by(&[], "format", &by_format);
        f.counter(
            "shmetrics_exporter_renders",
            "Renders of the exposition; concurrent scrapes share one.",
        )
        .value(n(&s.renders));
        f.counter(
            "shmetrics_exporter_render_seconds",
            "Time spent rendering the exposition.",
        )
        .value(n(&s.render_nanos) / 1e9);
        f.counter(
            "shmetrics_exporter_response_bytes",
            "Bytes of /metrics responses sent.",
        )
        .value(n(&s.bytes));
        f.counter(
            "shmetrics_exporter_rejected_connections",
            "Connections closed at once because the connection limit was reached.",
        )
        .value(n(&s.rejected_connections));
        f.counter(
            "shmetrics_exporter_tls_handshake_failures",
            "TLS handshakes that failed or timed out (0 without TLS).",
        )
        .value(n(&s.tls_handshake_failures));
        f.gauge(
            "shmetrics_exporter_last_render_seconds",
            "Duration of the last render.",
        )
        .value(n(&s.last_render_nanos) / 1e9);
    }

    /// Which store file is served, since when, and whether the path still
    /// names it.
    fn file_metrics<'a>(&'a self, f: &mut Families<'a>, att: &'a Attached) {
        f.gauge(
            "shmetrics_store_file_info",
            "The store file served, by device and inode; the path is followed when it names another file.",
        )
        .sample(&[("device", &att.device), ("inode", &att.inode)], 1.0);
        f.gauge(
            "shmetrics_store_attached_since_seconds",
            "When the store file served was opened, in Unix time.",
        )
        .value(att.since);
        f.gauge(
            "shmetrics_store_file_removed",
            "1 when the store path no longer names the file served (removed, or replaced by a file that cannot be opened; see /healthz).",
        )
        .value(if self.stale().is_some() { 1.0 } else { 0.0 });
        f.counter(
            "shmetrics_store_attaches",
            "Store files opened: the first, then each new file found at the store path.",
        )
        .value(self.stats.attaches.load(Relaxed) as f64);
    }

    /// The store's own metrics: its capacity, writers and events.
    fn store_metrics(f: &mut Families<'_>, st: &StoreStats) {
        f.capacities(
            &[],
            &[
                (
                    "shmetrics_store_families",
                    "Families registered, and the store's capacity.",
                    st.families as f64,
                    st.families_capacity as f64,
                ),
                (
                    "shmetrics_store_series",
                    "Series allocated (overflow and deleted series included), and the store's capacity.",
                    st.series_allocated as f64,
                    st.series_capacity as f64,
                ),
                (
                    "shmetrics_store_label_bytes",
                    "Bytes of names and label values used, and the store's capacity.",
                    st.label_bytes_used as f64,
                    st.label_bytes_capacity as f64,
                ),
            ],
        );
        let writers = [
            ("live", st.writers_live as f64),
            ("dead", st.writers_dead as f64),
            ("capacity", st.writers_capacity as f64),
        ];
        f.gauge(
            "shmetrics_store_writers",
            "Writer slots by state: live processes, dead ones awaiting reuse, and capacity.",
        )
        .by(&[], "state", &writers);
        f.counters(
            &[],
            &[
                (
                    "shmetrics_store_writer_claims",
                    "Writer slots claimed by processes.",
                    st.writer_claims_total as f64,
                ),
                (
                    "shmetrics_store_writer_reuses",
                    "Claims that reused a dead process's slot.",
                    st.writer_reuses_total as f64,
                ),
                (
                    "shmetrics_store_writers_exhausted",
                    "Processes that found no free writer slot and shared the spare one.",
                    st.writers_exhausted_total as f64,
                ),
                (
                    "shmetrics_store_overflows",
                    "New label sets sent to an overflow series.",
                    st.overflows_total as f64,
                ),
                (
                    "shmetrics_store_lock_recoveries",
                    "Times a process died holding the store lock and the store was repaired.",
                    st.lock_recoveries_total as f64,
                ),
                (
                    "shmetrics_store_series_expired",
                    "Series of families with a TTL that expired and gave their space back.",
                    st.series_expired_total as f64,
                ),
            ],
        );
    }

    /// The open connections, by state, and the idle ones closed to make
    /// room (none before the server runs).
    fn connection_metrics(&self, f: &mut Families<'_>) {
        let Some(conns) = self.connections.get() else {
            return;
        };
        let counts = conns.counts();
        f.gauge(
            "shmetrics_exporter_connections",
            "Open connections: not read from yet, idle (waiting for a request head), \
             closing to make room, serving a request; and the limit.",
        )
        .by(
            &[],
            "state",
            &[
                ("fresh", counts.fresh as f64),
                ("idle", counts.idle as f64),
                ("closing", counts.closing as f64),
                ("serving", counts.serving as f64),
                ("capacity", conns.limit() as f64),
            ],
        );
        f.counter(
            "shmetrics_exporter_evicted_connections",
            "Idle connections closed to make room for a new one at the connection limit.",
        )
        .value(self.stats.evicted_connections.load(Relaxed) as f64);
    }

    /// The status page's content, from the snapshot scrapes render from:
    /// the last read if it is at most `max_age` old, else a read made now.
    /// The families' cardinality is worked out once per read. Call from a
    /// blocking thread.
    pub(crate) fn status(&self, max_age: Duration) -> Status {
        let served = match self.attach() {
            Ok(served) => served,
            Err(why) => return Status::not_attached(&self.path, why),
        };
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.snapped.is_none_or(|t| t.elapsed() > max_age) {
            if let Err(e) = self.refresh(&mut st) {
                return Status::not_attached(&self.path, format!("cannot read the store: {e}"));
            }
        }
        let snapped = st.snapped;
        let mut status = match st.status.take().filter(|(at, _)| Some(*at) == snapped) {
            Some((_, status)) => status,
            None => Status::from_snapshot(&self.path, &st.snap),
        };
        status.read_at = snapped.map(|t| SystemTime::now() - t.elapsed());
        status.stale = self.stale();
        status.served = served.describe();
        status.push = self.push_lines();
        status.scrapes = self.stats.recent.list();
        status.renders = self.stats.renders.load(Relaxed);
        status.scrapes_total = self.stats.scrapes.load(Relaxed);
        if let Some(at) = snapped {
            st.status = Some((at, status.clone()));
        }
        status
    }

    /// One line per push target: remote write endpoints, StatsD, OTLP.
    fn push_lines(&self) -> Vec<(&'static str, String)> {
        let mut lines = Vec::new();
        if let Some(rw) = self.remote_write.get() {
            for e in rw.endpoints() {
                lines.push(("remote write", e.status_line("samples", None)));
            }
        }
        if let Some(sd) = self.statsd.get() {
            lines.push((
                "statsd",
                format!(
                    "{} flushes: {} datagrams, {} lines, {} bytes sent; {} send errors",
                    sd.flushes.load(Relaxed),
                    sd.datagrams_sent.load(Relaxed),
                    sd.lines_sent.load(Relaxed),
                    sd.bytes_sent.load(Relaxed),
                    sd.send_errors.load(Relaxed),
                ),
            ));
        }
        if let Some(x) = self.otlp.get() {
            lines.push(("otlp", x.status_line()));
        }
        lines
    }
}

/// The pusher reads the store through the renderer, so that it attaches
/// to it the same way (read-only, once it exists).
impl shmetrics_push::Source for Renderer {
    fn refresh(&self, snap: &mut Snapshot) -> Result<bool, shmetrics_core::Error> {
        match self.attach() {
            Ok(served) => served.store.snapshot_into(snap).map(|()| true),
            Err(_) => Ok(false),
        }
    }
}

//! The connection table: which connections are open, and in which state:
//! fresh (accepted, not read from yet), idle (a read found no complete
//! request head: silent, in the TLS handshake, or sending its head
//! slowly), or serving a request.
//!
//! The limit is on open connections. When it is reached, a new
//! connection still gets in: the idle connection that has waited longest
//! is closed to make room. A scrape sends its request head as soon as it
//! connects, so it is usually read whole on the first read and never idle:
//! a flood of idle or half-sent connections makes room for it instead of
//! starving it. Only when no connection is idle is a new one refused.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Open connections, by state, up to a limit.
#[derive(Debug)]
pub(crate) struct Conns {
    limit: usize,
    inner: Mutex<Inner>,
    /// Signalled when a connection stops being fresh.
    fresh_left: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    /// The next number to give a connection that starts waiting: numbers
    /// grow with time, so the first idle entry has waited longest.
    next: u64,
    /// Connections not read from yet: a scrape's request head is usually
    /// there by then, so they cannot be closed to make room until the
    /// server has tried to read it.
    fresh: usize,
    /// Idle connections, by when they started waiting, with the signal
    /// that closes them.
    idle: BTreeMap<u64, Arc<Notify>>,
    /// Connections serving a request.
    busy: usize,
    /// Idle connections told to close whose task has not ended yet.
    closing: usize,
}

impl Inner {
    /// Connections open, those told to close aside.
    fn open(&self) -> usize {
        self.fresh + self.idle.len() + self.busy
    }
}

/// A connection's state in the table.
const FRESH: u8 = 0;
const IDLE: u8 = 1;
const BUSY: u8 = 2;

/// What [`Conns::admit`] decided.
#[derive(Debug)]
pub(crate) enum Admission {
    /// In, as a fresh connection.
    Admitted {
        /// The connection's place.
        slot: Slot,
        /// Whether an older idle connection was told to close for it.
        evicted: bool,
    },
    /// Every place serves a request or has not been read from yet: the
    /// connection must be closed.
    Refused,
}

/// A connection's place in the table, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    conns: Arc<Conns>,
    /// [`FRESH`], [`IDLE`] or [`BUSY`]; changed under the table's lock.
    state: AtomicU8,
    /// Its key in `idle`, once it waits.
    key: AtomicU64,
    evict: Arc<Notify>,
}

impl Conns {
    /// A table of at most `limit` open connections (at least one).
    pub(crate) fn new(limit: usize) -> Arc<Conns> {
        Arc::new(Conns {
            limit: limit.max(1),
            inner: Mutex::default(),
            fresh_left: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // UNWRAP: nothing panics while holding the lock; if it did, the
        // table would still be consistent (each change is one step).
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a new connection, closing the idle one that has waited
    /// longest if the table is full. With none idle, it still admits up
    /// to [`Conns::fresh_allowance`] connections not read from yet over
    /// the limit (the first of them to be found waiting is then closed),
    /// and refuses beyond.
    pub(crate) fn admit(self: &Arc<Conns>) -> Admission {
        let mut inner = self.lock();
        let full = inner.open() >= self.limit;
        let evicted = full && Self::evict_oldest_locked(&mut inner);
        // Those told to close are not counted: they are about to go, and
        // counting them would turn a flood into refused scrapes whenever
        // their tasks lag behind. The limit on open files bounds them.
        if full && !evicted && inner.open() >= self.limit + self.fresh_allowance() {
            return Admission::Refused;
        }
        inner.fresh += 1;
        let slot = Slot {
            conns: self.clone(),
            state: AtomicU8::new(FRESH),
            key: AtomicU64::new(0),
            evict: Arc::new(Notify::new()),
        };
        Admission::Admitted { slot, evicted }
    }

    /// Waits until fewer than [`Conns::fresh_allowance`] connections are
    /// fresh. The accept loop calls it before accepting: when connections
    /// are accepted faster than they are read from, new ones wait in the
    /// kernel's queue (a scrape among them is only delayed) instead of
    /// piling up unread, or being refused.
    pub(crate) async fn room_to_read(&self) {
        loop {
            // Registered before the check: a change after it wakes us.
            let changed = self.fresh_left.notified();
            if self.lock().fresh < self.fresh_allowance() {
                return;
            }
            changed.await;
        }
    }

    /// Closes the idle connection that has waited longest, if there is
    /// one (to free a file descriptor when the process has none left).
    /// Returns whether it did.
    pub(crate) fn evict_oldest(&self) -> bool {
        let mut inner = self.lock();
        Self::evict_oldest_locked(&mut inner)
    }

    fn evict_oldest_locked(inner: &mut Inner) -> bool {
        let Some((_, evict)) = inner.idle.pop_first() else {
            return false;
        };
        // Counted until its task has dropped the slot.
        inner.closing += 1;
        // `notify_one` stores the wake-up if the task is not waiting yet.
        evict.notify_one();
        true
    }

    /// The most connections open at once, those not read from yet aside.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// How many connections not read from yet may be open over the limit:
    /// a quarter of it (at least one).
    pub(crate) fn fresh_allowance(&self) -> usize {
        (self.limit / 4).max(1)
    }

    /// Connections open, by state.
    pub(crate) fn counts(&self) -> Counts {
        let inner = self.lock();
        Counts {
            fresh: inner.fresh,
            idle: inner.idle.len(),
            closing: inner.closing,
            serving: inner.busy,
        }
    }
}

/// Connections open, by state (see [`Conns::counts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Not read from yet.
    pub(crate) fresh: usize,
    /// Waiting for (the rest of) a request head.
    pub(crate) idle: usize,
    /// Told to close to make room, not closed yet.
    pub(crate) closing: usize,
    /// Serving a request.
    pub(crate) serving: usize,
}

impl Slot {
    /// A read found no data: from now on the connection is idle, and may
    /// be closed to make room. Cheap after the first call.
    pub(crate) fn mark_waiting(&self) {
        if self.state.load(Relaxed) != FRESH {
            return;
        }
        let mut inner = self.conns.lock();
        if self.state.load(Relaxed) == FRESH {
            inner.fresh -= 1;
            self.conns.fresh_left.notify_waiters();
            let key = inner.next;
            inner.next += 1;
            inner.idle.insert(key, self.evict.clone());
            self.key.store(key, Relaxed);
            self.state.store(IDLE, Relaxed);
            // Admitted over the limit: it may now be closed itself, if
            // no other idle connection has waited longer.
            if inner.open() > self.conns.limit {
                Conns::evict_oldest_locked(&mut inner);
            }
        }
    }

    /// The connection has received its request head: from now on it
    /// keeps its place.
    pub(crate) fn mark_busy(&self) {
        let mut inner = self.conns.lock();
        // Otherwise busy already, or told to close.
        if self.leave_fresh_or_idle(&mut inner) {
            inner.busy += 1;
            self.state.store(BUSY, Relaxed);
        }
    }

    /// Takes the connection out of the fresh count or the idle map, if it
    /// is in one of them; says whether it was.
    fn leave_fresh_or_idle(&self, inner: &mut Inner) -> bool {
        match self.state.load(Relaxed) {
            FRESH => {
                inner.fresh -= 1;
                self.conns.fresh_left.notify_waiters();
                true
            }
            IDLE => inner.idle.remove(&self.key.load(Relaxed)).is_some(),
            _ => false,
        }
    }

    /// Completes when the connection is chosen to be closed.
    pub(crate) async fn evicted(&self) {
        self.evict.notified().await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.conns.lock();
        if !self.leave_fresh_or_idle(&mut inner) {
            match self.state.load(Relaxed) {
                IDLE => inner.closing -= 1, // told to close
                _ => inner.busy -= 1,
            }
        }
    }
}

/// A connection's stream, which tells its slot when a read finds no data.
#[derive(Debug)]
pub(crate) struct Watched<S> {
    stream: S,
    slot: Arc<Slot>,
}

impl<S> Watched<S> {
    pub(crate) fn new(stream: S, slot: Arc<Slot>) -> Watched<S> {
        Watched { stream, slot }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if polled.is_pending() {
            self.slot.mark_waiting();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// File descriptors kept for other uses than connections: the listener,
/// the store, standard streams, push sockets, files read at start.
const RESERVED_FDS: u64 = 64;

/// Raises the soft limit on open files to the hard limit, so that the
/// connection limit is not cut short by a low default (often 1024).
/// Returns the soft limit now in force (`None`: unlimited).
pub(crate) fn raise_open_files_limit() -> std::io::Result<Option<u64>> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        setrlimit(Resource::Nofile, limit)?;
    }
    Ok(getrlimit(Resource::Nofile).current)
}

/// The highest connection limit this process can honour with its current
/// limit on open files: after [`RESERVED_FDS`], the limit and its
/// [`Conns::fresh_allowance`] (a quarter more) must fit.
pub(crate) fn connection_budget() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    soft.map_or(usize::MAX, |n| {
        let fds = n.saturating_sub(RESERVED_FDS);
        usize::try_from((fds / 5 * 4).max(1)).unwrap_or(usize::MAX)
    })
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use super::*;

    /// (fresh, idle or closing; serving).
    fn counts(conns: &Conns) -> (usize, usize) {
        let c = conns.counts();
        (c.fresh + c.idle + c.closing, c.serving)
    }

    fn admitted(conns: &Arc<Conns>) -> Slot {
        match conns.admit() {
            Admission::Admitted { slot, .. } => slot,
            Admission::Refused => panic!("refused with {:?} open", conns.counts()),
        }
    }

    /// A slot admitted and found waiting.
    fn waiting(conns: &Arc<Conns>) -> Slot {
        let slot = admitted(conns);
        slot.mark_waiting();
        slot
    }

    /// Whether the slot has been told to close (without waiting).
    fn is_evicted(slot: &Slot) -> bool {
        let fut = slot.evicted();
        let mut fut = std::pin::pin!(fut);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        fut.as_mut().poll(&mut cx).is_ready()
    }

    #[test]
    fn a_full_table_closes_the_connection_that_waited_longest() {
        let conns = Conns::new(3);
        let a = admitted(&conns);
        let b = waiting(&conns);
        let c = waiting(&conns);
        a.mark_waiting(); // a waits after b and c
        assert_eq!(counts(&conns), (3, 0));
        let d = admitted(&conns);
        assert!(is_evicted(&b), "the one that waited longest goes first");
        assert!(!is_evicted(&a) && !is_evicted(&c) && !is_evicted(&d));
        // `b` keeps its place until its task drops it.
        assert_eq!(counts(&conns), (4, 0));
        drop(b);
        assert_eq!(counts(&conns), (3, 0));
        let Admission::Admitted { slot: _e, evicted } = conns.admit() else {
            panic!("refused");
        };
        assert!(evicted && is_evicted(&c));
    }

    #[test]
    fn fresh_and_busy_connections_are_never_closed_to_make_room() {
        let conns = Conns::new(2);
        let a = waiting(&conns);
        a.mark_busy();
        let b = waiting(&conns);
        let c = admitted(&conns);
        assert!(is_evicted(&b), "the idle one goes, not the older busy one");
        assert!(!is_evicted(&a));
        drop(b);
        // `c` has not been read from: it may hold a request head. A
        // fourth is let in over the limit, unread, until it is found
        // waiting: then the one that waited longest goes.
        let d = admitted(&conns);
        assert!(matches!(conns.admit(), Admission::Refused));
        assert!(!conns.evict_oldest());
        c.mark_waiting();
        d.mark_waiting();
        assert!(is_evicted(&c) && !is_evicted(&d));
        drop(c);
        d.mark_busy();
        assert_eq!(counts(&conns), (0, 2));
        // Every place serves a request: one more may come in unread.
        let e = admitted(&conns);
        assert!(matches!(conns.admit(), Admission::Refused));
        e.mark_busy();
        drop((a, d));
        assert_eq!(counts(&conns), (0, 1));
        let f = waiting(&conns);
        assert_eq!(counts(&conns), (1, 1));
        assert!(conns.evict_oldest() && is_evicted(&f));
        drop((e, f));
        assert_eq!(counts(&conns), (0, 0));
    }

    #[test]
    fn an_evicted_connection_that_got_its_head_meanwhile_stays_counted_once() {
        let conns = Conns::new(1);
        let a = waiting(&conns);
        let b = admitted(&conns);
        a.mark_busy(); // too late: already told to close
        a.mark_waiting();
        assert_eq!(counts(&conns), (2, 0));
        drop(a);
        drop(b);
        assert_eq!(counts(&conns), (0, 0));
    }
}

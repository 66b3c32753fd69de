//! Updates through a [`Series`] handle: the hot path.
//!
//! Each update is one or two atomic read-modify-writes on cells in this
//! process's writer slot. No lock, no system call, no allocation (errors
//! aside, which are cold).

use std::sync::atomic::{
    AtomicU64,
    Ordering::{Relaxed, Release, SeqCst},
};

use crate::error::{expired, Error, ErrorKind, Result};
use crate::exemplar;
use crate::model::{GaugeMode, Kind};
use crate::native;
use crate::proc;
use crate::shm;
use crate::store::{Series, Store};
use crate::window;

/// Adds `v` to an f64 stored as bits. A compare-and-swap loop: std has no
/// atomic f64, and no crate offers a float add on a cell we do not own.
#[inline]
fn add_f64(cell: &AtomicU64, v: f64) {
    let mut cur = cell.load(Relaxed);
    loop {
        let new = (f64::from_bits(cur) + v).to_bits();
        match cell.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(seen) => cur = seen,
        }
    }
}

/// The index of the first bound `>= v`, or `bounds.len()`. For the usual
/// dozen buckets a branch-free count (which the compiler vectorises) beats
/// a binary search, whose branches mispredict on spread-out values.
#[inline]
fn bucket_index(bounds: &[f64], v: f64) -> usize {
    if bounds.len() <= 32 {
        bounds.iter().map(|b| usize::from(*b < v)).sum()
    } else {
        bounds.partition_point(|b| *b < v)
    }
}

#[cold]
#[inline(never)]
fn nan_error(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidValue,
        format!(
            "{what} NaN: one NaN would make the series NaN for good once merged across processes"
        ),
    )
}

/// The file system refused the page that an update's sketch cells (or
/// exemplar record) needed first; `lost` says what was not recorded. As
/// for registration (`store/space.rs`), what is stored stays as it was.
#[cold]
#[inline(never)]
fn no_room(store: &Store, what: &str, lost: &str, err: &std::io::Error) -> Error {
    Error::new(
        ErrorKind::StoreFull,
        format!(
            "the file system holding the store has no room for a page of this series' {what} \
             ({err}): {lost}. Free space there, make it larger, or put the store elsewhere"
        ),
    )
    .with_path(store.path())
}

/// Why a counter refuses `v` (NaN, negative or `+Inf`).
#[cold]
#[inline(never)]
fn counter_amount_error(v: f64) -> Error {
    if v.is_nan() {
        return nan_error("a counter cannot be increased by");
    }
    let why = if v == f64::INFINITY {
        "one +Inf would make the series infinite for good"
    } else {
        "a counter only goes up"
    };
    Error::new(ErrorKind::InvalidValue, format!("{why}; got {v}"))
}

/// `[kind]` as a static slice, for [`handle_error`]: a slice of a local
/// would need a stack slot on the update path, and with it a stack frame.
#[inline(always)]
fn only(kind: Kind) -> &'static [Kind] {
    match kind {
        Kind::Counter => &[Kind::Counter],
        Kind::Gauge => &[Kind::Gauge],
        Kind::Histogram => &[Kind::Histogram],
        Kind::Summary => &[Kind::Summary],
    }
}

/// What [`handle_error`] reads of a handle: passed in registers, so that
/// no update writes its handle to the stack for the cold call.
#[derive(Clone, Copy)]
struct Who {
    kind: Kind,
    tag: u32,
    epoch: u32,
}

#[inline(always)]
fn who(s: &Series) -> Who {
    Who {
        kind: s.kind,
        tag: s.tag,
        epoch: s.epoch,
    }
}

#[cold]
#[inline(never)]
fn handle_error(store: &Store, s: Who, want: &[Kind]) -> Error {
    if !want.contains(&s.kind) {
        let want: Vec<&str> = want.iter().map(|k| k.as_str()).collect();
        return Error::new(
            ErrorKind::WrongType,
            format!(
                "this operation is for a {}, the series is a {}",
                want.join(" or "),
                s.kind.as_str()
            ),
        );
    }
    if s.tag != store.tag {
        return Error::new(
            ErrorKind::StaleHandle,
            "the series handle belongs to another Store",
        );
    }
    if s.epoch != store.epoch() {
        return Error::new(
            ErrorKind::StaleHandle,
            "the store was wiped after this series handle was made; look the series up again",
        );
    }
    Error::new(
        ErrorKind::Corrupt,
        "the series handle points outside the store",
    )
    .with_path(store.path())
}

/// Integral increments below this go to the integer cell with `fetch_add`;
/// an f64 holds every integer up to 2^53 exactly.
const EXACT_INT_LIMIT: f64 = 9_007_199_254_740_992.0;

/// One series' cells in this process's slot region.
///
/// The region is a [`shm::Region`], not a slice: a `Result<Cells>` would
/// otherwise use the slice's non-null pointer as its tag, and every
/// update would test the pointer for null, which LLVM cannot prove it is
/// not.
struct Cells<'a> {
    /// The slot the cells are in.
    slot: u32,
    region: shm::Region<'a>,
    int_off: usize,
    float_off: usize,
}

impl<'a> Cells<'a> {
    /// The slot's cells.
    #[inline(always)]
    fn region(&self) -> &'a [AtomicU64] {
        self.region.cells()
    }

    /// Integer cell `i` of the series; `cells_checked` made sure every
    /// one of the series' cells is in the region.
    #[inline]
    fn int(&self, i: usize) -> &'a AtomicU64 {
        &self.region()[self.int_off + i]
    }

    /// The series' (first) float cell.
    #[inline]
    fn float(&self) -> &'a AtomicU64 {
        &self.region()[self.float_off]
    }
}

/// An update's write into its series' cells in a slot (`own`).
type Write = fn(&Store, &Series, f64, u32) -> Result<()>;

/// Releases a slot's pin (see `ttl.rs`) when an update of a TTL series
/// is done, whichever way it ends.
struct Pin<'a>(&'a AtomicU64);

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Release);
    }
}

/// In a handle's `ttl_cell`: the update is running inside
/// [`Store::ttl_update`], which pinned the slot already.
const PINNED: u32 = 1 << 31;

impl Store {
    /// Claims the slot this process writes to, the first time (and after
    /// a fork), finds the cells of `s` there (`Store::resolve`), then
    /// makes update `write` of `s` there: the cold path of a handle made
    /// for another slot or process (or for none). Out of line, and the
    /// update's path only tail-calls it: that path keeps no stack frame.
    /// Each update calls its write (`counter_add_own`, ...), a function
    /// forced inline, on that path, and passes it here as a function
    /// pointer. Not a closure that a `with_slot` runs on both paths: a
    /// closure (or the `FnOnce` shim of a function passed as one) is one
    /// function shared by every copy of the update, which LLVM kept out
    /// of line once the update had several callers (the C ABI's fast and
    /// full paths, its cache), with the handle written to the stack for
    /// the call: about 30 instructions per update
    /// (`crates/ffi/benches/hotpath.sh`).
    #[cold]
    #[inline(never)]
    fn claim_then(&self, s: Series, v: f64, write: Write) -> Result<()> {
        let (s, own) = self.own_series(&s)?;
        write(self, &s, v, own)
    }

    /// `s` with its cells in this process's slot, and the slot: `s`
    /// itself when it was made for them.
    #[inline]
    fn own_series(&self, s: &Series) -> Result<(Series, u32)> {
        if let Some(own) = self.slot_of(s) {
            return Ok((*s, own));
        }
        let own = self.claim_for(who(s), s.id, s.live)?;
        Ok((self.resolve(s, own)?, own))
    }

    /// Whether updates through `s` take the fast path in this process:
    /// whether it was placed for the slot this process writes through.
    /// A handle made before a `fork()` is not, in the child.
    #[inline]
    pub fn is_placed(&self, s: &Series) -> bool {
        self.slot_of(s).is_some()
    }

    /// `s` placed for this process ([`Store::is_placed`]): `s` itself if
    /// it is, else the same series with its cells in this process's slot,
    /// claimed now if need be (a handle made before a fork, in the child).
    /// When the store cannot place it (a read-only store, a stale handle,
    /// a slot with no room for the series' block), `s` as it is, whose
    /// updates then report why. See [`crate::PlacedSeries`] for a handle
    /// shared between threads.
    pub fn placed(&self, s: Series) -> Series {
        if self.is_placed(&s) || !self.map.writable() {
            return s;
        }
        self.own_series(&s).map_or(s, |(placed, _)| placed)
    }

    /// The slot to write `s` through, claimed now: the update's first in
    /// this process (or since a fork).
    #[cold]
    #[inline(never)]
    fn claim_for(&self, s: Who, id: u32, live: u32) -> Result<u32> {
        // The handle's own checks first, as on the update path: a handle
        // of another store, or a stale one, fails as such, not as an
        // update of a read-only store.
        if s.tag != self.tag || s.epoch != self.map.header().hot.epoch.load(Relaxed) as u32 {
            return Err(handle_error(self, s, only(s.kind)));
        }
        if self.map.series_state(id, Relaxed) != Some(live) {
            return Err(expired());
        }
        self.slot()
    }

    /// The cells of `s` in the slot this process writes to, `own`.
    ///
    /// This and the two below are forced inline: with a plain `#[inline]`,
    /// LLVM kept them out of line once the state word check was added, a
    /// call per update that cost `counter_inc` about 30 instructions
    /// (`benches/hotpath.rs`).
    #[inline(always)]
    fn cells_of(&self, s: &Series, want: Kind, own: u32) -> Result<Cells<'_>> {
        if s.kind != want || s.tag != self.tag {
            return Err(handle_error(self, who(s), only(want)));
        }
        self.cells_checked(s, own)
    }

    #[inline(always)]
    fn cells_checked(&self, s: &Series, own: u32) -> Result<Cells<'_>> {
        // Handles made by `Store::series` always pass; a forged one (through
        // the C ABI, say) gets an error here rather than a panic below.
        // (Native histograms check their cells in `observe_native`.)
        let ints = match s.kind {
            Kind::Histogram => s.n_bounds as usize + 1,
            Kind::Summary if s.window.age_buckets != 0 => {
                1 + window::header_cells(s.window.age_buckets as usize)
            }
            _ => 1,
        };
        self.cells_with(s, ints, own)
    }

    /// The cells of `s` in this process's slot `own`, checked to hold
    /// `ints` integer cells and a float cell.
    #[inline(always)]
    fn cells_with(&self, s: &Series, ints: usize, own: u32) -> Result<Cells<'_>> {
        if s.epoch != self.map.header().hot.epoch.load(Relaxed) as u32 {
            return Err(handle_error(self, who(s), only(s.kind)));
        }
        // A series deleted since the handle was made, by any process, has
        // another state word: the update fails as stale, and the caller
        // looks the series up again (docs/ARCHITECTURE.md, "Deletion").
        if self.map.series_state(s.id, Relaxed) != Some(s.live) {
            return Err(expired());
        }
        let slot = if s.mode == GaugeMode::Shared && s.kind == Kind::Gauge {
            0
        } else {
            own
        };
        let region = self.map.cells(slot);
        // The handle's cells in `own` (`Store::resolve`), or its own in
        // slot 0 for a `shared` gauge, which resolves to them anyway.
        let (int_off, float_off) = (s.ints_at as usize, s.float_at as usize);
        if int_off + ints > region.len() || float_off >= region.len() {
            return Err(handle_error(self, who(s), only(s.kind)));
        }
        Ok(Cells {
            slot,
            region: shm::Region::new(region),
            int_off,
            float_off,
        })
    }

    /// Runs update `f` of a series with a TTL: pins the writer's slot,
    /// checks that the series is still the one the handle was made for,
    /// runs `f` (with the handle marked [`PINNED`], so that it takes the
    /// plain path), records the time of the update, and unpins. See
    /// `ttl.rs` for why this order. Out of line, so that each update
    /// starts with one predictable branch on the handle and the plain
    /// path stays as it was.
    ///
    /// A series no process updated for [`crate::MIN_TTL`] may be
    /// idle for its TTL (hidden, not yet swept): then its family is swept
    /// first ([`Store::expire_if_idle`]), and the update fails with
    /// `StaleHandle` as for any expired series, so that it lands in a new
    /// series from zero, not in the expired one.
    #[cold]
    #[inline(never)]
    fn ttl_update(&self, s: Series, f: impl FnOnce(Series) -> Result<()>) -> Result<()> {
        if s.tag != self.tag || s.epoch != self.map.header().hot.epoch.load(Relaxed) as u32 {
            return Err(handle_error(self, who(&s), &[s.kind]));
        }
        let (s, own) = self.own_series(&s)?;
        let slot = if s.mode == GaugeMode::Shared && s.kind == Kind::Gauge {
            0
        } else {
            own
        };
        // The series' last update, in slot 0 (`ttl.rs`).
        let stamp = (self.map.series().get(s.id as usize))
            .map(|r| (r.int_off.load(Relaxed) as usize).saturating_add(s.ttl_cell as usize))
            .and_then(|c| self.map.cells(0).get(c));
        let (Some(_), Some(stamp)) = (self.map.series_state(s.id, Relaxed), stamp) else {
            return Err(handle_error(self, who(&s), &[s.kind]));
        };
        let now = shm::coarse_monotonic_ms();
        if now.saturating_sub(stamp.load(Relaxed)) >= crate::MIN_TTL.as_millis() as u64 {
            self.expire_if_idle(&s, now)?;
        }
        let pins = &self.map.slots()[slot as usize].pins;
        pins.fetch_add(1, SeqCst);
        let _pin = Pin(pins);
        if self.map.series_state(s.id, SeqCst) != Some(s.live) {
            return Err(expired());
        }
        f(Series {
            ttl_cell: s.ttl_cell | PINNED,
            ..s
        })?;
        if stamp.load(Relaxed) < now {
            stamp.fetch_max(now, Relaxed);
        }
        Ok(())
    }

    /// Adds `v` to a counter. Integral amounts are counted exactly in an
    /// integer cell; fractional ones are added to a float cell.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidValue`] if `v` is negative, NaN or `+Inf`.
    #[inline(always)]
    pub fn counter_add(&self, s: Series, v: f64) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.counter_add(s, v));
        }
        // One comparison for NaN, negatives and +Inf (false for NaN).
        if !(0.0..f64::INFINITY).contains(&v) {
            return Err(counter_amount_error(v));
        }
        match self.slot_of(&s) {
            Some(own) => self.counter_add_own(&s, v, own),
            None => self.claim_then(s, v, Store::counter_add_own),
        }
    }

    /// [`Store::counter_add`]'s write, in slot `own`. This and the other
    /// updates' writes are functions forced inline, not closures: a
    /// closure is one function shared by every copy of the update it is
    /// in, which LLVM kept out of line once the update had several
    /// callers (the C ABI's), with the handle written to the stack for
    /// the call (`crates/ffi/benches/hotpath.sh`).
    #[inline(always)]
    fn counter_add_own(&self, s: &Series, v: f64, own: u32) -> Result<()> {
        let c = self.cells_of(s, Kind::Counter, own)?;
        // Whole amounts below 2^53 go to the integer cell. `v` is
        // not negative here, so `n` is its integer part (an `i64` cast
        // is one instruction; `fract` calls `trunc` on x86-64).
        let n = v as i64;
        if v < EXACT_INT_LIMIT && n as f64 == v {
            c.int(0).fetch_add(n as u64, Relaxed);
        } else {
            add_f64(c.float(), v);
        }
        Ok(())
    }

    /// Adds one to a counter: a single atomic `fetch_add`.
    #[inline(always)]
    pub fn counter_inc(&self, s: Series) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.counter_inc(s));
        }
        match self.slot_of(&s) {
            Some(own) => self.counter_inc_own(&s, 1.0, own),
            None => self.claim_then(s, 1.0, Store::counter_inc_own),
        }
    }

    /// [`Store::counter_inc`]'s write, in slot `own`.
    #[inline(always)]
    fn counter_inc_own(&self, s: &Series, _: f64, own: u32) -> Result<()> {
        let c = self.cells_of(s, Kind::Counter, own)?;
        c.int(0).fetch_add(1, Relaxed);
        Ok(())
    }

    /// Marks a gauge's slot as set (the time of the set, for the
    /// most-recent modes), after its value: a Release, so that a reader
    /// that sees the mark (Acquire) sees the value it marks, never the
    /// zero of a slot not yet set, nor an older value under a newer time.
    #[inline]
    fn gauge_mark(&self, s: &Series, marker: &AtomicU64) {
        if matches!(s.mode, GaugeMode::MostRecent | GaugeMode::LiveMostRecent) {
            marker.store(proc::unix_nanos(), Release);
        } else if marker.load(Relaxed) == 0 {
            marker.store(1, Release);
        }
    }

    /// Sets a gauge.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidValue`] if `v` is NaN.
    #[inline(always)]
    pub fn gauge_set(&self, s: Series, v: f64) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.gauge_set(s, v));
        }
        if v.is_nan() {
            return Err(nan_error("a gauge cannot be set to"));
        }
        match self.slot_of(&s) {
            Some(own) => self.gauge_set_own(&s, v, own),
            None => self.claim_then(s, v, Store::gauge_set_own),
        }
    }

    /// [`Store::gauge_set`]'s write, in slot `own`.
    #[inline(always)]
    fn gauge_set_own(&self, s: &Series, v: f64, own: u32) -> Result<()> {
        let c = self.cells_of(s, Kind::Gauge, own)?;
        c.float().store(v.to_bits(), Relaxed);
        self.gauge_mark(s, c.int(0));
        Ok(())
    }

    /// Adds `v` (which may be negative) to a gauge.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidValue`] if `v` is NaN.
    #[inline(always)]
    pub fn gauge_add(&self, s: Series, v: f64) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.gauge_add(s, v));
        }
        if v.is_nan() {
            return Err(nan_error("a gauge cannot be increased by"));
        }
        match self.slot_of(&s) {
            Some(own) => self.gauge_add_own(&s, v, own),
            None => self.claim_then(s, v, Store::gauge_add_own),
        }
    }

    /// [`Store::gauge_add`]'s write, in slot `own`.
    #[inline(always)]
    fn gauge_add_own(&self, s: &Series, v: f64, own: u32) -> Result<()> {
        let c = self.cells_of(s, Kind::Gauge, own)?;
        add_f64(c.float(), v);
        self.gauge_mark(s, c.int(0));
        Ok(())
    }

    /// Sets a gauge to the current Unix time in seconds.
    pub fn gauge_set_to_current_time(&self, s: Series) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.gauge_set_to_current_time(s));
        }
        self.gauge_set(s, proc::unix_nanos() as f64 / 1e9)
    }

    /// Records an observation in a histogram or a summary.
    ///
    /// A histogram's count is the sum of its buckets, so every snapshot has
    /// `+Inf == _count`, whatever runs concurrently; with native buckets,
    /// the sum of the native buckets (see [`crate::NativeOpts`]).
    ///
    /// The value goes into `_sum` first, and the count (bucket) after it
    /// with a Release; a snapshot reads the counts, fences (Acquire), then
    /// the sums. So every observation a snapshot counts is in its `_sum`
    /// (one it does not count yet may be too).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidValue`] if `v` is NaN.
    #[inline(always)]
    pub fn observe(&self, s: Series, v: f64) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.observe(s, v));
        }
        if v.is_nan() {
            return Err(nan_error("cannot observe"));
        }
        match s.kind {
            // Native buckets: out of line, so that the classic path below
            // stays what it was (measured: inlining the check cost a
            // classic observe about 3 ns).
            Kind::Histogram if s.native != 0 => self.observe_native(&s, v),
            Kind::Histogram => match self.slot_of(&s) {
                Some(own) => self.observe_classic_own(&s, v, own),
                None => self.claim_then(s, v, Store::observe_classic_own),
            },
            Kind::Summary => match self.slot_of(&s) {
                Some(own) => self.observe_summary_own(&s, v, own),
                None => self.claim_then(s, v, Store::observe_summary_own),
            },
            _ => Err(handle_error(
                self,
                who(&s),
                &[Kind::Histogram, Kind::Summary],
            )),
        }
    }

    /// [`Store::observe`]'s write for a summary, in slot `own`.
    #[inline]
    fn observe_summary_own(&self, s: &Series, v: f64, own: u32) -> Result<()> {
        let st = self;
        let c = st.cells_of(s, Kind::Summary, own)?;
        if s.window.age_buckets != 0 {
            // The quantile sketch. `record` checks the cells'
            // bounds: a forged handle records nothing there.
            let sets = s.window.age_buckets as usize;
            let headers = &c.region()[c.int_off + 1..c.int_off + 1 + window::header_cells(sets)];
            let counts = st.map.sketch(c.slot);
            let start = (s.sketch_off as usize).min(counts.len());
            window::record(
                headers,
                &counts[start..],
                &st.sketch,
                s.window,
                shm::coarse_monotonic_ms(),
                v,
                &st.map,
            )
            .map_err(|e| {
                no_room(
                    st,
                    "quantile sketch",
                    "the observation was not recorded",
                    &e,
                )
            })?;
        }
        // The sum, then the count: see `observe`.
        add_f64(c.float(), v);
        c.int(0).fetch_add(1, Release);
        Ok(())
    }

    /// [`Store::observe`]'s write for a histogram without native buckets,
    /// in slot `own`.
    #[inline(always)]
    fn observe_classic_own(&self, s: &Series, v: f64, own: u32) -> Result<()> {
        if s.tag != self.tag {
            return Err(handle_error(
                self,
                who(s),
                &[Kind::Histogram, Kind::Summary],
            ));
        }
        // Cells first: that checks the epoch, so a handle from
        // before a wipe never reads the (since rewritten) bounds.
        let c = self.cells_checked(s, own)?;
        let Some(bounds) = self.map.arena_f64s(s.bounds_off, s.n_bounds as u64) else {
            return Err(handle_error(self, who(s), &[Kind::Histogram]));
        };
        // The first bucket whose upper bound is >= v (`le` is
        // inclusive); n is the +Inf bucket. It counts `v` after the sum
        // has it: see `observe`. (Found before the sum's loop: 151
        // instructions per observe, against 157 when found after it,
        // `benches/hotpath.rs` under callgrind.)
        let bucket = c.int(bucket_index(bounds, v));
        add_f64(c.float(), v);
        bucket.fetch_add(1, Release);
        Ok(())
    }

    /// `observe` for a histogram with native buckets: the sum, then the
    /// native bucket (or zero count), then the classic bucket if any.
    ///
    /// Each increment is a Release, after the write before it. A snapshot
    /// merges the classic counts, fences (Acquire), reads the native
    /// buckets, fences again, then merges the sums: it sees every
    /// observation of a classic bucket in a native one too, and every
    /// observation of a native one in the sum. A snapshot takes the count
    /// from the native buckets, so that count == zero count + native
    /// buckets exactly, every classic bucket is at most the count, and
    /// the sum includes every counted observation.
    #[inline(never)]
    fn observe_native(&self, s: &Series, v: f64) -> Result<()> {
        if s.tag != self.tag {
            return Err(handle_error(
                self,
                who(s),
                &[Kind::Histogram, Kind::Summary],
            ));
        }
        let classic = crate::store::classic_cells(s.n_bounds as usize, true);
        // As in `observe`: the cells (and so the epoch) first.
        let (s, own) = &self.own_series(s)?;
        let c = self.cells_with(s, classic + native::HEADER, *own)?;
        let header = &c.region()[c.int_off + classic..c.int_off + classic + native::HEADER];
        // The schema and threshold: the handle's code (checked when the
        // handle was made or rebuilt), the family record's threshold. A
        // forged handle may name another family: its threshold then
        // misplaces values of the same store, nothing worse.
        let schema = native::schema_of(s.native).unwrap_or(native::MIN_SCHEMA);
        let family = self.map.series()[s.id as usize].family.load(Relaxed);
        let threshold = self
            .map
            .families()
            .get(family as usize)
            .map_or(f64::NAN, |f| {
                f64::from_bits(f.native_zero_threshold.load(Relaxed))
            });
        let bounds = if classic > 0 {
            match self.map.arena_f64s(s.bounds_off, s.n_bounds as u64) {
                Some(b) => Some(b),
                None => return Err(handle_error(self, who(s), &[Kind::Histogram])),
            }
        } else {
            None
        };
        let counts = self.map.sketch(c.slot);
        let start = (s.sketch_off as usize).min(counts.len());
        let end = start
            .saturating_add(2 * native::bins(schema))
            .min(counts.len());
        // The bucket's page is reserved before anything is written: a
        // refusal leaves the sum as it was.
        let cell = native::place(
            header,
            &counts[start..end],
            schema,
            threshold,
            self.native_tables,
            v,
            &self.map,
        )
        .map_err(|e| {
            no_room(
                self,
                "native buckets",
                "the observation was not recorded",
                &e,
            )
        })?;
        add_f64(c.float(), v);
        if let Some(cell) = cell {
            cell.fetch_add(1, Release);
        }
        if let Some(bounds) = bounds {
            c.int(bucket_index(bounds, v)).fetch_add(1, Release);
        }
        Ok(())
    }
}

// ----- exemplars ---------------------------------------------------------

#[cold]
#[inline(never)]
fn no_exemplars() -> Error {
    Error::new(
        ErrorKind::InvalidOptions,
        "the series' family keeps no exemplars; register it with FamilyDesc::exemplars(true)",
    )
}

impl Store {
    /// Like [`Store::counter_add`], and records an exemplar of this
    /// increment: its labels (a trace id, say), `v`, and the current time.
    /// A snapshot shows the latest exemplar of the series over all
    /// processes ([`crate::SeriesView::exemplars`]).
    ///
    /// Exemplars are samples: when another thread of this process is
    /// writing the series' exemplar at the same instant, this one is
    /// dropped (the increment is not).
    ///
    /// # Errors
    /// Nothing is recorded, neither the increment nor the exemplar, if:
    /// - the family keeps no exemplars ([`ErrorKind::InvalidOptions`]; see
    ///   [`crate::FamilyDesc::exemplars`]);
    /// - a label name is invalid or given twice
    ///   ([`ErrorKind::InvalidName`]);
    /// - the label names and values have more than
    ///   [`crate::MAX_EXEMPLAR_CHARS`] characters together
    ///   ([`ErrorKind::InvalidValue`]);
    /// - `counter_add` itself would fail (a negative, NaN or `+Inf` `v`).
    pub fn counter_add_with_exemplar(
        &self,
        s: Series,
        v: f64,
        labels: &[(&str, &str)],
    ) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.counter_add_with_exemplar(s, v, labels));
        }
        let e = self.exemplar_for(&s, &[Kind::Counter], labels)?;
        self.counter_add(s, v)?;
        self.record_exemplar(&s, 0, v, &e)
    }

    /// [`Store::counter_add_with_exemplar`] of one.
    pub fn counter_inc_with_exemplar(&self, s: Series, labels: &[(&str, &str)]) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.counter_inc_with_exemplar(s, labels));
        }
        self.counter_add_with_exemplar(s, 1.0, labels)
    }

    /// Like [`Store::observe`] on a histogram, and records an exemplar of
    /// this observation in the classic bucket it falls in (the first whose
    /// upper bound is at least `v`, as client_golang and prometheus_client
    /// place them): its labels, `v`, and the current time.
    ///
    /// # Errors
    /// As [`Store::counter_add_with_exemplar`]: nothing is recorded if the
    /// exemplar or the observation is refused. Summaries keep no
    /// exemplars ([`ErrorKind::WrongType`]).
    pub fn observe_with_exemplar(&self, s: Series, v: f64, labels: &[(&str, &str)]) -> Result<()> {
        if s.ttl_cell as i32 > 0 {
            return self.ttl_update(s, |s| self.observe_with_exemplar(s, v, labels));
        }
        let e = self.exemplar_for(&s, &[Kind::Histogram], labels)?;
        let Some(bounds) = self.map.arena_f64s(s.bounds_off, s.n_bounds as u64) else {
            return Err(handle_error(self, who(&s), &[Kind::Histogram]));
        };
        let place = bucket_index(bounds, v);
        self.observe(s, v)?;
        self.record_exemplar(&s, place, v, &e)
    }

    /// Checks that `s` is of a kind in `want` and keeps exemplars, and
    /// encodes the labels.
    fn exemplar_for(
        &self,
        s: &Series,
        want: &[Kind],
        labels: &[(&str, &str)],
    ) -> Result<exemplar::Encoded> {
        if !want.contains(&s.kind) || s.tag != self.tag {
            return Err(handle_error(self, who(s), want));
        }
        if s.exemplar_places() == 0 {
            return Err(no_exemplars());
        }
        exemplar::encode(labels)
    }

    /// Writes an exemplar into `place` of series `s` in this process's
    /// slot: its timestamp cell (the last of the series' integer cells)
    /// and its record (in the sketch region, after any native buckets).
    fn record_exemplar(
        &self,
        s: &Series,
        place: usize,
        v: f64,
        e: &exemplar::Encoded,
    ) -> Result<()> {
        let places = s.exemplar_places();
        let native = native::schema_of(s.native);
        let classic = crate::store::classic_cells(s.n_bounds as usize, native.is_some());
        let before = match s.kind {
            Kind::Counter => 1,
            _ => classic + if native.is_some() { native::HEADER } else { 0 },
        } + usize::from(s.ttl_cell != 0);
        let (s, own) = &self.own_series(s)?;
        let c = self.cells_with(s, before + places, *own)?;
        let first =
            (s.sketch_off as usize).saturating_add(native.map_or(0, |n| 2 * native::bins(n)));
        let at = first.saturating_add(place.min(places - 1) * exemplar::RECORD);
        let sketch = self.map.sketch(c.slot);
        let rec = sketch.get(at.min(sketch.len())..).unwrap_or(&[]);
        exemplar::record(
            c.int(before + place.min(places - 1)),
            rec,
            v,
            proc::unix_nanos(),
            e,
            &self.map,
        )
        .map_err(|e| {
            no_room(
                self,
                "exemplar records",
                "the update counts, its exemplar was not kept",
                &e,
            )
        })?;
        Ok(())
    }
}

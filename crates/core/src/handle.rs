//! The handles a [`crate::Store`] hands out: a registered [`Family`] and a
//! [`Series`] for updates, with the cell shape they carry. A module below
//! the store, so that errors (which carry an overflow series) need no
//! store.

use crate::model::{GaugeMode, Kind, Window};

/// A registered family. Cheap to copy; valid for the
/// [`Store`](crate::Store) that made it until the store is wiped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    pub(crate) tag: u32,
    pub(crate) epoch: u32,
    pub(crate) index: u32,
    pub(crate) kind: Kind,
    pub(crate) mode: GaugeMode,
    pub(crate) n_labels: u32,
    pub(crate) shape: Shape,
    pub(crate) n_bounds: u32,
    pub(crate) bounds_off: u64,
    pub(crate) overflow: u32,
    /// A summary's quantile window; `age_buckets` 0 for none.
    pub(crate) window: Window,
    /// A histogram's native schema code ([`native::code`]); 0 for none.
    pub(crate) native: u32,
    /// Whether the family keeps exemplars.
    pub(crate) exemplars: bool,
    /// Whether the family's series expire (see `ttl.rs`).
    pub(crate) ttl: bool,
}

impl Family {
    /// The metric type.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// How many label values a series of this family takes.
    pub fn label_count(&self) -> usize {
        self.n_labels as usize
    }

    /// The gauge mode (meaningful for gauges only).
    pub fn gauge_mode(&self) -> GaugeMode {
        self.mode
    }

    /// The integer cell (after the series' first) that holds, in slot 0,
    /// the time of its last update, for a family with a TTL; 0 for none.
    pub(crate) fn ttl_cell(&self) -> u32 {
        if !self.ttl {
            return 0;
        }
        let places = exemplar_places(
            self.kind,
            self.n_bounds as usize,
            self.native != 0,
            self.exemplars,
        ) as u32;
        self.shape.ints.saturating_sub(places + 1)
    }

    pub(crate) fn series_handle(
        &self,
        id: u32,
        word: u32,
        int_off: u64,
        float_off: u64,
        sketch_off: u64,
    ) -> Series {
        Series {
            tag: self.tag,
            epoch: self.epoch,
            id,
            kind: self.kind,
            mode: self.mode,
            n_bounds: self.n_bounds,
            bounds_off: self.bounds_off,
            window: self.window,
            sketch_off,
            native: self.native,
            exemplars: self.exemplars,
            ttl_cell: self.ttl_cell(),
            live: word,
            at: UNPLACED,
            ints_at: int_off as u32,
            float_at: float_off as u32,
        }
    }
}

/// [`Series::at`] of a handle resolved for no slot.
pub(crate) const UNPLACED: u64 = u64::MAX;

/// A handle to one series, for the hot path: updating through it takes no
/// lock, makes no system call and allocates nothing. Cheap to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Series {
    pub(crate) tag: u32,
    pub(crate) epoch: u32,
    /// The series record (which names its family and its cells in slot
    /// 0, for the cold paths).
    pub(crate) id: u32,
    pub(crate) kind: Kind,
    pub(crate) mode: GaugeMode,
    pub(crate) n_bounds: u32,
    pub(crate) bounds_off: u64,
    /// A summary's quantile window; `age_buckets` 0 for none.
    pub(crate) window: Window,
    /// First sketch cell in each slot's sketch region.
    pub(crate) sketch_off: u64,
    /// A histogram's native schema code ([`native::code`]); 0 for none.
    /// The zero threshold is read from the family record when needed.
    pub(crate) native: u32,
    /// Whether the family keeps exemplars.
    pub(crate) exemplars: bool,
    /// For a family with a TTL, the integer cell (from the series' first)
    /// of the time of the last update; 0 for a family without.
    pub(crate) ttl_cell: u32,
    /// The series record's state word when the handle was made: every
    /// update checks it is still that (a deletion or an expiry changes it).
    pub(crate) live: u32,
    /// The slot word (`Store::local`: fork generation and slot) of the
    /// process and slot that `ints_at` and `float_at` are for, or
    /// [`UNPLACED`]. An update through a handle made for another (before
    /// a fork, say) takes the cold path, which finds the cells again.
    pub(crate) at: u64,
    /// The series' first integer cell and its float cell in that slot's
    /// region: its block in a writer slot, its own cells in slot 0
    /// (`store/blocks.rs`); for an unplaced handle, those in slot 0. (So
    /// that the handle stays as small as before it had `at`, it keeps
    /// neither its cells in slot 0 once placed nor its family: the cold
    /// paths read them from the record.)
    pub(crate) ints_at: u32,
    pub(crate) float_at: u32,
}

impl Series {
    /// The metric type of the series' family.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Exemplar places of the series (none if its family keeps no
    /// exemplars): one for a counter, one per classic bucket (`+Inf`
    /// included) for a histogram.
    pub(crate) fn exemplar_places(&self) -> usize {
        exemplar_places(
            self.kind,
            self.n_bounds as usize,
            self.native != 0,
            self.exemplars,
        )
    }
}

/// Exemplar places of a series: one for a counter, one per classic bucket
/// (`+Inf` included) for a histogram, none without exemplars.
pub(crate) fn exemplar_places(kind: Kind, n_bounds: usize, native: bool, on: bool) -> usize {
    match kind {
        _ if !on => 0,
        Kind::Counter => 1,
        Kind::Histogram => classic_cells(n_bounds, native),
        _ => 0,
    }
}

/// The cells a series takes in each slot region: integer cells (counts,
/// allocated upwards from the region's start) and float cells (sums and
/// values, allocated downwards from its end). Keeping the two kinds apart
/// lets a reader merge each with one tight, vectorisable loop, and lets
/// integer counts use `fetch_add`, which is cheaper than a float
/// compare-and-swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub ints: u32,
    pub floats: u32,
}

/// Classic integer cells of a histogram: a count per bucket including
/// `+Inf`, or none for a native-only histogram (whose count is the sum
/// of its native buckets).
pub(crate) fn classic_cells(n_bounds: usize, native: bool) -> usize {
    if native && n_bounds == 0 {
        0
    } else {
        n_bounds.saturating_add(1)
    }
}

//! What a family's series take: the cells of one series in each slot
//! region (its [`Shape`]), the sketch cells and exemplar places, and a
//! family record's type read back from the file and checked.

use std::sync::atomic::{AtomicU64, Ordering::*};

use super::blocks::SlotCells;
use super::Store;
use crate::exemplar;
use crate::handle::{classic_cells, exemplar_places, Shape};
use crate::model::{GaugeMode, Kind, Window};
use crate::native::{self, Native};
use crate::shm::layout::{FamilyRec, SeriesRec};
use crate::window::{self, SET_HEADER};

/// What a family record says of its type: see [`Store::family_type`].
pub(crate) struct FamilyType {
    pub kind: Kind,
    pub mode: GaugeMode,
    pub n_bounds: u64,
    pub bounds_off: u64,
    pub shape: Shape,
    /// A summary's quantile window (`age_buckets` 0 for none).
    pub window: Window,
    /// A histogram's native buckets, if it has them.
    pub native: Option<Native>,
    /// Exemplar places per series (0: the family keeps no exemplars).
    pub exemplars: usize,
    /// Series TTL in milliseconds (0: none).
    pub ttl_ms: u64,
}

/// Where a family's series keep their exemplars, from the series' first
/// cells: the first timestamp cell (after the other integer cells), the
/// first record cell (after any native buckets), and the places.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExemplarPlaces {
    ts: usize,
    first: usize,
    places: usize,
}

impl ExemplarPlaces {
    /// Calls `f` with the timestamp cell and the record of each exemplar
    /// place of series `rec` in one slot's cells and sketch cells
    /// (skipping any a corrupt record puts outside them).
    pub fn each(
        self,
        rec: &SeriesRec,
        cells: &SlotCells<'_>,
        sketch: &[AtomicU64],
        f: impl Fn(&AtomicU64, &[AtomicU64]),
    ) {
        let ts = cells.ints(rec.int_off.load(Relaxed) as usize, self.ts, self.places);
        let first = (rec.sketch_off.load(Relaxed) as usize).saturating_add(self.first);
        for p in 0..self.places {
            let cell = ts.and_then(|ts| ts.get(p));
            let at = first.saturating_add(p * exemplar::RECORD);
            let r = sketch.get(at..at.saturating_add(exemplar::RECORD));
            if let (Some(cell), Some(r)) = (cell, r) {
                f(cell, r);
            }
        }
    }
}

impl FamilyType {
    /// Where series `rec` of this family keeps its quantile sketches or
    /// native buckets, if it has any.
    pub fn sketch_use(&self, rec: &SeriesRec) -> Option<SketchUse> {
        let (header, kind) = if let Some(n) = self.native {
            (
                classic_cells(self.n_bounds as usize, true),
                SketchKind::Native(n.bins()),
            )
        } else if self.window.age_buckets > 0 {
            (1, SketchKind::Summary(self.window.age_buckets))
        } else {
            return None;
        };
        Some(SketchUse {
            int_off: rec.int_off.load(Relaxed) as usize,
            header,
            sketch: rec.sketch_off.load(Relaxed) as usize,
            kind,
        })
    }

    /// Where the family's series keep exemplars, if it keeps them.
    pub fn exemplar_places(&self) -> Option<ExemplarPlaces> {
        (self.exemplars > 0).then(|| ExemplarPlaces {
            ts: (self.shape.ints as usize).saturating_sub(self.exemplars),
            first: self.native.map_or(0, |n| n.cells()),
            places: self.exemplars,
        })
    }

    /// The integer cell (from a series' first) of the time of its last
    /// update (in slot 0), for a family with a TTL.
    pub fn ttl_cell(&self) -> Option<usize> {
        (self.ttl_ms > 0).then(|| (self.shape.ints as usize).saturating_sub(self.exemplars + 1))
    }
}

/// The cell shape of a series of a family; `sets` is a summary's number
/// of quantile sets (its age buckets, or 0 without quantiles), `native`
/// whether a histogram has native buckets, `exemplars` its exemplar
/// places (each takes a timestamp cell, after the others), `ttl` whether
/// the family's series expire (one more cell, before the exemplars'
/// ones: in slot 0, the time of its last update).
pub(crate) fn cells_for(
    kind: Kind,
    n_bounds: usize,
    sets: u32,
    native: bool,
    exemplars: usize,
    ttl: bool,
) -> Shape {
    let (ints, floats) = match kind {
        // Integral increments, then fractional ones.
        Kind::Counter => (1, 1),
        // A "written" marker (or the time of the last set, for the
        // most-recent modes), then the value.
        Kind::Gauge => (1, 1),
        // One count per classic bucket including +Inf, then the native
        // header (see `native`), then the sum. (Saturating: the values
        // come from the file, which may be corrupt; a saturated shape
        // never matches, so the record is rejected.)
        Kind::Histogram => (
            u32::try_from(classic_cells(n_bounds, native))
                .unwrap_or(u32::MAX)
                .saturating_add(if native { native::HEADER as u32 } else { 0 }),
            1,
        ),
        // The count and a header per quantile set (see `window`), then
        // the sum.
        Kind::Summary => (
            sets.saturating_mul(SET_HEADER as u32)
                .saturating_add(1 + u32::from(sets > 0)),
            1,
        ),
    };
    Shape {
        ints: ints
            .saturating_add(u32::from(ttl))
            .saturating_add(u32::try_from(exemplars).unwrap_or(u32::MAX)),
        floats,
    }
}

/// A series that uses sketch cells: where its header (in the integer
/// cells) and its sketch cells start, and what they hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SketchUse {
    /// The series' first integer cell in slot 0, and its first header
    /// cell from there.
    pub(super) int_off: usize,
    pub(super) header: usize,
    pub(super) sketch: usize,
    pub(super) kind: SketchKind,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum SketchKind {
    /// A summary's quantile sets (its age buckets).
    Summary(u32),
    /// A native histogram's buckets per side.
    Native(usize),
}

impl Store {
    /// A family record's type, checked for consistency: the record comes
    /// from a file that may be corrupt.
    pub(crate) fn family_type(&self, f: &FamilyRec) -> Option<FamilyType> {
        let kind = Kind::from_u32(f.kind.load(Relaxed))?;
        let mode = GaugeMode::from_u32(f.gauge_mode.load(Relaxed))?;
        let n_bounds = f.buckets.len.load(Relaxed);
        let bounds_off = f.buckets.off.load(Relaxed);
        if kind == Kind::Histogram && self.map.arena_f64s(bounds_off, n_bounds).is_none() {
            return None;
        }
        let shape = Shape {
            ints: f.int_cells.load(Relaxed),
            floats: f.float_cells.load(Relaxed),
        };
        let exemplars = match f.exemplars.load(Relaxed) {
            0 => false,
            1 => true,
            _ => return None,
        };
        let native_code = f.native_schema.load(Relaxed);
        let places = exemplar_places(kind, n_bounds as usize, native_code != 0, exemplars);
        if exemplars && places == 0 {
            return None; // only counters and classic histograms keep them
        }
        // The exemplar records follow any native buckets.
        let sketch_cells = u64::from(f.sketch_cells.load(Relaxed))
            .checked_sub((places * exemplar::RECORD) as u64)?;
        let native = if native_code == 0 {
            None
        } else {
            Some(record_native(f, kind, native_code, sketch_cells)?)
        };
        if kind == Kind::Histogram && native.is_none() && n_bounds == 0 {
            return None; // a classic histogram has at least one bound
        }
        let window = if kind == Kind::Summary && f.quantiles.len.load(Relaxed) > 0 {
            self.record_window(f, sketch_cells)?
        } else if sketch_cells != 0 && native.is_none() {
            return None;
        } else {
            Window {
                age_buckets: 0,
                period_ms: 0,
            }
        };
        let ttl_ms = f.ttl_ms.load(Relaxed);
        if ttl_ms > crate::family::MAX_TTL.as_millis() as u64 {
            return None;
        }
        let expect = cells_for(
            kind,
            n_bounds as usize,
            window.age_buckets,
            native.is_some(),
            places,
            ttl_ms > 0,
        );
        (shape == expect).then_some(FamilyType {
            kind,
            mode,
            n_bounds,
            bounds_off,
            shape,
            window,
            native,
            exemplars: places,
            ttl_ms,
        })
    }

    /// A summary record's quantile window, checked: age buckets and a
    /// period, their sketch cells, and quantiles in the arena.
    fn record_window(&self, f: &FamilyRec, sketch_cells: u64) -> Option<Window> {
        let age_buckets = f.summary_age_buckets.load(Relaxed);
        let period_ms = f.summary_max_age_ms.load(Relaxed) / u64::from(age_buckets.max(1));
        let window = Window {
            age_buckets,
            period_ms: u32::try_from(period_ms).ok()?,
        };
        let expect = window::sketch_cells(age_buckets as usize, self.sketch.cells()) as u64;
        if age_buckets == 0 || period_ms == 0 || sketch_cells != expect {
            return None;
        }
        self.map
            .arena_f64s(f.quantiles.off.load(Relaxed), f.quantiles.len.load(Relaxed))?;
        Some(window)
    }
}

/// A record's native buckets, checked: a histogram with a known schema,
/// the bins of that schema, a zero threshold no lower than the store's and
/// the sketch cells of two sides.
fn record_native(f: &FamilyRec, kind: Kind, code: u32, sketch_cells: u64) -> Option<Native> {
    let n = Native {
        schema: native::schema_of(code)?,
        zero_threshold: f64::from_bits(f.native_zero_threshold.load(Relaxed)),
        max_buckets: f.native_max_buckets.load(Relaxed),
    };
    let ok = kind == Kind::Histogram
        && f.native_bins.load(Relaxed) == n.bins() as u64
        && n.zero_threshold >= native::MIN_ZERO_THRESHOLD
        && n.zero_threshold.is_finite()
        && sketch_cells == n.cells() as u64;
    ok.then_some(n)
}

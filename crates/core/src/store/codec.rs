//! Handles as plain integers, for the C ABI, and the bit packing they use.

use super::shape::cells_for;
use super::{Family, Series, Shape};
use crate::handle::exemplar_places;
use crate::model::{GaugeMode, Kind, Window};
use crate::native;
use crate::shm::layout::state;

// ===== Raw handle conversion: a stopgap for the C ABI (crates/ffi) =========
//
// `shmetrics-ffi` hands `Family` and `Series` to C callers as plain
// integers. These two pairs are all it needs from core; nothing else here
// uses them, and they are to be replaced by whatever accessor the core API
// settles on. The layout of the arrays is private to this build: only
// `from_raw` of the same build reads what `to_raw` wrote.
//
// A handle forged through `from_raw` cannot cause memory unsafety: enum
// fields are validated here, every update checks the handle's store tag,
// epoch, series id (against the record count, `Mapping::series_state`)
// and cell offsets against the mapping (`Store::cells_checked`), and
// every other use of a handle's integers indexes with bounds checks. It
// can still write to cells that belong to other series of the same store.

/// Words of a series handle's raw form (the C ABI's `shmetrics_series`).
pub const RAW_SERIES: usize = 7;

fn pack(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

fn unpack(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

/// A summary has no bucket bounds, so its raw handles carry its window
/// where a histogram's carry the bounds' arena offset.
fn pack_window(w: Window) -> u64 {
    pack(w.age_buckets, w.period_ms)
}

fn unpack_window(v: u64) -> Window {
    let (age_buckets, period_ms) = unpack(v);
    Window {
        age_buckets,
        period_ms,
    }
}

const NO_WINDOW: Window = Window {
    age_buckets: 0,
    period_ms: 0,
};

/// The gauge mode, the exemplars flag and a histogram's native schema
/// code share a word: the mode in the low 15 bits, the flag in bit 15,
/// the code in the high 16.
fn pack_mode(mode: GaugeMode, native: u32, exemplars: bool) -> u32 {
    mode as u32 | u32::from(exemplars) << 15 | native << 16
}

/// The mode, the native code and the exemplars flag of [`pack_mode`];
/// `None` if any is not valid.
#[inline(always)]
fn unpack_mode(v: u32) -> Option<(GaugeMode, u32, bool)> {
    let native = v >> 16;
    if native != 0 && native::schema_of(native).is_none() {
        return None;
    }
    Some((GaugeMode::from_u32(v & 0x7fff)?, native, v & 0x8000 != 0))
}

/// A series handle's kind, TTL flag and state word in one u32: the kind
/// in bits 0-3, the flag in bit 4, the state in bits 5-7 (states are
/// below 8) and the generation in the high 24 bits, where the word has it.
fn pack_kind(kind: Kind, ttl: bool, live: u32) -> u32 {
    kind as u32 | u32::from(ttl) << 4 | (state::of(live) & 7) << 5 | (live & !0xff)
}

/// The kind, the TTL flag and the state word of [`pack_kind`].
#[inline(always)]
fn unpack_kind(v: u32) -> Option<(Kind, bool, u32)> {
    let kind = Kind::from_u32(v & 0xf)?;
    Some((kind, v & 0x10 != 0, (v & !0xff) | (v >> 5 & 7)))
}

impl Family {
    /// The handle as plain integers, for the C ABI. Read back only with
    /// [`Family::from_raw`] of the same build.
    #[doc(hidden)]
    pub fn to_raw(&self) -> [u64; 6] {
        [
            pack(self.tag, self.epoch),
            pack(self.index, self.kind as u32 | u32::from(self.ttl) << 4),
            pack(
                pack_mode(self.mode, self.native, self.exemplars),
                self.n_labels,
            ),
            pack(self.shape.ints, self.shape.floats),
            pack(self.n_bounds, self.overflow),
            if self.kind == Kind::Summary {
                pack_window(self.window)
            } else {
                self.bounds_off
            },
        ]
    }

    /// Rebuilds a handle from [`Family::to_raw`]; `None` if its kind or
    /// gauge mode is not valid. A forged handle gets an error, or at worst
    /// adds series or updates cells of the same store it does not own;
    /// never a memory-safety problem.
    #[doc(hidden)]
    pub fn from_raw(raw: [u64; 6]) -> Option<Family> {
        let (tag, epoch) = unpack(raw[0]);
        let (index, kind) = unpack(raw[1]);
        let (mode, n_labels) = unpack(raw[2]);
        let (ints, floats) = unpack(raw[3]);
        let (n_bounds, overflow) = unpack(raw[4]);
        let ttl = kind & 0x10 != 0;
        let kind = Kind::from_u32(kind & !0x10)?;
        let summary = kind == Kind::Summary;
        let (mode, native, exemplars) = unpack_mode(mode)?;
        Some(Family {
            ttl,
            tag,
            epoch,
            index,
            kind,
            mode,
            native,
            exemplars,
            n_labels,
            shape: Shape { ints, floats },
            n_bounds,
            bounds_off: if summary { 0 } else { raw[5] },
            overflow,
            window: if summary {
                unpack_window(raw[5])
            } else {
                NO_WINDOW
            },
        })
    }
}

impl Series {
    /// The handle as plain integers, for the C ABI. Read back only with
    /// [`Series::from_raw`] of the same build.
    #[doc(hidden)]
    pub fn to_raw(&self) -> [u64; RAW_SERIES] {
        [
            pack(self.tag, self.epoch),
            u64::from(self.id),
            pack(self.ints_at, self.float_at),
            pack(
                pack_kind(self.kind, self.ttl_cell != 0, self.live),
                pack_mode(self.mode, self.native, self.exemplars),
            ),
            // Sketch offsets are below 2^32 (`layout::MAX_CELLS`).
            if self.kind == Kind::Summary {
                pack_window(self.window)
            } else {
                pack(self.n_bounds, self.sketch_off as u32)
            },
            if self.kind == Kind::Summary {
                self.sketch_off
            } else {
                self.bounds_off
            },
            self.at,
        ]
    }

    /// [`Series::from_raw`] for the handles most updates go through, in a
    /// few instructions: a counter, gauge or histogram without a TTL or
    /// native buckets. `None` for any other handle (a summary, a TTL, a
    /// native schema, a kind or mode that is not valid), which
    /// `from_raw` then decodes (or refuses). For the handles it takes,
    /// the result is the one `from_raw` gives (`plain_decodes_as_from_raw`
    /// below), so an update checks the same things.
    #[doc(hidden)]
    #[inline(always)]
    pub fn from_raw_plain(raw: &[u64; RAW_SERIES]) -> Option<Series> {
        let (kind, mode) = unpack(raw[3]);
        // The same bit layout as `from_raw` (unpack_kind, unpack_mode),
        // taking only a counter, gauge or histogram without TTL or schema.
        let (kind, ttl, live) = unpack_kind(kind)?;
        if ttl || !matches!(kind, Kind::Counter | Kind::Gauge | Kind::Histogram) || mode >> 16 != 0
        {
            return None;
        }
        let (gauge_mode, _, exemplars) = unpack_mode(mode)?;
        let (tag, epoch) = unpack(raw[0]);
        let (ints_at, float_at) = unpack(raw[2]);
        let (n_bounds, sketch_off) = unpack(raw[4]);
        Some(Series {
            ttl_cell: 0,
            live,
            at: raw[6],
            ints_at,
            float_at,
            tag,
            epoch,
            id: raw[1] as u32,
            kind,
            mode: gauge_mode,
            native: 0,
            exemplars,
            n_bounds,
            bounds_off: raw[5],
            window: NO_WINDOW,
            sketch_off: u64::from(sketch_off),
        })
    }

    /// Rebuilds a handle from [`Series::to_raw`]; `None` if its kind or
    /// gauge mode is not valid. A forged handle gets an error, or at worst
    /// updates cells of the same store it does not own; never a
    /// memory-safety problem.
    #[doc(hidden)]
    #[inline]
    pub fn from_raw(raw: [u64; RAW_SERIES]) -> Option<Series> {
        let (tag, epoch) = unpack(raw[0]);
        let (ints_at, float_at) = unpack(raw[2]);
        let (kind, mode) = unpack(raw[3]);
        let (kind, ttl, live) = unpack_kind(kind)?;
        let summary = kind == Kind::Summary;
        let (mode, native, exemplars) = unpack_mode(mode)?;
        let (n_bounds, hist_sketch_off) = unpack(raw[4]);
        let n_bounds = if summary { 0 } else { n_bounds };
        let window = if summary {
            unpack_window(raw[4])
        } else {
            NO_WINDOW
        };
        let ttl_cell = if ttl {
            let places = exemplar_places(kind, n_bounds as usize, native != 0, exemplars);
            let shape = cells_for(
                kind,
                n_bounds as usize,
                window.age_buckets,
                native != 0,
                places,
                true,
            );
            shape.ints.saturating_sub(places as u32 + 1)
        } else {
            0
        };
        Some(Series {
            ttl_cell,
            live,
            at: raw[6],
            ints_at,
            float_at,
            tag,
            epoch,
            id: raw[1] as u32,
            kind,
            mode,
            native,
            exemplars,
            n_bounds,
            bounds_off: if summary { 0 } else { raw[5] },
            window,
            sketch_off: if summary {
                raw[5]
            } else {
                u64::from(hist_sketch_off)
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_words_round_trip() {
        for kind in [Kind::Counter, Kind::Gauge, Kind::Histogram, Kind::Summary] {
            for ttl in [false, true] {
                let live = state::next_gen(state::with(0, state::LIVE), state::LIVE);
                assert_eq!(
                    unpack_kind(pack_kind(kind, ttl, live)),
                    Some((kind, ttl, live))
                );
            }
        }
        let mode = pack_mode(GaugeMode::LiveMostRecent, native::code(3), true);
        assert_eq!(
            unpack_mode(mode),
            Some((GaugeMode::LiveMostRecent, native::code(3), true))
        );
        let w = Window {
            age_buckets: 5,
            period_ms: 120_000,
        };
        assert_eq!(unpack_window(pack_window(w)), w);
        // A kind or a native code that does not exist is refused.
        assert_eq!(unpack_kind(0xf), None);
        assert_eq!(unpack_mode(0xffff << 16), None);
    }

    /// Every word 3 (kind, TTL flag, state, mode, native code, exemplars
    /// flag) with the other words varied: `from_raw_plain` gives what
    /// `from_raw` gives or `None`, and `None` only where the handle has a
    /// TTL, native buckets or a summary's window, or is not valid.
    #[test]
    fn plain_decodes_as_from_raw() {
        let live = state::next_gen(state::with(0, state::LIVE), state::LIVE);
        let mut plain = 0;
        for kind in 0..6u32 {
            for ttl in [false, true] {
                for mode in [0, 1, 5, 12, 13, 0x7fff] {
                    for native in [0, native::code(3), 0xffff] {
                        for exemplars in [false, true] {
                            let k = kind
                                | u32::from(ttl) << 4
                                | (state::of(live) & 7) << 5
                                | (live & !0xff);
                            let m = mode | u32::from(exemplars) << 15 | native << 16;
                            let raw = [
                                pack(7, 9),
                                123,
                                pack(40, 41),
                                pack(k, m),
                                pack(12, 77),
                                4096,
                                (3 << 32) | 2,
                            ];
                            let full = Series::from_raw(raw);
                            let fast = Series::from_raw_plain(&raw);
                            let expect_plain = (1..=3).contains(&kind)
                                && !ttl
                                && native == 0
                                && GaugeMode::from_u32(mode).is_some();
                            assert_eq!(
                                fast.is_some(),
                                expect_plain,
                                "{kind} {ttl} {mode} {native}"
                            );
                            if fast.is_some() {
                                assert_eq!(fast, full);
                                plain += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(plain, 3 * 3 * 2);
    }
}

//! Native (exponential) histogram buckets, in shared memory.
//!
//! A native histogram series has, in each writer slot, dense counts at
//! its family's schema for magnitudes in `(2^-64, 2^64]`: `bins` buckets
//! for the negative side, then `bins` for the positive side, in the
//! slot's sketch region. Position `p` of a side is bucket index
//! `p + first_index(schema)`, so position 0 is the bucket just above
//! 2^-64 and position `bins - 1` the one whose upper bound is 2^64.
//!
//! The series' native header is [`HEADER`] integer cells after its
//! classic counts, which every reader reads anyway:
//! - the zero bucket's count;
//! - per side (negative, then positive), the lowest and highest position
//!   touched, stored as `bins - p` and `p + 1` so that zeroed memory means
//!   "untouched". A reader and a clear visit only the cells between the
//!   marks: reading a hole of a tmpfs file allocates a page for it, so a
//!   reader must never read a cell that no writer touched.
//!
//! Bucket indexes are computed exactly as client_golang computes them
//! (`histogramCounts.observe`): `frexp` of the magnitude, then, for
//! schema > 0, a search of the fraction among the `2^schema` bounds
//! `2^(k / 2^schema - 1)`, and for schema <= 0 a shift of the exponent.
//! Bucket `i` of a side holds the magnitudes in `(base^(i-1), base^i]`.

use crate::marks::{self, Space};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Integer cells of the native header: the zero count, then the marks of
/// the negative side (low, high, reserved; see `marks.rs`), then those of
/// the positive side.
pub(crate) const HEADER: usize = 1 + 2 * marks::MARKS;

/// The lowest schema (and the lowest a snapshot reduces to).
pub(crate) const MIN_SCHEMA: i32 = -4;
/// The highest schema.
pub(crate) const MAX_SCHEMA: i32 = 8;

/// Magnitudes up to this count in the zero bucket, whatever the family's
/// zero threshold: 2^-64, the lower end of the stored range.
pub(crate) const MIN_ZERO_THRESHOLD: f64 = 5.421_010_862_427_522e-20;

/// The schema client_golang picks for a bucket factor (`pickSchema`):
/// the coarsest whose growth factor `2^(2^-schema)` is at most `factor`.
/// `None` unless `factor > 1`.
pub(crate) fn schema_for(factor: f64) -> Option<i32> {
    if factor.is_nan() || factor <= 1.0 {
        return None;
    }
    let floor = factor.log2().log2().floor();
    Some(if floor <= -8.0 {
        MAX_SCHEMA
    } else if floor >= 4.0 {
        MIN_SCHEMA
    } else {
        -(floor as i32)
    })
}

/// Buckets per side at `schema`: the buckets over `(2^-64, 2^64]`.
pub(crate) fn bins(schema: i32) -> usize {
    if schema >= 0 {
        128 << schema
    } else {
        128 >> -schema
    }
}

/// The bucket index of position 0: the bucket just above 2^-64.
pub(crate) fn first_index(schema: i32) -> i32 {
    1 - (bins(schema) / 2) as i32
}

/// The schema's code in family records and handles: `schema + 16`, so
/// that 0 means "no native buckets".
pub(crate) fn code(schema: i32) -> u32 {
    (schema + 16) as u32
}

/// The schema of a code, if it is one.
pub(crate) fn schema_of(code: u32) -> Option<i32> {
    let s = i64::from(code) - 16;
    (code != 0 && (i64::from(MIN_SCHEMA)..=i64::from(MAX_SCHEMA)).contains(&s)).then_some(s as i32)
}

/// The growth factor `2^(2^-s)` of schemas 1 to 8 as client_golang
/// computed it (`math.Exp2(math.Exp2(-s))`): twice the second bound of
/// each schema in its `nativeHistogramBounds`. Not all are correctly
/// rounded (2^(1/2) is 1.414213562373095 here, the nearest f64 is
/// 1.4142135623730951); Prometheus uses the same bounds, so these, not
/// the exact powers, decide which bucket a value on a bound falls in.
// Not `SQRT_2`: client_golang's 2^(1/2) is one ulp below it.
#[allow(clippy::approx_constant)]
const GROWTH: [f64; 8] = [
    1.414213562373095,
    1.189207115002721,
    1.0905077326652577,
    1.0442737824274138,
    1.0218971486541166,
    1.0108892860517005,
    1.0054299011128027,
    1.0027112750502025,
];

/// The bounds of the fraction `frexp` gives, per schema > 0: bound `k` of
/// schema `s` is `2^(k / 2^s - 1)`, exactly as client_golang's
/// `nativeHistogramBounds` has it.
#[derive(Debug)]
pub(crate) struct Tables {
    /// Schema `s`'s bounds are `flat[(1 << s) - 2..(1 << (s + 1)) - 2]`.
    flat: [f64; FLAT],
}

/// The bounds of schemas 1 to 8 together: 2 + 4 + ... + 256.
const FLAT: usize = (1 << (MAX_SCHEMA + 1)) - 2;

/// The tables, computed by the compiler (floating-point arithmetic in a
/// constant is IEEE 754's, as at run time): no lazy initialization, which
/// a fork could leave half-done in a child.
static TABLES: Tables = Tables::compute();

impl Tables {
    /// The tables.
    pub fn get() -> &'static Tables {
        &TABLES
    }

    /// client_golang's generator: even bounds are the coarser schema's,
    /// odd ones the previous bound times the growth factor (in f64, as
    /// Go multiplies: no fused multiply-add).
    const fn compute() -> Tables {
        let mut flat = [0.0; FLAT];
        let mut s = 1;
        while s <= MAX_SCHEMA as usize {
            let n = 1usize << s;
            let (at, coarser) = (n - 2, (n >> 1).saturating_sub(2));
            flat[at] = 0.5;
            let mut j = 0;
            while j < n - 1 {
                // (Schema 1 has one bound past its first, an odd one.)
                flat[at + j + 1] = if (j + 1) % 2 == 0 {
                    flat[coarser + j / 2 + 1]
                } else {
                    flat[at + j] * GROWTH[s - 1]
                };
                j += 1;
            }
            s += 1;
        }
        Tables { flat }
    }

    /// The bounds of schema `s` (1 to 8).
    #[inline]
    pub fn bounds(&self, s: i32) -> &[f64] {
        let n = 1usize << s;
        &self.flat[n - 2..2 * n - 2]
    }
}

/// `frexp` of a positive finite `m`: `(frac, exp)` with `frac` in
/// `[0.5, 1)` and `m = frac * 2^exp`, subnormals included.
#[inline]
fn frexp(m: f64) -> (f64, i32) {
    const EXP_MASK: u64 = 0x7ff << 52;
    let mut bits = m.to_bits();
    let mut adjust = 0;
    if bits & EXP_MASK == 0 {
        // Subnormal: scale by 2^64 (exact) into the normal range.
        bits = (m * f64::from_bits((1023 + 64) << 52)).to_bits();
        adjust = -64;
    }
    let exp = ((bits & EXP_MASK) >> 52) as i32 - 1022 + adjust;
    (f64::from_bits((bits & !EXP_MASK) | (1022 << 52)), exp)
}

/// The bucket index of a magnitude `m > 0` (not NaN) at `schema`, as
/// client_golang computes it: bucket `i` holds `(base^(i-1), base^i]`.
/// +Inf is one bucket above the largest finite value's.
#[inline]
pub(crate) fn index(m: f64, schema: i32, tables: &Tables) -> i32 {
    let inf = m.is_infinite();
    let (frac, exp) = frexp(if inf { f64::MAX } else { m });
    let key = if schema > 0 {
        let b = tables.bounds(schema);
        b.partition_point(|x| *x < frac) as i32 + (exp - 1) * b.len() as i32
    } else {
        let key = exp - i32::from(frac == 0.5);
        let offset = (1 << -schema) - 1;
        (key + offset) >> -schema
    };
    key + i32::from(inf)
}

/// The storage position of a magnitude above the zero threshold:
/// its index clamped into the stored range.
#[inline]
pub(crate) fn position(m: f64, schema: i32, tables: &Tables) -> usize {
    let bins = bins(schema);
    if m.is_nan() || m <= MIN_ZERO_THRESHOLD {
        return 0;
    }
    let p = i64::from(index(m, schema, tables)) - i64::from(first_index(schema));
    p.clamp(0, bins as i64 - 1) as usize
}

/// A family's native parameters, as handles and readers use them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Native {
    pub schema: i32,
    /// The effective zero threshold (at least [`MIN_ZERO_THRESHOLD`]).
    pub zero_threshold: f64,
    /// 0 for no limit.
    pub max_buckets: u32,
}

impl Native {
    /// Buckets per side.
    pub fn bins(&self) -> usize {
        bins(self.schema)
    }

    /// Sketch cells per series.
    pub fn cells(&self) -> usize {
        2 * self.bins()
    }
}

/// The cell that counts `v` (not NaN) in this slot's native buckets of
/// one series, its page reserved and the side's marks raised to cover
/// it: the zero count or a bucket. `header` is the series' [`HEADER`]
/// cells, `counts` its `2 * bins` sketch cells; `None` for slices too
/// short (a forged handle), where nothing is counted.
///
/// The caller adds `v` to the sum, then one to the cell (Release): see
/// `Store::observe_native` for why in that order.
///
/// # Errors
/// The file system's error if it has no room for the page of the
/// bucket: nothing was recorded.
#[inline]
pub(crate) fn place<'a, S: Space>(
    header: &'a [AtomicU64],
    counts: &'a [AtomicU64],
    schema: i32,
    zero_threshold: f64,
    tables: &Tables,
    v: f64,
    space: &S,
) -> std::io::Result<Option<&'a AtomicU64>> {
    let m = v.abs();
    // A NaN threshold (a corrupt record) sends everything to the zero
    // bucket.
    if zero_threshold.is_nan() || m <= zero_threshold {
        return Ok(header.first());
    }
    let bins = bins(schema);
    let p = position(m, schema, tables);
    let side = usize::from(v > 0.0);
    let (Some(marks), Some(cells)) = (
        header.get(side_marks(side)),
        counts.get(side * bins..(side + 1) * bins),
    ) else {
        return Ok(None);
    };
    let Some(cell) = cells.get(p) else {
        return Ok(None);
    };
    marks::touch(marks, cells, p, space)?;
    Ok(Some(cell))
}

/// The header cells of one side's marks.
#[inline]
fn side_marks(side: usize) -> std::ops::Range<usize> {
    1 + marks::MARKS * side..1 + marks::MARKS * (side + 1)
}

/// The touched positions of one side from its two marks, if any.
#[inline]
fn marks(m: &[AtomicU64], bins: usize) -> Option<(usize, usize)> {
    marks::range(m, bins)
}

/// The range of positions of one side that a merge touched.
pub(crate) type Touched = Option<(usize, usize)>;

fn widen(t: &mut Touched, lo: usize, hi: usize) {
    *t = Some(t.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
}

/// Adds one slot's native buckets of a series to `acc` (`2 * bins`
/// cells: negative side, then positive), reading only the cells between
/// the marks, and widens `touched` (per side). Returns the slot's zero
/// count.
pub(crate) fn read_slot(
    header: &[AtomicU64],
    counts: &[AtomicU64],
    bins: usize,
    acc: &mut [u64],
    touched: &mut [Touched; 2],
) -> u64 {
    if header.len() < HEADER || counts.len() < 2 * bins || acc.len() < 2 * bins {
        return 0;
    }
    for side in 0..2 {
        let Some((lo, hi)) = marks(&header[side_marks(side)], bins) else {
            continue;
        };
        let base = side * bins;
        for (a, c) in acc[base + lo..=base + hi]
            .iter_mut()
            .zip(&counts[base + lo..=base + hi])
        {
            *a = a.wrapping_add(c.load(Relaxed));
        }
        widen(&mut touched[side], lo, hi);
    }
    header[0].load(Relaxed)
}

/// Zeroes a series' native buckets in one slot: the counts between the
/// marks, then the header. Used by reset and wipe, under the store lock.
pub(crate) fn clear_slot(header: &[AtomicU64], counts: &[AtomicU64], bins: usize) {
    if header.len() < HEADER {
        return;
    }
    for side in 0..2 {
        if let (Some((lo, hi)), Some(cells)) = (
            marks(&header[side_marks(side)], bins),
            counts.get(side * bins..(side + 1) * bins),
        ) {
            for c in &cells[lo..=hi] {
                c.store(0, Relaxed);
            }
        }
    }
    for c in &header[..HEADER] {
        c.store(0, Relaxed);
    }
}

/// One side's buckets after a merge: `len` counts from `start` in the
/// accumulator, for bucket indexes from `offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Run {
    pub start: usize,
    pub len: usize,
    pub offset: i32,
}

/// Turns a merged accumulator into runs from the first to the last
/// non-empty bucket of each side, at the highest schema (from `schema`
/// down to -4) that has at most `max_buckets` non-empty buckets (0: no
/// limit). Halving the resolution maps bucket `i` to `(i + 1) >> 1`
/// (arithmetic shift), as client_golang's `doubleBucketWidth` does; it
/// works in place. Returns the schema and the runs; the cells of `acc`
/// outside the runs are left zero, the runs' own cells are for the
/// caller to read and then zero.
pub(crate) fn reduce(
    acc: &mut [u64],
    bins: usize,
    schema: i32,
    max_buckets: u32,
    touched: [Touched; 2],
) -> (i32, [Run; 2]) {
    let first = first_index(schema);
    let mut runs = [Run::default(); 2];
    for side in 0..2 {
        if let Some((lo, hi)) = touched[side] {
            runs[side] = Run {
                start: side * bins + lo,
                len: hi - lo + 1,
                offset: first + lo as i32,
            };
        }
        trim(acc, &mut runs[side]);
    }
    let populated = |acc: &[u64], runs: &[Run; 2]| -> usize {
        runs.iter()
            .map(|r| {
                acc[r.start..r.start + r.len]
                    .iter()
                    .filter(|c| **c != 0)
                    .count()
            })
            .sum()
    };
    let mut schema = schema;
    while max_buckets != 0 && schema > MIN_SCHEMA && populated(acc, &runs) > max_buckets as usize {
        for r in &mut runs {
            halve(acc, r);
        }
        schema -= 1;
    }
    (schema, runs)
}

/// Narrows a run to its first and last non-zero counts (an empty run if
/// all are zero).
fn trim(acc: &[u64], r: &mut Run) {
    let cells = &acc[r.start..r.start + r.len];
    match cells.iter().position(|c| *c != 0) {
        None => *r = Run::default(),
        Some(a) => {
            let b = cells.iter().rposition(|c| *c != 0).unwrap_or(a);
            r.start += a;
            r.offset += a as i32;
            r.len = b - a + 1;
        }
    }
}

/// Halves a run's resolution in place: bucket `i` goes to `(i + 1) >> 1`.
/// Each new position is at or before the old one, so a forward pass
/// reads every count before it is overwritten.
fn halve(acc: &mut [u64], r: &mut Run) {
    if r.len == 0 {
        return;
    }
    let new_offset = (r.offset + 1) >> 1;
    let cells = &mut acc[r.start..r.start + r.len];
    let mut new_len = 0;
    for k in 0..cells.len() {
        let c = std::mem::take(&mut cells[k]);
        let j = (((r.offset + k as i32 + 1) >> 1) - new_offset) as usize;
        cells[j] = cells[j].wrapping_add(c);
        new_len = j + 1;
    }
    r.offset = new_offset;
    r.len = new_len;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::Granted;

    fn t() -> &'static Tables {
        Tables::get()
    }

    /// The upper bound of bucket `i` at `schema`, from the tables (exact
    /// where client_golang's are).
    fn upper(i: i32, schema: i32) -> f64 {
        if schema > 0 {
            let n = 1 << schema;
            let (e, k) = (i.div_euclid(n), i.rem_euclid(n));
            // base^i = 2^(e + k/n) = bounds[k] * 2^(e + 1)
            t().bounds(schema)[k as usize] * 2f64.powi(e + 1)
        } else {
            2f64.powi(i << -schema)
        }
    }

    fn next_up(x: f64) -> f64 {
        f64::from_bits(x.to_bits() + 1)
    }

    fn next_down(x: f64) -> f64 {
        f64::from_bits(x.to_bits() - 1)
    }

    #[test]
    fn bounds_match_client_golang() {
        // client_golang's nativeHistogramBounds, schemas 1 to 3 in full
        // and spot checks of schema 8 (the whole table was compared once,
        // entry by entry).
        assert_eq!(t().bounds(1), [0.5, 0.7071067811865475]);
        assert_eq!(
            t().bounds(2),
            [
                0.5,
                0.5946035575013605,
                0.7071067811865475,
                0.8408964152537144
            ]
        );
        assert_eq!(
            t().bounds(3),
            [
                0.5,
                0.5452538663326288,
                0.5946035575013605,
                0.6484197773255048,
                0.7071067811865475,
                0.7711054127039704,
                0.8408964152537144,
                0.9170040432046711
            ]
        );
        let s8 = t().bounds(8);
        assert_eq!(s8.len(), 256);
        assert_eq!(s8[1], 0.5013556375251013);
        assert_eq!(s8[129], 0.7090239421602076);
        assert_eq!(s8[255], 0.9972960560854698);
        for s in 1..=8 {
            let b = t().bounds(s);
            assert!(b.windows(2).all(|w| w[0] < w[1]), "schema {s}");
            // Each schema's bounds are every other bound of the next.
            if s < 8 {
                let finer = t().bounds(s + 1);
                assert!(b.iter().enumerate().all(|(k, x)| finer[2 * k] == *x));
            }
        }
    }

    #[test]
    fn schema_from_bucket_factor() {
        assert_eq!(schema_for(1.1), Some(3));
        assert_eq!(schema_for(2.0), Some(0));
        assert_eq!(schema_for(1.5), Some(1));
        assert_eq!(schema_for(4.0), Some(-1));
        assert_eq!(schema_for(1e300), Some(-4));
        assert_eq!(schema_for(1.000_000_1), Some(8));
        assert_eq!(schema_for(1.0), None);
        assert_eq!(schema_for(f64::NAN), None);
        for s in MIN_SCHEMA..=MAX_SCHEMA {
            assert_eq!(schema_of(code(s)), Some(s));
        }
        for bad in [0, 11, 25, u32::MAX, 1 << 31] {
            assert_eq!(schema_of(bad), None);
        }
    }

    #[test]
    fn exact_powers_are_upper_bounds() {
        for schema in [-4, -1, 0, 1, 3, 8] {
            for i in [-40, -3, -1, 0, 1, 2, 7, 8, 9, 100] {
                let b = upper(i, schema);
                if !(b.is_normal()) {
                    continue; // 2^(100 * 16) at schema -4
                }
                assert_eq!(
                    index(b, schema, t()),
                    i,
                    "schema {schema} bound of {i}: {b}"
                );
                assert_eq!(index(next_up(b), schema, t()), i + 1, "just above {b}");
                assert_eq!(index(next_down(b), schema, t()), i, "just below {b}");
            }
        }
    }

    #[test]
    fn client_golang_indexes() {
        // Worked by hand from client_golang's observe.
        assert_eq!(index(1.0, 0, t()), 0);
        assert_eq!(index(2.0, 0, t()), 1);
        assert_eq!(index(3.0, 0, t()), 2);
        assert_eq!(index(0.5, 0, t()), -1);
        assert_eq!(index(1.0, 3, t()), 0);
        assert_eq!(index(1.5, 3, t()), 5); // 2^(4/8) = 1.414 < 1.5 <= 2^(5/8) = 1.542
        assert_eq!(index(100.0, 3, t()), 54); // 2^(53/8) = 98.7 < 100 <= 2^(54/8) = 107.6
        assert_eq!(index(0.001, 3, t()), -79);
        assert_eq!(index(1.0, -4, t()), 0);
        assert_eq!(index(65536.0, -4, t()), 1);
        assert_eq!(index(65537.0, -4, t()), 2);
        assert_eq!(index(1.5, -4, t()), 1);
        assert_eq!(index(2f64.powi(70), 3, t()), 560);
        assert_eq!(index(2f64.powi(70), 0, t()), 70);
        // Subnormals: 2^-1074 is the bound of bucket -1074 at schema 0.
        let tiny = f64::from_bits(1);
        assert_eq!(index(tiny, 0, t()), -1074);
        assert_eq!(index(tiny, 3, t()), -1074 * 8);
        assert_eq!(index(f64::from_bits(3), 0, t()), -1072); // 3 * 2^-1074
                                                             // +Inf: one above f64::MAX's bucket (1024 * 2^schema).
        assert_eq!(index(f64::MAX, 0, t()), 1024);
        assert_eq!(index(f64::INFINITY, 0, t()), 1025);
        assert_eq!(index(f64::INFINITY, 3, t()), 8193);
    }

    #[test]
    fn positions_cover_2_to_the_64_each_way() {
        for schema in [-4, 0, 3, 8] {
            let bins = bins(schema);
            assert_eq!(position(next_up(MIN_ZERO_THRESHOLD), schema, t()), 0);
            assert_eq!(position(2f64.powi(64), schema, t()), bins - 1);
            assert_eq!(position(2f64.powi(70), schema, t()), bins - 1);
            assert_eq!(position(f64::INFINITY, schema, t()), bins - 1);
            assert_eq!(position(1.0, schema, t()), bins / 2 - 1);
            assert_eq!(
                position(next_up(1.0), schema, t()),
                bins / 2,
                "schema {schema}"
            );
        }
        assert_eq!(bins(-4), 8);
        assert_eq!(bins(3), 1024);
        assert_eq!(bins(8), 32768);
        assert_eq!(MIN_ZERO_THRESHOLD, 2f64.powi(-64));
    }

    fn cells(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    /// Counts `v` where [`place`] says, as an observe does.
    fn record(
        h: &[AtomicU64],
        c: &[AtomicU64],
        schema: i32,
        threshold: f64,
        tables: &Tables,
        v: f64,
        space: &Granted,
    ) -> std::io::Result<()> {
        if let Some(cell) = place(h, c, schema, threshold, tables, v, space)? {
            cell.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    #[test]
    fn record_read_and_clear() {
        let schema = 0;
        let bins = bins(schema);
        let (h, c) = (cells(HEADER), cells(2 * bins));
        for v in [0.0, 1e-30, -1e-30, 1.0, 1.0, 3.0, -2.0, f64::INFINITY] {
            record(&h, &c, schema, MIN_ZERO_THRESHOLD, t(), v, &Granted).unwrap();
        }
        let mut acc = vec![0; 2 * bins];
        let mut touched = [None; 2];
        let zero = read_slot(&h, &c, bins, &mut acc, &mut touched);
        assert_eq!(zero, 3);
        let (s, runs) = reduce(&mut acc, bins, schema, 0, touched);
        assert_eq!(s, 0);
        let run = |r: Run| (r.offset, acc[r.start..r.start + r.len].to_vec());
        assert_eq!(run(runs[0]), (1, vec![1]));
        // 1.0 twice in bucket 0, 3.0 in bucket 2, +Inf in the top (64).
        let (off, counts) = run(runs[1]);
        assert_eq!(off, 0);
        assert_eq!(counts.len(), 65);
        assert_eq!((counts[0], counts[2], counts[64]), (2, 1, 1));
        assert_eq!(counts.iter().sum::<u64>(), 4);
        clear_slot(&h, &c, bins);
        assert!(h.iter().chain(&c).all(|x| x.load(Relaxed) == 0));
    }

    #[test]
    fn reduction_halves_until_the_limit_and_keeps_counts() {
        let schema = 3;
        let bins = bins(schema);
        let (h, c) = (cells(HEADER), cells(2 * bins));
        let values: Vec<f64> = (1..=200).map(|i| i as f64 * 0.37).collect();
        for v in &values {
            record(&h, &c, schema, MIN_ZERO_THRESHOLD, t(), *v, &Granted).unwrap();
            record(&h, &c, schema, MIN_ZERO_THRESHOLD, t(), -*v, &Granted).unwrap();
        }
        for limit in [0, 100, 20, 4, 1] {
            let mut acc = vec![0; 2 * bins];
            let mut touched = [None; 2];
            read_slot(&h, &c, bins, &mut acc, &mut touched);
            let (s, runs) = reduce(&mut acc, bins, schema, limit, touched);
            let populated: usize = runs
                .iter()
                .map(|r| {
                    acc[r.start..r.start + r.len]
                        .iter()
                        .filter(|c| **c != 0)
                        .count()
                })
                .sum();
            assert!(limit == 0 || populated <= limit as usize || s == MIN_SCHEMA);
            for (side, r) in runs.iter().enumerate() {
                let counts = &acc[r.start..r.start + r.len];
                assert_eq!(counts.iter().sum::<u64>(), 200, "limit {limit}");
                // Every value is in the bucket its index at the reduced
                // schema says.
                for v in &values {
                    let i = index(*v, s, t());
                    assert!(
                        (r.offset..r.offset + r.len as i32).contains(&i),
                        "side {side} limit {limit} schema {s}: {v} -> {i}"
                    );
                }
                let direct: u64 = values
                    .iter()
                    .filter(|v| index(**v, s, t()) == r.offset)
                    .count() as u64;
                assert_eq!(counts[0], direct, "first bucket at schema {s}");
            }
            if limit == 0 {
                assert_eq!(s, 3);
            }
            if limit == 1 {
                assert_eq!(s, MIN_SCHEMA);
            }
        }
    }

    #[test]
    fn corrupt_marks_read_nothing() {
        let bins = bins(0);
        let (h, c) = (cells(HEADER), cells(2 * bins));
        h[1].store(u64::MAX, Relaxed);
        h[2].store(3, Relaxed);
        h[4].store(10, Relaxed); // lo position bins - 10, above hi 0
        h[5].store(1, Relaxed);
        let mut acc = vec![0; 2 * bins];
        let mut touched = [None; 2];
        read_slot(&h, &c, bins, &mut acc, &mut touched);
        assert_eq!(touched, [None, None]);
        // Short slices (a forged handle) are ignored.
        assert_eq!(read_slot(&h[..2], &c, bins, &mut acc, &mut touched), 0);
        record(&h[..1], &c[..3], 0, MIN_ZERO_THRESHOLD, t(), 5.0, &Granted).unwrap();
        clear_slot(&h, &c, bins);
    }
}

//! The quantile sketch for summaries: DDSketch's log-like mapping over a
//! fixed range of cells (Masson, Rim and Lee, "DDSketch: A Fast and
//! Fully-Mergeable Quantile Sketch with Relative-Error Guarantees", VLDB
//! 2019), with the cubic approximation of the logarithm of the DDSketch
//! libraries' `CubicallyInterpolatedMapping`.
//!
//! Why this sketch: a value maps to a cell by its magnitude alone, so the
//! cell of an observation does not depend on what was observed before.
//! Each writer slot can therefore count into its own cells with
//! `fetch_add`, and merging slots is adding their counts: exact, in any
//! order, which t-digest and GK sketches are not. The estimate of every
//! quantile is within a relative error `alpha` of the true value at that
//! rank, for values inside the mapped range.
//!
//! Why the cubic, not `ln`: an observe pays for the cell index, and
//! `f64::ln` is a libm call of about 58 instructions (callgrind); the
//! cubic is a few multiplications on the float's exponent and mantissa.
//! It costs 1% more cells for the same accuracy (see `CubicLog2`).
//!
//! The range is fixed so that a series' cells have a fixed size: values
//! whose magnitude is below `min_value` count in a zero cell (estimated as
//! 0), and magnitudes above `max_value` count in the outermost cell of
//! their sign (estimated as about `max_value`). Negative values mirror
//! the positive cells. See docs/design/summaries.md for how this sits in
//! the store.
//!
//! This module is the mapping and the quantile estimate; it touches no
//! shared memory.

use crate::error::{Error, ErrorKind, Result};

/// The relative accuracy of summary quantiles: below the 1% that the
/// accuracy tests hold the estimates to.
pub const SUMMARY_ALPHA: f64 = 0.0099;

/// A monotone stand-in for `log2` that is cheap to compute:
/// `L(2^e (1 + s)) = e + P(s)` for `s` in `[0, 1)`, with the cubic
/// `P(s) = A s^3 + B s^2 + C s` (`P(0) = 0`, `P(1) = 1`, so `L` is
/// continuous and increasing).
///
/// The error bound rests on one fact: `dL / d(ln v) = (1 + s) P'(s)`,
/// which is `10/7 + (2s/35)(3s - 2)^2`, so at least `10/7` (at `s = 0`
/// and `s = 2/3`). A cell that spans `1/m` of `L` then spans at most
/// `7 / (10 m)` of `ln v`. With `m = 7 / (10 ln gamma)` every cell's
/// bounds are within a factor `gamma` of each other, as in the exact
/// logarithmic mapping, which needs `ln 2 / ln gamma` cells an octave
/// against this one's `0.7 / ln gamma`: 1% more.
struct CubicLog2;

impl CubicLog2 {
    const A: f64 = 6.0 / 35.0;
    const B: f64 = -3.0 / 5.0;
    const C: f64 = 10.0 / 7.0;
    /// The least of `dL / d(ln v)`.
    const MIN_SLOPE: f64 = 10.0 / 7.0;
    const MANTISSA: u64 = (1 << 52) - 1;
    const ONE: u64 = 1023 << 52;

    /// `L(v)` for a positive, normal, finite `v`.
    #[inline]
    fn of(v: f64) -> f64 {
        let bits = v.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
        let s = f64::from_bits((bits & Self::MANTISSA) | Self::ONE) - 1.0;
        e as f64 + ((Self::A * s + Self::B) * s + Self::C) * s
    }

    /// The `v` with `L(v) = y`: off the hot path (quantile estimates).
    fn inverse(y: f64) -> f64 {
        let e = y.floor();
        let r = y - e;
        // P is increasing on [0, 1] (P' >= 26/35 there): Newton's method
        // from s = r, kept inside [0, 1], converges in a few steps.
        let mut s = r;
        for _ in 0..20 {
            let p = ((Self::A * s + Self::B) * s + Self::C) * s - r;
            let dp = (3.0 * Self::A * s + 2.0 * Self::B) * s + Self::C;
            let next = (s - p / dp).clamp(0.0, 1.0);
            if next == s {
                break;
            }
            s = next;
        }
        (1.0 + s) * 2f64.powi(e as i32)
    }
}

/// The 0-based rank of quantile `q` among `n >= 1` observations in value
/// order, by the nearest-rank definition: the smallest value with at
/// least `q n` of the observations at or below it (rank `ceil(q n)`,
/// 1-based), the least for `q = 0`. PromPHP's `Math::quantile` and
/// client_golang's exact quantiles for few observations pick the same.
pub(crate) fn nearest_rank(q: f64, n: u64) -> u64 {
    let r = (q.clamp(0.0, 1.0) * n as f64).ceil() as u64;
    r.clamp(1, n.max(1)) - 1
}

/// `ceil(x)` for a finite `x` of magnitude below 2^62. By hand:
/// `f64::ceil` is a library call on x86-64 without SSE4.1 (about 23
/// instructions under callgrind).
#[inline]
fn ceil_small(x: f64) -> i64 {
    let t = x as i64;
    t + i64::from(x > t as f64)
}

/// A sketch's geometry: which cell a value counts in, and what value a
/// cell stands for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SketchMapping {
    alpha: f64,
    /// Cells per unit of [`CubicLog2`]: `7 / (10 ln gamma)`.
    multiplier: f64,
    /// The index of the first positive cell.
    min_index: i32,
    /// Cells for each sign.
    bins: u32,
    min_value: f64,
    max_value: f64,
}

impl SketchMapping {
    /// A mapping with relative accuracy `alpha` (0 < alpha < 1) for
    /// magnitudes in `[min_value, max_value]`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] if `alpha` is out of range, or the
    /// range is empty, not finite, not of normal floats, or needs more
    /// than 65,536 cells a sign.
    pub fn new(alpha: f64, min_value: f64, max_value: f64) -> Result<SketchMapping> {
        let bad = |msg: String| Error::new(ErrorKind::InvalidOptions, msg);
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(bad(format!(
                "sketch relative accuracy must lie in (0, 1), got {alpha}"
            )));
        }
        if !(min_value >= f64::MIN_POSITIVE && max_value.is_finite() && min_value < max_value) {
            return Err(bad(format!(
                "sketch range must satisfy 0 < min < max < inf, got [{min_value}, {max_value}]"
            )));
        }
        let gamma = (1.0 + alpha) / (1.0 - alpha);
        let multiplier = 1.0 / (CubicLog2::MIN_SLOPE * gamma.ln());
        let min_index = (CubicLog2::of(min_value) * multiplier).ceil();
        let max_index = (CubicLog2::of(max_value) * multiplier).ceil();
        let bins = max_index - min_index + 1.0;
        if bins > 65_536.0 {
            return Err(bad(format!(
                "a sketch of accuracy {alpha} over [{min_value}, {max_value}] needs {bins} cells a sign; at most 65536"
            )));
        }
        Ok(SketchMapping {
            alpha,
            multiplier,
            min_index: min_index as i32,
            bins: bins as u32,
            min_value,
            max_value,
        })
    }

    /// The relative accuracy.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Cells in all: the negative cells, the zero cell, the positive cells.
    pub fn cells(&self) -> usize {
        2 * self.bins as usize + 1
    }

    /// The cell `v` counts in. Cells are in value order. NaN counts as
    /// zero; callers refuse it before.
    #[inline]
    pub fn cell_of(&self, v: f64) -> usize {
        let zero = self.bins as usize;
        let m = v.abs();
        if m.is_nan() || m < self.min_value {
            return zero;
        }
        let off = if m >= self.max_value {
            self.bins as usize - 1
        } else {
            // The cell holding L in ((i - 1) / multiplier, i / multiplier],
            // less min_index, clamped against rounding at the range's ends.
            let i = ceil_small(CubicLog2::of(m) * self.multiplier) - i64::from(self.min_index);
            i.clamp(0, i64::from(self.bins) - 1) as usize
        };
        if v > 0.0 {
            zero + 1 + off
        } else {
            zero - 1 - off
        }
    }

    /// The bounds `(lo, hi]` of the values of positive cell index `i`.
    fn bounds(&self, i: f64) -> (f64, f64) {
        (
            CubicLog2::inverse((i - 1.0) / self.multiplier),
            CubicLog2::inverse(i / self.multiplier),
        )
    }

    /// The value cell `cell` stands for: within a relative `alpha` of every
    /// value in its range (inside the mapped range).
    pub fn value_of(&self, cell: usize) -> f64 {
        let zero = self.bins as usize;
        if cell == zero {
            return 0.0;
        }
        let (off, sign) = if cell > zero {
            (cell - zero - 1, 1.0)
        } else {
            (zero - 1 - cell, -1.0)
        };
        let (lo, hi) = self.bounds(f64::from(self.min_index) + off as f64);
        // hi / lo <= gamma, and this point is within (hi - lo) / (hi + lo)
        // <= alpha of both ends.
        sign * 2.0 * lo * hi / (lo + hi)
    }

    /// The mapping of summary quantiles in a store: 0.99% relative accuracy
    /// for magnitudes from 1e-9 to 1e9 (4,229 cells). Fixed, so that every
    /// process of every build of this layout maps a value to the same cell.
    pub fn summary() -> SketchMapping {
        SketchMapping::new(SUMMARY_ALPHA, 1e-9, 1e9).expect("valid constants")
    }

    /// Estimates of the quantiles `qs` (each in `[0, 1]`, increasing) in one
    /// pass over merged counts that are zero outside `range`, pushed to
    /// `out` in order: NaN for each when there is no observation. Each
    /// estimate is what [`Self::quantile`] gives.
    pub fn quantiles_into(
        &self,
        counts: &[u64],
        range: std::ops::RangeInclusive<usize>,
        qs: &[f64],
        out: &mut Vec<f64>,
    ) {
        let cells = counts.get(range.clone()).unwrap_or(&[]);
        let n: u64 = cells.iter().sum();
        if n == 0 {
            out.extend(qs.iter().map(|_| f64::NAN));
            return;
        }
        let mut seen = 0u64;
        let mut it = cells.iter().enumerate();
        let mut cell = None;
        for &q in qs {
            let rank = nearest_rank(q, n);
            // Walk on from where the last quantile stopped.
            while cell.is_none_or(|_| seen <= rank) {
                let Some((i, &c)) = it.next() else { break };
                seen += c;
                cell = Some(i);
            }
            out.push(cell.map_or(f64::NAN, |i| self.value_of(range.start() + i)));
        }
    }

    /// The estimate of quantile `q` (0 <= q <= 1) from merged cell counts:
    /// the value of the cell holding the observation of rank
    /// `nearest_rank` in value order. None if there is no
    /// observation or `counts` is not this mapping's size.
    pub fn quantile(&self, counts: &[u64], q: f64) -> Option<f64> {
        if counts.len() != self.cells() || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return None;
        }
        let rank = nearest_rank(q, n);
        let mut seen = 0u64;
        for (cell, &c) in counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                return Some(self.value_of(cell));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*), so the accuracy
    /// figures are the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn uniform(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            // Box-Muller.
            let u1 = self.uniform().max(f64::MIN_POSITIVE);
            let u2 = self.uniform();
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        }
    }

    fn latency_mapping() -> SketchMapping {
        SketchMapping::new(0.0099, 1e-9, 1e9).unwrap()
    }

    /// Splits `values` over `slots` per-slot sketches, merges them by
    /// adding counts, and returns the worst relative error over the
    /// quantiles against the exact values at the same ranks.
    fn worst_error(values: &mut [f64], slots: usize, m: &SketchMapping) -> (f64, f64) {
        let mut per_slot = vec![vec![0u64; m.cells()]; slots];
        for (i, v) in values.iter().enumerate() {
            per_slot[i % slots][m.cell_of(*v)] += 1;
        }
        let mut merged = vec![0u64; m.cells()];
        for s in &per_slot {
            for (a, b) in merged.iter_mut().zip(s) {
                *a += b;
            }
        }
        values.sort_by(f64::total_cmp);
        let mut worst = (0.0f64, 0.0);
        for q in [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0] {
            let exact = values[nearest_rank(q, values.len() as u64) as usize];
            let est = m.quantile(&merged, q).unwrap();
            let err = ((est - exact) / exact).abs();
            if err > worst.0 {
                worst = (err, q);
            }
        }
        worst
    }

    #[test]
    fn quantiles_are_within_one_percent_on_latency_shapes_across_8_slots() {
        let m = latency_mapping();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let n = 200_000;
        let mut uniform: Vec<f64> = (0..n).map(|_| 0.001 + rng.uniform()).collect();
        let mut lognormal: Vec<f64> = (0..n).map(|_| (-3.0 + rng.normal()).exp()).collect();
        let mut bimodal: Vec<f64> = (0..n)
            .map(|i| {
                let mu = if i % 10 < 7 {
                    0.005f64.ln()
                } else {
                    0.5f64.ln()
                };
                (mu + 0.3 * rng.normal()).exp()
            })
            .collect();
        for (name, values) in [
            ("uniform", &mut uniform),
            ("lognormal", &mut lognormal),
            ("bimodal", &mut bimodal),
        ] {
            let (err, q) = worst_error(values, 8, &m);
            assert!(err <= 0.01, "{name}: relative error {err} at q={q}");
        }
    }

    #[test]
    fn quantiles_into_agrees_with_quantile() {
        let m = latency_mapping();
        let mut rng = Rng(7);
        let mut counts = vec![0u64; m.cells()];
        for _ in 0..5000 {
            counts[m.cell_of((rng.normal() - 2.0).exp())] += 1;
        }
        let lo = counts.iter().position(|c| *c > 0).unwrap();
        let hi = counts.iter().rposition(|c| *c > 0).unwrap();
        let qs = [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0];
        let mut out = Vec::new();
        m.quantiles_into(&counts, lo..=hi, &qs, &mut out);
        let one: Vec<f64> = qs
            .iter()
            .map(|q| m.quantile(&counts, *q).unwrap())
            .collect();
        assert_eq!(out, one);
        out.clear();
        m.quantiles_into(&vec![0; m.cells()], 0..=10, &[0.5, 0.9], &mut out);
        assert!(out.len() == 2 && out.iter().all(|v| v.is_nan()));
        assert_eq!(SketchMapping::summary(), latency_mapping());
    }

    #[test]
    fn merging_is_adding_counts_whatever_the_split() {
        let m = latency_mapping();
        let mut rng = Rng(42);
        let values: Vec<f64> = (0..10_000).map(|_| (rng.normal() * 2.0).exp()).collect();
        let mut one = vec![0u64; m.cells()];
        for v in &values {
            one[m.cell_of(*v)] += 1;
        }
        for slots in [2, 3, 16] {
            let mut per_slot = vec![vec![0u64; m.cells()]; slots];
            for (i, v) in values.iter().enumerate() {
                // Any split: by the value's bits here, not round-robin.
                per_slot[(v.to_bits() as usize).wrapping_add(i) % slots][m.cell_of(*v)] += 1;
            }
            assert!(per_slot.iter().all(|s| s.iter().sum::<u64>() > 0));
            let mut merged = vec![0u64; m.cells()];
            for s in &per_slot {
                for (a, b) in merged.iter_mut().zip(s) {
                    *a += b;
                }
            }
            assert_eq!(merged, one, "{slots} slots");
        }
    }

    #[test]
    fn cells_are_in_value_order_and_values_round_trip_within_alpha() {
        let m = SketchMapping::new(0.01, 1e-3, 1e3).unwrap();
        let mut last = 0;
        let mut v = -2e3;
        while v < 2e3 {
            let c = m.cell_of(v);
            assert!(c >= last, "cell order at {v}");
            last = c;
            if v.abs() >= 1e-3 && v.abs() < 1e3 {
                let est = m.value_of(c);
                assert!(((est - v) / v).abs() <= 0.01 + 1e-12, "{v} -> {est}");
            }
            v += v.abs().max(1e-4) * 0.013;
        }
        assert_eq!(m.value_of(m.cell_of(0.0)), 0.0);
        assert_eq!(
            m.cell_of(1e-4),
            m.cell_of(-1e-4),
            "small magnitudes share the zero cell"
        );
        assert_eq!(
            m.cell_of(1e9),
            m.cells() - 1,
            "large values clamp to the last cell"
        );
        assert_eq!(m.cell_of(-1e9), 0);
        assert_eq!(m.cell_of(f64::INFINITY), m.cells() - 1);
    }

    #[test]
    fn every_cell_spans_at_most_gamma_and_holds_the_values_inside_its_bounds() {
        // The error bound of the cubic mapping, checked cell by cell: the
        // bounds of each positive cell are within a factor gamma, so its
        // value is within alpha of all it holds; and a value just inside
        // either bound counts in that cell, of both signs.
        for alpha in [SUMMARY_ALPHA, 0.01, 0.05] {
            let m = SketchMapping::new(alpha, 1e-9, 1e9).unwrap();
            let gamma = (1.0 + alpha) / (1.0 - alpha);
            let zero = m.bins as usize;
            let mut worst = 0.0f64;
            for off in 0..m.bins as usize {
                let (lo, hi) = m.bounds(f64::from(m.min_index) + off as f64);
                worst = worst.max(hi / lo);
                let est = m.value_of(zero + 1 + off);
                for v in [lo * (1.0 + 1e-12), (lo + hi) / 2.0, hi * (1.0 - 1e-12)] {
                    if v < m.min_value || v >= m.max_value {
                        continue; // the clamped ends
                    }
                    assert_eq!(
                        m.cell_of(v),
                        zero + 1 + off,
                        "alpha {alpha}: {v:e} in cell {off}"
                    );
                    assert_eq!(m.cell_of(-v), zero - 1 - off, "alpha {alpha}: {:e}", -v);
                    assert!(
                        ((est - v) / v).abs() <= alpha * (1.0 + 1e-9),
                        "{v:e} -> {est:e}"
                    );
                }
            }
            assert!(
                worst <= gamma * (1.0 + 1e-12),
                "alpha {alpha}: a cell spans {worst}, gamma {gamma}"
            );
            // The cost of the cubic: 1 / (10/7 ln 2) - 1 = 0.99% more cells
            // than the exact logarithmic mapping's ln(gamma)-wide ones,
            // give or take a cell at each end of the range.
            let exact = (1e9f64.ln() - 1e-9f64.ln()) / gamma.ln();
            let extra = m.bins as f64 - exact;
            assert!(
                (exact * 0.0098 - 2.0..exact * 0.0099 + 2.0).contains(&extra),
                "alpha {alpha}: {} cells, {exact} for ln",
                m.bins
            );
        }
    }

    #[test]
    fn the_cubic_log2_is_monotone_and_inverts() {
        // L(v) = log2(v) at powers of two, increasing between them (also
        // across the exponent's steps), and inverse(L(v)) = v.
        for e in -40..40 {
            let p = 2f64.powi(e);
            assert_eq!(CubicLog2::of(p), f64::from(e));
        }
        let mut v = 1e-12;
        let mut last = f64::NEG_INFINITY;
        while v < 1e12 {
            let l = CubicLog2::of(v);
            assert!(l > last, "L not increasing at {v:e}");
            assert!((l - v.log2()).abs() < 0.01, "{v:e}: {l} vs {}", v.log2());
            let back = CubicLog2::inverse(l);
            assert!(((back - v) / v).abs() < 1e-14, "{v:e} -> {back:e}");
            last = l;
            v *= 1.0 + 1e-3 + (v.to_bits() % 7) as f64 * 1e-4;
        }
    }

    #[test]
    fn ceil_small_is_f64_ceil() {
        for x in [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.0 + f64::EPSILON,
            -1.0 - f64::EPSILON,
            2094.0,
            2_094.000_000_001,
            -2_093.999_999_9,
            1e15 + 0.5,
            -(1e15 + 0.5),
            4.5e18,
        ] {
            assert_eq!(ceil_small(x), x.ceil() as i64, "{x}");
        }
    }

    #[test]
    fn negative_values_have_mirrored_quantiles() {
        let m = latency_mapping();
        let mut counts = vec![0u64; m.cells()];
        for i in 1..=1000 {
            counts[m.cell_of(-(i as f64))] += 1;
        }
        // Rank ceil(0.5 * 1000) - 1 = 499 of -1000 ... -1 in value order
        // is -501.
        let median = m.quantile(&counts, 0.5).unwrap();
        assert!(((median + 501.0) / 501.0).abs() <= 0.01, "{median}");
        assert!(m.quantile(&counts, 0.0).unwrap() < -990.0);
    }

    #[test]
    fn the_size_is_stated_and_bad_options_are_refused() {
        // 0.99% accuracy over 18 decades each side: 4,229 cells (33 KiB
        // of u64 counts; the exact logarithm would need 4,189).
        assert_eq!(latency_mapping().cells(), 4229);
        assert_eq!(SketchMapping::new(0.01, 1e-3, 1e3).unwrap().cells(), 1397);
        for (a, lo, hi) in [
            (0.0, 1e-3, 1.0),
            (1.0, 1e-3, 1.0),
            (f64::NAN, 1e-3, 1.0),
            (0.01, 0.0, 1.0),
            (0.01, 1.0, 1.0),
            (0.01, 1e-3, f64::INFINITY),
            (1e-6, 1e-300, 1e300),
        ] {
            let e = SketchMapping::new(a, lo, hi).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidOptions, "{a} {lo} {hi}");
        }
        let m = latency_mapping();
        assert_eq!(m.quantile(&vec![0; m.cells()], 0.5), None);
        assert_eq!(m.quantile(&[1, 2], 0.5), None);
        assert_eq!(m.quantile(&vec![1; m.cells()], 1.5), None);
    }

    #[test]
    fn nearest_rank_is_promphps_rule() {
        // PromPHP's Math::quantile: j = floor(n q), the j-th value if
        // n q is whole, else the (j + 1)-th (1-based).
        let promphp = |n: u64, q: f64| {
            let x = n as f64 * q;
            let j = x.floor() as u64;
            if x == j as f64 {
                j.max(1) - 1
            } else {
                j
            }
        };
        for n in 1..200u64 {
            for q in [
                0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0,
            ] {
                assert_eq!(nearest_rank(q, n), promphp(n, q), "n {n} q {q}");
            }
        }
        assert_eq!(nearest_rank(0.5, 10), 4);
        assert_eq!(nearest_rank(0.1, 11), 1);
    }
}

//! Pages written byte for byte as prometheus-client (client_ruby) 4.x's
//! `Prometheus::Client::Formats::Text.marshal` writes a registry whose
//! metrics live on the Ruby binding's `Shmetrics::DataStore`, so that an
//! app's own page (`Prometheus::Middleware::Exporter`) is one call into the
//! library instead of a walk in Ruby.
//!
//! What differs from [`crate::encode`]'s text format:
//!
//! - Each family starts with `# TYPE`, then `# HELP` (always, even with an
//!   empty help text, and even without series).
//! - Values are written as Ruby's `Float#to_s` writes them
//!   ([`write_ruby_float`]: `16.0`, `0.005`, `1.0e-05`, `1.0e+15`,
//!   `Infinity`, `NaN`), bucket counts and a summary's count included.
//! - A histogram's `le` values are written as Ruby writes the metric's
//!   buckets when they are Integers or non-integral Floats: an integral
//!   bound as an integer (`le="1"`), any other with `Float#to_s`; `+Inf`
//!   last. Then `_sum`, then `_count`.
//! - A summary has `_sum`, then `_count`, and no quantiles.
//! - A counter is named as it was registered (with `_total` only if its
//!   name had it), as `Shmetrics::DataStore` registers it.
//! - A family's overflow series is left out (prometheus-client has no
//!   label set for it); a gauge's `pid` label comes after the family's.
//!
//! ```
//! use shmetrics_core::{FamilyDesc, Kind, Options, Store};
//! use shmetrics_expo::{client_ruby, select};
//! # let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path().join("store"), &Options::default())?;
//! let desc = FamilyDesc::new("jobs_total", Kind::Counter).help("Jobs run.").labels(&["queue"]);
//! let family = store.register(&desc.name_as_given())?;
//! store.counter_add(store.series(&family, &["mail"])?, 3.0)?;
//!
//! let snapshot = store.snapshot()?;
//! let mut page = Vec::new();
//! client_ruby::encode(&select(&snapshot, &["jobs"]), &mut page);
//! assert_eq!(
//!     String::from_utf8(page).unwrap(),
//!     "# TYPE jobs_total counter\n# HELP jobs_total Jobs run.\njobs_total{queue=\"mail\"} 3.0\n"
//! );
//! # Ok::<(), shmetrics_core::Error>(())
//! ```

use shmetrics_core::{FamilyView, Kind, SeriesView, Value};

use crate::escape::escape;
use crate::num::{non_finite_ruby, write_shortest, write_u64};

/// Appends Ruby's `Float#to_s` of `v`: the shortest digits that read back
/// as `v`, positional from 0.0001 up to below 10^15 (`16.0`, `0.0001`,
/// `1234.5`), else in exponent form with a point and a signed exponent of
/// at least two digits (`1.0e-05`, `1.0e+15`, `2.5e+20`); `Infinity`,
/// `-Infinity` and `NaN`.
///
/// ```
/// let mut out = Vec::new();
/// for v in [16.0, 0.005, 1e-5, 1e14, 1e15, 2.5e20, -0.0, f64::INFINITY, f64::NAN] {
///     shmetrics_expo::client_ruby::write_ruby_float(&mut out, v);
///     out.push(b' ');
/// }
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "16.0 0.005 1.0e-05 100000000000000.0 1.0e+15 2.5e+20 -0.0 Infinity NaN "
/// );
/// ```
pub fn write_ruby_float(out: &mut Vec<u8>, v: f64) {
    if !v.is_finite() {
        out.extend_from_slice(non_finite_ruby(v));
        return;
    }
    let start = out.len();
    write_shortest(out, v, |exp| !(-4..15).contains(&exp));
    // Ruby writes one digit before an exponent as `1.0e+15`.
    if let Some(e) = out[start..].iter().position(|&c| c == b'e') {
        if !out[start..start + e].contains(&b'.') {
            out.splice(start + e..start + e, *b".0");
        }
    }
}

/// Appends a bucket bound as Ruby writes an Integer bound (an integral
/// value below 2^53 in magnitude: `1`, `10`) or a Float one
/// ([`write_ruby_float`]).
fn write_bound(out: &mut Vec<u8>, b: f64) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if b.fract() == 0.0 && b.abs() < EXACT {
        if b < 0.0 {
            out.push(b'-');
        }
        write_u64(out, b.abs() as u64);
    } else {
        write_ruby_float(out, b);
    }
}

/// Appends `families` (see [`crate::select`]) as prometheus-client's
/// `Formats::Text.marshal` writes the same metrics on
/// `Shmetrics::DataStore`, one after the other.
pub fn encode(families: &[FamilyView<'_>], out: &mut Vec<u8>) {
    let mut enc = Encoder::default();
    for f in families {
        enc.family(f, out);
    }
}

/// Scratch space reused across series and families.
#[derive(Default)]
struct Encoder {
    /// The family's name as written.
    name: Vec<u8>,
    /// The current series' labels: `a="x",b="y"`.
    labels: Vec<u8>,
    /// The current family's `le` values, each followed by `"`.
    bounds: Vec<Vec<u8>>,
}

impl Encoder {
    fn family(&mut self, f: &FamilyView<'_>, out: &mut Vec<u8>) {
        let kind = f.kind();
        self.name.clear();
        self.name.extend_from_slice(f.name().as_bytes());
        if kind == Kind::Counter && !f.name_as_given() {
            self.name.extend_from_slice(b"_total");
        }
        out.extend_from_slice(b"# TYPE ");
        out.extend_from_slice(&self.name);
        out.push(b' ');
        out.extend_from_slice(kind.as_str().as_bytes());
        out.extend_from_slice(b"\n# HELP ");
        out.extend_from_slice(&self.name);
        out.push(b' ');
        escape(out, f.help().as_bytes(), false);
        out.push(b'\n');
        if kind == Kind::Histogram {
            self.bounds.clear();
            for &b in f.buckets() {
                let mut le = Vec::with_capacity(8);
                write_bound(&mut le, b);
                le.push(b'"');
                self.bounds.push(le);
            }
        }
        for s in f.series().filter(|s| !s.is_overflow()) {
            self.render_labels(&s);
            match s.value() {
                Value::Counter(v) | Value::Gauge(v) => self.sample(out, b"", v),
                Value::Histogram {
                    cumulative, sum, ..
                } => {
                    for (i, &n) in cumulative.iter().enumerate() {
                        self.bucket(
                            out,
                            self.bounds.get(i).map_or(&b"+Inf\""[..], Vec::as_slice),
                            n,
                        );
                    }
                    self.sample(out, b"_sum", sum);
                    self.sample(out, b"_count", cumulative.last().map_or(0.0, |&n| n as f64));
                }
                Value::Summary { count, sum, .. } => {
                    self.sample(out, b"_sum", sum);
                    self.sample(out, b"_count", count as f64);
                }
            }
        }
    }

    fn render_labels(&mut self, s: &SeriesView<'_>) {
        self.labels.clear();
        for (i, (name, value)) in s.labels().enumerate() {
            if i > 0 {
                self.labels.push(b',');
            }
            self.labels.extend_from_slice(name.as_bytes());
            self.labels.extend_from_slice(b"=\"");
            escape(&mut self.labels, value.as_bytes(), true);
            self.labels.push(b'"');
        }
    }

    /// `name{labels} v`, without braces when there are no labels.
    fn sample(&self, out: &mut Vec<u8>, suffix: &[u8], v: f64) {
        out.extend_from_slice(&self.name);
        out.extend_from_slice(suffix);
        if !self.labels.is_empty() {
            out.push(b'{');
            out.extend_from_slice(&self.labels);
            out.push(b'}');
        }
        out.push(b' ');
        write_ruby_float(out, v);
        out.push(b'\n');
    }

    /// `name_bucket{labels,le="…"} n`; `le` ends with its closing quote.
    fn bucket(&self, out: &mut Vec<u8>, le: &[u8], n: u64) {
        out.extend_from_slice(&self.name);
        out.extend_from_slice(b"_bucket{");
        if !self.labels.is_empty() {
            out.extend_from_slice(&self.labels);
            out.push(b',');
        }
        out.extend_from_slice(b"le=\"");
        out.extend_from_slice(le);
        out.extend_from_slice(b"} ");
        write_ruby_float(out, n as f64);
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ruby 3.1's `Float#to_s` of each value.
    #[test]
    fn floats_as_ruby_writes_them() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (16.0, "16.0"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (0.000099, "9.9e-05"),
            (1e-5, "1.0e-05"),
            (-1.5e-7, "-1.5e-07"),
            (123_456.789, "123456.789"),
            (1e14, "100000000000000.0"),
            (999_999_999_999_999.9, "999999999999999.9"),
            (1e15, "1.0e+15"),
            (1_234_567_890_123_456.0, "1.234567890123456e+15"),
            (2.5e20, "2.5e+20"),
            (1e100, "1.0e+100"),
            (5e-324, "5.0e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
        ];
        for &(v, want) in cases {
            let mut out = Vec::new();
            write_ruby_float(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{v:e}");
        }
    }

    /// Bounds as Ruby writes Integer buckets and non-integral Float ones.
    #[test]
    fn bounds() {
        for (b, want) in [
            (1.0, "1"),
            (-3.0, "-3"),
            (0.005, "0.005"),
            (1e-5, "1.0e-05"),
            (2.5, "2.5"),
        ] {
            let mut out = Vec::new();
            write_bound(&mut out, b);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }
}

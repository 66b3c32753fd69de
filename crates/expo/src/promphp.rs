//! PromPHP's sample arrays, written in PHP's `serialize()` format, so that
//! the PHP binding's `ShmetricsAdapter::collect()` gets a whole store in
//! one call and one `unserialize()` (which PHP runs in C) instead of
//! walking a snapshot series by series in PHP.
//!
//! The value is a list with one array per family that has series, in the
//! order given, each what `Prometheus\MetricFamilySamples`'s constructor
//! takes:
//!
//! - `name`: a counter's name as PromPHP serves it (as registered,
//!   `name_total` for a counter registered without `_total` by a binding
//!   that adds it); `help`; `type` (`counter`, `gauge`, `histogram`,
//!   `summary`); `labelNames`, the family's;
//! - `samples`: per series, arrays of `name`, `labelNames` (the sample's
//!   own: a label the store adds, `pid` or `shmetrics_overflow`, then `le`
//!   or `quantile`), `labelValues` (the family's values, then those of the
//!   sample's own names) and `value`: a counter's or gauge's one sample
//!   (a float); a histogram's `_bucket` samples (integers; `le` as PHP
//!   writes the bound as a string, see [`write_php_float`], `+Inf` last),
//!   then `_count` (an integer) and `_sum` (a float); a summary's quantile
//!   samples (`quantile` and the estimate as floats, NaN for an empty
//!   window), then `_count` and `_sum`;
//! - `buckets`: a histogram's bounds as floats (empty for other types),
//!   for a PHP whose `precision` setting is not the default 14 to write
//!   `le` itself; `MetricFamilySamples` ignores it.
//!
//! With `sorted`, each family's series are sorted by their label values
//! joined without a separator, bytewise and stable, as PromPHP's own
//! adapters sort them (`usort` with `strcmp(implode('', $values))`);
//! otherwise they come in creation order.
//!
//! ```
//! use shmetrics_core::{FamilyDesc, Kind, Options, Store};
//! use shmetrics_expo::{promphp, select};
//! # let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path().join("store"), &Options::default())?;
//! let desc = FamilyDesc::new("jobs", Kind::Counter).help("Jobs run.").labels(&["queue"]);
//! let family = store.register(&desc.name_as_given())?;
//! store.counter_add(store.series(&family, &["mail"])?, 3.0)?;
//!
//! let snapshot = store.snapshot()?;
//! let mut out = Vec::new();
//! promphp::encode(&select(&snapshot, &["jobs"]), true, &mut out);
//! assert_eq!(
//!     String::from_utf8(out).unwrap(),
//!     concat!(
//!         r#"a:1:{i:0;a:6:{s:4:"name";s:4:"jobs";s:4:"help";s:9:"Jobs run.";s:4:"type";s:7:"counter";"#,
//!         r#"s:10:"labelNames";a:1:{i:0;s:5:"queue";}s:7:"samples";a:1:{i:0;a:4:{s:4:"name";s:4:"jobs";"#,
//!         r#"s:10:"labelNames";a:0:{}s:11:"labelValues";a:1:{i:0;s:4:"mail";}s:5:"value";d:3.0;}}"#,
//!         r#"s:7:"buckets";a:0:{}}}"#,
//!     )
//! );
//! # Ok::<(), shmetrics_core::Error>(())
//! ```

use shmetrics_core::{FamilyView, Kind, SeriesView, Value};

use crate::num::write_u64;

/// Appends `families` (see [`crate::select`]) as PromPHP's sample arrays
/// in PHP's `serialize()` format; with `sorted`, each family's series
/// sorted as PromPHP's adapters sort them.
pub fn encode(families: &[FamilyView<'_>], sorted: bool, out: &mut Vec<u8>) {
    let shown: Vec<&FamilyView<'_>> = families.iter().filter(|f| f.series().len() > 0).collect();
    array_start(out, shown.len());
    let mut enc = Encoder::default();
    for (i, f) in shown.into_iter().enumerate() {
        index(out, i);
        enc.family(f, sorted, out);
    }
    out.push(b'}');
}

/// Appends `v` as PHP's `(string)` cast writes a float with the default
/// `precision` setting of 14 (`%.14G`): 14 significant digits at most,
/// trailing zeros dropped, positional from 0.0001 up to below 10^14
/// (`0.005`, `1`, `10000000000000`), else in exponent form with a point
/// and a signed exponent (`1.0E-5`, `1.0E+14`, `1.2345678901234E+14`);
/// `-0`, `INF`, `-INF`, `NAN`. This is how PromPHP writes a histogram's
/// `le` (and how PHP writes every float sample value, at render time).
///
/// ```
/// let mut out = Vec::new();
/// for v in [0.005, 1.0, 1e-5, 1e13, 1e14, 1.0 / 3.0, -0.0, f64::INFINITY] {
///     shmetrics_expo::promphp::write_php_float(&mut out, v);
///     out.push(b' ');
/// }
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "0.005 1 1.0E-5 10000000000000 1.0E+14 0.33333333333333 -0 INF "
/// );
/// ```
pub fn write_php_float(out: &mut Vec<u8>, v: f64) {
    const PRECISION: i32 = 14;
    if v.is_nan() {
        out.extend_from_slice(b"NAN");
        return;
    }
    if v.is_sign_negative() {
        out.push(b'-');
    }
    if v.is_infinite() {
        out.extend_from_slice(b"INF");
        return;
    }
    if v == 0.0 {
        out.push(b'0');
        return;
    }
    // 14 significant digits, correctly rounded (ties to even, as
    // zend_dtoa's mode 2): `d.ddddddddddddde<exp>`.
    let text = format!("{:.*e}", (PRECISION - 1) as usize, v.abs());
    let (mantissa, exp) = text.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    // zend_gcvt's decimal point position: v = 0.digits × 10^decpt.
    let decpt = exp + 1;
    if if decpt < 0 {
        decpt < -3
    } else {
        decpt > PRECISION
    } {
        out.push(digits[0]);
        out.push(b'.');
        if digits.len() > 1 {
            out.extend_from_slice(&digits[1..]);
        } else {
            out.push(b'0');
        }
        out.push(b'E');
        out.push(if exp < 0 { b'-' } else { b'+' });
        write_u64(out, u64::from(exp.unsigned_abs()));
    } else if decpt <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', decpt.unsigned_abs() as usize));
        out.extend_from_slice(&digits);
    } else {
        let int_len = decpt as usize;
        if digits.len() > int_len {
            out.extend_from_slice(&digits[..int_len]);
            out.push(b'.');
            out.extend_from_slice(&digits[int_len..]);
        } else {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
        }
    }
}

/// `a:n:{`: an array of `n` elements follows, then `}`.
fn array_start(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(b"a:");
    write_u64(out, n as u64);
    out.extend_from_slice(b":{");
}

/// `i:n;`: an integer key (or value).
fn index(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(b"i:");
    write_u64(out, n as u64);
    out.push(b';');
}

/// `s:len:"bytes";`, the bytes as they are: PHP's strings need no escaping.
fn string(out: &mut Vec<u8>, parts: &[&[u8]]) {
    out.extend_from_slice(b"s:");
    write_u64(out, parts.iter().map(|p| p.len()).sum::<usize>() as u64);
    out.extend_from_slice(b":\"");
    for p in parts {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(b"\";");
}

/// `d:v;`: a float that reads back as `v` (`NAN`, `INF`, `-INF` too).
fn float(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(b"d:");
    if v.is_nan() {
        out.extend_from_slice(b"NAN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"INF" } else { b"-INF" });
    } else {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    }
    out.push(b';');
}

/// `i:n;`, or a float past PHP's largest integer (as PHP FFI reads a
/// `uint64_t`).
fn count(out: &mut Vec<u8>, n: u64) {
    if i64::try_from(n).is_ok() {
        out.extend_from_slice(b"i:");
        write_u64(out, n);
        out.push(b';');
    } else {
        float(out, n as f64);
    }
}

/// A sample's value.
#[derive(Clone, Copy)]
enum Num {
    Count(u64),
    Float(f64),
}

/// Scratch space reused across series and families.
#[derive(Default)]
struct Encoder {
    /// The family's name as PromPHP serves it.
    name: Vec<u8>,
    /// A histogram's `le` values, each a serialized string.
    les: Vec<Vec<u8>>,
    /// The current series' label values and the added label's value, as
    /// the elements of a list (`i:0;s:1:"a";…`), and how many.
    values: Vec<u8>,
    value_count: usize,
    /// Whether the series has a label the store adds (`pid`,
    /// `shmetrics_overflow`), and its name serialized.
    extra: bool,
    extra_name: Vec<u8>,
}

impl Encoder {
    fn family(&mut self, f: &FamilyView<'_>, sorted: bool, out: &mut Vec<u8>) {
        let kind = f.kind();
        self.name.clear();
        self.name.extend_from_slice(f.name().as_bytes());
        if kind == Kind::Counter && !f.name_as_given() {
            self.name.extend_from_slice(b"_total");
        }
        let mut series: Vec<SeriesView<'_>> = f.series().collect();
        if sorted {
            series.sort_by_cached_key(|s| s.label_values().collect::<String>());
        }
        let samples: usize = series.iter().map(|s| sample_count(&s.value())).sum();

        array_start(out, 6);
        string(out, &[b"name"]);
        string(out, &[&self.name]);
        string(out, &[b"help"]);
        string(out, &[f.help().as_bytes()]);
        string(out, &[b"type"]);
        string(out, &[kind.as_str().as_bytes()]);
        string(out, &[b"labelNames"]);
        array_start(out, f.label_names().len());
        for (i, n) in f.label_names().enumerate() {
            index(out, i);
            string(out, &[n.as_bytes()]);
        }
        out.push(b'}');

        string(out, &[b"samples"]);
        array_start(out, samples);
        self.les.clear();
        for &b in f.buckets() {
            let mut le = Vec::with_capacity(16);
            write_php_float(&mut le, b);
            let mut s = Vec::with_capacity(le.len() + 8);
            string(&mut s, &[&le]);
            self.les.push(s);
        }
        let mut i = 0;
        for s in &series {
            self.series(s, &mut i, out);
        }
        out.push(b'}');

        string(out, &[b"buckets"]);
        array_start(out, f.buckets().len());
        for (i, &b) in f.buckets().iter().enumerate() {
            index(out, i);
            float(out, b);
        }
        out.extend_from_slice(b"}}");
    }

    /// The samples of `s`, numbered from `*i` on.
    fn series(&mut self, s: &SeriesView<'_>, i: &mut usize, out: &mut Vec<u8>) {
        let own = s.label_values().len();
        self.values.clear();
        self.value_count = 0;
        self.extra = false;
        for (k, (name, value)) in s.labels().enumerate() {
            if k >= own {
                self.extra = true;
                self.extra_name.clear();
                string(&mut self.extra_name, &[name.as_bytes()]);
            }
            index(&mut self.values, k);
            string(&mut self.values, &[value.as_bytes()]);
            self.value_count += 1;
        }
        let mut next = |enc: &Self, suffix: &[u8], own: Option<(&[u8], &[u8])>, v: Num| {
            index(out, *i);
            *i += 1;
            enc.sample(out, suffix, own, v);
        };
        match s.value() {
            Value::Counter(v) | Value::Gauge(v) => next(self, b"", None, Num::Float(v)),
            Value::Histogram {
                cumulative, sum, ..
            } => {
                for (k, &n) in cumulative.iter().enumerate() {
                    let le = self
                        .les
                        .get(k)
                        .map_or(&br#"s:4:"+Inf";"#[..], Vec::as_slice);
                    next(self, b"_bucket", Some((br#"s:2:"le";"#, le)), Num::Count(n));
                }
                let total = cumulative.last().copied().unwrap_or(0);
                next(self, b"_count", None, Num::Count(total));
                next(self, b"_sum", None, Num::Float(sum));
            }
            Value::Summary {
                count,
                sum,
                quantiles,
            } => {
                for q in quantiles {
                    let mut quantile = Vec::with_capacity(24);
                    float(&mut quantile, q.quantile);
                    next(
                        self,
                        b"",
                        Some((br#"s:8:"quantile";"#, &quantile)),
                        Num::Float(q.value),
                    );
                }
                next(self, b"_count", None, Num::Count(count));
                next(self, b"_sum", None, Num::Float(sum));
            }
        }
    }

    /// One sample array; `own` is the sample's own label (`le`,
    /// `quantile`), name and value serialized.
    fn sample(&self, out: &mut Vec<u8>, suffix: &[u8], own: Option<(&[u8], &[u8])>, v: Num) {
        out.extend_from_slice(br#"a:4:{s:4:"name";"#);
        string(out, &[&self.name, suffix]);
        out.extend_from_slice(br#"s:10:"labelNames";"#);
        let extra = usize::from(self.extra);
        let mine = usize::from(own.is_some());
        array_start(out, extra + mine);
        if extra == 1 {
            index(out, 0);
            out.extend_from_slice(&self.extra_name);
        }
        if let Some((name, _)) = own {
            index(out, extra);
            out.extend_from_slice(name);
        }
        out.extend_from_slice(br#"}s:11:"labelValues";"#);
        array_start(out, self.value_count + mine);
        out.extend_from_slice(&self.values);
        if let Some((_, value)) = own {
            index(out, self.value_count);
            out.extend_from_slice(value);
        }
        out.extend_from_slice(br#"}s:5:"value";"#);
        match v {
            Num::Count(n) => count(out, n),
            Num::Float(f) => float(out, f),
        }
        out.push(b'}');
    }
}

/// How many samples a series has.
fn sample_count(v: &Value<'_>) -> usize {
    match v {
        Value::Counter(_) | Value::Gauge(_) => 1,
        Value::Histogram { cumulative, .. } => cumulative.len() + 2,
        Value::Summary { quantiles, .. } => quantiles.len() + 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shmetrics_core::{FamilyDesc, GaugeMode, Options, Store};

    /// PHP 8.2's `(string)` of each value (`precision` 14).
    #[test]
    fn floats_as_php_casts_them() {
        let cases: &[(f64, &str)] = &[
            (0.005, "0.005"),
            (0.075, "0.075"),
            (1.0, "1"),
            (2.5, "2.5"),
            (10.0, "10"),
            (0.0001, "0.0001"),
            (1e-5, "1.0E-5"),
            (1.5e-7, "1.5E-7"),
            (1e13, "10000000000000"),
            (1e14, "1.0E+14"),
            (123_456_789_012_345.0, "1.2345678901234E+14"),
            (0.1 + 0.2, "0.3"),
            (-0.0, "-0"),
            (0.0, "0"),
            (-2.5, "-2.5"),
            (1.0 / 3.0, "0.33333333333333"),
            (2.0 / 3.0, "0.66666666666667"),
            (99_999_999_999_999.5, "1.0E+14"),
            (999_999_999_999_995.0, "1.0E+15"),
            (1e100, "1.0E+100"),
            (5e-324, "4.9406564584125E-324"),
            (f64::MAX, "1.7976931348623E+308"),
            (12_345_678_901_234_567_890.0, "1.2345678901235E+19"),
            (0.000_123_456_789_012_345, "0.00012345678901234"),
            (f64::INFINITY, "INF"),
            (f64::NEG_INFINITY, "-INF"),
            (f64::NAN, "NAN"),
        ];
        for &(v, want) in cases {
            let mut out = Vec::new();
            write_php_float(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{v:e}");
        }
    }

    /// A parsed PHP serialized value, enough to check the layout.
    #[derive(Debug, PartialEq)]
    enum Php {
        Int(i64),
        Float(String),
        Str(String),
        Array(Vec<(Php, Php)>),
    }

    /// Parses `s` as PHP's `unserialize()` would (integers, floats,
    /// strings, arrays), checking every declared length and count.
    fn parse(s: &[u8]) -> (Php, &[u8]) {
        let upto = |s: &[u8], c: u8| 2 + s[2..].iter().position(|&b| b == c).unwrap();
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        match (s[0], s[1]) {
            (b'i', b':') => {
                let e = upto(s, b';');
                (Php::Int(text(&s[2..e]).parse().unwrap()), &s[e + 1..])
            }
            (b'd', b':') => {
                let e = upto(s, b';');
                let v = text(&s[2..e]);
                assert!(
                    matches!(v.as_str(), "NAN" | "INF" | "-INF") || v.parse::<f64>().is_ok(),
                    "{v}"
                );
                (Php::Float(v), &s[e + 1..])
            }
            (b's', b':') => {
                let e = upto(s, b':');
                let n: usize = text(&s[2..e]).parse().unwrap();
                let rest = &s[e + 1..];
                assert_eq!(rest[0], b'"');
                assert_eq!(&rest[n + 1..n + 3], b"\";");
                (Php::Str(text(&rest[1..=n])), &rest[n + 3..])
            }
            (b'a', b':') => {
                let e = upto(s, b':');
                let n: usize = text(&s[2..e]).parse().unwrap();
                let mut rest = &s[e + 1..];
                assert_eq!(rest[0], b'{');
                rest = &rest[1..];
                let mut items = Vec::new();
                for _ in 0..n {
                    let (k, r) = parse(rest);
                    let (v, r) = parse(r);
                    items.push((k, v));
                    rest = r;
                }
                assert_eq!(rest[0], b'}');
                (Php::Array(items), &rest[1..])
            }
            _ => panic!("not a value: {}", text(&s[..s.len().min(40)])),
        }
    }

    fn get<'a>(a: &'a Php, key: &str) -> &'a Php {
        let Php::Array(items) = a else {
            panic!("not an array")
        };
        &items
            .iter()
            .find(|(k, _)| *k == Php::Str(key.into()))
            .unwrap_or_else(|| panic!("no {key}"))
            .1
    }

    fn list(a: &Php) -> Vec<&Php> {
        let Php::Array(items) = a else {
            panic!("not an array")
        };
        items
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                assert_eq!(*k, Php::Int(i as i64));
                v
            })
            .collect()
    }

    fn s(v: &str) -> Php {
        Php::Str(v.into())
    }

    /// Each sample as `name{names=values} value`, for comparing.
    fn samples(family: &Php) -> Vec<String> {
        list(get(family, "samples"))
            .into_iter()
            .map(|x| {
                let names = list(get(x, "labelNames"));
                let values = list(get(x, "labelValues"));
                format!(
                    "{:?} {:?} {:?} {:?}",
                    get(x, "name"),
                    names,
                    values,
                    get(x, "value")
                )
            })
            .collect()
    }

    fn encoded(store: &Store, sorted: bool) -> Php {
        let snap = store.snapshot().unwrap();
        let all: Vec<FamilyView<'_>> = snap.families().collect();
        let mut out = Vec::new();
        encode(&all, sorted, &mut out);
        let (v, rest) = parse(&out);
        assert!(rest.is_empty());
        v
    }

    #[test]
    fn every_type_as_promphp_takes_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let c = store
            .register(
                &FamilyDesc::new("jobs_total", Kind::Counter)
                    .help("J \"q\"\n")
                    .labels(&["q"]),
            )
            .unwrap();
        for v in ["b", "a\"\\\n", "a"] {
            store
                .counter_add(store.series(&c, &[v]).unwrap(), 2.0)
                .unwrap();
        }
        store
            .register(&FamilyDesc::new("idle", Kind::Gauge))
            .unwrap();
        let g = store
            .register(&FamilyDesc::new("mem", Kind::Gauge).gauge_mode(GaugeMode::All))
            .unwrap();
        store
            .gauge_set(store.series(&g, &[]).unwrap(), f64::INFINITY)
            .unwrap();
        let h = store
            .register(
                &FamilyDesc::new("lat", Kind::Histogram)
                    .labels(&["r"])
                    .buckets(&[1e-5, 0.005, 1.0]),
            )
            .unwrap();
        store
            .observe(store.series(&h, &["x"]).unwrap(), 0.5)
            .unwrap();
        let q = store
            .register(&FamilyDesc::new("sz", Kind::Summary).quantiles(&[0.5]))
            .unwrap();
        store.series(&q, &[]).unwrap();

        let v = encoded(&store, true);
        let families = list(&v);
        assert_eq!(families.len(), 4, "the gauge without series is left out");
        let names: Vec<&Php> = families.iter().map(|f| get(f, "name")).collect();
        assert_eq!(names, [&s("jobs_total"), &s("mem"), &s("lat"), &s("sz")]);
        assert_eq!(*get(families[0], "help"), s("J \"q\"\n"));
        assert_eq!(*get(families[0], "type"), s("counter"));
        assert_eq!(list(get(families[0], "labelNames")), [&s("q")]);
        let values: Vec<String> = samples(families[0]);
        assert_eq!(values.len(), 3);
        assert!(values[0].contains("[Str(\"a\")]"), "sorted: {values:?}");
        assert!(values[1].contains("[Str(\"a\\\"\\\\\\n\")]"), "{values:?}");
        assert!(values[2].contains("[Str(\"b\")]"));
        assert!(values[0].ends_with("Float(\"2.0\")"));

        let mem = samples(families[1]);
        assert_eq!(mem.len(), 1);
        assert!(
            mem[0].starts_with("Str(\"mem\") [Str(\"pid\")] [Str(\""),
            "{mem:?}"
        );
        assert!(mem[0].ends_with("Float(\"INF\")"));

        let lat = samples(families[2]);
        let le = |b: &str, n: i64| {
            format!("Str(\"lat_bucket\") [Str(\"le\")] [Str(\"x\"), Str(\"{b}\")] Int({n})")
        };
        assert_eq!(
            lat,
            [
                le("1.0E-5", 0),
                le("0.005", 0),
                le("1", 1),
                le("+Inf", 1),
                "Str(\"lat_count\") [] [Str(\"x\")] Int(1)".into(),
                "Str(\"lat_sum\") [] [Str(\"x\")] Float(\"0.5\")".into(),
            ]
        );
        assert_eq!(
            list(get(families[2], "buckets")),
            [
                &Php::Float("0.00001".into()),
                &Php::Float("0.005".into()),
                &Php::Float("1.0".into())
            ]
        );

        let sz = samples(families[3]);
        assert_eq!(
            sz,
            [
                "Str(\"sz\") [Str(\"quantile\")] [Float(\"0.5\")] Float(\"NAN\")",
                "Str(\"sz_count\") [] [] Int(0)",
                "Str(\"sz_sum\") [] [] Float(\"0.0\")",
            ]
        );
    }

    /// Unsorted: creation order; sorted: by the values joined, stably.
    #[test]
    fn series_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let c = store
            .register(
                &FamilyDesc::new("n", Kind::Counter)
                    .labels(&["a", "b"])
                    .name_as_given(),
            )
            .unwrap();
        for (i, v) in [["b", ""], ["a", "b"], ["ab", ""], ["", "b"]]
            .iter()
            .enumerate()
        {
            store
                .counter_add(store.series(&c, v).unwrap(), i as f64)
                .unwrap();
        }
        let values = |sorted| -> Vec<String> {
            samples(list(&encoded(&store, sorted))[0])
                .into_iter()
                .map(|x| x.rsplit(' ').next().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            values(false),
            [
                "Float(\"0.0\")",
                "Float(\"1.0\")",
                "Float(\"2.0\")",
                "Float(\"3.0\")"
            ]
        );
        // "ab", "ab" (stable: creation order), "b", "b".
        assert_eq!(
            values(true),
            [
                "Float(\"1.0\")",
                "Float(\"2.0\")",
                "Float(\"0.0\")",
                "Float(\"3.0\")"
            ]
        );
        assert_eq!(*get(list(&encoded(&store, true))[0], "name"), s("n"));
    }
}

//! A store's series for PromPHP, written in PHP's `serialize()` format, so
//! that the PHP binding's `ShmetricsAdapter::collect()` gets a whole store
//! in one call and one `unserialize()` (which PHP runs in C) instead of
//! walking a snapshot series by series through FFI.
//!
//! The value is a list with one array per family that has series, in the
//! order given. Its keys `name` (a counter's name as PromPHP serves it: as
//! registered, `name_total` for a counter registered without `_total` by a
//! binding that adds it), `help`, `type` (`counter`, `gauge`,
//! `histogram`, `summary`) and `labelNames` (the family's) are those
//! `Prometheus\MetricFamilySamples` takes; the series come in columns,
//! one entry per series:
//!
//! - `values`: its label values, then the value of a label the store
//!   adds (`pid` for the gauge modes `all` and `liveall`, `true` for the
//!   overflow series), as a list of strings;
//! - `extra`: the name of that added label (`[name]`), by series index,
//!   for the series that have one only;
//! - `numbers`: a counter's or gauge's value, a histogram's or summary's
//!   sum (floats);
//! - `counts`: a histogram's or summary's count (integers; empty for
//!   counters and gauges);
//! - `cumulative`: a histogram's cumulative bucket counts, `+Inf` last
//!   (lists of integers; empty for the other types);
//! - `estimates`: a summary's estimates of the family's `quantiles` (lists
//!   of floats, NaN for an empty window; empty for the other types).
//!
//! and, for the family, `buckets` (a histogram's bounds, floats, without
//! `+Inf`) and `quantiles` (a summary's, floats). The adapter expands
//! each series into PromPHP's samples (a histogram's `_bucket` samples
//! with `le` written by PHP's own float-to-string cast, as PromPHP
//! writes it, then `_count` and `_sum`; a summary's quantile samples,
//! `_count` and `_sum`), so that samples share their strings as they do
//! when PHP builds them: an `unserialize()` of every sample would copy
//! every name and label value into each, and take longer than the walk.
//!
//! With `sorted`, each family's series are sorted by their label values
//! joined without a separator (the added label's value left out),
//! bytewise and stable, as PromPHP's own adapters sort them (`usort` with
//! `strcmp(implode('', $labelValues))`); otherwise they come in creation
//! order.
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
//!         r#"a:1:{i:0;a:12:{s:4:"name";s:4:"jobs";s:4:"help";s:9:"Jobs run.";s:4:"type";s:7:"counter";"#,
//!         r#"s:10:"labelNames";a:1:{i:0;s:5:"queue";}s:6:"values";a:1:{i:0;a:1:{i:0;s:4:"mail";}}"#,
//!         r#"s:5:"extra";a:0:{}s:7:"numbers";a:1:{i:0;d:3.0;}s:6:"counts";a:0:{}"#,
//!         r#"s:10:"cumulative";a:0:{}s:9:"estimates";a:0:{}s:7:"buckets";a:0:{}s:9:"quantiles";a:0:{}}}"#,
//!     )
//! );
//! # Ok::<(), shmetrics_core::Error>(())
//! ```

use shmetrics_core::{FamilyView, Kind, SeriesView, Value};

use crate::num::write_u64;

/// Appends `families` (see [`crate::select`]) as PromPHP's families with
/// their series in columns, in PHP's `serialize()` format; with `sorted`,
/// each family's series sorted as PromPHP's adapters sort them.
pub fn encode(families: &[FamilyView<'_>], sorted: bool, out: &mut Vec<u8>) {
    let shown: Vec<&FamilyView<'_>> = families.iter().filter(|f| f.series().len() > 0).collect();
    array_start(out, shown.len());
    let mut series = Vec::new();
    for (i, f) in shown.into_iter().enumerate() {
        index(out, i);
        series.clear();
        series.extend(f.series());
        if sorted {
            series.sort_by_cached_key(|s| s.label_values().collect::<String>());
        }
        family(f, &series, out);
    }
    out.push(b'}');
}

fn family(f: &FamilyView<'_>, series: &[SeriesView<'_>], out: &mut Vec<u8>) {
    let kind = f.kind();
    array_start(out, 12);
    key(out, "name");
    if kind == Kind::Counter && !f.name_as_given() {
        string(out, &[f.name().as_bytes(), b"_total"]);
    } else {
        string(out, &[f.name().as_bytes()]);
    }
    key(out, "help");
    string(out, &[f.help().as_bytes()]);
    key(out, "type");
    string(out, &[kind.as_str().as_bytes()]);
    key(out, "labelNames");
    list(out, f.label_names(), |out, n| string(out, &[n.as_bytes()]));
    labels(f.label_names().len(), series, out);
    numbers(kind, series, out);
    key(out, "buckets");
    list(out, f.buckets().iter(), |out, &b| float(out, b));
    key(out, "quantiles");
    let quantiles: Vec<f64> = match series.first().map(SeriesView::value) {
        Some(Value::Summary { quantiles, .. }) => quantiles.iter().map(|q| q.quantile).collect(),
        _ => Vec::new(),
    };
    list(out, quantiles.iter(), |out, &q| float(out, q));
    out.push(b'}');
}

/// The columns `values` and `extra` of `series`, whose family has `own`
/// label names.
fn labels(own: usize, series: &[SeriesView<'_>], out: &mut Vec<u8>) {
    key(out, "values");
    list(out, series.iter(), |out, s| {
        let n = own + usize::from(s.labels().nth(own).is_some());
        array_start(out, n);
        for (i, (_, v)) in s.labels().enumerate() {
            index(out, i);
            string(out, &[v.as_bytes()]);
        }
        out.push(b'}');
    });
    key(out, "extra");
    let extra: Vec<(usize, &str)> = series
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.labels().nth(own).map(|(n, _)| (i, n)))
        .collect();
    array_start(out, extra.len());
    for (i, name) in extra {
        index(out, i);
        array_start(out, 1);
        index(out, 0);
        string(out, &[name.as_bytes()]);
        out.push(b'}');
    }
    out.push(b'}');
}

/// The columns `numbers`, `counts`, `cumulative` and `estimates` of
/// `series`, whose family is of type `kind`.
fn numbers(kind: Kind, series: &[SeriesView<'_>], out: &mut Vec<u8>) {
    key(out, "numbers");
    list(out, series.iter(), |out, s| match s.value() {
        Value::Counter(v) | Value::Gauge(v) => float(out, v),
        Value::Histogram { sum, .. } | Value::Summary { sum, .. } => float(out, sum),
    });
    let (counts, cumulative, estimates) = match kind {
        Kind::Counter | Kind::Gauge => (&[][..], &[][..], &[][..]),
        Kind::Histogram => (series, series, &[][..]),
        Kind::Summary => (series, &[][..], series),
    };
    key(out, "counts");
    list(out, counts.iter(), |out, s| match s.value() {
        Value::Histogram { cumulative, .. } => count(out, cumulative.last().copied().unwrap_or(0)),
        Value::Summary { count: n, .. } => count(out, n),
        Value::Counter(_) | Value::Gauge(_) => count(out, 0),
    });
    key(out, "cumulative");
    list(out, cumulative.iter(), |out, s| {
        if let Value::Histogram { cumulative, .. } = s.value() {
            list(out, cumulative.iter(), |out, &n| count(out, n));
        } else {
            array_start(out, 0);
            out.push(b'}');
        }
    });
    key(out, "estimates");
    list(out, estimates.iter(), |out, s| {
        if let Value::Summary { quantiles, .. } = s.value() {
            list(out, quantiles.iter(), |out, q| float(out, q.value));
        } else {
            array_start(out, 0);
            out.push(b'}');
        }
    });
}

/// `a:n:{`: an array of `n` elements follows, then `}`.
fn array_start(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(b"a:");
    write_u64(out, n as u64);
    out.extend_from_slice(b":{");
}

/// A list (keys 0, 1, …) of `items`, each written by `item`.
fn list<T>(
    out: &mut Vec<u8>,
    items: impl ExactSizeIterator<Item = T>,
    mut item: impl FnMut(&mut Vec<u8>, T),
) {
    array_start(out, items.len());
    for (i, x) in items.enumerate() {
        index(out, i);
        item(out, x);
    }
    out.push(b'}');
}

/// `i:n;`: an integer key.
fn index(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(b"i:");
    write_u64(out, n as u64);
    out.push(b';');
}

/// A string key.
fn key(out: &mut Vec<u8>, k: &str) {
    string(out, &[k.as_bytes()]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use shmetrics_core::{FamilyDesc, GaugeMode, Options, Store};

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

    fn encoded(store: &Store, sorted: bool) -> Php {
        let snap = store.snapshot().unwrap();
        let all: Vec<FamilyView<'_>> = snap.families().collect();
        let mut out = Vec::new();
        encode(&all, sorted, &mut out);
        let (v, rest) = parse(&out);
        assert!(rest.is_empty());
        v
    }

    /// `v` in short: `1`, `2.5` (a float as written), `"s"`, `[a, b]` for
    /// a list, `{k: v}` for other arrays.
    fn show(v: &Php) -> String {
        match v {
            Php::Int(n) => n.to_string(),
            Php::Float(f) => f.clone(),
            Php::Str(s) => format!("{s:?}"),
            Php::Array(items) => {
                let is_list = items
                    .iter()
                    .enumerate()
                    .all(|(i, (k, _))| *k == Php::Int(i as i64));
                let inner: Vec<String> = items
                    .iter()
                    .map(|(k, v)| {
                        if is_list {
                            show(v)
                        } else {
                            format!("{}: {}", show(k), show(v))
                        }
                    })
                    .collect();
                if is_list {
                    format!("[{}]", inner.join(", "))
                } else {
                    format!("{{{}}}", inner.join(", "))
                }
            }
        }
    }

    /// A column of `family`, shown.
    fn column(family: &Php, name: &str) -> String {
        show(get(family, name))
    }

    #[test]
    fn every_type_in_columns() {
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
            .register(&FamilyDesc::new("sz", Kind::Summary).quantiles(&[0.5, 0.9]))
            .unwrap();
        store.series(&q, &[]).unwrap();

        let v = encoded(&store, true);
        let families = list(&v);
        assert_eq!(families.len(), 4, "the gauge without series is left out");
        let names: Vec<&Php> = families.iter().map(|f| get(f, "name")).collect();
        assert_eq!(names, [&s("jobs_total"), &s("mem"), &s("lat"), &s("sz")]);
        let jobs = families[0];
        assert_eq!(*get(jobs, "help"), s("J \"q\"\n"));
        assert_eq!(*get(jobs, "type"), s("counter"));
        assert_eq!(list(get(jobs, "labelNames")), [&s("q")]);
        let values = list(get(jobs, "values"));
        assert_eq!(values.len(), 3);
        // Sorted: "a" < "a\"\\\n" < "b".
        assert_eq!(list(values[0]), [&s("a")]);
        assert_eq!(list(values[1]), [&s("a\"\\\n")]);
        assert_eq!(list(values[2]), [&s("b")]);
        assert_eq!(column(jobs, "numbers"), "[2.0, 2.0, 2.0]");
        for empty in [
            "extra",
            "counts",
            "cumulative",
            "estimates",
            "buckets",
            "quantiles",
        ] {
            assert_eq!(column(jobs, empty), "[]", "{empty}");
        }

        let mem = families[1];
        let values = list(get(mem, "values"));
        assert_eq!(values.len(), 1);
        assert_eq!(
            list(values[0]),
            [&s(&std::process::id().to_string())],
            "the pid label's value"
        );
        assert_eq!(column(mem, "extra"), r#"[["pid"]]"#, "by series index: 0");
        assert_eq!(column(mem, "numbers"), "[INF]");

        let lat = families[2];
        assert_eq!(list(list(get(lat, "values"))[0]), [&s("x")]);
        assert_eq!(column(lat, "numbers"), "[0.5]");
        assert_eq!(column(lat, "counts"), "[1]");
        assert_eq!(column(lat, "cumulative"), "[[0, 0, 1, 1]]");
        assert_eq!(column(lat, "buckets"), "[0.00001, 0.005, 1.0]");

        let sz = families[3];
        assert_eq!(column(sz, "values"), "[[]]");
        assert_eq!(column(sz, "counts"), "[0]");
        assert_eq!(column(sz, "numbers"), "[0.0]");
        assert_eq!(column(sz, "estimates"), "[[NAN, NAN]]");
        assert_eq!(column(sz, "quantiles"), "[0.5, 0.9]");
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
        let numbers = |sorted| column(list(&encoded(&store, sorted))[0], "numbers");
        assert_eq!(numbers(false), "[0.0, 1.0, 2.0, 3.0]");
        // "ab", "ab" (stable: creation order), "b", "b".
        assert_eq!(numbers(true), "[1.0, 2.0, 0.0, 3.0]");
        assert_eq!(*get(list(&encoded(&store, true))[0], "name"), s("n"));
    }

    /// The overflow series has the added label `shmetrics_overflow`.
    #[test]
    fn overflow_series() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let c = store
            .register(
                &FamilyDesc::new("o", Kind::Counter)
                    .labels(&["a"])
                    .max_series(1),
            )
            .unwrap();
        for v in ["x", "y"] {
            store
                .counter_add(store.series_or_overflow(&c, &[v]).unwrap(), 1.0)
                .unwrap();
        }
        let all = encoded(&store, false);
        let o = list(&all)[0];
        // The overflow series is the family's first.
        assert_eq!(column(o, "values"), r#"[["", "true"], ["x"]]"#);
        assert_eq!(column(o, "extra"), r#"[["shmetrics_overflow"]]"#);
    }
}

//! A store's series for PromPHP, written in PHP's `serialize()` format, so
//! that the PHP binding's `ShmetricsAdapter::collect()` gets a whole store
//! in one call and one `unserialize()` (which PHP runs in C) instead of
//! walking a snapshot series by series through FFI.
//!
//! The value is an array of two lists: `families`, one list per family
//! that has series, in the order given, and `lists`, every distinct list
//! of strings those families use (label names, a series' label values),
//! each once, in the order first met, which the families name by their
//! index in it. PHP's `unserialize()` shares no string or array it
//! reads, so a list written once is one PHP array that every sample with
//! those labels holds: where families share their label sets, as a
//! page's families often do, there is a fraction of the arrays and
//! strings to read, and PromPHP's render, which reads them all, is faster
//! too.
//!
//! A family is a list of 12, by position (keys would be strings for
//! `unserialize()` to make for every family): 0 `name` (a counter's name
//! as PromPHP serves it: as registered, `name_total` for a counter
//! registered without `_total` by a binding that adds it), 1 `help`, 2
//! `type` (`counter`, `gauge`, `histogram`, `summary`) and 3 `labelNames`
//! (the family's, an index in `lists`), what
//! `Prometheus\MetricFamilySamples` takes; then the series in columns,
//! one entry per series:
//!
//! - 4 `values`: its label values, then the value of a label the store
//!   adds (`pid` for the gauge modes `all` and `liveall`, `true` for the
//!   overflow series): an index in `lists`;
//! - 5 `extra`: the name of that added label (`[name]`, an index in
//!   `lists`), by series index, for the series that have one only;
//! - 6 `numbers`: a counter's or gauge's value, a histogram's or summary's
//!   sum (floats);
//! - 7 `counts`: a histogram's or summary's count (integers; empty for
//!   counters and gauges);
//! - 8 `cumulative`: a histogram's cumulative bucket counts, `+Inf` last
//!   (lists of integers; empty for the other types);
//! - 9 `estimates`: a summary's estimates of the family's `quantiles`
//!   (lists of floats, NaN for an empty window; empty for the other
//!   types);
//!
//! and, for the family, 10 `buckets` (a histogram's bounds, floats,
//! without `+Inf`) and 11 `quantiles` (a summary's, floats). The adapter
//! expands each series into PromPHP's samples (a histogram's `_bucket`
//! samples with `le` written by PHP's own float-to-string cast, as
//! PromPHP writes it, then `_count` and `_sum`; a summary's quantile
//! samples, `_count` and `_sum`), so that samples share their strings
//! and label value lists: an `unserialize()` of every sample would copy
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
//!         r#"a:2:{s:8:"families";a:1:{i:0;a:12:{i:0;s:4:"jobs";i:1;s:9:"Jobs run.";"#,
//!         r#"i:2;s:7:"counter";i:3;i:0;i:4;a:1:{i:0;i:1;}i:5;a:0:{}i:6;a:1:{i:0;d:3;}"#,
//!         r#"i:7;a:0:{}i:8;a:0:{}i:9;a:0:{}i:10;a:0:{}i:11;a:0:{}}}"#,
//!         r#"s:5:"lists";a:2:{i:0;a:1:{i:0;s:5:"queue";}i:1;a:1:{i:0;s:4:"mail";}}}"#,
//!     )
//! );
//! # Ok::<(), shmetrics_core::Error>(())
//! ```

use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap};
use shmetrics_core::{FamilyView, Kind, SeriesView, Value};

use crate::num::{write_u64, EXACT_INT};

/// Appends `families` (see [`crate::select`]) as PromPHP's families with
/// their series in columns, in PHP's `serialize()` format; with `sorted`,
/// each family's series sorted as PromPHP's adapters sort them.
pub fn encode<'a>(families: &[FamilyView<'a>], sorted: bool, out: &mut Vec<u8>) {
    let shown: Vec<&FamilyView<'a>> = families.iter().filter(|f| f.series().len() > 0).collect();
    // About the room the value takes, reserved before `lists` allocates:
    // grown after those allocations, the buffer took fresh pages on every
    // call, which cost more than the table itself.
    out.reserve(
        shown
            .iter()
            .map(|f| 256 + f.series().len() * (48 + 8 * f.buckets().len()))
            .sum(),
    );
    let mut lists = Lists::default();
    array_start(out, 2);
    key(out, "families");
    array_start(out, shown.len());
    let mut series = Vec::new();
    for (i, f) in shown.into_iter().enumerate() {
        index(out, i);
        series.clear();
        series.extend(f.series());
        if sorted {
            series.sort_by_cached_key(|s| s.label_values().collect::<String>());
        }
        family(f, &series, &mut lists, out);
    }
    out.push(b'}');
    key(out, "lists");
    lists.write(out);
    out.push(b'}');
}

/// The table `lists`: every distinct list of strings (label names, label
/// values), in the order first met; the families name them by index.
#[derive(Default)]
struct Lists<'a> {
    /// Every list's strings, one list after another: list `i` ends at
    /// `ends[i]` and starts where list `i - 1` ends.
    items: Vec<&'a str>,
    ends: Vec<usize>,
    /// By hash of its strings, the last list met with that hash; the
    /// others before it with the same hash, from `earlier`.
    by_hash: FxHashMap<u64, usize>,
    earlier: Vec<Option<usize>>,
}

impl<'a> Lists<'a> {
    /// The index of the list `items` in the table, added if new.
    fn of(&mut self, items: impl Iterator<Item = &'a str>) -> usize {
        let start = self.items.len();
        self.items.extend(items);
        let hash = FxBuildHasher.hash_one(&self.items[start..]);
        let last = self.by_hash.get(&hash).copied();
        let mut at = last;
        while let Some(i) = at {
            if self.list(i) == &self.items[start..] {
                self.items.truncate(start);
                return i;
            }
            at = self.earlier[i];
        }
        let i = self.ends.len();
        self.ends.push(self.items.len());
        self.earlier.push(last);
        self.by_hash.insert(hash, i);
        i
    }

    /// The strings of list `i`.
    fn list(&self, i: usize) -> &[&'a str] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.items[start..self.ends[i]]
    }

    /// Appends the table: a list of the lists, by index.
    fn write(&self, out: &mut Vec<u8>) {
        list(out, 0..self.ends.len(), |out, i| {
            list(out, self.list(i).iter(), |out, v| {
                string(out, &[v.as_bytes()])
            });
        });
    }
}

/// A family: `[name, help, type, labelNames, values, extra, numbers,
/// counts, cumulative, estimates, buckets, quantiles]`.
fn family<'a>(
    f: &FamilyView<'a>,
    series: &[SeriesView<'a>],
    lists: &mut Lists<'a>,
    out: &mut Vec<u8>,
) {
    let kind = f.kind();
    array_start(out, 12);
    index(out, 0);
    if kind == Kind::Counter && !f.name_as_given() {
        string(out, &[f.name().as_bytes(), b"_total"]);
    } else {
        string(out, &[f.name().as_bytes()]);
    }
    index(out, 1);
    string(out, &[f.help().as_bytes()]);
    index(out, 2);
    string(out, &[kind.as_str().as_bytes()]);
    index(out, 3);
    index(out, lists.of(f.label_names()));
    labels(f.label_names().len(), series, lists, out);
    numbers(kind, series, out);
    index(out, 10);
    list(out, f.buckets().iter(), |out, &b| float(out, b));
    index(out, 11);
    let quantiles: Vec<f64> = match series.first().map(SeriesView::value) {
        Some(Value::Summary { quantiles, .. }) => quantiles.iter().map(|q| q.quantile).collect(),
        _ => Vec::new(),
    };
    list(out, quantiles.iter(), |out, &q| float(out, q));
    out.push(b'}');
}

/// The columns `values` (4) and `extra` (5) of `series`, whose family has
/// `own` label names.
fn labels<'a>(own: usize, series: &[SeriesView<'a>], lists: &mut Lists<'a>, out: &mut Vec<u8>) {
    index(out, 4);
    list(out, series.iter(), |out, s| {
        index(out, lists.of(s.labels().map(|(_, v)| v)))
    });
    index(out, 5);
    let extra: Vec<(usize, &str)> = series
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.labels().nth(own).map(|(n, _)| (i, n)))
        .collect();
    array_start(out, extra.len());
    for (i, name) in extra {
        index(out, i);
        index(out, lists.of(std::iter::once(name)));
    }
    out.push(b'}');
}

/// The columns `numbers` (6), `counts` (7), `cumulative` (8) and
/// `estimates` (9) of `series`, whose family is of type `kind`.
fn numbers(kind: Kind, series: &[SeriesView<'_>], out: &mut Vec<u8>) {
    index(out, 6);
    list(out, series.iter(), |out, s| match s.value() {
        Value::Counter(v) | Value::Gauge(v) => float(out, v),
        Value::Histogram { sum, .. } | Value::Summary { sum, .. } => float(out, sum),
    });
    let (counts, cumulative, estimates) = match kind {
        Kind::Counter | Kind::Gauge => (&[][..], &[][..], &[][..]),
        Kind::Histogram => (series, series, &[][..]),
        Kind::Summary => (series, &[][..], series),
    };
    index(out, 7);
    list(out, counts.iter(), |out, s| match s.value() {
        Value::Histogram { cumulative, .. } => count(out, cumulative.last().copied().unwrap_or(0)),
        Value::Summary { count: n, .. } => count(out, n),
        Value::Counter(_) | Value::Gauge(_) => count(out, 0),
    });
    index(out, 8);
    list(out, cumulative.iter(), |out, s| {
        if let Value::Histogram { cumulative, .. } = s.value() {
            list(out, cumulative.iter(), |out, &n| count(out, n));
        } else {
            array_start(out, 0);
            out.push(b'}');
        }
    });
    index(out, 9);
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

/// `i:n;`: an integer key, or an index into `lists`.
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

/// `d:v;`: a float that reads back as `v` (`NAN`, `INF`, `-INF` too;
/// an integral one below 2^53 without `.0`, as `d:3;`).
fn float(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(b"d:");
    if v.fract() == 0.0 && v.abs() < EXACT_INT && !(v == 0.0 && v.is_sign_negative()) {
        // The integer path, as the text format's (exact below 2^53).
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
    } else if v.is_nan() {
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
    #[derive(Clone, Debug, PartialEq)]
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

    /// The store's families as [`encode`] writes them, parsed.
    fn raw(store: &Store, sorted: bool) -> Php {
        let snap = store.snapshot().unwrap();
        let all: Vec<FamilyView<'_>> = snap.families().collect();
        let mut out = Vec::new();
        encode(&all, sorted, &mut out);
        let (v, rest) = parse(&out);
        assert!(rest.is_empty());
        v
    }

    /// The columns of each family by name, indices into `lists`
    /// replaced by the lists.
    fn encoded(store: &Store, sorted: bool) -> Php {
        let v = raw(store, sorted);
        let Php::Array(top) = &v else {
            panic!("not an array")
        };
        let keys: Vec<&Php> = top.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [&s("families"), &s("lists")]);
        let lists = list(get(&v, "lists"));
        let at = |i: &Php| {
            let Php::Int(i) = i else {
                panic!("not an index: {i:?}")
            };
            lists[usize::try_from(*i).unwrap()].clone()
        };
        let columns = [
            "name",
            "help",
            "type",
            "labelNames",
            "values",
            "extra",
            "numbers",
            "counts",
            "cumulative",
            "estimates",
            "buckets",
            "quantiles",
        ];
        let families = list(get(&v, "families"))
            .into_iter()
            .map(|f| {
                let f = list(f);
                assert_eq!(f.len(), columns.len());
                let cells = columns.iter().zip(f).map(|(&c, x)| {
                    let x = match c {
                        "labelNames" => at(x),
                        "values" => Php::Array(
                            list(x)
                                .into_iter()
                                .enumerate()
                                .map(|(i, x)| (Php::Int(i as i64), at(x)))
                                .collect(),
                        ),
                        "extra" => {
                            let Php::Array(items) = x else {
                                panic!("not an array")
                            };
                            Php::Array(items.iter().map(|(i, x)| (i.clone(), at(x))).collect())
                        }
                        _ => x.clone(),
                    };
                    (s(c), x)
                });
                cells.collect()
            })
            .enumerate()
            .map(|(i, f)| (Php::Int(i as i64), Php::Array(f)))
            .collect();
        Php::Array(families)
    }

    /// `v` in short: `1`, `d:2.5` (a float as written), `"s"`, `[a, b]` for
    /// a list, `{k: v}` for other arrays.
    fn show(v: &Php) -> String {
        match v {
            Php::Int(n) => n.to_string(),
            Php::Float(f) => format!("d:{f}"),
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
        assert_eq!(column(jobs, "numbers"), "[d:2, d:2, d:2]");
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
        assert_eq!(column(mem, "numbers"), "[d:INF]");

        let lat = families[2];
        assert_eq!(list(list(get(lat, "values"))[0]), [&s("x")]);
        assert_eq!(column(lat, "numbers"), "[d:0.5]");
        assert_eq!(column(lat, "counts"), "[1]");
        assert_eq!(column(lat, "cumulative"), "[[0, 0, 1, 1]]");
        assert_eq!(column(lat, "buckets"), "[d:0.00001, d:0.005, d:1]");

        let sz = families[3];
        assert_eq!(column(sz, "values"), "[[]]");
        assert_eq!(column(sz, "counts"), "[0]");
        assert_eq!(column(sz, "numbers"), "[d:0]");
        assert_eq!(column(sz, "estimates"), "[[d:NAN, d:NAN]]");
        assert_eq!(column(sz, "quantiles"), "[d:0.5, d:0.9]");
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
        assert_eq!(numbers(false), "[d:0, d:1, d:2, d:3]");
        // "ab", "ab" (stable: creation order), "b", "b".
        assert_eq!(numbers(true), "[d:1, d:2, d:0, d:3]");
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

    /// Each distinct list of strings is written once, in the order first
    /// met, and named by its index: families' label names, series' label
    /// values (with an added label's value), added labels' names.
    #[test]
    fn lists_are_shared() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s"), &Options::default()).unwrap();
        let c = store
            .register(&FamilyDesc::new("c", Kind::Counter).labels(&["x"]))
            .unwrap();
        let h = store
            .register(
                &FamilyDesc::new("h", Kind::Histogram)
                    .labels(&["x"])
                    .buckets(&[1.0]),
            )
            .unwrap();
        let g = store
            .register(
                &FamilyDesc::new("g", Kind::Gauge)
                    .labels(&["x"])
                    .gauge_mode(GaugeMode::All),
            )
            .unwrap();
        for v in ["2", "1"] {
            store
                .counter_add(store.series(&c, &[v]).unwrap(), 1.0)
                .unwrap();
        }
        for v in ["1", "2", "3"] {
            store.observe(store.series(&h, &[v]).unwrap(), 1.0).unwrap();
        }
        store
            .gauge_set(store.series(&g, &["1"]).unwrap(), 1.0)
            .unwrap();
        let v = raw(&store, false);
        let pid = std::process::id().to_string();
        assert_eq!(
            show(get(&v, "lists")),
            format!(r#"[["x"], ["2"], ["1"], ["3"], ["1", "{pid}"], ["pid"]]"#)
        );
        let families = list(get(&v, "families"));
        let ids = |f: &Php| {
            let f = list(f);
            (show(f[3]), show(f[4]), show(f[5]))
        };
        assert_eq!(ids(families[0]), ("0".into(), "[1, 2]".into(), "[]".into()));
        assert_eq!(
            ids(families[1]),
            ("0".into(), "[2, 1, 3]".into(), "[]".into())
        );
        assert_eq!(ids(families[2]), ("0".into(), "[4]".into(), "[5]".into()));
        // Sorted, the lists are met in the sorted order.
        let v = raw(&store, true);
        assert_eq!(
            show(get(&v, "lists")),
            format!(r#"[["x"], ["1"], ["2"], ["3"], ["1", "{pid}"], ["pid"]]"#)
        );
    }

    /// Floats as PHP's `unserialize()` reads them back: integral ones
    /// below 2^53 as integers (but `-0.0`), the others in ryu's shortest
    /// form.
    #[test]
    fn floats() {
        let cases = [
            (3.0, "d:3;"),
            (-7.0, "d:-7;"),
            (0.0, "d:0;"),
            (-0.0, "d:-0.0;"),
            (0.5, "d:0.5;"),
            (9_007_199_254_740_991.0, "d:9007199254740991;"),
            (9_007_199_254_740_992.0, "d:9007199254740992.0;"),
            (1e20, "d:1e20;"),
            (f64::INFINITY, "d:INF;"),
            (f64::NEG_INFINITY, "d:-INF;"),
            (f64::NAN, "d:NAN;"),
        ];
        for (v, want) in cases {
            let mut out = Vec::new();
            float(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{v}");
        }
    }
}

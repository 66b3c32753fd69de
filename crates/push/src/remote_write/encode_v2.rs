//! The series of a snapshot as remote write 2.0 requests: strings
//! interned per request, each series with its metadata, start time and
//! exemplar, protobuf then snappy. The walk (`walk`) hands the series
//! over with borrowed labels, interned as they come, so a push makes no
//! string per series.
//!
//! The bytes are what snappy leaves, so the requests are laid out for it
//! (see benches/push/README.md for the measurements):
//!
//! - which series share a request: the walk writes the store series of
//!   all families grouped by their label values, those of the label with
//!   the most distinct values first (a route, a pod), so the series that
//!   share them (a route's counters, its histogram's buckets) fill a
//!   request together and its symbol table holds each such value once
//!   for all of them, not once in each of several requests;
//! - within a request the series are sorted by their labels other than
//!   `__name__` (a route's request counter, then its error counter; a
//!   histogram's `le="0.5"` buckets of every route one after the other),
//!   so neighbours differ in as few references as possible;
//! - a sample's fields are written value, start timestamp, timestamp
//!   ([`proto2::Sample`]), so what differs from the series before sits
//!   together;
//! - the symbol table puts the strings referred to most often first,
//!   where their references take one byte, the others in the order the
//!   series first refer to them, so neighbouring series' references to
//!   new strings are neighbouring numbers.

use std::borrow::Cow;
use std::cmp::Reverse;

use prost::Message;
use rustc_hash::FxHashMap;
use shmetrics_core::Snapshot;

use super::encode::{compress, walk, Chunk, Point, SeriesMeta, Shape, Sink};
use super::proto2::{self, Histogram};
use super::ExternalLabels;

/// The series of `snap` (as [`timeseries_with_meta`] describes them)
/// as remote write 2.0 requests of at most `max_samples` series each:
/// each request interns its own strings (labels, help texts, units,
/// exemplar labels) in its symbol table, and every series carries its
/// metadata, start time and exemplar; protobuf then snappy.
///
/// [`timeseries_with_meta`]: super::timeseries_with_meta
pub fn encode_v2(
    snap: &Snapshot,
    external: &ExternalLabels,
    timestamp_ms: i64,
    native_histograms: bool,
    custom_buckets: bool,
    max_samples: usize,
) -> Vec<Chunk> {
    let requests = requests_v2(
        snap,
        external,
        timestamp_ms,
        native_histograms,
        custom_buckets,
        max_samples,
    );
    requests
        .into_iter()
        .map(|(request, samples, exemplars)| Chunk {
            body: compress(&request.encode_to_vec()),
            samples,
            exemplars,
        })
        .collect()
}

/// As [`encode_v2`], the requests before protobuf and snappy, each with
/// its count of samples and of exemplars.
pub fn requests_v2(
    snap: &Snapshot,
    external: &ExternalLabels,
    timestamp_ms: i64,
    native_histograms: bool,
    custom_buckets: bool,
    max_samples: usize,
) -> Vec<(proto2::Request, u64, u64)> {
    let shape = Shape {
        native_histograms,
        custom_buckets,
        grouped: true,
    };
    let mut requests = Requests::new(max_samples);
    walk(snap, external, timestamp_ms, shape, &mut requests);
    requests.finish();
    requests.done
}

/// The requests of a push as its walk writes them.
struct Requests<'a> {
    max: usize,
    done: Vec<(proto2::Request, u64, u64)>,
    /// The request being written.
    symbols: Symbols<'a>,
    series: Vec<proto2::TimeSeries>,
    samples: u64,
    exemplars: u64,
    /// The labels of the store series being written, and their
    /// references in this request (`None` until a series of it is
    /// written into this request).
    base: Vec<(&'a str, &'a str)>,
    base_refs: Option<Vec<(&'a str, u32, u32)>>,
}

impl<'a> Requests<'a> {
    fn new(max: usize) -> Requests<'a> {
        Requests {
            max: max.max(1),
            done: Vec::new(),
            symbols: Symbols::default(),
            series: Vec::new(),
            samples: 0,
            exemplars: 0,
            base: Vec::new(),
            base_refs: None,
        }
    }

    /// Completes the request being written, if it has series.
    fn finish(&mut self) {
        if self.series.is_empty() {
            return;
        }
        let symbols = std::mem::take(&mut self.symbols);
        let mut series = std::mem::take(&mut self.series);
        symbols.sort(&mut series);
        let table = symbols.into_table(&mut series);
        let request = proto2::Request {
            symbols: table,
            timeseries: series,
        };
        self.done.push((request, self.samples, self.exemplars));
        (self.samples, self.exemplars) = (0, 0);
        self.base_refs = None;
    }

    /// The labels' references: the store series' labels, `__name__`
    /// and `extra`, sorted by name.
    fn labels_refs(&mut self, name: &str, extra: Option<(&str, &str)>) -> Vec<u32> {
        let symbols = &mut self.symbols;
        let base = self.base_refs.get_or_insert_with(|| {
            self.base
                .iter()
                .map(|&(n, v)| (n, symbols.get(n), symbols.get(v)))
                .collect()
        });
        let mut more = [("__name__", 0, 0); 2];
        more[0].1 = symbols.get_owned("__name__");
        more[0].2 = symbols.get_owned(name);
        let more = match extra {
            Some((n, v)) => {
                more[1] = (n, symbols.get_owned(n), symbols.get_owned(v));
                more.sort_unstable_by(|a, b| a.0.cmp(b.0));
                &more[..]
            }
            None => &more[..1],
        };
        // Merge the two sorted lists.
        let mut refs = Vec::with_capacity(2 * (base.len() + more.len()));
        let (mut i, mut j) = (0, 0);
        while i < base.len() || j < more.len() {
            let (_, n, v) = if j == more.len() || (i < base.len() && base[i].0 < more[j].0) {
                i += 1;
                base[i - 1]
            } else {
                j += 1;
                more[j - 1]
            };
            refs.extend([n, v]);
        }
        refs
    }
}

impl<'a> Sink<'a> for Requests<'a> {
    fn begin(&mut self, base: &[(&'a str, &'a str)]) {
        self.base.clear();
        self.base.extend_from_slice(base);
        self.base_refs = None;
    }

    fn push(
        &mut self,
        name: &str,
        extra: Option<(&str, &str)>,
        point: Point,
        meta: SeriesMeta<'a>,
    ) {
        if self.series.len() == self.max {
            self.finish();
        }
        let labels_refs = self.labels_refs(name, extra);
        let symbols = &mut self.symbols;
        let start_timestamp = meta.start_ms;
        let (samples, histograms) = match point {
            Point::Sample(s) => {
                let s = proto2::Sample {
                    value: s.value,
                    timestamp: s.timestamp,
                    start_timestamp,
                };
                (vec![s], Vec::new())
            }
            Point::Histogram(h) => (
                Vec::new(),
                vec![Histogram {
                    start_timestamp,
                    ..h
                }],
            ),
        };
        let exemplars: Vec<proto2::Exemplar> = meta
            .exemplar
            .iter()
            .map(|e| proto2::Exemplar {
                labels_refs: e
                    .labels()
                    .flat_map(|(n, v)| [symbols.get(n), symbols.get(v)])
                    .collect(),
                value: e.value(),
                timestamp: (e.timestamp_unix_ns() / 1_000_000) as i64,
            })
            .collect();
        self.samples += 1;
        self.exemplars += exemplars.len() as u64;
        let metadata = proto2::Metadata {
            r#type: meta.typ as i32,
            help_ref: symbols.get(meta.help),
            unit_ref: symbols.get(meta.unit),
        };
        self.series.push(proto2::TimeSeries {
            labels_refs,
            samples,
            histograms,
            exemplars,
            metadata: Some(metadata),
        });
    }
}

/// Calls `f` on each symbol reference of `t`, in the order they are
/// written.
fn each_ref(t: &mut proto2::TimeSeries, mut f: impl FnMut(&mut u32)) {
    t.labels_refs.iter_mut().for_each(&mut f);
    for e in &mut t.exemplars {
        e.labels_refs.iter_mut().for_each(&mut f);
    }
    if let Some(m) = &mut t.metadata {
        f(&mut m.help_ref);
        f(&mut m.unit_ref);
    }
}

/// A request's strings while it is built: each once, in the order first
/// met.
#[derive(Default)]
struct Symbols<'a> {
    index: FxHashMap<Cow<'a, str>, u32>,
    table: Vec<Cow<'a, str>>,
}

impl<'a> Symbols<'a> {
    /// The (provisional) reference of `s`, added if new.
    fn get(&mut self, s: &'a str) -> u32 {
        self.get_cow(s, Cow::Borrowed)
    }

    /// As [`get`](Symbols::get), for a string that lives shorter than
    /// the request (copied if new).
    fn get_owned(&mut self, s: &str) -> u32 {
        self.get_cow(s, |s| Cow::Owned(s.to_owned()))
    }

    fn get_cow<'s>(&mut self, s: &'s str, keep: impl Fn(&'s str) -> Cow<'a, str>) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as u32;
        self.table.push(keep(s));
        self.index.insert(keep(s), i);
        i
    }

    /// Sorts `series` (with provisional references) by their labels other
    /// than `__name__`, names then values in byte order; series with the
    /// same such labels (a counter in several families, a histogram's
    /// `_sum` and `_count`) keep the walk's order.
    fn sort(&self, series: &mut [proto2::TimeSeries]) {
        let name = self.index.get("__name__").copied();
        let mut by_bytes: Vec<u32> = (0..self.table.len() as u32).collect();
        by_bytes.sort_unstable_by_key(|&i| &self.table[i as usize]);
        let mut rank = vec![0; by_bytes.len()];
        for (r, &i) in by_bytes.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        // Stable, and moves each series once. The key: the labels but
        // the name, as their strings' ranks in byte order.
        series.sort_by_cached_key(|t| {
            let pairs = t.labels_refs.chunks_exact(2);
            let labels = pairs.filter(|p| Some(p[0]) != name);
            let ranks = labels.map(|p| (rank[p[0] as usize], rank[p[1] as usize]));
            ranks.collect::<Vec<_>>()
        });
    }

    /// The symbol table of `series`, whose provisional references are
    /// replaced by their place in it: `""` first (as the specification
    /// requires), then the strings the series refer to most often, ties
    /// (most of the rare strings) in the order the series first refer to
    /// them.
    fn into_table(mut self, series: &mut [proto2::TimeSeries]) -> Vec<String> {
        self.get("");
        // Each string's count of references and its first.
        let mut uses = vec![(0u32, u32::MAX); self.table.len()];
        let mut seen = 0;
        for t in series.iter_mut() {
            each_ref(t, |&mut r| {
                let (count, first) = &mut uses[r as usize];
                if *count == 0 {
                    (*first, seen) = (seen, seen + 1);
                }
                *count += 1;
            });
        }
        let mut order: Vec<u32> = (0..self.table.len() as u32).collect();
        order.sort_unstable_by_key(|&i| {
            let (count, first) = uses[i as usize];
            (!self.table[i as usize].is_empty(), Reverse(count), first)
        });
        let mut refs = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            refs[old as usize] = new as u32;
        }
        series
            .iter_mut()
            .for_each(|t| each_ref(t, |r| *r = refs[*r as usize]));
        let mut strings: Vec<Option<Cow<'a, str>>> = self.table.into_iter().map(Some).collect();
        order
            .iter()
            .map(|&i| strings[i as usize].take().unwrap_or_default().into_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series of `labels` (sorted by name) with provisional references.
    fn series<'a>(s: &mut Symbols<'a>, labels: &[(&'a str, &'a str)]) -> proto2::TimeSeries {
        proto2::TimeSeries {
            labels_refs: labels
                .iter()
                .flat_map(|&(n, v)| [s.get(n), s.get(v)])
                .collect(),
            samples: Vec::new(),
            histograms: Vec::new(),
            exemplars: Vec::new(),
            metadata: Some(proto2::Metadata {
                r#type: 1,
                help_ref: s.get("Help."),
                unit_ref: s.get(""),
            }),
        }
    }

    fn labels(table: &[String], t: &proto2::TimeSeries) -> Vec<(String, String)> {
        let s = |r: u32| table[r as usize].clone();
        t.labels_refs
            .chunks(2)
            .map(|p| (s(p[0]), s(p[1])))
            .collect()
    }

    #[test]
    fn series_are_sorted_by_their_labels_but_the_name_keeping_their_order_on_ties() {
        let mut s = Symbols::default();
        let mut all = vec![
            series(&mut s, &[("__name__", "b_total"), ("route", "/b")]),
            series(&mut s, &[("__name__", "a_total"), ("route", "/b")]),
            series(
                &mut s,
                &[("__name__", "c_total"), ("code", "500"), ("route", "/a")],
            ),
            series(&mut s, &[("__name__", "a_total"), ("route", "/a")]),
        ];
        s.sort(&mut all);
        let table = s.into_table(&mut all);
        let names: Vec<String> = all.iter().map(|t| labels(&table, t)[0].1.clone()).collect();
        // {code="500", route="/a"} < {route="/a"} < {route="/b"} (twice,
        // in the walk's order).
        assert_eq!(names, ["c_total", "a_total", "b_total", "a_total"]);
    }

    #[test]
    fn the_table_has_the_empty_string_then_the_most_referred_then_first_referred() {
        let mut s = Symbols::default();
        // Provisional references: "/b" before "/a".
        let mut all = vec![
            series(&mut s, &[("__name__", "up"), ("route", "/b")]),
            series(&mut s, &[("__name__", "up"), ("route", "/a")]),
            series(&mut s, &[("__name__", "up"), ("route", "/a")]),
        ];
        let provisional: Vec<String> = s.table.iter().map(|c| c.to_string()).collect();
        let want: Vec<_> = all.iter().map(|t| labels(&provisional, t)).collect();
        let table = s.into_table(&mut all);
        // "" first; "__name__", "up", "route" and "Help." three times each
        // (in the order first referred to), "/a" twice, "/b" once.
        let order = ["", "__name__", "up", "route", "Help.", "/a", "/b"];
        assert_eq!(table, order);
        let got: Vec<_> = all.iter().map(|t| labels(&table, t)).collect();
        assert_eq!(got, want);
        assert!(all.iter().all(|t| t.metadata.unwrap().help_ref == 4));
    }
}

//! The series of a snapshot as remote write 2.0 requests: strings
//! interned per request, each series with its metadata, start time and
//! exemplar, protobuf then snappy. The walk (`walk`) hands the series
//! over with borrowed labels, interned as they come, so a push makes no
//! string per series.
//!
//! The bytes are what snappy leaves, so the request is laid out for it
//! (see benches/push/README.md for the measurements):
//!
//! - the series of a family come sorted by labels (a store series'
//!   `_bucket`, `_sum` and `_count` series together), so neighbours
//!   differ in as few references as possible;
//! - a sample's fields are written value, start timestamp, timestamp
//!   ([`proto2::Sample`]), so what differs from the series before sits
//!   together;
//! - the symbol table puts the strings most series refer to (label names,
//!   metric names, shared values, help texts) first, where their
//!   references take one byte, and sorts the strings within each part, so
//!   neighbouring symbols share prefixes.

use std::borrow::Cow;

use prost::Message;
use rustc_hash::FxHashMap;
use shmetrics_core::Snapshot;

use super::encode::{compress, walk, Chunk, Point, SeriesMeta, Shape, Sink};
use super::proto2::{self, Histogram};
use super::ExternalLabels;

/// Strings referred to at least this often in a request go first in its
/// symbol table. The first 127 symbols have one-byte references; a string
/// most series carry (a label name, a shared value) should have one of
/// them, a value only a few series carry need not.
const FREQUENT: u32 = 64;

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
        sorted: true,
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
        let (table, refs) = std::mem::take(&mut self.symbols).into_table();
        let mut series = std::mem::take(&mut self.series);
        series.iter_mut().for_each(|t| renumber(t, &refs));
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

/// Replaces each reference `r` of `t` by `refs[r]`.
fn renumber(t: &mut proto2::TimeSeries, refs: &[u32]) {
    let new = |r: &mut u32| *r = refs[*r as usize];
    t.labels_refs.iter_mut().for_each(new);
    for e in &mut t.exemplars {
        e.labels_refs.iter_mut().for_each(new);
    }
    if let Some(m) = &mut t.metadata {
        new(&mut m.help_ref);
        new(&mut m.unit_ref);
    }
}

/// A request's strings while it is built: each once, in the order first
/// met, with how often it is referred to.
#[derive(Default)]
struct Symbols<'a> {
    index: FxHashMap<Cow<'a, str>, u32>,
    /// Each string and its count of references.
    table: Vec<(Cow<'a, str>, u32)>,
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
        let i = match self.index.get(s) {
            Some(&i) => i,
            None => {
                let i = self.table.len() as u32;
                self.table.push((keep(s), 0));
                self.index.insert(keep(s), i);
                i
            }
        };
        self.table[i as usize].1 += 1;
        i
    }

    /// The symbol table: `""` first (as the specification requires),
    /// then the strings referred to at least [`FREQUENT`] times, then the
    /// others, each part sorted; and the final reference of each
    /// provisional one.
    fn into_table(mut self) -> (Vec<String>, Vec<u32>) {
        self.get("");
        let mut order: Vec<u32> = (0..self.table.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let key = |i: u32| {
                let (s, uses) = &self.table[i as usize];
                (!s.is_empty(), *uses < FREQUENT, s)
            };
            key(a).cmp(&key(b))
        });
        let mut refs = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            refs[old as usize] = new as u32;
        }
        let mut strings: Vec<Option<Cow<'a, str>>> =
            self.table.into_iter().map(|(s, _)| Some(s)).collect();
        let table = order
            .iter()
            .map(|&i| strings[i as usize].take().unwrap_or_default().into_owned())
            .collect();
        (table, refs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequent_strings_come_first_then_the_rest_each_part_sorted() {
        let mut s = Symbols::default();
        let mut used = Vec::new();
        for i in 0..FREQUENT {
            // "route" is frequent; "zz-a" and "zz-b" are used half as often.
            let zz = if i % 2 == 0 { "zz-b" } else { "zz-a" };
            used.push((zz, s.get(zz)));
            used.push(("route", s.get("route")));
        }
        used.push(("b-rare", s.get("b-rare")));
        used.push(("a-rare", s.get("a-rare")));
        let (table, refs) = s.into_table();
        assert_eq!(table, ["", "route", "a-rare", "b-rare", "zz-a", "zz-b"]);
        for (string, provisional) in used {
            assert_eq!(table[refs[provisional as usize] as usize], string);
        }
    }
}

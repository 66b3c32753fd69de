//! The series of a snapshot as remote write 2.0 requests: strings
//! interned per request, each series with its metadata, start time and
//! exemplar, protobuf then snappy.
//!
//! The bytes are what snappy leaves, so the request is laid out for it
//! (see benches/push/README.md for the measurements):
//!
//! - the series of a family come sorted by labels
//!   ([`timeseries_with_meta`](super::timeseries_with_meta) does that), so
//!   neighbours differ in as few references as possible;
//! - the symbol table puts the strings most series refer to (label names,
//!   metric names, shared values, help texts) first, where their
//!   references take one byte, and sorts the strings within each part, so
//!   neighbouring symbols share prefixes.

use prost::Message;
use rustc_hash::FxHashMap;

use super::encode::{compress, Chunk, SeriesMeta};
use super::proto::TimeSeries;
use super::proto2::{self, Histogram};

/// Strings referred to at least this often in a request go first in its
/// symbol table. The first 127 symbols have one-byte references; a string
/// most series carry (a label name, a shared value) should have one of
/// them, a value only a few series carry need not.
const FREQUENT: u32 = 64;

/// Encodes `series` as remote write 2.0 requests of at most
/// `max_samples` series each: each request interns its own strings
/// (labels, help texts, units, exemplar labels) in its symbol table, and
/// every series carries its metadata, start time and exemplar from
/// `meta` (as [`timeseries_with_meta`](super::timeseries_with_meta) gives
/// them), protobuf then snappy.
pub fn encode_v2(
    series: Vec<TimeSeries>,
    meta: &[SeriesMeta<'_>],
    max_samples: usize,
) -> Vec<Chunk> {
    requests_v2(&series, meta, max_samples)
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
    series: &[TimeSeries],
    meta: &[SeriesMeta<'_>],
    max_samples: usize,
) -> Vec<(proto2::Request, u64, u64)> {
    let max = max_samples.max(1);
    series
        .chunks(max)
        .zip(meta.chunks(max))
        .map(|(part, meta)| {
            let mut symbols = Symbols::default();
            let mut timeseries: Vec<proto2::TimeSeries> = part
                .iter()
                .zip(meta)
                .map(|(s, m)| series_v2(s, m, &mut symbols))
                .collect();
            let (table, refs) = symbols.into_table();
            timeseries.iter_mut().for_each(|t| renumber(t, &refs));
            let samples = part
                .iter()
                .map(|s| (s.samples.len() + s.histograms.len()) as u64)
                .sum();
            let exemplars = meta.iter().filter(|m| m.exemplar.is_some()).count() as u64;
            let request = proto2::Request {
                symbols: table,
                timeseries,
            };
            (request, samples, exemplars)
        })
        .collect()
}

/// `s` with references into `symbols` as it is being built (renumbered
/// by [`renumber`] once the table is complete).
fn series_v2<'a>(
    s: &'a TimeSeries,
    m: &SeriesMeta<'a>,
    symbols: &mut Symbols<'a>,
) -> proto2::TimeSeries {
    let mut labels_refs = Vec::with_capacity(s.labels.len() * 2);
    for l in &s.labels {
        labels_refs.extend([symbols.get(&l.name), symbols.get(&l.value)]);
    }
    let start_timestamp = m.start_ms;
    let samples = s
        .samples
        .iter()
        .map(|x| proto2::Sample {
            value: x.value,
            timestamp: x.timestamp,
            start_timestamp,
        })
        .collect();
    let histograms = s
        .histograms
        .iter()
        .map(|h| Histogram {
            start_timestamp,
            ..h.clone()
        })
        .collect();
    let exemplars = m
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
    proto2::TimeSeries {
        labels_refs,
        samples,
        histograms,
        exemplars,
        metadata: Some(proto2::Metadata {
            r#type: m.typ as i32,
            help_ref: symbols.get(m.help),
            unit_ref: symbols.get(m.unit),
        }),
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
    index: FxHashMap<&'a str, u32>,
    /// Each string and its count of references.
    table: Vec<(&'a str, u32)>,
}

impl<'a> Symbols<'a> {
    /// The (provisional) reference of `s`, added if new.
    fn get(&mut self, s: &'a str) -> u32 {
        let next = self.table.len() as u32;
        let i = *self.index.entry(s).or_insert(next);
        if i == next {
            self.table.push((s, 0));
        }
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
        order.sort_unstable_by_key(|&i| {
            let (s, uses) = self.table[i as usize];
            (!s.is_empty(), uses < FREQUENT, s)
        });
        let mut refs = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            refs[old as usize] = new as u32;
        }
        let table = order
            .iter()
            .map(|&i| self.table[i as usize].0.to_owned())
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

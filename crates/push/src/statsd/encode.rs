//! Snapshots as StatsD lines: per-series deltas, names, tags, value
//! packing with sample rates, and datagrams packed up to a size.

use std::collections::HashMap;
use std::io::Write as _;

use shmetrics_core::{Kind, Snapshot, Value};

use super::{Config, Flavor};

/// Datagrams built by one flush: lines joined by `\n`, each datagram at
/// most the configured size.
#[derive(Clone, Debug)]
pub struct Datagrams {
    buf: Vec<u8>,
    /// Where each finished datagram ends in `buf`.
    ends: Vec<usize>,
    max: usize,
    lines: u64,
}

impl Datagrams {
    /// Empty, for datagrams of at most `max` bytes.
    pub fn new(max: usize) -> Datagrams {
        Datagrams {
            buf: Vec::new(),
            ends: Vec::new(),
            max,
            lines: 0,
        }
    }

    /// Empties it, keeping the buffers.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.ends.clear();
        self.lines = 0;
    }

    fn open_start(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Adds `group` (one line, or several joined by `\n` that must arrive
    /// in one datagram, in order) to the open datagram, or to a new one
    /// if it does not fit. `false` (and nothing added) if the group alone
    /// is larger than a datagram: a line is never split.
    fn push(&mut self, group: &[u8], lines: u64) -> bool {
        if group.len() > self.max {
            return false;
        }
        let open = self.buf.len() - self.open_start();
        if open > 0 && open + 1 + group.len() > self.max {
            self.ends.push(self.buf.len());
        }
        if self.buf.len() > self.open_start() {
            self.buf.push(b'\n');
        }
        self.buf.extend_from_slice(group);
        self.lines += lines;
        true
    }

    /// Closes the open datagram, if any.
    fn finish(&mut self) {
        if self.buf.len() > self.open_start() {
            self.ends.push(self.buf.len());
        }
    }

    /// The datagrams, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.ends.iter().enumerate().map(move |(i, &end)| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            &self.buf[start..end]
        })
    }

    /// How many datagrams.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Lines in all datagrams.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes in all datagrams.
    pub fn bytes(&self) -> u64 {
        // Each datagram but the first is preceded by no separator: the
        // ends mark exactly the datagrams' bytes.
        self.ends.last().copied().unwrap_or(0) as u64
    }
}

/// Lines one flush left out, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Lines longer than a datagram (a very long name or many tags).
    pub too_long: u64,
    /// Values that StatsD cannot carry: NaN and infinities.
    pub not_finite: u64,
}

/// What the encoder remembers of a series between flushes.
#[derive(Clone, Debug, Default, PartialEq)]
struct Values {
    /// Histogram: the non-cumulative count of each bucket (`+Inf` last).
    /// Summary: one element, the count. Empty otherwise.
    counts: Vec<u64>,
    /// Counter: the total. Histogram and summary: the sum.
    value: f64,
}

#[derive(Debug)]
struct Tracked {
    /// The series' creation time: a different one is a new series with
    /// the same name and labels (after a wipe, or a delete).
    created_ns: u64,
    /// The flush that last saw it.
    seen: u64,
    /// Prefix and sanitized family name.
    name: Box<str>,
    /// StatsD: the labels folded into the name (`.k.v...`); empty for
    /// DogStatsD.
    fold: Box<str>,
    /// DogStatsD: `|#k:v,...`; empty for StatsD or without labels.
    tags: Box<str>,
    /// What the last successful flush sent deltas up to.
    committed: Values,
    /// What this flush read.
    current: Values,
}

/// Turns snapshots into StatsD lines, remembering what it sent.
///
/// # Deltas
///
/// Counters, histograms and summaries are sent as what they gained since
/// the last flush. A series the encoder has not seen before counts from
/// zero if it was created after the encoder was (its whole value is new),
/// and from its current value otherwise: an exporter that restarts does
/// not send again what the workers counted before it started (what they
/// counted between its last flush and its restart is not sent).
///
/// A series whose value went *down* was reset (`Store::reset`, or a wipe
/// or delete that the creation time did not reveal): its new value is
/// taken as the delta, as Prometheus' `increase()` does. That is exactly
/// what it counted since the reset; skipping it would lose those counts,
/// and a negative delta would take counts away from the agent. (A reset
/// is seen only if the value has not climbed back past the old one by the
/// next flush; a writer slot that is reused never looks like one, because
/// shmetrics continues a dead process's counts.) Zero deltas are not sent.
///
/// # Lines
///
/// See the module documentation of [`crate::statsd`].
#[derive(Debug)]
pub struct Encoder {
    flavor: Flavor,
    prefix: String,
    colons_as_dots: bool,
    started_ns: u64,
    generation: u64,
    series: HashMap<Box<str>, Tracked>,
    key: String,
    line: Vec<u8>,
    scratch: Vec<(u64, usize)>,
}

impl Encoder {
    /// An encoder for `config`'s flavor and prefix that treats series
    /// created before `started_unix_ns` as already counted.
    pub fn new(config: &Config, started_unix_ns: u64) -> Encoder {
        Encoder {
            flavor: config.flavor,
            prefix: config.prefix.clone(),
            colons_as_dots: config.colons_as_dots,
            started_ns: started_unix_ns,
            generation: 0,
            series: HashMap::new(),
            key: String::new(),
            line: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Series it remembers.
    pub fn tracked(&self) -> usize {
        self.series.len()
    }

    /// Appends the lines for `snap` to `out` (and closes its last
    /// datagram). Deltas are taken against the last [`Encoder::commit`]ed
    /// flush, so a flush that could not be sent at all is sent again, with
    /// what came since, by the next one.
    pub fn encode(&mut self, snap: &Snapshot, out: &mut Datagrams) -> Dropped {
        self.generation += 1;
        let mut dropped = Dropped::default();
        for family in snap.families() {
            let kind = family.kind();
            for series in family.series() {
                self.key.clear();
                self.key.push_str(family.name());
                self.key.push(kind_char(kind));
                for (n, v) in series.labels() {
                    self.key.push('\u{1}');
                    self.key.push_str(n);
                    self.key.push('\u{2}');
                    self.key.push_str(v);
                }
                let value = series.value();
                let current = values_of(&value);
                let created = series.created_unix_ns();
                let tracked = match self.series.get_mut(self.key.as_str()) {
                    Some(t) => {
                        if t.created_ns != created
                            || t.committed.counts.len() != current.counts.len()
                        {
                            // A new series under the same name and labels.
                            t.created_ns = created;
                            t.committed = zero_like(&current);
                        }
                        t
                    }
                    None => {
                        let committed = if created >= self.started_ns {
                            zero_like(&current)
                        } else {
                            current.clone()
                        };
                        let (name, fold, tags) = names(
                            self.flavor,
                            &self.prefix,
                            self.colons_as_dots,
                            family.name(),
                            series.labels(),
                        );
                        self.series
                            .entry(self.key.clone().into_boxed_str())
                            .or_insert(Tracked {
                                created_ns: created,
                                seen: 0,
                                name,
                                fold,
                                tags,
                                committed,
                                current: Values::default(),
                            })
                    }
                };
                tracked.seen = self.generation;
                tracked.current = current;
                let d = write_series(
                    self.flavor,
                    tracked,
                    &value,
                    &mut self.line,
                    &mut self.scratch,
                    out,
                );
                dropped.too_long += d.too_long;
                dropped.not_finite += d.not_finite;
            }
        }
        out.finish();
        dropped
    }

    /// Records the last [`Encoder::encode`] as sent: the next deltas start
    /// from it. Forgets series it did not see.
    pub fn commit(&mut self) {
        let generation = self.generation;
        self.series.retain(|_, t| {
            if t.seen != generation {
                return false;
            }
            std::mem::swap(&mut t.committed, &mut t.current);
            true
        });
    }
}

fn kind_char(kind: Kind) -> char {
    match kind {
        Kind::Counter => 'c',
        Kind::Gauge => 'g',
        Kind::Histogram => 'h',
        Kind::Summary => 's',
    }
}

fn values_of(value: &Value<'_>) -> Values {
    match *value {
        Value::Counter(v) => Values {
            counts: Vec::new(),
            value: v,
        },
        Value::Gauge(_) => Values::default(),
        Value::Histogram {
            cumulative, sum, ..
        } => {
            let mut below = 0;
            Values {
                counts: cumulative
                    .iter()
                    .map(|&c| {
                        let n = c.saturating_sub(below);
                        below = c;
                        n
                    })
                    .collect(),
                value: sum,
            }
        }
        Value::Summary { count, sum, .. } => Values {
            counts: vec![count],
            value: sum,
        },
    }
}

fn zero_like(v: &Values) -> Values {
    Values {
        counts: vec![0; v.counts.len()],
        value: 0.0,
    }
}

/// The name with the prefix, and the labels as StatsD folds them or as
/// DogStatsD tags. Labels with an empty value are left out (an empty
/// value means no label).
fn names<'a>(
    flavor: Flavor,
    prefix: &str,
    colons_as_dots: bool,
    family: &str,
    labels: impl Iterator<Item = (&'a str, &'a str)>,
) -> (Box<str>, Box<str>, Box<str>) {
    let mut name = String::with_capacity(prefix.len() + family.len());
    name.push_str(prefix);
    name.extend(family.chars().map(|c| match c {
        ':' if colons_as_dots => '.',
        c if c.is_ascii_alphanumeric() => c,
        _ => '_',
    }));
    let mut fold = String::new();
    let mut tags = String::new();
    for (n, v) in labels.filter(|(_, v)| !v.is_empty()) {
        match flavor {
            Flavor::Statsd => {
                for part in [n, v] {
                    fold.push('.');
                    fold.extend(part.chars().map(|c| {
                        if c.is_ascii_alphanumeric() || c == '-' {
                            c
                        } else {
                            '_'
                        }
                    }));
                }
            }
            Flavor::Dogstatsd => {
                tags.push_str(if tags.is_empty() { "|#" } else { "," });
                push_tag_part(&mut tags, n, false);
                tags.push(':');
                push_tag_part(&mut tags, v, true);
            }
        }
    }
    (name.into(), fold.into(), tags.into())
}

/// Appends a tag's key or value as statsd-instrument writes it: the
/// separators `,` and `|` are left out, and everything else is kept
/// (quotes, `\\`, `#`, UTF-8: the agent takes them), except a line
/// break, which would end the line in a datagram that carries several
/// (`_`), and a `:` in a key, which would end the key (`_`).
fn push_tag_part(out: &mut String, part: &str, value: bool) {
    out.extend(part.chars().filter_map(|c| match c {
        ',' | '|' => None,
        '\n' | '\r' => Some('_'),
        ':' if !value => Some('_'),
        c => Some(c),
    }));
}

/// Writes a value: an integer as one (`3`, `-2`), anything else in the
/// shortest form that reads back as the same `f64` (`0.25`, `1e-7`).
fn write_value(out: &mut Vec<u8>, v: f64) {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
    } else {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    }
}

/// The sample rate that makes an agent count `n` samples for one value:
/// the largest `f64` not above `1/n` whose inverse is at least `n`. The
/// agent computes `1/rate` and (DogStatsD's sketches) truncates it to an
/// integer, so a rate whose inverse came out as `n - 1e-13` would count
/// one short; this one's inverse is `n` or a hair above it, which
/// truncates and rounds to `n` alike, for every `n` below 2^52.
pub fn sample_rate(n: u64) -> f64 {
    let mut r = 1.0 / n as f64;
    while 1.0 / r < n as f64 {
        r = f64::from_bits(r.to_bits() - 1);
    }
    r
}

/// `|@rate`, written in plain decimal (no exponent: Etsy StatsD's parser
/// does not take one), or nothing for a rate of 1.
fn write_rate(out: &mut Vec<u8>, n: u64) {
    if n > 1 {
        // UNWRAP: writing to a Vec cannot fail.
        write!(out, "|@{}", sample_rate(n)).expect("write to Vec");
    }
}

/// What a series gained since the last committed flush. A reset (any
/// count, or a counter's total, went down) makes the new values the
/// deltas.
struct Deltas<'a> {
    cur: &'a Values,
    old: &'a Values,
    reset: bool,
}

impl<'a> Deltas<'a> {
    fn of(t: &'a Tracked) -> Deltas<'a> {
        let (cur, old) = (&t.current, &t.committed);
        let reset = cur.counts.iter().zip(&old.counts).any(|(c, o)| c < o)
            || (cur.counts.is_empty() && cur.value < old.value);
        Deltas { cur, old, reset }
    }

    /// Of count `i` (a histogram's bucket, a summary's count).
    fn count(&self, i: usize) -> u64 {
        if self.reset {
            self.cur.counts[i]
        } else {
            self.cur.counts[i] - self.old.counts[i]
        }
    }

    /// Of all counts.
    fn total(&self) -> u64 {
        (0..self.cur.counts.len()).map(|i| self.count(i)).sum()
    }

    /// Of a counter's total, or a histogram's or summary's sum.
    fn value(&self) -> f64 {
        if self.reset {
            self.cur.value
        } else {
            self.cur.value - self.old.value
        }
    }
}

/// Writes one series' lines into datagrams.
struct Lines<'a> {
    t: &'a Tracked,
    line: &'a mut Vec<u8>,
    out: &'a mut Datagrams,
    dropped: Dropped,
}

impl Lines<'_> {
    /// One `name:value|type` line (two for a negative gauge).
    fn simple(&mut self, suffix: &str, v: f64, ty: &str) {
        if !v.is_finite() {
            self.dropped.not_finite += 1;
            return;
        }
        let (t, line) = (self.t, &mut *self.line);
        line.clear();
        let mut lines = 1;
        if ty == "g" && v < 0.0 {
            // StatsD reads a leading sign as "relative to the current
            // value": set 0 first, then the negative value, in one
            // datagram so that they arrive in this order.
            line.extend_from_slice(t.name.as_bytes());
            line.extend_from_slice(t.fold.as_bytes());
            line.extend_from_slice(b":0|g");
            line.extend_from_slice(t.tags.as_bytes());
            line.push(b'\n');
            lines = 2;
        }
        line.extend_from_slice(t.name.as_bytes());
        line.extend_from_slice(suffix.as_bytes());
        line.extend_from_slice(t.fold.as_bytes());
        line.push(b':');
        write_value(line, v);
        line.push(b'|');
        line.extend_from_slice(ty.as_bytes());
        line.extend_from_slice(t.tags.as_bytes());
        if !self.out.push(line, lines) {
            self.dropped.too_long += lines;
        }
    }

    /// StatsD's `_count` and `_sum` counters of a histogram or summary.
    fn count_and_sum(&mut self, count: u64, sum: f64) {
        if count != 0 {
            self.simple("_count", count as f64, "c");
        }
        if sum != 0.0 {
            self.simple("_sum", sum, "c");
        }
    }

    /// A histogram as DogStatsD distributions. Each bucket's new
    /// observations are represented by its upper bound; `+Inf`'s by the
    /// highest finite bound (or, without bounds, the mean).
    fn buckets(&mut self, bounds: &[f64], d: &Deltas<'_>, scratch: &mut Vec<(u64, usize)>) {
        let mean = d.value() / d.total() as f64;
        let repr = |i: usize| match bounds.get(i).or(bounds.last()) {
            Some(&b) => b,
            None => mean,
        };
        scratch.clear();
        scratch.extend(
            (0..d.cur.counts.len())
                .map(|i| (d.count(i), i))
                .filter(|&(n, _)| n > 0),
        );
        scratch.sort_unstable();
        let mut rest = &scratch[..];
        while let Some(&(n, _)) = rest.first() {
            let same = rest.iter().take_while(|(m, _)| *m == n).count();
            self.distribution(n, rest[..same].iter().map(|&(_, i)| repr(i)));
            rest = &rest[same..];
        }
    }

    /// `name:v1:v2:...|d|@rate|#tags` lines for values that each stand
    /// for `n` observations, as many values a line as fit in a datagram.
    fn distribution(&mut self, n: u64, values: impl Iterator<Item = f64>) {
        let t = self.t;
        let mut tail = Vec::with_capacity(40 + t.tags.len());
        tail.extend_from_slice(b"|d");
        write_rate(&mut tail, n);
        tail.extend_from_slice(t.tags.as_bytes());
        let head = t.name.len();
        let max = self.out.max;
        let mut value = Vec::with_capacity(32);
        self.line.clear();
        self.line.extend_from_slice(t.name.as_bytes());
        for v in values {
            if !v.is_finite() {
                self.dropped.not_finite += 1;
                continue;
            }
            value.clear();
            value.push(b':');
            write_value(&mut value, v);
            if self.line.len() > head && self.line.len() + value.len() + tail.len() > max {
                self.emit(&tail, head);
            }
            self.line.extend_from_slice(&value);
        }
        if self.line.len() > head {
            self.emit(&tail, head);
        }
    }

    /// Ends the line with `tail`, adds it, and starts the next one after
    /// the name (`head` bytes).
    fn emit(&mut self, tail: &[u8], head: usize) {
        self.line.extend_from_slice(tail);
        if !self.out.push(self.line, 1) {
            self.dropped.too_long += 1;
        }
        self.line.truncate(head);
    }
}

fn write_series(
    flavor: Flavor,
    t: &Tracked,
    value: &Value<'_>,
    line: &mut Vec<u8>,
    scratch: &mut Vec<(u64, usize)>,
    out: &mut Datagrams,
) -> Dropped {
    let d = Deltas::of(t);
    let mut w = Lines {
        t,
        line,
        out,
        dropped: Dropped::default(),
    };
    match (*value, flavor) {
        (Value::Counter(_), _) if d.value() != 0.0 => w.simple("", d.value(), "c"),
        (Value::Counter(_), _) => {}
        (Value::Gauge(v), _) => w.simple("", v, "g"),
        (Value::Histogram { .. } | Value::Summary { .. }, Flavor::Statsd) => {
            w.count_and_sum(d.total(), d.value());
        }
        (Value::Histogram { bounds, .. }, Flavor::Dogstatsd) if d.total() > 0 => {
            w.buckets(bounds, &d, scratch);
        }
        // A summary has no buckets: its new observations are represented
        // by their mean, so that the agent's count and sum are right.
        (Value::Summary { .. }, Flavor::Dogstatsd) if d.total() > 0 => {
            let count = d.total();
            w.distribution(count, std::iter::once(d.value() / count as f64));
        }
        (Value::Histogram { .. } | Value::Summary { .. }, Flavor::Dogstatsd) => {}
    }
    w.dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_rates_count_exactly() {
        for n in (2..200_000u64).chain([1 << 20, 1_000_000_007, (1 << 40) + 1]) {
            let r = sample_rate(n);
            let text = r.to_string();
            assert!(!text.contains('e'), "{text}");
            let back: f64 = text.parse().unwrap();
            assert_eq!(back, r);
            let inv = 1.0 / back;
            assert_eq!(inv as u64, n, "truncated, n={n} rate={text}");
            assert_eq!(inv.round() as u64, n, "rounded, n={n} rate={text}");
        }
        assert_eq!(sample_rate(1000).to_string(), "0.001");
        assert_eq!(sample_rate(2).to_string(), "0.5");
    }

    #[test]
    fn values() {
        let f = |v| {
            let mut out = Vec::new();
            write_value(&mut out, v);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(f(3.0), "3");
        assert_eq!(f(-2.0), "-2");
        assert_eq!(f(-0.0), "0");
        assert_eq!(f(0.25), "0.25");
        assert_eq!(f(1e-7), "1e-7");
        assert_eq!(f(1e300), "1e300");
    }

    #[test]
    fn colons_in_names() {
        let labels = [("route", "/a")];
        let got = |dots| {
            names(
                Flavor::Dogstatsd,
                "p.",
                dots,
                "app:req_x",
                labels.into_iter(),
            )
        };
        assert_eq!(&*got(false).0, "p.app_req_x");
        assert_eq!(&*got(true).0, "p.app.req_x");
        assert_eq!(&*got(true).2, "|#route:/a");
        let folded = names(Flavor::Statsd, "", true, "a:b", labels.into_iter());
        assert_eq!((&*folded.0, &*folded.1), ("a.b", ".route._a"));
    }

    #[test]
    fn tags_as_statsd_instrument_writes_them() {
        let labels = [
            ("q", "say \"hi\""),
            ("b", "back\\slash"),
            ("u", "ütf-8 ✓ 日本"),
            ("s", "a,b|c#d:e"),
            ("n", "new\nline\r"),
            ("k:x", "v"),
            ("empty", ""),
        ];
        let got = names(Flavor::Dogstatsd, "", false, "m", labels.into_iter());
        assert_eq!(
            &*got.2,
            "|#q:say \"hi\",b:back\\slash,u:ütf-8 ✓ 日本,s:abc#d:e,n:new_line_,k_x:v"
        );
    }

    #[test]
    fn packing_never_splits_a_line() {
        let mut d = Datagrams::new(10);
        assert!(d.push(b"a:1|c", 1));
        assert!(d.push(b"b:1|c", 1)); // 5 + 1 + 5 > 10: a new datagram
        assert!(d.push(b"c|c", 1)); // 5 + 1 + 3 <= 10
        assert!(!d.push(b"toolong:1|c", 1));
        d.finish();
        let got: Vec<&[u8]> = d.iter().collect();
        assert_eq!(got, [&b"a:1|c"[..], &b"b:1|c\nc|c"[..]]);
        assert_eq!((d.len(), d.lines(), d.bytes()), (2, 3, 14));
    }
}

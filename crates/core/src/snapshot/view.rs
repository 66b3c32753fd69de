//! What a snapshot shows: families, series, values, exemplars.

use std::ops::Range;

use super::{
    CachedSeries, ExemplarEntry, FamilyEntry, SeriesEntry, Snapshot, Span, StoreStats, EXTRA_NONE,
    EXTRA_OVERFLOW, EXTRA_PID,
};
use crate::family::{OVERFLOW_LABEL, PID_LABEL};
use crate::model::{GaugeMode, Kind};

/// A family in a [`Snapshot`].
#[derive(Clone, Copy, Debug)]
pub struct FamilyView<'a> {
    snap: &'a Snapshot,
    f: &'a FamilyEntry,
    /// The family's members, which its series show.
    members: &'a [CachedSeries],
}

/// A series in a [`Snapshot`].
#[derive(Clone, Copy, Debug)]
pub struct SeriesView<'a> {
    snap: &'a Snapshot,
    f: &'a FamilyEntry,
    s: &'a SeriesEntry,
    /// The member the series shows.
    m: &'a CachedSeries,
    /// The series' rank in its family.
    rank: u32,
}

/// A series' value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// A counter's total.
    Counter(f64),
    /// A gauge's value, combined by the family's mode.
    Gauge(f64),
    /// A histogram: classic buckets, native (exponential) buckets, or both.
    Histogram {
        /// Classic upper bounds, without `+Inf`; empty for a native-only
        /// histogram.
        bounds: &'a [f64],
        /// Cumulative counts, one per bound and a last one for `+Inf`,
        /// which is also the count. With native buckets the count is
        /// their total (zero bucket included), exactly, in every
        /// snapshot; the classic counts never exceed it.
        cumulative: &'a [u64],
        /// The sum of observations: every observation the count includes
        /// is in it (one the count does not include yet may be too).
        sum: f64,
        /// The native buckets, for a family that has them.
        native: Option<NativeBuckets<'a>>,
    },
    /// A summary.
    Summary {
        /// Observations, since the series was created.
        count: u64,
        /// Their sum: every observation `count` includes is in it (one it
        /// does not include yet may be too).
        sum: f64,
        /// The configured quantiles over the family's sliding window, in
        /// increasing order of `quantile`; empty when the family has none.
        /// A value is NaN when the window holds no observation.
        quantiles: &'a [Quantile],
    },
}

/// An OpenMetrics exemplar: the latest sampled observation of a counter
/// series or of a histogram bucket, over all processes.
#[derive(Clone, Copy, Debug)]
pub struct Exemplar<'a> {
    snap: &'a Snapshot,
    e: &'a ExemplarEntry,
}

impl<'a> Exemplar<'a> {
    /// The exemplar's labels (a trace id, say), in the order they were
    /// recorded.
    pub fn labels(&self) -> impl ExactSizeIterator<Item = (&'a str, &'a str)> + 'a {
        let snap = self.snap;
        let r = self.e.labels.start as usize..self.e.labels.end as usize;
        let s = |sp: Span| &snap.exemplar_strings[sp.off as usize..(sp.off + sp.len) as usize];
        snap.exemplar_labels[r]
            .iter()
            .map(move |(n, v)| (s(*n), s(*v)))
    }

    /// The value observed (a histogram's observation, or a counter's
    /// increment).
    pub fn value(&self) -> f64 {
        self.e.value
    }

    /// When it was recorded, in nanoseconds since the Unix epoch.
    pub fn timestamp_unix_ns(&self) -> u64 {
        self.e.ts
    }
}

impl PartialEq for Exemplar<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.value().to_bits() == other.value().to_bits()
            && self.timestamp_unix_ns() == other.timestamp_unix_ns()
            && self.labels().eq(other.labels())
    }
}

/// One quantile of a summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantile {
    /// The quantile, in `[0, 1]`.
    pub quantile: f64,
    /// Its estimate (NaN when the window is empty).
    pub value: f64,
}

/// A histogram's native (exponential) buckets, as Prometheus defines
/// them: bucket `i` of the positive side holds the values in
/// `(base^(i-1), base^i]`, with `base = 2^(2^-schema)`; the negative side
/// mirrors it; magnitudes up to `zero_threshold` count in the zero bucket.
///
/// From the store, `schema` is the family's, or lower when the snapshot
/// reduced the resolution to the family's bucket limit; `zero_threshold`
/// is the effective one (at least 2^-64); each run goes from the first to
/// the last non-empty bucket of its side. See [`crate::NativeOpts`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeBuckets<'a> {
    /// The resolution, from -4 to 8.
    pub schema: i32,
    /// The width of the zero bucket: `[-zero_threshold, zero_threshold]`.
    pub zero_threshold: f64,
    /// Observations in the zero bucket.
    pub zero_count: u64,
    /// Positive buckets.
    pub positive: BucketRun<'a>,
    /// Negative buckets (by magnitude).
    pub negative: BucketRun<'a>,
}

/// Consecutive native buckets: `counts[k]` is the (non-cumulative) count
/// of bucket index `offset + k`. Zero counts may occur inside a run.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BucketRun<'a> {
    /// The bucket index of `counts[0]`.
    pub offset: i32,
    /// Counts of consecutive buckets.
    pub counts: &'a [u64],
}

impl Snapshot {
    fn str(&self, s: Span) -> &str {
        &self.cache.strings[s.off as usize..(s.off + s.len) as usize]
    }

    fn label_names<'a>(&'a self, f: &FamilyEntry) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let r = f.label_names.start as usize..f.label_names.end as usize;
        self.cache.spans[r].iter().map(move |s| self.str(*s))
    }

    fn buckets(&self, f: &FamilyEntry) -> &[f64] {
        &self.cache.bounds[f.bounds.start as usize..f.bounds.end as usize]
    }

    /// Families in registration order.
    pub fn families(&self) -> impl ExactSizeIterator<Item = FamilyView<'_>> + '_ {
        // `members` has an entry per family (`Snapshot::reset_cache`,
        // `Store::decode_new_families`).
        self.families
            .iter()
            .zip(&self.cache.members)
            .map(move |(f, members)| FamilyView {
                snap: self,
                f,
                members,
            })
    }

    /// The family of this name, if any.
    pub fn family(&self, name: &str) -> Option<FamilyView<'_>> {
        self.families().find(|f| f.name() == name)
    }

    /// The bytes the snapshot's buffers hold (their capacity; allocator
    /// overhead aside): what a long-lived reader keeps between refreshes.
    pub fn heap_bytes(&self) -> usize {
        fn vec<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let c = &self.cache;
        let members: usize = c.members.iter().map(vec).sum();
        let rare = self.families.iter().filter(|f| f.rare.is_some());
        vec(&self.families)
            + rare.count() * std::mem::size_of::<super::Rare>()
            + vec(&self.series)
            + vec(&self.numbers)
            + vec(&self.counts)
            + vec(&self.quantiles)
            + vec(&self.natives)
            + vec(&self.native_counts)
            + vec(&self.exemplars)
            + vec(&self.exemplar_labels)
            + self.exemplar_strings.capacity()
            + self.pids.capacity()
            + vec(&self.pid_spans)
            + c.strings.capacity()
            + vec(&c.spans)
            + c.values.capacity()
            + vec(&c.ends)
            + vec(&c.bounds)
            + vec(&c.quantiles)
            + vec(&c.sketch_acc)
            + vec(&c.sketch_tmp)
            + vec(&c.estimates)
            + vec(&c.native_acc)
            + vec(&c.family_out)
            + vec(&c.members)
            + members
            + vec(&c.life)
            + vec(&c.sketch_offs)
    }

    /// Store telemetry at the time of the snapshot.
    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }

    /// Series in all families.
    pub fn series_count(&self) -> usize {
        self.series.len()
    }
}

impl<'a> FamilyView<'a> {
    /// The name, without suffixes (a counter's `_total` is not part of it).
    pub fn name(&self) -> &'a str {
        self.snap.str(self.f.name)
    }

    /// Whether a counter's Prometheus text and protobuf name is
    /// [`FamilyView::name`] alone, without `_total` (see
    /// [`crate::FamilyDesc::name_as_given`]).
    pub fn name_as_given(&self) -> bool {
        self.f.hints & crate::family::hint_bits::NAME_AS_GIVEN != 0
    }

    /// The family's exposition hints (see [`crate::Hints`]), as its first
    /// registration recorded them.
    pub fn hints(&self) -> crate::Hints {
        crate::Hints::from_bits(self.f.hints)
    }

    /// The help text, unescaped.
    pub fn help(&self) -> &'a str {
        self.snap.str(self.f.help)
    }

    /// The unit, empty if none.
    pub fn unit(&self) -> &'a str {
        self.snap.str(self.f.unit)
    }

    /// The metric type.
    pub fn kind(&self) -> Kind {
        self.f.kind
    }

    /// The gauge mode.
    pub fn gauge_mode(&self) -> GaugeMode {
        self.f.mode
    }

    /// The label names declared for the family.
    pub fn label_names(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        self.snap.label_names(self.f)
    }

    /// Histogram bucket bounds, without `+Inf`.
    pub fn buckets(&self) -> &'a [f64] {
        self.snap.buckets(self.f)
    }

    /// Series in creation order.
    pub fn series(&self) -> impl ExactSizeIterator<Item = SeriesView<'a>> + 'a {
        let (snap, f, members) = (self.snap, self.f, self.members);
        snap.series[f.series.start as usize..f.series.end as usize]
            .iter()
            .enumerate()
            .map(move |(rank, s)| SeriesView {
                snap,
                f,
                s,
                // Entries are made from their family's members
                // (`Store::emit_member`).
                m: &members[s.member as usize],
                rank: rank as u32,
            })
    }

    /// New label sets that went to the overflow series.
    pub fn overflows(&self) -> u64 {
        self.f.overflows
    }
}

impl<'a> SeriesView<'a> {
    /// The label values, in the order of the family's label names.
    pub fn label_values(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let c = &self.snap.cache;
        let first = self.m.values as usize;
        // Decoded whole (`Store::decode_values`), so within `ends`.
        let ends = &c.ends[first..first + self.f.n_labels() as usize];
        let mut start = first.checked_sub(1).map_or(0, |i| c.ends[i]);
        ends.iter().map(move |&end| {
            let v = c.values.get(start as usize..end as usize).unwrap_or("");
            start = end;
            v
        })
    }

    /// All labels as (name, value) pairs: the family's, then `pid` (gauge
    /// modes `all`/`liveall`) or `shmetrics_overflow` (overflow series).
    pub fn labels(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let snap = self.snap;
        let names = snap.label_names(self.f);
        let extra = match self.s.extra {
            EXTRA_NONE => None,
            EXTRA_OVERFLOW => Some((OVERFLOW_LABEL, "true")),
            pid => snap.pid_spans.get((pid - EXTRA_PID) as usize).map(|s| {
                (
                    PID_LABEL,
                    &snap.pids[s.off as usize..(s.off + s.len) as usize],
                )
            }),
        };
        names.zip(self.label_values()).chain(extra)
    }

    /// Where this series' parts begin in a table of its family's parts,
    /// each series having `per` of them from `base`.
    fn part(&self, base: u32, per: usize) -> usize {
        base as usize + self.rank as usize * per
    }

    /// The value.
    pub fn value(&self) -> Value<'a> {
        let n = self.snap.numbers[(self.f.series.start + self.rank) as usize];
        match self.f.kind {
            Kind::Counter => Value::Counter(n),
            Kind::Gauge => Value::Gauge(n),
            Kind::Histogram => {
                let bounds = self.snap.buckets(self.f);
                let c = self.part(self.f.bases().counts, bounds.len() + 1);
                let native = self.f.native().and_then(|_| {
                    let k = self.f.bases().natives + self.s.member;
                    let e = self.snap.natives.get(k as usize)?;
                    let run = |(offset, r): &(i32, Range<u32>)| BucketRun {
                        offset: *offset,
                        counts: &self.snap.native_counts[r.start as usize..r.end as usize],
                    };
                    Some(NativeBuckets {
                        schema: e.schema,
                        zero_threshold: e.zero_threshold,
                        zero_count: e.zero_count,
                        negative: run(&e.runs[0]),
                        positive: run(&e.runs[1]),
                    })
                });
                Value::Histogram {
                    bounds,
                    cumulative: &self.snap.counts[c..c + bounds.len() + 1],
                    sum: n,
                    native,
                }
            }
            Kind::Summary => {
                let nq = self.f.quantiles().len();
                let q = self.part(self.f.bases().quantiles, nq);
                Value::Summary {
                    count: self.snap.counts[self.part(self.f.bases().counts, 1)],
                    sum: n,
                    quantiles: &self.snap.quantiles[q..q + nq],
                }
            }
        }
    }

    /// The series' exemplars, one entry per place, each the latest over
    /// all processes if any was recorded: for a counter one place; for a
    /// histogram one per classic bucket, in the order of
    /// [`Value::Histogram`]'s `cumulative` (`+Inf` last). Empty if the
    /// family keeps no exemplars (see [`crate::FamilyDesc::exemplars`]).
    pub fn exemplars(&self) -> impl ExactSizeIterator<Item = Option<Exemplar<'a>>> + 'a {
        let snap = self.snap;
        let places = self.f.exemplars() as usize;
        let start = self
            .part(self.f.bases().exemplars, places)
            .min(snap.exemplars.len());
        let end = start.saturating_add(places).min(snap.exemplars.len());
        snap.exemplars[start..end]
            .iter()
            .map(move |e| e.as_ref().map(|e| Exemplar { snap, e }))
    }

    /// The exemplar of one place (see [`SeriesView::exemplars`]), if any.
    pub fn exemplar(&self, place: usize) -> Option<Exemplar<'a>> {
        self.exemplars().nth(place).flatten()
    }

    /// When the series was created, in nanoseconds since the Unix epoch.
    pub fn created_unix_ns(&self) -> u64 {
        self.m.created_unix_ns
    }

    /// Whether this is the family's overflow series.
    pub fn is_overflow(&self) -> bool {
        self.s.extra == EXTRA_OVERFLOW
    }
}

//! Pages written byte for byte as prometheus_client (client_python) 0.26
//! writes them, for the Python binding's in-process exposition
//! (`generate_latest`, `make_wsgi_app` ...), so that users' tests that
//! compare whole pages keep passing after a migration.
//!
//! What differs from [`crate::encode`]:
//!
//! - Values are written as Python's `repr()` of the float (`1.0`, `0.005`,
//!   `1e-05`), from a million on with an exponent of at least two digits
//!   (`1e+06`, `1.7000000005e+09`): [`write_python_float`].
//! - Every family has a `# HELP` line, even with an empty help text.
//! - Counters, histograms and summaries have `_created` samples (the
//!   series' creation time in seconds, as a float); the text format puts
//!   them in a gauge family of their own after the family, as
//!   prometheus_client does.
//! - Histogram buckets and counts are floats (`3.0`); a histogram with a
//!   negative bucket bound has no `_sum` (unless
//!   [`StoreView::negative_bucket_sum`]).
//! - OpenMetrics writes `HELP`, `TYPE`, then `UNIT`; no exemplars for the
//!   store's series (prometheus_client's multiprocess mode keeps none).
//! - Names outside the classic character set are written as the page's
//!   [`Escaping`] says (Prometheus 3's escaping schemes); with
//!   [`Escaping::Dots`] every `_` of every name is doubled, as
//!   prometheus_client does.
//!
//! Two sources feed it: a store [`Snapshot`] ([`encode_snapshot`], the
//! fast path, allocating nothing per series) and families built elsewhere,
//! such as a Python custom collector's ([`encode_families`]).
//!
//! ```
//! use shmetrics_core::{FamilyDesc, Kind, Options, Store};
//! use shmetrics_expo::client_python::{encode_snapshot, Escaping, Page, StoreView};
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("store");
//! let store = Store::open(&path, &Options::default())?;
//! let family = store.register(&FamilyDesc::new("jobs", Kind::Counter).help("Jobs run."))?;
//! store.counter_add(store.series(&family, &[])?, 3.0)?;
//!
//! let page = Page { openmetrics: false, escaping: Escaping::Underscores };
//! let view = StoreView { created: false, ..StoreView::default() };
//! let mut body = Vec::new();
//! encode_snapshot(&store.snapshot()?, page, &view, &mut body);
//! assert_eq!(
//!     String::from_utf8(body).unwrap(),
//!     "# HELP jobs_total Jobs run.\n# TYPE jobs_total counter\njobs_total 3.0\n"
//! );
//! # Ok::<(), shmetrics_core::Error>(())
//! ```

pub use shmetrics_core::Escaping;
use shmetrics_core::{
    escape_name_into, is_legacy_label_name, is_legacy_metric_name, rewrite_name_into, FamilyView,
    Kind, SeriesView, Snapshot, Value,
};

use crate::escape::escape;
use crate::num::{non_finite, write_shortest};

/// The page being written: its format and escaping scheme.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// OpenMetrics text; else the Prometheus text format.
    pub openmetrics: bool,
    /// How names outside the classic character set are written.
    pub escaping: Escaping,
}

/// What a store family is shown as besides its kind: the gauge that holds
/// a Python `Info` or `Enum`, which OpenMetrics types `info` and
/// `stateset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retype {
    /// An `Info`: OpenMetrics names the family without `_info`.
    Info,
    /// An `Enum`.
    StateSet,
}

/// How [`encode_snapshot`] shows a store.
pub struct StoreView<'a> {
    /// Whether counters, histograms and summaries get `_created` samples.
    pub created: bool,
    /// Whether a histogram with a negative bucket bound keeps its `_sum`,
    /// as prometheus_client's `MultiProcessCollector` reads it (its
    /// registries leave it out, as OpenMetrics asks).
    pub negative_bucket_sum: bool,
    /// The families shown as another type, by family name.
    pub retype: &'a (dyn Fn(&str) -> Option<Retype> + Sync),
    /// The families left out, by family name (a registry's unregistered
    /// metrics, and names its in-process collectors give).
    pub skip: &'a (dyn Fn(&str) -> bool + Sync),
}

impl Default for StoreView<'_> {
    fn default() -> Self {
        StoreView {
            created: true,
            negative_bucket_sum: false,
            retype: &|_| None,
            skip: &|_| false,
        }
    }
}

impl std::fmt::Debug for StoreView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreView")
            .field("created", &self.created)
            .field("negative_bucket_sum", &self.negative_bucket_sum)
            .finish_non_exhaustive()
    }
}

/// A family built outside a store: prometheus_client's `Metric`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Family {
    /// The family's name (a counter's without `_total`, an info's without
    /// `_info`).
    pub name: String,
    /// The help text.
    pub help: String,
    /// The unit, or empty.
    pub unit: String,
    /// prometheus_client's type name: `counter`, `gauge`, `histogram`,
    /// `gaugehistogram`, `summary`, `info`, `stateset` or `unknown`.
    pub kind: String,
    /// The samples, in order.
    pub samples: Vec<Sample>,
}

/// One sample of a [`Family`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// The full name (`requests_total`, `latency_bucket`).
    pub name: String,
    /// Label names and values, in order.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
    /// The sample's time, if it has one.
    pub timestamp: Option<SampleTime>,
    /// The exemplar (OpenMetrics only).
    pub exemplar: Option<Exemplar>,
}

/// A sample's time as each format writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleTime {
    /// Milliseconds since the epoch (the Prometheus text format).
    pub millis: i64,
    /// As OpenMetrics writes it (prometheus_client writes `str()` of the
    /// timestamp given).
    pub openmetrics: String,
}

/// An exemplar of a [`Sample`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exemplar {
    /// Label names and values.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
    /// Unix seconds, if known.
    pub timestamp: Option<f64>,
}

/// Appends `v` as prometheus_client writes sample values and `le` and
/// `quantile` labels: Python's `repr()` of the float (shortest digits,
/// `.0` on integral values, an exponent below 1e-4 and from 1e16 on), but
/// positive values from a million on always with an exponent of at least
/// two digits; `+Inf`, `-Inf`, `NaN`.
///
/// ```
/// let mut out = Vec::new();
/// for v in [1.0, 0.005, 1e-5, 123.456, 1e6, 1.7000000005e9, -2e6, 1e16, -0.0, f64::INFINITY] {
///     shmetrics_expo::client_python::write_python_float(&mut out, v);
///     out.push(b' ');
/// }
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "1.0 0.005 1e-05 123.456 1e+06 1.7000000005e+09 -2000000.0 1e+16 -0.0 +Inf "
/// );
/// ```
#[inline]
pub fn write_python_float(out: &mut Vec<u8>, v: f64) {
    if v.fract() == 0.0 && v < 1e6 && v > -1e16 && !(v == 0.0 && v.is_sign_negative()) {
        // Integral and positional: the integer, then `.0`.
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
        out.extend_from_slice(b".0");
    } else if v.is_finite() {
        write_shortest(out, v, |exp| {
            !(-4..16).contains(&exp) || (v > 0.0 && exp >= 6)
        });
    } else {
        out.extend_from_slice(non_finite(v));
    }
}

/// Appends Python's `repr()` of a float: [`write_python_float`] without
/// the exponent from a million on, and `inf`, `-inf`, `nan`.
pub fn write_python_repr(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"nan");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
    } else {
        write_shortest(out, v, |exp| !(-4..16).contains(&exp));
    }
}

/// Whether `name` is a classic metric name (`metric`) or label name.
fn is_classic(name: &str, metric: bool) -> bool {
    if metric {
        is_legacy_metric_name(name)
    } else {
        is_legacy_label_name(name)
    }
}

/// Appends `name` as `escaping` writes a metric name (`metric`) or a label
/// name outside a UTF-8 quoted position (prometheus_client's
/// `escape_metric_name` and `escape_label_name`).
///
/// ```
/// use shmetrics_expo::client_python::{write_escaped_name, Escaping};
/// let esc = |name: &str, e| {
///     let mut out = Vec::new();
///     write_escaped_name(&mut out, name, e, true);
///     String::from_utf8(out).unwrap()
/// };
/// assert_eq!(esc("my.metric", Escaping::Underscores), "my_metric");
/// assert_eq!(esc("my.metric_x", Escaping::Dots), "my_dot_metric__x");
/// assert_eq!(esc("my.metric", Escaping::Values), "U__my_2e_metric");
/// assert_eq!(esc("classic_name", Escaping::Values), "classic_name");
/// ```
pub fn write_escaped_name(out: &mut Vec<u8>, name: &str, escaping: Escaping, metric: bool) {
    if escaping != Escaping::Dots && (escaping == Escaping::AllowUtf8 || is_classic(name, metric)) {
        out.extend_from_slice(name.as_bytes());
    } else {
        let mut s = String::with_capacity(name.len() + 8);
        escape_name_into(&mut s, name, escaping, metric);
        out.extend_from_slice(s.as_bytes());
    }
}

/// A name as written in a metadata line, or as a label name: quoted when
/// it is not classic and the page takes UTF-8, else escaped. Returns
/// whether it was quoted.
fn write_name(out: &mut Vec<u8>, name: &str, escaping: Escaping, metric: bool) -> bool {
    if escaping == Escaping::AllowUtf8 && !is_classic(name, metric) {
        out.push(b'"');
        escape(out, name.as_bytes(), true);
        out.push(b'"');
        true
    } else {
        write_escaped_name(out, name, escaping, metric);
        false
    }
}

/// A sample name rendered once: its bytes, and whether it is quoted (and
/// so goes inside the braces).
struct Name {
    bytes: Vec<u8>,
    quoted: bool,
}

impl Page {
    /// A sample's name. The text format writes it as metadata lines do;
    /// OpenMetrics, as prometheus_client 0.26 does, quotes it under
    /// `allow-utf-8` when it is not classic and otherwise always applies
    /// the scheme's rewriting with the label names' character set
    /// (`values` writes `U__jobs__total`, `underscores` turns `:` into
    /// `_`), unlike its metadata lines.
    fn name(self, name: &str) -> Name {
        let mut bytes = Vec::with_capacity(name.len() + 2);
        if !self.openmetrics || (self.escaping == Escaping::AllowUtf8 && !is_classic(name, true)) {
            let quoted = write_name(&mut bytes, name, self.escaping, true);
            return Name { bytes, quoted };
        }
        let mut s = String::with_capacity(name.len() + 8);
        rewrite_name_into(&mut s, name, self.escaping, false);
        bytes.extend_from_slice(s.as_bytes());
        Name {
            bytes,
            quoted: false,
        }
    }

    /// `# HELP`, `# TYPE` and, in OpenMetrics, `# UNIT` lines.
    fn metadata(self, out: &mut Vec<u8>, name: &str, kind: &str, help: &str, unit: &str) {
        let mut shown = Vec::with_capacity(name.len() + 2);
        write_name(&mut shown, name, self.escaping, true);
        out.extend_from_slice(b"# HELP ");
        out.extend_from_slice(&shown);
        out.push(b' ');
        escape(out, help.as_bytes(), self.openmetrics);
        out.extend_from_slice(b"\n# TYPE ");
        out.extend_from_slice(&shown);
        out.push(b' ');
        out.extend_from_slice(kind.as_bytes());
        out.push(b'\n');
        if self.openmetrics && !unit.is_empty() {
            out.extend_from_slice(b"# UNIT ");
            out.extend_from_slice(&shown);
            out.push(b' ');
            out.extend_from_slice(unit.as_bytes());
            out.push(b'\n');
        }
    }

    /// Appends `k="v",...` (no braces) to `buf`, sorted by name as
    /// prometheus_client writes them (`pairs` is sorted in place). Returns
    /// where in `buf` a label named `cut` would go (`le`, `quantile`):
    /// `buf[..mid]` sorts before it and `buf[mid..]` after, with no comma
    /// at the cut.
    fn labels(self, buf: &mut Vec<u8>, pairs: &mut [(&str, &str)], cut: &str) -> usize {
        pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let split = pairs.partition_point(|(name, _)| *name < cut);
        let mut mid = buf.len();
        for (i, (name, value)) in pairs.iter().enumerate() {
            if i == split {
                mid = buf.len();
            } else if i > 0 {
                buf.push(b',');
            }
            write_name(buf, name, self.escaping, false);
            buf.extend_from_slice(b"=\"");
            escape(buf, value.as_bytes(), true);
            buf.push(b'"');
        }
        if split == pairs.len() {
            mid = buf.len();
        }
        mid
    }

    /// `name{parts} ` (or `{"name",parts} ` for a quoted name; no braces
    /// when there is nothing inside): the non-empty parts joined by commas.
    #[inline]
    fn head(out: &mut Vec<u8>, name: &Name, parts: [&[u8]; 3]) {
        let inside = parts.iter().any(|p| !p.is_empty());
        if name.quoted {
            out.push(b'{');
            out.extend_from_slice(&name.bytes);
        } else {
            out.extend_from_slice(&name.bytes);
            if inside {
                out.push(b'{');
            }
        }
        let mut sep = name.quoted;
        for p in parts.iter().filter(|p| !p.is_empty()) {
            if sep {
                out.push(b',');
            }
            out.extend_from_slice(p);
            sep = true;
        }
        if name.quoted || inside {
            out.push(b'}');
        }
        out.push(b' ');
    }

    /// A whole line with a float value.
    #[inline]
    fn line(out: &mut Vec<u8>, name: &Name, parts: [&[u8]; 3], value: f64) {
        Self::head(out, name, parts);
        write_python_float(out, value);
        out.push(b'\n');
    }

    /// `key="v"` fragments, one per value, as `le` and `quantile` labels.
    fn fragments(self, key: &str, values: impl Iterator<Item = f64>) -> Vec<Vec<u8>> {
        values
            .map(|v| {
                let mut f = Vec::with_capacity(16);
                write_name(&mut f, key, self.escaping, false);
                f.extend_from_slice(b"=\"");
                write_python_float(&mut f, v);
                f.push(b'"');
                f
            })
            .collect()
    }
}

/// The text format's type for prometheus_client's type name.
fn text_type(kind: &str) -> &str {
    match kind {
        "info" | "stateset" => "gauge",
        "gaugehistogram" => "histogram",
        "unknown" => "untyped",
        other => other,
    }
}

/// Appends every family of `snapshot` as prometheus_client writes a
/// registry that shows the store (without OpenMetrics' `# EOF`, which
/// goes at the end of the whole page).
pub fn encode_snapshot(snapshot: &Snapshot, page: Page, view: &StoreView<'_>, out: &mut Vec<u8>) {
    let mut enc = StoreEncoder {
        page,
        labels: Vec::with_capacity(256),
        mid: 0,
        pairs: Vec::with_capacity(8),
    };
    for f in snapshot.families() {
        if !(view.skip)(f.name()) {
            enc.family(&f, view, out);
        }
    }
}

struct StoreEncoder<'s> {
    page: Page,
    /// The current series' labels, rendered and sorted.
    labels: Vec<u8>,
    /// Where in `labels` the `le` or `quantile` label goes.
    mid: usize,
    /// The current series' labels, to sort (kept for its allocation).
    pairs: Vec<(&'s str, &'s str)>,
}

impl<'s> StoreEncoder<'s> {
    fn render_labels(&mut self, labels: impl Iterator<Item = (&'s str, &'s str)>, cut: &str) {
        self.labels.clear();
        self.pairs.clear();
        self.pairs.extend(labels);
        self.mid = self.page.labels(&mut self.labels, &mut self.pairs, cut);
    }

    /// The current series' `_created` sample: its creation time in
    /// seconds.
    fn created(&self, out: &mut Vec<u8>, name: &Name, s: &SeriesView<'_>) {
        Page::line(out, name, self.plain(), seconds(s.created_unix_ns()));
    }

    /// The current series' labels with no label added (the two sides of
    /// the cut, which `head` joins with a comma).
    fn plain(&self) -> [&[u8]; 3] {
        [&self.labels[..self.mid], &self.labels[self.mid..], b""]
    }

    /// The current series' labels with `extra` (`le="…"`) where it sorts.
    fn with<'b>(&'b self, extra: &'b [u8]) -> [&'b [u8]; 3] {
        [&self.labels[..self.mid], extra, &self.labels[self.mid..]]
    }

    fn family(&mut self, f: &FamilyView<'s>, view: &StoreView<'_>, out: &mut Vec<u8>) {
        let name = f.name();
        let kind = f.kind();
        let om = self.page.openmetrics;
        let created =
            view.created && matches!(kind, Kind::Counter | Kind::Histogram | Kind::Summary);
        let total = format!("{name}_total");
        self.metadata(f, view, &total, out);
        let created_name = self.page.name(&format!("{name}_created"));
        // OpenMetrics: `_created` after each series' samples; text: in a
        // gauge family of its own, after the family.
        let inline = (created && om).then_some(&created_name);
        match kind {
            Kind::Counter | Kind::Gauge => self.scalars(f, &total, inline, out),
            Kind::Histogram => self.histograms(f, view, inline, out),
            Kind::Summary => self.summaries(f, inline, out),
        }
        if created && !om && f.series().len() > 0 {
            self.page
                .metadata(out, &format!("{name}_created"), "gauge", f.help(), "");
            for s in f.series() {
                self.render_labels(s.labels(), "");
                self.created(out, &created_name, &s);
            }
        }
    }

    /// The family's `# HELP` and `# TYPE` (and `# UNIT`) lines, under the
    /// name and type prometheus_client gives it; `total` is the name with
    /// `_total`, a counter's in text.
    fn metadata(&self, f: &FamilyView<'s>, view: &StoreView<'_>, total: &str, out: &mut Vec<u8>) {
        let name = f.name();
        let kind = f.kind();
        let retype = if kind == Kind::Gauge {
            (view.retype)(name)
        } else {
            None
        };
        match (self.page.openmetrics, kind, retype) {
            (false, Kind::Counter, _) => self.page.metadata(out, total, "counter", f.help(), ""),
            (false, _, _) => self.page.metadata(out, name, kind.as_str(), f.help(), ""),
            (true, _, Some(Retype::Info)) => {
                let short = name.strip_suffix("_info").unwrap_or(name);
                self.page.metadata(out, short, "info", f.help(), f.unit());
            }
            (true, _, Some(Retype::StateSet)) => {
                self.page
                    .metadata(out, name, "stateset", f.help(), f.unit())
            }
            (true, _, None) => self
                .page
                .metadata(out, name, kind.as_str(), f.help(), f.unit()),
        }
    }

    /// A counter's or gauge's series: one sample each, then `_created`
    /// when `inline` names it. `total`: the name with `_total`, a
    /// counter's sample name.
    fn scalars(
        &mut self,
        f: &FamilyView<'s>,
        total: &str,
        inline: Option<&Name>,
        out: &mut Vec<u8>,
    ) {
        let sample = self.page.name(if f.kind() == Kind::Counter {
            total
        } else {
            f.name()
        });
        for s in f.series() {
            self.render_labels(s.labels(), "");
            if let Value::Counter(v) | Value::Gauge(v) = s.value() {
                Page::line(out, &sample, self.plain(), v);
            }
            if let Some(created) = inline {
                self.created(out, created, &s);
            }
        }
    }

    /// A histogram's series: cumulative buckets, `_count`, and `_sum`
    /// unless a negative bound hides it.
    fn histograms(
        &mut self,
        f: &FamilyView<'s>,
        view: &StoreView<'_>,
        inline: Option<&Name>,
        out: &mut Vec<u8>,
    ) {
        let name = f.name();
        let bounds = f.buckets();
        let le = self
            .page
            .fragments("le", bounds.iter().copied().chain([f64::INFINITY]));
        let with_sum = view.negative_bucket_sum || bounds.first().is_none_or(|b| *b >= 0.0);
        let bucket = self.page.name(&format!("{name}_bucket"));
        let count = self.page.name(&format!("{name}_count"));
        let sum = self.page.name(&format!("{name}_sum"));
        for s in f.series() {
            self.render_labels(s.labels(), "le");
            if let Value::Histogram {
                cumulative,
                sum: total,
                ..
            } = s.value()
            {
                for (frag, &c) in le.iter().zip(cumulative) {
                    Page::line(out, &bucket, self.with(frag), c as f64);
                }
                let n = cumulative.last().copied().unwrap_or(0);
                Page::line(out, &count, self.plain(), n as f64);
                if with_sum {
                    Page::line(out, &sum, self.plain(), total);
                }
            }
            if let Some(created) = inline {
                self.created(out, created, &s);
            }
        }
    }

    /// A summary's series: its quantiles, `_count` and `_sum`.
    fn summaries(&mut self, f: &FamilyView<'s>, inline: Option<&Name>, out: &mut Vec<u8>) {
        let name = f.name();
        let quantile = self.page.name(name);
        let count = self.page.name(&format!("{name}_count"));
        let sum = self.page.name(&format!("{name}_sum"));
        let mut frags: Vec<Vec<u8>> = Vec::new();
        for s in f.series() {
            self.render_labels(s.labels(), "quantile");
            if let Value::Summary {
                count: n,
                sum: total,
                quantiles,
            } = s.value()
            {
                if frags.len() != quantiles.len() {
                    frags = self
                        .page
                        .fragments("quantile", quantiles.iter().map(|q| q.quantile));
                }
                for (frag, q) in frags.iter().zip(quantiles) {
                    Page::line(out, &quantile, self.with(frag), q.value);
                }
                Page::line(out, &count, self.plain(), n as f64);
                Page::line(out, &sum, self.plain(), total);
            }
            if let Some(created) = inline {
                self.created(out, created, &s);
            }
        }
    }
}

/// Nanoseconds since the epoch as float seconds, as Python's
/// `created_ns / 1e9`.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Appends `families` as prometheus_client writes custom collectors'
/// metrics (without OpenMetrics' `# EOF`).
pub fn encode_families(families: &[Family], page: Page, out: &mut Vec<u8>) {
    for f in families {
        encode_family(f, page, out);
    }
}

/// Appends one [`Family`].
pub fn encode_family(f: &Family, page: Page, out: &mut Vec<u8>) {
    let mut labels = Vec::with_capacity(128);
    let mut line = |out: &mut Vec<u8>, s: &Sample| {
        labels.clear();
        let mut pairs: Vec<(&str, &str)> = s
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        page.labels(&mut labels, &mut pairs, "");
        Page::line_full(out, page, &page.name(&s.name), &labels, s);
    };
    if page.openmetrics {
        page.metadata(out, &f.name, &f.kind, &f.help, &f.unit);
        for s in &f.samples {
            line(out, s);
        }
        return;
    }
    let suffix = match f.kind.as_str() {
        "counter" => "_total",
        "info" => "_info",
        _ => "",
    };
    page.metadata(
        out,
        &format!("{}{suffix}", f.name),
        text_type(&f.kind),
        &f.help,
        "",
    );
    // OpenMetrics-only samples of any family go to gauges of their own
    // after it, one per suffix in the suffixes' order, as
    // prometheus_client does.
    const SIDE: [&str; 3] = ["_created", "_gcount", "_gsum"];
    let side_of = |n: &str| {
        n.strip_prefix(f.name.as_str())
            .and_then(|rest| SIDE.iter().position(|s| *s == rest))
    };
    let mut seen = [false; 3];
    for s in &f.samples {
        match side_of(&s.name) {
            Some(i) => seen[i] = true,
            None => line(out, s),
        }
    }
    for (i, suffix) in SIDE.iter().enumerate().filter(|(i, _)| seen[*i]) {
        let extra = format!("{}{suffix}", f.name);
        page.metadata(out, &extra, "gauge", &f.help, "");
        for s in f.samples.iter().filter(|s| side_of(&s.name) == Some(i)) {
            line(out, s);
        }
    }
}

impl Page {
    /// A custom collector's sample: value, timestamp and (OpenMetrics)
    /// exemplar.
    fn line_full(out: &mut Vec<u8>, page: Page, name: &Name, labels: &[u8], s: &Sample) {
        Self::head(out, name, [labels, b"", b""]);
        write_python_float(out, s.value);
        if let Some(ts) = &s.timestamp {
            out.push(b' ');
            if page.openmetrics {
                out.extend_from_slice(ts.openmetrics.as_bytes());
            } else {
                out.extend_from_slice(itoa::Buffer::new().format(ts.millis).as_bytes());
            }
        }
        if let Some(e) = s.exemplar.as_ref().filter(|_| page.openmetrics) {
            // prometheus_client writes exemplar labels with the default
            // escaping, whatever the page's.
            let mut l = Vec::new();
            let mut pairs: Vec<(&str, &str)> = e
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            Page::default().labels(&mut l, &mut pairs, "");
            out.extend_from_slice(b" # {");
            out.extend_from_slice(&l);
            out.extend_from_slice(b"} ");
            write_python_float(out, e.value);
            if let Some(t) = e.timestamp {
                out.push(b' ');
                write_python_repr(out, t);
            }
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(v: f64) -> String {
        let mut out = Vec::new();
        write_python_float(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn repr(v: f64) -> String {
        let mut out = Vec::new();
        write_python_repr(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_as_python_writes_them() {
        // Each pair checked against CPython's repr() and prometheus_client
        // 0.26's floatToGoString.
        for (v, s) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (-7.0, "-7.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (999_999.0, "999999.0"),
            (999_999.5, "999999.5"),
            (1e6, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (1_700_000_000.5, "1.7000000005e+09"),
            (1e16, "1e+16"),
            (1e300, "1e+300"),
            (-1e6, "-1000000.0"),
            (-1_234_567.5, "-1234567.5"),
            (-1e16, "-1e+16"),
            (-1e-5, "-1e-05"),
            // An exact tie between two 17-digit strings: to even, as
            // Python's repr() does.
            (1_345_740_272_956_748.0 + 0.25, "1.3457402729567482e+15"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Inf"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(py(v), s, "{v:e}");
        }
        for (v, s) in [
            (1e6, "1000000.0"),
            (1_700_000_000.123, "1700000000.123"),
            (1e16, "1e+16"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(repr(v), s, "{v:e}");
        }
    }

    #[test]
    fn names_escaped_per_scheme() {
        let esc = |n: &str, e, metric| {
            let mut out = Vec::new();
            write_escaped_name(&mut out, n, e, metric);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(esc("a:b", Escaping::Underscores, true), "a:b");
        assert_eq!(esc("a:b", Escaping::Underscores, false), "a_b");
        assert_eq!(esc("1x", Escaping::Underscores, true), "_x");
        assert_eq!(esc("ü.x", Escaping::Values, true), "U___fc__2e_x");
        assert_eq!(esc("ü.x", Escaping::AllowUtf8, true), "ü.x");
        assert_eq!(esc("le", Escaping::Dots, false), "le");
        assert_eq!(esc("", Escaping::Dots, false), "");
    }

    #[test]
    fn custom_families() {
        let f = Family {
            name: "utf8.cc".into(),
            help: "A \"help\"\n".into(),
            unit: String::new(),
            kind: "counter".into(),
            samples: vec![
                Sample {
                    name: "utf8.cc_total".into(),
                    labels: vec![("a.b".into(), "x\"y".into())],
                    value: 1.0,
                    timestamp: Some(SampleTime {
                        millis: 1500,
                        openmetrics: "1.5".into(),
                    }),
                    exemplar: None,
                },
                Sample {
                    name: "utf8.cc_created".into(),
                    value: 123.456,
                    ..Sample::default()
                },
            ],
        };
        let page = |openmetrics, escaping| {
            let mut out = Vec::new();
            encode_family(
                &f,
                Page {
                    openmetrics,
                    escaping,
                },
                &mut out,
            );
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            page(false, Escaping::AllowUtf8),
            concat!(
                "# HELP \"utf8.cc_total\" A \"help\"\\n\n",
                "# TYPE \"utf8.cc_total\" counter\n",
                "{\"utf8.cc_total\",\"a.b\"=\"x\\\"y\"} 1.0 1500\n",
                "# HELP \"utf8.cc_created\" A \"help\"\\n\n",
                "# TYPE \"utf8.cc_created\" gauge\n",
                "{\"utf8.cc_created\"} 123.456\n",
            )
        );
        assert_eq!(
            page(true, Escaping::Underscores),
            concat!(
                "# HELP utf8_cc A \\\"help\\\"\\n\n",
                "# TYPE utf8_cc counter\n",
                "utf8_cc_total{a_b=\"x\\\"y\"} 1.0 1.5\n",
                "utf8_cc_created 123.456\n",
            )
        );
    }

    #[test]
    fn labels_sorted_with_le_where_it_sorts() {
        let f = Family {
            name: "h".into(),
            kind: "histogram".into(),
            samples: vec![Sample {
                name: "h_bucket".into(),
                labels: vec![
                    ("z".into(), "1".into()),
                    ("le".into(), "0.5".into()),
                    ("a".into(), "2".into()),
                ],
                value: 3.0,
                ..Sample::default()
            }],
            ..Family::default()
        };
        let mut out = Vec::new();
        encode_family(&f, Page::default(), &mut out);
        let page = String::from_utf8(out).unwrap();
        assert!(
            page.ends_with("h_bucket{a=\"2\",le=\"0.5\",z=\"1\"} 3.0\n"),
            "{page}"
        );

        let mut buf = Vec::new();
        let mid = Page::default().labels(&mut buf, &mut [("m", "get"), ("a", "x")], "le");
        let mut plain = Vec::new();
        let name = Page::default().name("h_count");
        Page::line(&mut plain, &name, [&buf[..mid], &buf[mid..], b""], 1.0);
        assert_eq!(plain, b"h_count{a=\"x\",m=\"get\"} 1.0\n");
        assert_eq!(
            (&buf[..mid], &buf[mid..]),
            (&b"a=\"x\""[..], &b"m=\"get\""[..])
        );
        let mut parts = Vec::new();
        let name = Page::default().name("h_bucket");
        Page::line(
            &mut parts,
            &name,
            [&buf[..mid], b"le=\"1.0\"", &buf[mid..]],
            2.0,
        );
        assert_eq!(parts, b"h_bucket{a=\"x\",le=\"1.0\",m=\"get\"} 2.0\n");
    }

    #[test]
    fn openmetrics_sample_names_always_rewritten() {
        let om = |escaping| Page {
            openmetrics: true,
            escaping,
        };
        assert_eq!(
            om(Escaping::Values).name("jobs_total").bytes,
            b"U__jobs__total"
        );
        assert_eq!(om(Escaping::Underscores).name("a:b").bytes, b"a_b");
        assert_eq!(om(Escaping::Dots).name("a_b").bytes, b"a__b");
        assert_eq!(om(Escaping::AllowUtf8).name("a:b").bytes, b"a:b");
        assert!(om(Escaping::AllowUtf8).name("a.b").quoted);
        // The text format rewrites only names that are not classic.
        let text = Page {
            openmetrics: false,
            escaping: Escaping::Values,
        };
        assert_eq!(text.name("jobs_total").bytes, b"jobs_total");
    }

    #[test]
    fn skipped_families_left_out() {
        use shmetrics_core::{FamilyDesc, Options, Store};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
        for name in ["kept", "hidden"] {
            let f = store
                .register(&FamilyDesc::new(name, Kind::Gauge).help("h"))
                .unwrap();
            store
                .gauge_set(store.series(&f, &[]).unwrap(), 1.0)
                .unwrap();
        }
        let page = Page {
            openmetrics: false,
            escaping: Escaping::Underscores,
        };
        let view = StoreView {
            skip: &|name| name == "hidden",
            ..StoreView::default()
        };
        let mut body = Vec::new();
        encode_snapshot(&store.snapshot().unwrap(), page, &view, &mut body);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "# HELP kept h\n# TYPE kept gauge\nkept 1.0\n"
        );
    }
}

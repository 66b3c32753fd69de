//! Exposition formats for [`shmetrics_core::Snapshot`]: the Prometheus text
//! format 0.0.4, OpenMetrics 1.0 text, and the Prometheus protobuf format
//! (the one that carries native histograms; see [`protobuf`]).
//!
//! This crate does no I/O. [`encode`] appends a whole exposition to a
//! `Vec<u8>`, which the caller sends however it likes; [`negotiate`] picks
//! the format from the `Accept` header of a scrape.
//!
//! ```
//! use shmetrics_core::{FamilyDesc, Kind, Options, Store};
//! use shmetrics_expo::{encode, negotiate, Format};
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("store");
//! let store = Store::open(&path, &Options::default())?;
//! let family = store.register(&FamilyDesc::new("jobs", Kind::Counter).help("Jobs run."))?;
//! store.counter_add(store.series(&family, &[])?, 3.0)?;
//!
//! let format = negotiate(Some("text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
//! assert_eq!(format, Format::PrometheusText);
//! let mut body = Vec::new();
//! encode(&store.snapshot()?, format, &mut body);
//! assert_eq!(
//!     String::from_utf8(body).unwrap(),
//!     "# HELP jobs_total Jobs run.\n# TYPE jobs_total counter\njobs_total 3\n"
//! );
//! # Ok::<(), shmetrics_core::Error>(())
//! ```
//!
//! The output follows the client libraries where the specs leave room:
//!
//! - Families come in the snapshot's order (registration order) and series
//!   in creation order; nothing is sorted.
//! - A family with an empty help text gets no `HELP` line; a family with no
//!   series gets its metadata lines only.
//! - In the text format a counter's `HELP` and `TYPE` lines and its sample
//!   all use `name_total`, as client_python does; no `_created` series are
//!   written, but for families hinted `Created::EveryFormat` (as
//!   prometheus_client in one process writes them: a gauge family
//!   `name_created` after the family).
//! - In OpenMetrics, the counter's `TYPE` names the family without
//!   `_total`; counters, histograms and summaries get a `_created` sample
//!   with the series' creation time; `UNIT` is written when the family has
//!   a unit. A gauge hinted as an `info` or `stateset`
//!   (`Hints::openmetrics_type`, prometheus_client's `Info` and `Enum`)
//!   is typed so, an info's family named without `_info` (`# TYPE build
//!   info`, `build_info{version="1.2"} 1`); the text format writes it as
//!   the gauge it is.
//! - `le` label values use the canonical OpenMetrics rendering
//!   ([`write_canonical_float`]) in both formats: `le="0.005"`,
//!   `le="1.0"`, `le="+Inf"`.
//! - OpenMetrics forbids a negative or NaN `_sum`, and a `_sum` on a
//!   histogram with a negative bucket bound (and a histogram's `_count` goes
//!   together with its `_sum`). Where that would happen, the `_sum` (and
//!   for a histogram the `_count`, which always equals the `+Inf` bucket)
//!   is left out of that OpenMetrics sample set rather than making the
//!   whole exposition invalid. The text format writes them as they are.
//! - OpenMetrics writes a family's exemplars (see
//!   `FamilyDesc::exemplars`) after the counter's `_total` sample and
//!   after each `_bucket` sample that has one: `jobs_total 3 #
//!   {trace_id="abc"} 1.0 1700000000.123`, the timestamp in seconds. The
//!   text format 0.0.4 has no exemplars.
//!
//! The protobuf format's choices are listed in [`protobuf`]. Pages
//! written byte for byte as prometheus_client writes them (for the Python
//! binding's in-process exposition) are in [`client_python`], and as
//! prometheus-client (Ruby) writes them in [`client_ruby`]; a store's
//! series for PromPHP, serialized for PHP's `unserialize()` (the PHP
//! binding's adapter), in [`promphp`]. [`select`]
//! and [`encode_families`] write some families of a store only.

pub mod client_python;
pub mod client_ruby;
mod escape;
mod extra;
mod families;
mod num;
pub mod promphp;
pub mod protobuf;
mod spill;

pub use shmetrics_core::{escape_label_name, escape_metric_name, Escaping};
use shmetrics_core::{
    escape_name_into, is_legacy_label_name, is_legacy_metric_name, Created, Exemplar, FamilyView,
    Kind, OpenMetricsType, Quantile, SeriesView, Snapshot, Value,
};

use escape::escape;
pub use escape::write_escaped_label_value;
pub use extra::{ExtraFamily, ExtraSample};
pub use families::{Families, Family};
pub use num::{write_canonical_float, write_float, write_u64, write_unix_nanos_as_seconds};
use spill::Spill;

/// An exposition format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// The Prometheus text format, version 0.0.4.
    PrometheusText,
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
    /// The Prometheus protobuf format: varint-length-delimited
    /// `io.prometheus.client.MetricFamily` messages (binary; see
    /// [`protobuf`]).
    Protobuf,
}

impl Format {
    /// The `Content-Type` to send with an exposition in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::PrometheusText => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Protobuf => {
                "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
            }
        }
    }

    /// The format for a name given on a command line or in a config:
    /// `prometheus` or `text` for [`Format::PrometheusText`], `openmetrics`
    /// for [`Format::OpenMetrics`], `protobuf` for [`Format::Protobuf`]
    /// (ASCII case ignored).
    pub fn parse(name: &str) -> Option<Format> {
        let is = |s: &str| name.eq_ignore_ascii_case(s);
        if is("prometheus") || is("text") {
            Some(Format::PrometheusText)
        } else if is("openmetrics") {
            Some(Format::OpenMetrics)
        } else if is("protobuf") {
            Some(Format::Protobuf)
        } else {
            None
        }
    }

    /// Every format, in a fixed order.
    pub const ALL: [Format; 3] = [
        Format::PrometheusText,
        Format::OpenMetrics,
        Format::Protobuf,
    ];

    /// A short name that [`Format::parse`] takes back: `text`,
    /// `openmetrics` or `protobuf`.
    pub fn name(self) -> &'static str {
        match self {
            Format::PrometheusText => "text",
            Format::OpenMetrics => "openmetrics",
            Format::Protobuf => "protobuf",
        }
    }

    /// Whether the format is text (both text formats are UTF-8); the
    /// protobuf format is binary.
    pub fn is_text(self) -> bool {
        self != Format::Protobuf
    }
}

/// Picks the format for a scrape from its HTTP `Accept` header, as
/// Prometheus sends it, for example (Prometheus 2.x):
///
/// ```text
/// application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1
/// ```
///
/// or, from Prometheus 2.42 run with `--enable-feature=native-histograms`:
///
/// ```text
/// application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1
/// ```
///
/// The media range with the highest `q` that this crate can serve wins; on
/// a tie, the one listed first.
///
/// - `application/vnd.google.protobuf` with
///   `proto=io.prometheus.client.MetricFamily` and `encoding=delimited`
///   gives [`Format::Protobuf`] (as in client_golang's `expfmt`, both
///   parameters must be there; the `text` and `compact-text` encodings are
///   not written, so those ranges are skipped);
/// - `application/openmetrics-text` (versions `0.0.1` and `1.0.0`, or
///   none) gives [`Format::OpenMetrics`];
/// - `text/plain` (versions `0.0.4` and `1.0.0`, or none), `text/*` and
///   `*/*` give [`Format::PrometheusText`].
///
/// Ranges with `q=0`, an invalid `q` or a version this crate does not
/// write are skipped. Without a header, or with nothing usable in it, the
/// answer is [`Format::PrometheusText`].
///
/// [`negotiate_scrape`] also says which version and escaping scheme the
/// winning range asked for (Prometheus 3's `escaping` parameter).
pub fn negotiate(accept: Option<&str>) -> Format {
    negotiate_scrape(accept, true).format
}

/// Like [`negotiate`], for a server that sends only the text formats: the
/// protobuf format's ranges are skipped, so the next best range wins
/// (OpenMetrics, in every header Prometheus sends).
///
/// ```
/// use shmetrics_expo::{negotiate, negotiate_text, Format};
/// let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,text/plain;version=0.0.4;q=0.5";
/// assert_eq!(negotiate(Some(native)), Format::Protobuf);
/// assert_eq!(negotiate_text(Some(native)), Format::OpenMetrics);
/// ```
pub fn negotiate_text(accept: Option<&str>) -> Format {
    negotiate_scrape(accept, false).format
}

/// What a scrape negotiated: the format, the version its `Content-Type`
/// states, and how names outside the legacy character set are written
/// (see [`Escaping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Negotiated {
    /// The format.
    pub format: Format,
    /// The escaping scheme for names outside the legacy set.
    pub escaping: Escaping,
    /// The version the `Content-Type` states: `true` for 1.0.0 of the
    /// Prometheus text format (the one with quoted UTF-8 names) and of
    /// OpenMetrics (also asked for without a version); `false` for text
    /// 0.0.4 and OpenMetrics 0.0.1. Unused for protobuf.
    pub v1: bool,
}

impl Default for Negotiated {
    /// The text format 0.0.4, names escaped with `underscores`: what a
    /// scrape without an `Accept` header gets.
    fn default() -> Negotiated {
        Negotiated {
            format: Format::PrometheusText,
            escaping: Escaping::Underscores,
            v1: false,
        }
    }
}

impl Negotiated {
    /// The `Content-Type` of the answer, stating the version and the
    /// escaping scheme, as client_golang does:
    ///
    /// ```
    /// use shmetrics_expo::negotiate_scrape;
    /// let n = negotiate_scrape(Some("text/plain;version=1.0.0;escaping=allow-utf-8"), true);
    /// assert_eq!(n.content_type(), "text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8");
    /// assert_eq!(
    ///     negotiate_scrape(None, true).content_type(),
    ///     "text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
    /// );
    /// ```
    pub fn content_type(&self) -> String {
        let head = match (self.format, self.v1) {
            (Format::PrometheusText, false) => "text/plain; version=0.0.4; charset=utf-8",
            (Format::PrometheusText, true) => "text/plain; version=1.0.0; charset=utf-8",
            (Format::OpenMetrics, false) => {
                "application/openmetrics-text; version=0.0.1; charset=utf-8"
            }
            (Format::OpenMetrics, true) => {
                "application/openmetrics-text; version=1.0.0; charset=utf-8"
            }
            (Format::Protobuf, _) => Format::Protobuf.content_type(),
        };
        format!("{head}; escaping={}", self.escaping.as_str())
    }
}

/// Like [`negotiate`] (or [`negotiate_text`] if `protobuf` is false), and
/// also the version and escaping scheme the winning media range asks for.
///
/// The escaping scheme is the range's `escaping` parameter (`allow-utf-8`,
/// `underscores`, `dots`, `values`); without one, or with another value,
/// it is `underscores`, as Prometheus specifies for scrapers that name
/// none (Prometheus 2). `allow-utf-8` is taken only where the format can
/// carry UTF-8 names: the text format 1.0.0, OpenMetrics 1.0.0 and
/// protobuf; asked for with text 0.0.4, OpenMetrics 0.0.1 or no version,
/// it becomes `underscores` (as prometheus_client 0.26 does).
///
/// ```
/// use shmetrics_core::Escaping;
/// use shmetrics_expo::{negotiate_scrape, Format};
/// // Prometheus 3's default scrape protocols.
/// let p3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
///           application/openmetrics-text;version=0.0.1;q=0.5,\
///           text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,\
///           text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
/// let n = negotiate_scrape(Some(p3), true);
/// assert_eq!((n.format, n.escaping, n.v1), (Format::OpenMetrics, Escaping::AllowUtf8, true));
/// // Prometheus 2.42's.
/// let p2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
///           text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
/// let n = negotiate_scrape(Some(p2), true);
/// assert_eq!((n.format, n.escaping), (Format::OpenMetrics, Escaping::Underscores));
/// ```
pub fn negotiate_scrape(accept: Option<&str>, protobuf: bool) -> Negotiated {
    let Some(accept) = accept else {
        return Negotiated::default();
    };
    let mut best: Option<(u16, Negotiated)> = None;
    for range in accept.split(',') {
        let Some((n, q)) = media_range(range) else {
            continue;
        };
        if n.format == Format::Protobuf && !protobuf {
            continue;
        }
        if q > 0 && best.is_none_or(|(bq, _)| q > bq) {
            best = Some((q, n));
        }
    }
    best.map_or_else(Negotiated::default, |(_, n)| n)
}

/// Whether the page of `snapshot` holds a family whose library served the
/// text format 0.0.4 only (the `text_only` hint, see
/// `shmetrics_core::Hints`): [`negotiate_page`] then prefers that format.
pub fn page_text_only(snapshot: &Snapshot) -> bool {
    snapshot.families().any(|f| f.hints().text_only)
}

/// Like [`negotiate_scrape`], for a page that may hold families of
/// libraries that served the text format 0.0.4 only (`text_only`, see
/// [`page_text_only`]): then the best range for the text format 0.0.4
/// wins whenever the scraper accepts it (`text/plain`, `text/*` or
/// `*/*`, with `q` > 0), whatever it prefers, so that the scraper stores
/// what the library's own endpoint gave it (a counter named without
/// `_total` keeps its name; OpenMetrics would add `_total`). A scraper
/// that accepts no such range gets the format it asked for, as
/// [`negotiate_scrape`] picks it (an answer it can read beats a 406).
///
/// ```
/// use shmetrics_expo::{negotiate_page, Format};
/// let p2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
/// assert_eq!(negotiate_page(Some(p2), true, true).format, Format::PrometheusText);
/// assert_eq!(negotiate_page(Some(p2), true, false).format, Format::OpenMetrics);
/// let om_only = "application/openmetrics-text;version=1.0.0";
/// assert_eq!(negotiate_page(Some(om_only), true, true).format, Format::OpenMetrics);
/// ```
pub fn negotiate_page(accept: Option<&str>, protobuf: bool, text_only: bool) -> Negotiated {
    if text_only {
        if let Some(n) = negotiate_text_0_0_4(accept) {
            return n;
        }
    }
    negotiate_scrape(accept, protobuf)
}

/// The best range of `accept` served as the text format 0.0.4, if any.
fn negotiate_text_0_0_4(accept: Option<&str>) -> Option<Negotiated> {
    let Some(accept) = accept else {
        return Some(Negotiated::default());
    };
    let mut best: Option<(u16, Negotiated)> = None;
    for range in accept.split(',') {
        let Some((n, q)) = media_range(range) else {
            continue;
        };
        let plain = n.format == Format::PrometheusText && !n.v1;
        if plain && q > 0 && best.is_none_or(|(bq, _)| q > bq) {
            best = Some((q, n));
        }
    }
    best.map(|(_, n)| n)
}

/// One media range of an `Accept` header: what it asks for (if this
/// crate writes it) and its weight in thousandths.
fn media_range(range: &str) -> Option<(Negotiated, u16)> {
    let mut params = range.split(';');
    let media = params.next()?.trim();
    let mut q = 1000;
    let mut version = None;
    let mut proto = None;
    let mut encoding = None;
    let mut escaping = None;
    for p in params {
        let Some((key, value)) = p.split_once('=') else {
            continue; // a parameter without a value: ignored
        };
        let (key, value) = (key.trim(), value.trim().trim_matches('"'));
        if key.eq_ignore_ascii_case("q") {
            q = parse_qvalue(value)?;
        } else if key.eq_ignore_ascii_case("version") {
            version = Some(value);
        } else if key.eq_ignore_ascii_case("proto") {
            proto = Some(value);
        } else if key.eq_ignore_ascii_case("encoding") {
            encoding = Some(value);
        } else if key.eq_ignore_ascii_case("escaping") {
            escaping = Escaping::parse(value);
        }
    }
    let is = |s: &str| media.eq_ignore_ascii_case(s);
    // (format, version 1.0.0 in the answer, UTF-8 names allowed)
    let (format, v1, utf8) = if is("application/openmetrics-text") {
        match version {
            // Without a version: 1.0.0, but names escaped, as in
            // prometheus_client.
            None => (Format::OpenMetrics, true, false),
            Some("0.0.1") => (Format::OpenMetrics, false, false),
            Some("1.0.0") => (Format::OpenMetrics, true, true),
            Some(_) => return None,
        }
    } else if is("text/plain") {
        match version {
            None | Some("0.0.4") => (Format::PrometheusText, false, false),
            Some("1.0.0") => (Format::PrometheusText, true, true),
            Some(_) => return None,
        }
    } else if is("*/*") || is("text/*") {
        (Format::PrometheusText, false, false)
    } else if is("application/vnd.google.protobuf") {
        // The protobuf format, which Prometheus asks for first when it
        // scrapes native histograms. As client_golang's expfmt, only the
        // MetricFamily protocol in the delimited encoding; the `text` and
        // `compact-text` encodings (debugging aids) are not written.
        match (proto, encoding) {
            (Some("io.prometheus.client.MetricFamily"), Some("delimited")) => {
                (Format::Protobuf, false, true)
            }
            _ => return None,
        }
    } else {
        return None;
    };
    let escaping = match escaping {
        Some(Escaping::AllowUtf8) if !utf8 => Escaping::Underscores,
        Some(e) => e,
        None => Escaping::Underscores,
    };
    Some((
        Negotiated {
            format,
            escaping,
            v1,
        },
        q,
    ))
}

/// Parses an HTTP qvalue (`0`, `0.5`, `1`, `1.000`) into thousandths.
fn parse_qvalue(s: &str) -> Option<u16> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut milli: u16 = match int {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    let mut scale = 100;
    for b in frac.bytes() {
        milli += u16::from(b - b'0') * scale;
        scale /= 10;
    }
    (milli <= 1000).then_some(milli)
}

/// Appends the whole exposition of `snapshot` in `format` to `out`. An
/// OpenMetrics exposition ends with `# EOF\n`; a protobuf one is a
/// sequence of length-delimited `MetricFamily` messages (see
/// [`protobuf`]).
///
/// Writes straight into `out` (reserving an estimate of the size up front)
/// and allocates nothing per series (the protobuf encoder reuses one
/// message for all the series, so it allocates only while that message
/// grows).
pub fn encode(snapshot: &Snapshot, format: Format, out: &mut Vec<u8>) {
    encode_with(snapshot, &[], format, out);
}

/// Like [`encode`], with `extra` families after the store's (and before
/// OpenMetrics' `# EOF`).
///
/// ```
/// use shmetrics_core::{Kind, Snapshot};
/// use shmetrics_expo::{encode_with, ExtraFamily, ExtraSample, Format};
/// let extra = [ExtraFamily {
///     name: "exporter_scrapes",
///     help: "Scrapes served.",
///     kind: Kind::Counter,
///     samples: vec![ExtraSample { labels: vec![("format", "text")], value: 3.0 }],
/// }];
/// let mut out = Vec::new();
/// encode_with(&Snapshot::default(), &extra, Format::OpenMetrics, &mut out);
/// let expected = concat!(
///     "# TYPE exporter_scrapes counter\n",
///     "# HELP exporter_scrapes Scrapes served.\n",
///     "exporter_scrapes_total{format=\"text\"} 3\n",
///     "# EOF\n",
/// );
/// assert_eq!(String::from_utf8(out).unwrap(), expected);
/// ```
pub fn encode_with(
    snapshot: &Snapshot,
    extra: &[ExtraFamily<'_>],
    format: Format,
    out: &mut Vec<u8>,
) {
    encode_escaped(snapshot, extra, format, Escaping::Underscores, out);
}

/// Like [`encode_with`], writing names outside the legacy character set
/// as `escaping` says (see [`Escaping`]; [`encode_with`] escapes them with
/// `underscores`, for any scraper). Legacy names are written as they are
/// whatever the scheme (as client_golang does; `dots` does not double
/// their underscores). With [`Escaping::AllowUtf8`] the text formats quote
/// the other names (`{"my.metric","label.name"="v"} 1`, `# TYPE
/// "my.metric" gauge`), as the text format 1.0.0 and Prometheus 3's
/// OpenMetrics parser take them; the protobuf format carries them as
/// they are.
///
/// ```
/// use shmetrics_core::{FamilyDesc, Kind, Options, Store};
/// use shmetrics_expo::{encode_escaped, Escaping, Format};
/// # let dir = tempfile::tempdir().unwrap();
/// # let store = Store::open(dir.path().join("s"), &Options::default())?;
/// let f = store.register(&FamilyDesc::new("my.jobs", Kind::Gauge).labels(&["job.kind"]))?;
/// store.gauge_set(store.series(&f, &["cron"])?, 2.0)?;
/// let page = |escaping| {
///     let mut out = Vec::new();
///     encode_escaped(&store.snapshot().unwrap(), &[], Format::PrometheusText, escaping, &mut out);
///     String::from_utf8(out).unwrap()
/// };
/// assert_eq!(page(Escaping::AllowUtf8), "# TYPE \"my.jobs\" gauge\n{\"my.jobs\",\"job.kind\"=\"cron\"} 2\n");
/// assert_eq!(page(Escaping::Underscores), "# TYPE my_jobs gauge\nmy_jobs{job_kind=\"cron\"} 2\n");
/// assert_eq!(page(Escaping::Dots), "# TYPE my_dot_jobs gauge\nmy_dot_jobs{job_dot_kind=\"cron\"} 2\n");
/// # Ok::<(), shmetrics_core::Error>(())
/// ```
pub fn encode_escaped(
    snapshot: &Snapshot,
    extra: &[ExtraFamily<'_>],
    format: Format,
    escaping: Escaping,
    out: &mut Vec<u8>,
) {
    out.reserve(estimate(snapshot.families(), format));
    encode_views(snapshot.families(), extra, format, escaping, out, None);
}

/// Like [`encode_escaped`], handing the exposition to `sink` in pieces of
/// about `chunk` bytes (a piece ends after a series, or after a family in
/// the protobuf format, whose families are single messages) rather than
/// as one buffer: a caller that compresses or sends the pieces as they
/// come never holds the whole page. `sink` gets the bytes rendered since
/// its last call; it may take them (`std::mem::take`) or copy them, and
/// whatever it leaves is cleared. Concatenated, the pieces are exactly
/// what [`encode_escaped`] writes.
///
/// ```
/// use shmetrics_core::{FamilyDesc, Kind, Options, Store};
/// use shmetrics_expo::{encode_chunked, encode_escaped, Escaping, Format};
/// # let dir = tempfile::tempdir().unwrap();
/// # let store = Store::open(dir.path().join("s"), &Options::default())?;
/// let f = store.register(&FamilyDesc::new("jobs", Kind::Counter).labels(&["queue"]))?;
/// for q in 0..100 {
///     store.counter_inc(store.series(&f, &[&format!("q{q}")])?)?;
/// }
/// let snap = store.snapshot()?;
/// let (mut pieces, mut joined) = (0, Vec::new());
/// encode_chunked(&snap, &[], Format::PrometheusText, Escaping::Underscores, 100, &mut |b| {
///     pieces += 1;
///     joined.extend_from_slice(b);
/// });
/// let mut whole = Vec::new();
/// encode_escaped(&snap, &[], Format::PrometheusText, Escaping::Underscores, &mut whole);
/// assert_eq!(joined, whole);
/// assert!(pieces > 10);
/// # Ok::<(), shmetrics_core::Error>(())
/// ```
pub fn encode_chunked(
    snapshot: &Snapshot,
    extra: &[ExtraFamily<'_>],
    format: Format,
    escaping: Escaping,
    chunk: usize,
    sink: &mut dyn FnMut(&mut Vec<u8>),
) {
    // Room for a piece and the series that crosses its end.
    let mut out = Vec::with_capacity(chunk + chunk / 8 + 4096);
    let mut spill = Spill { at: chunk, sink };
    encode_views(
        snapshot.families(),
        extra,
        format,
        escaping,
        &mut out,
        Some(&mut spill),
    );
    if !out.is_empty() {
        (spill.sink)(&mut out);
    }
}

/// The families of `snapshot` named in `names` (as the store keeps them,
/// [`FamilyView::name`]: a counter's without `_total`), in the order of
/// `names`; a name the store does not hold is left out. For a page that
/// shows some of a store's families, such as an app's registry's.
///
/// ```
/// use shmetrics_core::{FamilyDesc, Kind, Options, Store};
/// # let dir = tempfile::tempdir().unwrap();
/// # let store = Store::open(dir.path().join("s"), &Options::default())?;
/// for name in ["a", "b", "c"] {
///     store.register(&FamilyDesc::new(name, Kind::Gauge))?;
/// }
/// let snapshot = store.snapshot()?;
/// let names: Vec<_> = shmetrics_expo::select(&snapshot, &["c", "x", "a"]).iter().map(|f| f.name()).collect();
/// assert_eq!(names, ["c", "a"]);
/// # Ok::<(), shmetrics_core::Error>(())
/// ```
pub fn select<'s, S: AsRef<str>>(snapshot: &'s Snapshot, names: &[S]) -> Vec<FamilyView<'s>> {
    // A few names: a scan each; more: one index of the store's families.
    if names.len() <= 8 {
        return names
            .iter()
            .filter_map(|n| snapshot.family(n.as_ref()))
            .collect();
    }
    let index: std::collections::HashMap<&str, FamilyView<'s>> =
        snapshot.families().map(|f| (f.name(), f)).collect();
    names
        .iter()
        .filter_map(|n| index.get(n.as_ref()).copied())
        .collect()
}

/// Like [`encode`], with `families` only (see [`select`]), in their
/// order. OpenMetrics' `# EOF` ends the page as it does a whole store's.
pub fn encode_families(families: &[FamilyView<'_>], format: Format, out: &mut Vec<u8>) {
    out.reserve(estimate(families.iter().copied(), format));
    encode_views(
        families.iter().copied(),
        &[],
        format,
        Escaping::Underscores,
        out,
        None,
    );
}

/// Renders `families`, then `extra`, into `out`, handing it to `spill`
/// (if any) as it fills.
fn encode_views<'s>(
    families: impl Iterator<Item = FamilyView<'s>>,
    extra: &[ExtraFamily<'_>],
    format: Format,
    escaping: Escaping,
    out: &mut Vec<u8>,
    spill: Option<&mut Spill<'_>>,
) {
    if format == Format::Protobuf {
        protobuf::encode(families, extra, escaping, out, spill);
        return;
    }
    let mut enc = Encoder {
        om: format == Format::OpenMetrics,
        escaping,
        mode: NameMode::Plain,
        rendered: Vec::new(),
        labels_plain: true,
        labels: Vec::with_capacity(256),
        le: Vec::new(),
        le_ends: Vec::new(),
        bucket_prefix: Vec::with_capacity(256),
        short_bounds: false,
        created: false,
        spill,
    };
    for family in families {
        enc.family(&family, out);
    }
    for family in extra {
        enc.extra_family(family, out);
    }
    if enc.om {
        out.extend_from_slice(b"# EOF\n");
    }
}

/// A rough size of the exposition, to reserve it at once.
fn estimate<'s>(families: impl Iterator<Item = FamilyView<'s>>, format: Format) -> usize {
    let om = usize::from(format == Format::OpenMetrics);
    families
        .map(|f| {
            let lines = match f.kind() {
                Kind::Counter => 1 + om,
                Kind::Gauge => 1,
                Kind::Histogram => f.buckets().len() + 3 + om,
                Kind::Summary => {
                    2 + om
                        + f.series().next().map_or(0, |s| match s.value() {
                            Value::Summary { quantiles, .. } => quantiles.len(),
                            _ => 0,
                        })
                }
            };
            let labels: usize = f.label_names().map(|l| l.len() + 12).sum();
            let line = f.name().len() + labels + 28;
            f.help().len() + 2 * f.name().len() + 40 + f.series().len() * lines * line
        })
        .sum()
}

/// How the current family's name is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NameMode {
    /// A legacy name: as it is.
    Plain,
    /// Escaped by a scheme other than `allow-utf-8`.
    Escaped,
    /// Quoted, inside the braces (`allow-utf-8`).
    Quoted,
}

/// Every suffix a sample or metadata name may take.
const SUFFIXES: [&[u8]; 7] = [
    b"",
    b"_total",
    b"_bucket",
    b"_count",
    b"_sum",
    b"_created",
    b"_info",
];

/// Appends a label name: as it is if legacy, else quoted (`allow-utf-8`)
/// or escaped.
#[inline]
fn write_label_name(out: &mut Vec<u8>, name: &str, escaping: Escaping) {
    if is_legacy_label_name(name) {
        out.extend_from_slice(name.as_bytes());
    } else if escaping == Escaping::AllowUtf8 {
        out.push(b'"');
        escape(out, name.as_bytes(), true);
        out.push(b'"');
    } else {
        out.extend_from_slice(escape_label_name(name, escaping).as_bytes());
    }
}

/// Scratch space reused across series and families.
struct Encoder<'a, 's> {
    om: bool,
    escaping: Escaping,
    /// How the current family's name is written; unless `Plain`,
    /// `rendered` holds it with each of [`SUFFIXES`], as written.
    mode: NameMode,
    rendered: Vec<Vec<u8>>,
    /// Whether the current family's label names are all legacy.
    labels_plain: bool,
    /// The current series' labels, rendered: `a="x",b="y"`.
    labels: Vec<u8>,
    /// The current histogram family's `le="…"} ` fragments, one after the
    /// other; `le_ends[i]` is where fragment `i` ends (the last is `+Inf`).
    le: Vec<u8>,
    le_ends: Vec<usize>,
    /// The current histogram series' `name_bucket{labels,`.
    bucket_prefix: Vec<u8>,
    /// The current family's hints: `le` and `quantile` in their shortest
    /// form, and whether its `_created` series are written in this format.
    short_bounds: bool,
    created: bool,
    /// A chunked render's sink, offered the output after each series.
    spill: Option<&'a mut Spill<'s>>,
}

impl Encoder<'_, '_> {
    /// Hands the output to a chunked render's sink once it holds a
    /// piece's worth (after a series).
    #[inline]
    fn spill(&mut self, out: &mut Vec<u8>) {
        if let Some(s) = self.spill.as_deref_mut() {
            s.check(out);
        }
    }

    /// Decides how the family's names are written, and renders its
    /// name's forms if they are not written as they are.
    fn start_family<'a>(&mut self, name: &str, mut label_names: impl Iterator<Item = &'a str>) {
        self.labels_plain = label_names.all(is_legacy_label_name);
        self.mode = if is_legacy_metric_name(name) {
            NameMode::Plain
        } else if self.escaping == Escaping::AllowUtf8 {
            NameMode::Quoted
        } else {
            NameMode::Escaped
        };
        if self.mode == NameMode::Plain {
            return;
        }
        self.rendered.resize_with(SUFFIXES.len(), Vec::new);
        // Escaped, the name and then its suffix as it is (as client_golang
        // appends `_bucket` to an escaped histogram name), so that every
        // sample name starts with the family's (OpenMetrics parsers check).
        let mut escaped = String::new();
        if self.mode == NameMode::Escaped {
            escape_name_into(&mut escaped, name, self.escaping, true);
        }
        for (dst, suffix) in self.rendered.iter_mut().zip(SUFFIXES) {
            dst.clear();
            if self.mode == NameMode::Quoted {
                dst.push(b'"');
                escape(dst, name.as_bytes(), true);
                escape(dst, suffix, true);
                dst.push(b'"');
            } else {
                dst.extend_from_slice(escaped.as_bytes());
                dst.extend_from_slice(suffix);
            }
        }
    }

    /// Appends `name` with `suffix` as the family's mode writes it.
    #[inline]
    fn write_name(&self, out: &mut Vec<u8>, name: &[u8], suffix: &[u8]) {
        if self.mode == NameMode::Plain {
            out.extend_from_slice(name);
            out.extend_from_slice(suffix);
        } else {
            let i = SUFFIXES.iter().position(|s| *s == suffix);
            // UNWRAP: every suffix written is one of SUFFIXES.
            out.extend_from_slice(&self.rendered[i.expect("a known suffix")]);
        }
    }

    fn extra_family(&mut self, f: &ExtraFamily<'_>, out: &mut Vec<u8>) {
        self.start_family(
            f.name,
            f.samples
                .iter()
                .flat_map(|s| s.labels.iter().map(|(n, _)| *n)),
        );
        let name = f.name.as_bytes();
        let (kind, suffix): (Kind, &[u8]) = match f.kind {
            Kind::Counter => (Kind::Counter, b"_total"),
            _ => (Kind::Gauge, b""),
        };
        self.metadata(name, suffix, f.help.as_bytes(), b"", kind.as_str(), out);
        for s in &f.samples {
            self.render_labels(s.labels.iter().copied());
            self.sample_start(out, name, suffix);
            write_float(out, s.value);
            out.push(b'\n');
            self.spill(out);
        }
    }

    fn family(&mut self, f: &FamilyView<'_>, out: &mut Vec<u8>) {
        let hints = f.hints();
        if let Some(t) = hints.openmetrics_type.filter(|_| self.om) {
            if f.kind() == Kind::Gauge {
                return self.typed_gauge(f, t, out);
            }
        }
        self.start_family(f.name(), f.label_names());
        self.short_bounds = hints.short_bounds;
        self.created = match hints.created {
            Created::Never => false,
            Created::OpenMetrics => self.om,
            Created::EveryFormat => true,
        };
        let name = f.name().as_bytes();
        let kind = f.kind();
        // A counter's samples end in `_total`, but in the text format for
        // a counter named as given (`FamilyDesc::name_as_given`).
        let total: &[u8] = match kind {
            Kind::Counter if self.om || !f.name_as_given() => b"_total",
            _ => b"",
        };
        let (help, unit) = (f.help().as_bytes(), f.unit().as_bytes());
        self.metadata(name, total, help, unit, kind.as_str(), out);
        match kind {
            Kind::Counter => {
                for s in f.series() {
                    self.render_labels(s.labels());
                    if let Value::Counter(v) = s.value() {
                        self.sample_start(out, name, total);
                        write_float(out, v);
                        self.exemplar(out, s.exemplar(0));
                        out.push(b'\n');
                    }
                    self.created(&s, name, out);
                    self.spill(out);
                }
            }
            Kind::Gauge => self.gauge_series(f, name, b"", out),
            Kind::Histogram => self.histogram_series(f, name, out),
            Kind::Summary => self.summary_series(f, name, out),
        }
        if self.created && !self.om && kind != Kind::Gauge {
            self.created_gauges(f, name, help, out);
        }
    }

    /// A gauge's samples, named `name` and `suffix`.
    #[inline]
    fn gauge_series(&mut self, f: &FamilyView<'_>, name: &[u8], suffix: &[u8], out: &mut Vec<u8>) {
        for s in f.series() {
            self.render_labels(s.labels());
            if let Value::Gauge(v) = s.value() {
                self.sample_start(out, name, suffix);
                write_float(out, v);
                out.push(b'\n');
            }
            self.spill(out);
        }
    }

    /// OpenMetrics: a gauge hinted as an `info` (its metric family named
    /// without `_info`, which its samples keep) or a `stateset`, as
    /// prometheus_client writes its `Info` and `Enum`.
    fn typed_gauge(&mut self, f: &FamilyView<'_>, t: OpenMetricsType, out: &mut Vec<u8>) {
        let full = f.name();
        // Registration checks that an info's name ends in `_info`.
        let (name, suffix): (&str, &[u8]) = match (t, full.strip_suffix("_info")) {
            (OpenMetricsType::Info, Some(short)) => (short, b"_info"),
            _ => (full, b""),
        };
        self.start_family(name, f.label_names());
        let (help, unit) = (f.help().as_bytes(), f.unit().as_bytes());
        self.metadata(name.as_bytes(), b"", help, unit, t.as_str(), out);
        self.gauge_series(f, name.as_bytes(), suffix, out);
    }

    /// The text format's `name_created` gauge family, after the family,
    /// as prometheus_client writes it in a single process
    /// ([`Created::EveryFormat`]).
    fn created_gauges(&mut self, f: &FamilyView<'_>, name: &[u8], help: &[u8], out: &mut Vec<u8>) {
        if f.series().all(|s| s.created_unix_ns() == 0) {
            return;
        }
        self.metadata(name, b"_created", help, b"", "gauge", out);
        for s in f.series() {
            let ns = s.created_unix_ns();
            if ns != 0 {
                self.render_labels(s.labels());
                self.sample_start(out, name, b"_created");
                write_unix_nanos_as_seconds(out, ns);
                out.push(b'\n');
            }
            self.spill(out);
        }
    }

    /// A histogram family's series: each one's buckets, then its `_count`
    /// and `_sum` (which OpenMetrics leaves out with a negative bucket
    /// bound or sum).
    fn histogram_series(&mut self, f: &FamilyView<'_>, name: &[u8], out: &mut Vec<u8>) {
        let bounds = f.buckets();
        self.prepare_le(bounds);
        // OpenMetrics: no `_sum` with a negative bucket bound.
        let negative_bucket = bounds.first().is_some_and(|b| *b < 0.0);
        for s in f.series() {
            self.render_labels(s.labels());
            if let Value::Histogram {
                cumulative, sum, ..
            } = s.value()
            {
                self.buckets(out, name, cumulative, &s);
                let count = cumulative.last().copied().unwrap_or(0);
                if !self.om || (!negative_bucket && sum >= 0.0) {
                    self.sample_start(out, name, b"_count");
                    write_u64(out, count);
                    out.push(b'\n');
                    self.sample_start(out, name, b"_sum");
                    write_float(out, sum);
                    out.push(b'\n');
                }
            }
            self.created(&s, name, out);
            self.spill(out);
        }
    }

    /// A summary family's series: each one's quantiles, `_count` and
    /// `_sum` (which OpenMetrics leaves out when negative).
    fn summary_series(&mut self, f: &FamilyView<'_>, name: &[u8], out: &mut Vec<u8>) {
        let mut prepared = false;
        for s in f.series() {
            self.render_labels(s.labels());
            if let Value::Summary {
                count,
                sum,
                quantiles,
            } = s.value()
            {
                if !quantiles.is_empty() {
                    if !prepared {
                        self.prepare_fragments(b"quantile", quantiles.iter().map(|q| q.quantile));
                        prepared = true;
                    }
                    self.quantiles(out, name, quantiles);
                }
                self.sample_start(out, name, b"_count");
                write_u64(out, count);
                out.push(b'\n');
                if !self.om || sum >= 0.0 {
                    self.sample_start(out, name, b"_sum");
                    write_float(out, sum);
                    out.push(b'\n');
                }
            }
            self.created(&s, name, out);
            self.spill(out);
        }
    }

    /// `HELP` and `TYPE` (text, for `name` and `text_suffix`); `TYPE`,
    /// `UNIT` and `HELP` (OpenMetrics, for `name`, in the order its spec
    /// recommends).
    fn metadata(
        &self,
        name: &[u8],
        text_suffix: &[u8],
        help: &[u8],
        unit: &[u8],
        type_name: &str,
        out: &mut Vec<u8>,
    ) {
        let line = |out: &mut Vec<u8>, keyword: &[u8]| {
            out.extend_from_slice(keyword);
            self.write_name(out, name, if self.om { b"" } else { text_suffix });
            out.push(b' ');
        };
        if !self.om && !help.is_empty() {
            line(out, b"# HELP ");
            escape(out, help, false);
            out.push(b'\n');
        }
        line(out, b"# TYPE ");
        out.extend_from_slice(type_name.as_bytes());
        out.push(b'\n');
        if self.om {
            if !unit.is_empty() {
                line(out, b"# UNIT ");
                out.extend_from_slice(unit);
                out.push(b'\n');
            }
            if !help.is_empty() {
                line(out, b"# HELP ");
                escape(out, help, true);
                out.push(b'\n');
            }
        }
    }

    /// Renders the series' labels (the family's, then `pid` or
    /// `shmetrics_overflow`) into `self.labels`.
    #[inline]
    fn render_labels<'a>(&mut self, labels: impl Iterator<Item = (&'a str, &'a str)>) {
        let buf = &mut self.labels;
        buf.clear();
        for (name, value) in labels {
            if !buf.is_empty() {
                buf.push(b',');
            }
            if self.labels_plain {
                buf.extend_from_slice(name.as_bytes());
            } else {
                write_label_name(buf, name, self.escaping);
            }
            buf.extend_from_slice(b"=\"");
            escape(buf, value.as_bytes(), true);
            buf.push(b'"');
        }
    }

    /// `name_suffix{labels} ` (no braces without labels), or
    /// `{"name_suffix",labels} ` for a quoted name.
    #[inline]
    fn sample_start(&self, out: &mut Vec<u8>, name: &[u8], suffix: &[u8]) {
        if self.mode == NameMode::Quoted {
            out.push(b'{');
            self.write_name(out, name, suffix);
            if !self.labels.is_empty() {
                out.push(b',');
                out.extend_from_slice(&self.labels);
            }
            out.extend_from_slice(b"} ");
            return;
        }
        self.write_name(out, name, suffix);
        if !self.labels.is_empty() {
            out.push(b'{');
            out.extend_from_slice(&self.labels);
            out.push(b'}');
        }
        out.push(b' ');
    }

    /// `self.bucket_prefix` = `name_suffix{labels,` (`name_suffix{`
    /// without labels), or `{"name_suffix",labels,` for a quoted name:
    /// what comes before a `le` or `quantile` label.
    #[inline]
    fn prefix(&mut self, name: &[u8], suffix: &[u8]) {
        let mut prefix = std::mem::take(&mut self.bucket_prefix);
        prefix.clear();
        if self.mode == NameMode::Quoted {
            prefix.push(b'{');
            self.write_name(&mut prefix, name, suffix);
            prefix.push(b',');
        } else {
            self.write_name(&mut prefix, name, suffix);
            prefix.push(b'{');
        }
        if !self.labels.is_empty() {
            prefix.extend_from_slice(&self.labels);
            prefix.push(b',');
        }
        self.bucket_prefix = prefix;
    }

    /// Renders `le="…"} ` once per histogram family.
    fn prepare_le(&mut self, bounds: &[f64]) {
        self.prepare_fragments(b"le", bounds.iter().copied().chain([f64::INFINITY]));
    }

    /// Renders `key="…"} ` for each value (canonical floats, as
    /// OpenMetrics wants for `le` and `quantile`), once per family.
    fn prepare_fragments(&mut self, key: &[u8], values: impl Iterator<Item = f64>) {
        self.le.clear();
        self.le_ends.clear();
        for v in values {
            self.le.extend_from_slice(key);
            self.le.extend_from_slice(b"=\"");
            if self.short_bounds {
                write_float(&mut self.le, v);
            } else {
                write_canonical_float(&mut self.le, v);
            }
            self.le.extend_from_slice(b"\"} ");
            self.le_ends.push(self.le.len());
        }
    }

    /// A summary's quantile lines, `quantile` last among the labels, from
    /// the fragments [`Self::prepare_fragments`] made for the family.
    #[inline]
    fn quantiles(&mut self, out: &mut Vec<u8>, name: &[u8], quantiles: &[Quantile]) {
        self.prefix(name, b"");
        let mut start = 0;
        for (&end, q) in self.le_ends.iter().zip(quantiles) {
            out.extend_from_slice(&self.bucket_prefix);
            out.extend_from_slice(&self.le[start..end]);
            write_float(out, q.value);
            out.push(b'\n');
            start = end;
        }
    }

    /// The `_bucket` lines: one per bound and `+Inf`, `le` last.
    #[inline]
    fn buckets(&mut self, out: &mut Vec<u8>, name: &[u8], cumulative: &[u64], s: &SeriesView<'_>) {
        self.prefix(name, b"_bucket");
        let mut start = 0;
        let mut exemplars = s.exemplars();
        for (&end, &count) in self.le_ends.iter().zip(cumulative) {
            out.extend_from_slice(&self.bucket_prefix);
            out.extend_from_slice(&self.le[start..end]);
            write_u64(out, count);
            self.exemplar(out, exemplars.next().flatten());
            out.push(b'\n');
            start = end;
        }
    }

    /// OpenMetrics ` # {labels} value timestamp` after a counter's
    /// `_total` or a histogram's `_bucket` sample, if it has an exemplar.
    /// (The text format 0.0.4 has no exemplars.)
    #[inline]
    fn exemplar(&self, out: &mut Vec<u8>, e: Option<Exemplar<'_>>) {
        let Some(e) = e.filter(|_| self.om) else {
            return;
        };
        out.extend_from_slice(b" # {");
        for (i, (name, value)) in e.labels().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_label_name(out, name, self.escaping);
            out.extend_from_slice(b"=\"");
            escape(out, value.as_bytes(), true);
            out.push(b'"');
        }
        out.extend_from_slice(b"} ");
        write_float(out, e.value());
        out.push(b' ');
        write_unix_nanos_as_seconds(out, e.timestamp_unix_ns());
    }

    /// OpenMetrics `name_created{labels} seconds`, if the creation time is
    /// known.
    #[inline]
    fn created(&self, s: &SeriesView<'_>, name: &[u8], out: &mut Vec<u8>) {
        let ns = s.created_unix_ns();
        if self.om && self.created && ns != 0 {
            self.sample_start(out, name, b"_created");
            write_unix_nanos_as_seconds(out, ns);
            out.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests;

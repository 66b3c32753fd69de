//! Family definitions: name, help, label names and type options, and the
//! Prometheus data-model rules they are checked against.

use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::model::{GaugeMode, Kind};
pub use crate::names::{check_label_name, check_metric_name};
use crate::names::{is_legacy_label_name, underscored, NameRules};

/// The default histogram buckets of the Prometheus client libraries.
pub const DEFAULT_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The label added to a family's overflow series (`shmetrics_overflow="true"`).
/// It is reserved: no family may use it as a label name.
pub const OVERFLOW_LABEL: &str = "shmetrics_overflow";

/// The label that gauge modes `all` and `liveall` add, as prometheus_client
/// does. Reserved in those modes.
pub const PID_LABEL: &str = "pid";

/// Most buckets a classic histogram may have (without the `+Inf` bucket).
pub const MAX_BUCKETS: usize = 512;

/// Most label names a family may have.
pub const MAX_LABELS: usize = 64;

/// Most quantiles a summary may report.
pub const MAX_QUANTILES: usize = 64;

/// Most age buckets a summary's window may have.
pub const MAX_AGE_BUCKETS: u32 = 60;

/// Summary options, named as in client_golang.
///
/// Quantiles are estimated over a sliding window of `max_age`, split into
/// `age_buckets` periods: at any time they cover between
/// `max_age - max_age / age_buckets` and `max_age` of observations from
/// every process. Each estimate is within 0.99% (relative) of the exact
/// quantile of those observations, for magnitudes from 1e-9 to 1e9 (see
/// [`crate::sketch`]). `_count` and `_sum` cover all observations since
/// the series was created.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryOpts {
    /// Quantiles to report, each in `[0, 1]`, strictly increasing; at most
    /// [`MAX_QUANTILES`]. Empty (the default, as in prometheus_client)
    /// means `_count` and `_sum` only, with no sketch.
    pub quantiles: Vec<f64>,
    /// The sliding window over which quantiles are computed.
    pub max_age: Duration,
    /// How many periods the window is split into, 1 to
    /// [`MAX_AGE_BUCKETS`]. Each costs a sketch per series and writer.
    pub age_buckets: u32,
}

impl Default for SummaryOpts {
    /// No quantiles, a 10 minute window in 5 buckets (client_golang's
    /// defaults for the window).
    fn default() -> SummaryOpts {
        SummaryOpts {
            quantiles: Vec::new(),
            max_age: Duration::from_secs(600),
            age_buckets: 5,
        }
    }
}

/// Native (exponential) histogram options, named after client_golang's
/// `NativeHistogramBucketFactor`, `NativeHistogramZeroThreshold` and
/// `NativeHistogramMaxBucketNumber`.
///
/// Bucket `i` of the positive side holds the values in
/// `(base^(i-1), base^i]` (upper bound inclusive), with `base =
/// 2^(2^-schema)`; the negative side mirrors it. The schema is picked
/// from `bucket_factor` as client_golang picks it: the coarsest in -4..=8
/// whose `base` is at most `bucket_factor`. The default factor 1.1 gives
/// schema 3 (`base` ≈ 1.0905: any quantile Prometheus estimates from the
/// buckets is within about 4.4% of the value at that rank).
///
/// **Storage.** Every writer keeps dense counts at the family's schema for
/// magnitudes in `(2^-64, 2^64]` on each side: `128 × 2^schema` buckets a
/// side (8 at schema -4, 1,024 at schema 3, 32,768 at schema 8), so
/// `2 × 128 × 2^schema` sketch cells per series and writer (schema 3:
/// 2,048 cells, 16 KiB of address space). The store file is sparse and a
/// writer touches only the pages its values fall in, so this costs
/// address space ([`crate::Options::sketch_cells_per_writer`]) more than
/// memory.
///
/// **Range.** The *effective* zero threshold is `max(zero_threshold,
/// 2^-64)`: magnitudes up to it count in the zero bucket, and that is the
/// threshold exposed. Magnitudes above `2^64` (and ±Inf) count in the top
/// bucket of their side.
///
/// **Bucket limit.** `max_buckets` is applied when a snapshot is taken,
/// not when a value is observed: while more than `max_buckets` buckets
/// (both sides) are populated and the schema is above -4, the snapshot
/// halves the resolution (merging pairs of buckets). Because every
/// writer keeps the full resolution, a reduction is never permanent (in
/// client_golang it lasts until the histogram is reset): a later
/// snapshot with fewer populated buckets shows the configured schema
/// again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeOpts {
    /// The largest acceptable ratio between the bounds of two neighbouring
    /// buckets; must be greater than 1 (default 1.1).
    pub bucket_factor: f64,
    /// Magnitudes up to this count in the zero bucket; finite and
    /// non-negative (default 2^-128, client_golang's
    /// `DefNativeHistogramZeroThreshold`; the store raises it to 2^-64).
    pub zero_threshold: f64,
    /// The most populated buckets a snapshot shows before it lowers the
    /// resolution; 0 for no limit (default 160).
    pub max_buckets: u32,
}

impl Default for NativeOpts {
    fn default() -> NativeOpts {
        NativeOpts {
            bucket_factor: 1.1,
            zero_threshold: DEFAULT_NATIVE_ZERO_THRESHOLD,
            max_buckets: 160,
        }
    }
}

/// client_golang's `DefNativeHistogramZeroThreshold`: 2^-128.
pub const DEFAULT_NATIVE_ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// A family definition: what [`crate::Store::register`] takes.
///
/// ```
/// use shmetrics_core::{FamilyDesc, Kind};
/// let desc = FamilyDesc::new("http_requests", Kind::Counter)
///     .help("Requests served.")
///     .labels(&["method", "status"]);
/// assert_eq!(desc.name, "http_requests");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyDesc {
    /// The metric name. For counters a trailing `_total` is removed, as
    /// prometheus_client does; the exposition adds it back.
    pub name: String,
    /// The help text; any UTF-8.
    pub help: String,
    /// The metric type.
    pub kind: Kind,
    /// Label names, in the order label values are given.
    pub label_names: Vec<String>,
    /// Optional unit (OpenMetrics `# UNIT`). When set, the name must end in
    /// `_<unit>`.
    pub unit: String,
    /// Histogram bucket upper bounds, strictly increasing, without `+Inf`.
    /// Empty means [`DEFAULT_BUCKETS`], except for a histogram with
    /// native buckets, which then has no classic buckets (as in
    /// client_golang).
    pub buckets: Vec<f64>,
    /// Native (exponential) histogram buckets, for a histogram that has
    /// them. With `buckets` left empty the histogram is native only; with
    /// `buckets` it has both. See [`NativeOpts`].
    pub native: Option<NativeOpts>,
    /// How gauges combine across processes.
    pub gauge_mode: GaugeMode,
    /// Summary options.
    pub summary: SummaryOpts,
    /// The most series this family may hold, besides its overflow series.
    /// `0` means only the store's capacity limits it.
    pub max_series: u32,
    /// Whether the family keeps OpenMetrics exemplars: the latest per
    /// counter series, or per classic bucket of a histogram series. Only
    /// for counters and histograms with classic buckets. See
    /// [`FamilyDesc::exemplars`].
    pub exemplars: bool,
    /// Series that no update touched for this long disappear, and the
    /// family's next new series reuse their space. `None` (the default):
    /// series stay until deleted. See [`FamilyDesc::ttl`].
    pub ttl: Option<Duration>,
    /// For a counter: whether the Prometheus text and protobuf formats
    /// name it as given, `_total` only if the name had it (as
    /// nginx-lua-prometheus does; the text format allows a counter
    /// without `_total`), instead of always `name_total` (the default,
    /// as client_python does). OpenMetrics names the samples
    /// `name_total` either way. See [`FamilyDesc::name_as_given`].
    pub name_as_given: bool,
    /// Which names registration takes: any UTF-8 name (the default) or
    /// legacy ones only. See [`FamilyDesc::name_rules`].
    pub name_rules: NameRules,
    /// How the expositions write the family, so that the page is what
    /// the client library a binding stands in for served. Not part of the
    /// definition: the first registration's hints stay. See [`Hints`].
    pub hints: Hints,
}

/// Whether and how a family's series get `_created` series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Created {
    /// OpenMetrics `_created` samples (and the protobuf format's
    /// `created_timestamp`); none in the text format, as client_golang.
    /// The default.
    #[default]
    OpenMetrics,
    /// None in any format, as PromPHP, nginx-lua-prometheus, client_ruby
    /// and prometheus_client in multiprocess mode (or with
    /// `PROMETHEUS_DISABLE_CREATED_SERIES`).
    Never,
    /// As prometheus_client in a single process: OpenMetrics `_created`
    /// samples, and in the text format a `name_created` gauge family
    /// after the family.
    EveryFormat,
}

/// Exposition hints: how every format writes a family, beyond what
/// defines it. They cost nothing on the update path (only renders read
/// them). Recorded at the family's first registration; a later
/// registration with other hints gets the family as first registered
/// (see docs/ARCHITECTURE.md, "Exposition hints").
///
/// ```
/// use shmetrics_core::{Created, FamilyDesc, Hints, Kind};
/// // What nginx-lua-prometheus and PromPHP serve.
/// let h = FamilyDesc::new("latency", Kind::Histogram)
///     .buckets(&[1.0, 5.0, 10.0])
///     .hints(Hints { short_bounds: true, created: Created::Never, text_only: true, ..Hints::default() });
/// # let _ = h;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hints {
    /// Bucket bounds and quantiles in their shortest round-trip form
    /// (`le="1"`, `le="0.25"`), as PromPHP, nginx-lua-prometheus and
    /// client_ruby's Integer bounds write them, instead of the canonical
    /// OpenMetrics form (`le="1.0"`, the default, as client_python and
    /// client_golang).
    pub short_bounds: bool,
    /// `_created` series.
    pub created: Created,
    /// The library served the Prometheus text format 0.0.4 only (PromPHP,
    /// nginx-lua-prometheus, client_ruby): an exporter whose page holds
    /// such a family answers in that format whenever the scraper accepts
    /// it, rather than in OpenMetrics or protobuf (which would add
    /// `_total` to counters named without it).
    pub text_only: bool,
    /// For a gauge: the OpenMetrics type it stands for, if not `gauge`
    /// (prometheus_client's `Info` and `Enum`, which it keeps as gauges).
    /// Only OpenMetrics has these types; the text and protobuf formats
    /// write such a family as the gauge it is, as prometheus_client's
    /// text format does.
    pub openmetrics_type: Option<OpenMetricsType>,
}

/// An OpenMetrics type a gauge family may be written as
/// ([`Hints::openmetrics_type`]). Its samples are the gauge's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpenMetricsType {
    /// `info`: the family's name ends in `_info`, which OpenMetrics
    /// leaves out of the metric family's name (`# TYPE build info`, the
    /// sample `build_info{version="1.2"} 1`), as prometheus_client's
    /// `Info`.
    Info,
    /// `stateset`: one label is named as the family, one series per
    /// state valued 1 or 0, as prometheus_client's `Enum`.
    StateSet,
}

impl OpenMetricsType {
    /// The name in `# TYPE` lines.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenMetricsType::Info => "info",
            OpenMetricsType::StateSet => "stateset",
        }
    }
}

/// Bits of the family record's `hints` word (bit 0: `name_as_given`).
pub(crate) mod hint_bits {
    pub const NAME_AS_GIVEN: u32 = 1;
    pub const SHORT_BOUNDS: u32 = 1 << 1;
    pub const CREATED_NEVER: u32 = 1 << 2;
    pub const CREATED_EVERY_FORMAT: u32 = 1 << 3;
    pub const TEXT_ONLY: u32 = 1 << 4;
    pub const OM_INFO: u32 = 1 << 5;
    pub const OM_STATESET: u32 = 1 << 6;
}

impl Hints {
    /// The hints as the family record stores them (without bit 0).
    pub(crate) fn bits(self) -> u32 {
        use hint_bits::*;
        let created = match self.created {
            Created::OpenMetrics => 0,
            Created::Never => CREATED_NEVER,
            Created::EveryFormat => CREATED_EVERY_FORMAT,
        };
        let om_type = match self.openmetrics_type {
            None => 0,
            Some(OpenMetricsType::Info) => OM_INFO,
            Some(OpenMetricsType::StateSet) => OM_STATESET,
        };
        (u32::from(self.short_bounds) * SHORT_BOUNDS)
            | created
            | (u32::from(self.text_only) * TEXT_ONLY)
            | om_type
    }

    /// The hints of a stored word (unknown bits ignored).
    pub(crate) fn from_bits(bits: u32) -> Hints {
        use hint_bits::*;
        let created = if bits & CREATED_NEVER != 0 {
            Created::Never
        } else if bits & CREATED_EVERY_FORMAT != 0 {
            Created::EveryFormat
        } else {
            Created::OpenMetrics
        };
        let openmetrics_type = if bits & OM_INFO != 0 {
            Some(OpenMetricsType::Info)
        } else if bits & OM_STATESET != 0 {
            Some(OpenMetricsType::StateSet)
        } else {
            None
        };
        Hints {
            short_bounds: bits & SHORT_BOUNDS != 0,
            created,
            text_only: bits & TEXT_ONLY != 0,
            openmetrics_type,
        }
    }
}

/// The shortest series TTL: the store's clock for it ticks every few
/// milliseconds.
pub const MIN_TTL: Duration = Duration::from_millis(100);
/// The longest series TTL (about 49 days).
pub const MAX_TTL: Duration = Duration::from_millis(u32::MAX as u64);

impl FamilyDesc {
    /// A family with no help, no labels and default options.
    pub fn new(name: impl Into<String>, kind: Kind) -> FamilyDesc {
        FamilyDesc {
            name: name.into(),
            help: String::new(),
            kind,
            label_names: Vec::new(),
            unit: String::new(),
            buckets: Vec::new(),
            native: None,
            gauge_mode: GaugeMode::default(),
            summary: SummaryOpts::default(),
            max_series: 0,
            exemplars: false,
            ttl: None,
            name_as_given: false,
            name_rules: NameRules::Utf8,
            hints: Hints::default(),
        }
    }

    /// Sets the help text.
    pub fn help(mut self, help: impl Into<String>) -> FamilyDesc {
        self.help = help.into();
        self
    }

    /// Sets the label names.
    pub fn labels(mut self, names: &[&str]) -> FamilyDesc {
        self.label_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Sets the histogram buckets.
    pub fn buckets(mut self, buckets: &[f64]) -> FamilyDesc {
        self.buckets = buckets.to_vec();
        self
    }

    /// Gives a histogram native (exponential) buckets. Without classic
    /// [`FamilyDesc::buckets`] it is then a native-only histogram.
    ///
    /// ```
    /// use shmetrics_core::{FamilyDesc, Kind, NativeOpts};
    /// let latency = FamilyDesc::new("rpc_seconds", Kind::Histogram).native(NativeOpts::default());
    /// let both = FamilyDesc::new("rpc_seconds", Kind::Histogram)
    ///     .buckets(&[0.1, 1.0])
    ///     .native(NativeOpts { max_buckets: 100, ..NativeOpts::default() });
    /// # let _ = (latency, both);
    /// ```
    pub fn native(mut self, opts: NativeOpts) -> FamilyDesc {
        self.native = Some(opts);
        self
    }

    /// Sets the gauge mode.
    pub fn gauge_mode(mut self, mode: GaugeMode) -> FamilyDesc {
        self.gauge_mode = mode;
        self
    }

    /// Sets the unit.
    pub fn unit(mut self, unit: impl Into<String>) -> FamilyDesc {
        self.unit = unit.into();
        self
    }

    /// Sets a summary's quantiles.
    pub fn quantiles(mut self, quantiles: &[f64]) -> FamilyDesc {
        self.summary.quantiles = quantiles.to_vec();
        self
    }

    /// Sets a summary's quantile window.
    pub fn max_age(mut self, max_age: Duration, age_buckets: u32) -> FamilyDesc {
        self.summary.max_age = max_age;
        self.summary.age_buckets = age_buckets;
        self
    }

    /// Keeps exemplars (counters and histograms with classic buckets):
    /// [`crate::Store::counter_add_with_exemplar`] and
    /// [`crate::Store::observe_with_exemplar`] then record, in each
    /// process, the latest exemplar of each counter series or histogram
    /// bucket, and a snapshot shows the latest over all processes
    /// ([`crate::SeriesView::exemplars`]).
    ///
    /// Each exemplar place costs every writer one integer cell and
    /// 68 sketch cells (544 bytes) of address space, which only a
    /// writer that records an exemplar there touches.
    ///
    /// ```
    /// use shmetrics_core::{FamilyDesc, Kind};
    /// let requests = FamilyDesc::new("requests", Kind::Counter).exemplars(true);
    /// # let _ = requests;
    /// ```
    pub fn exemplars(mut self, on: bool) -> FamilyDesc {
        self.exemplars = on;
        self
    }

    /// Makes series expire: a series that no process updated for `ttl`
    /// is no longer exported, and its record and cells go to the
    /// family's next new series, so label sets that come and go (per
    /// user, per upstream, per pod) do not fill the store. A later update
    /// of the same labels starts a new series from zero, as after
    /// [`crate::Store::delete`]. Handles of an expired series fail with
    /// [`crate::ErrorKind::StaleHandle`]: look the series up again.
    ///
    /// Creating a series counts as an update. Each update of a series
    /// with a TTL also records its time, and pins the writer's slot while
    /// it runs, so that expiry never hands cells to a new series while an
    /// update may still land in them: that costs two more atomic
    /// operations and a read of the coarse clock per update (see
    /// `benches/`). Between [`MIN_TTL`] and [`MAX_TTL`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use shmetrics_core::{FamilyDesc, Kind};
    /// let by_user = FamilyDesc::new("user_requests", Kind::Counter)
    ///     .labels(&["user"])
    ///     .ttl(Duration::from_secs(600));
    /// # let _ = by_user;
    /// ```
    pub fn ttl(mut self, ttl: Duration) -> FamilyDesc {
        self.ttl = Some(ttl);
        self
    }

    /// Exposes a counter under its name as given in the Prometheus text
    /// and protobuf formats: `requests` stays `requests` (not
    /// `requests_total`), `requests_total` stays `requests_total`.
    /// OpenMetrics still names the samples `requests_total`. A counter
    /// named so and one named the default way are different definitions
    /// (registering both raises a conflict). Without effect on other
    /// types.
    ///
    /// ```
    /// use shmetrics_core::{FamilyDesc, Kind};
    /// let status = FamilyDesc::new("http_status", Kind::Counter).name_as_given();
    /// # let _ = status;
    /// ```
    pub fn name_as_given(mut self) -> FamilyDesc {
        self.name_as_given = true;
        self
    }

    /// The name the store keeps this family under, by which
    /// [`crate::Snapshot::family`] finds it: a counter's `_total` is taken
    /// off (unless its unit is `total`).
    ///
    /// # Errors
    /// As [`crate::Store::register`] for a bad definition.
    pub fn stored_name(&self) -> Result<String> {
        Ok(self.normalized()?.name)
    }

    /// Sets the exposition hints (see [`Hints`]).
    pub fn hints(mut self, hints: Hints) -> FamilyDesc {
        self.hints = hints;
        self
    }

    /// Sets whether the family gets `_created` series
    /// ([`Created::OpenMetrics`] if true, [`Created::Never`] if false).
    pub fn created(mut self, on: bool) -> FamilyDesc {
        self.hints.created = if on {
            Created::OpenMetrics
        } else {
            Created::Never
        };
        self
    }

    /// Sets which names registration takes: [`NameRules::Legacy`] refuses
    /// metric and label names outside the legacy character sets, as
    /// PromPHP, nginx-lua-prometheus and Ruby's prometheus-client do.
    /// Only a check: a family registered under either rules is the same
    /// family.
    pub fn name_rules(mut self, rules: NameRules) -> FamilyDesc {
        self.name_rules = rules;
        self
    }

    /// Sets the family's own series limit.
    pub fn max_series(mut self, n: u32) -> FamilyDesc {
        self.max_series = n;
        self
    }

    /// Checks the definition and returns it in canonical form: the counter
    /// `_total` suffix stripped (`name_as_given` then left true only for a
    /// counter exposed without it; kept for the unit `total`) and default
    /// buckets filled in.
    pub(crate) fn normalized(&self) -> Result<FamilyDesc> {
        let mut d = self.clone();
        d.name_as_given &= d.kind == Kind::Counter;
        // Native buckets exist only in the protobuf format: a family that
        // has them never holds the page to the text format.
        d.hints.text_only &= d.native.is_none();
        // A counter of unit `total` keeps its name (`requests_total`, whose
        // samples are `requests_total_total`), as prometheus_client names
        // it: stripped, the name could not end in its unit.
        if d.kind == Kind::Counter && d.unit != "total" {
            if let Some(stripped) = d.name.strip_suffix("_total") {
                d.name = stripped.to_string();
                d.name_as_given = false;
            }
        }
        d.check_name()?;
        d.check_labels()?;
        d.normalize_buckets()?;
        d.check_summary()?;
        d.check_kind_options()?;
        if let Some(ttl) = d.ttl {
            if !(MIN_TTL..=MAX_TTL).contains(&ttl) {
                return Err(options(format!(
                    "a series TTL must be between {MIN_TTL:?} and {MAX_TTL:?}, got {ttl:?}"
                )));
            }
            // Whole milliseconds, as stored.
            d.ttl = Some(Duration::from_millis(ttl.as_millis() as u64));
        }
        Ok(d)
    }

    /// The name, and the unit it must end in.
    fn check_name(&self) -> Result<()> {
        self.name_rules.check_metric_name(&self.name)?;
        if !self.unit.is_empty() {
            check_unit_chars(&self.unit)
                .map_err(|_| invalid(format!("unit {:?} must match [a-zA-Z0-9_]+", self.unit)))?;
            if !self.name.ends_with(&format!("_{}", self.unit)) {
                return Err(invalid(format!(
                    "metric name {:?} must end in \"_{}\" when the unit is {:?}",
                    self.name, self.unit, self.unit
                )));
            }
        }
        Ok(())
    }

    /// The label names: valid, not reserved for the type, none twice.
    fn check_labels(&self) -> Result<()> {
        if self.label_names.len() > MAX_LABELS {
            return Err(invalid(format!(
                "at most {MAX_LABELS} label names are allowed"
            )));
        }
        for (i, l) in self.label_names.iter().enumerate() {
            self.name_rules.check_label_name(l)?;
            // As scrapers without UTF-8 see it: `l.e` would be a second
            // `le` there.
            let seen = underscored(l, false);
            let reserved = match self.kind {
                Kind::Histogram => seen == "le",
                Kind::Summary => seen == "quantile",
                Kind::Gauge => self.gauge_mode.per_process() && seen == PID_LABEL,
                Kind::Counter => false,
            };
            if reserved || seen == OVERFLOW_LABEL {
                return Err(invalid(format!(
                    "label name {l:?} is reserved for {} families",
                    self.kind.as_str()
                )));
            }
            if self.label_names[..i].contains(l) {
                return Err(invalid(format!("label name {l:?} is given twice")));
            }
            if let Some(other) = self.label_names[..i]
                .iter()
                .find(|o| underscored(o, false) == seen)
            {
                return Err(invalid(format!(
                    "label names {other:?} and {l:?} are both {seen:?} to scrapers that do not \
                     take UTF-8 names (escaping=underscores): choose another name for one of them"
                )));
            }
        }
        Ok(())
    }

    /// A histogram's classic bucket bounds (the default ones if it has
    /// neither classic nor native buckets, without a final `+Inf`); no
    /// other type takes bounds.
    fn normalize_buckets(&mut self) -> Result<()> {
        match self.kind {
            Kind::Histogram => {
                if let Some(n) = &self.native {
                    check_native(n)?;
                }
                if self.buckets.is_empty() && self.native.is_none() {
                    self.buckets = DEFAULT_BUCKETS.to_vec();
                }
                if self.buckets.last() == Some(&f64::INFINITY) {
                    self.buckets.pop();
                }
                check_increasing(&self.buckets, "bucket bounds")?;
                if self.buckets.is_empty() && self.native.is_none() {
                    return Err(options(
                        "a histogram needs at least one finite bucket bound",
                    ));
                }
                if self.buckets.len() > MAX_BUCKETS {
                    return Err(options(format!(
                        "at most {MAX_BUCKETS} buckets are allowed"
                    )));
                }
            }
            _ if !self.buckets.is_empty() => {
                return Err(options(format!(
                    "buckets are only for histograms, not {}s",
                    self.kind.as_str()
                )))
            }
            _ => {}
        }
        Ok(())
    }

    /// A summary's quantiles and window; no other type takes them.
    fn check_summary(&self) -> Result<()> {
        if self.kind == Kind::Summary {
            check_increasing(&self.summary.quantiles, "quantiles")?;
            if self
                .summary
                .quantiles
                .iter()
                .any(|q| !(0.0..=1.0).contains(q))
            {
                return Err(options("quantiles must lie in [0, 1]"));
            }
            if self.summary.quantiles.len() > MAX_QUANTILES {
                return Err(options(format!(
                    "at most {MAX_QUANTILES} quantiles are allowed"
                )));
            }
            if self.summary.age_buckets == 0 || self.summary.max_age.is_zero() {
                return Err(options("summary max_age and age_buckets must be positive"));
            }
            if self.summary.age_buckets > MAX_AGE_BUCKETS {
                return Err(options(format!(
                    "at most {MAX_AGE_BUCKETS} age buckets are allowed, got {}",
                    self.summary.age_buckets
                )));
            }
            let period_ms = self.summary.max_age.as_millis() / u128::from(self.summary.age_buckets);
            if period_ms == 0 || period_ms > u128::from(u32::MAX) {
                return Err(options(format!(
                    "summary max_age / age_buckets must be between 1 ms and 49 days, got {:?} / {}",
                    self.summary.max_age, self.summary.age_buckets
                )));
            }
        } else if self.summary != SummaryOpts::default() {
            return Err(options("summary options are only for summaries"));
        }
        Ok(())
    }

    /// Native buckets, exemplars and gauge modes only where they apply.
    fn check_kind_options(&self) -> Result<()> {
        if self.kind != Kind::Histogram && self.native.is_some() {
            return Err(options(format!(
                "native buckets are only for histograms, not {}s",
                self.kind.as_str()
            )));
        }
        if self.exemplars && !matches!(self.kind, Kind::Counter | Kind::Histogram) {
            return Err(options(format!(
                "exemplars are only for counters and histograms, not {}s",
                self.kind.as_str()
            )));
        }
        if self.exemplars && self.kind == Kind::Histogram && self.buckets.is_empty() {
            return Err(options(
                "exemplars of a histogram belong to its classic buckets; a native-only \
                 histogram has none (give it classic buckets too)",
            ));
        }
        if self.kind != Kind::Gauge && self.gauge_mode != GaugeMode::default() {
            return Err(options("a gauge mode is only for gauges"));
        }
        self.check_openmetrics_type()
    }

    /// An OpenMetrics type other than `gauge` only for a gauge that can
    /// be written as one: an info's name ends in `_info`, a state set has
    /// a label named as the family.
    fn check_openmetrics_type(&self) -> Result<()> {
        let Some(t) = self.hints.openmetrics_type else {
            return Ok(());
        };
        if self.kind != Kind::Gauge {
            return Err(options(format!(
                "only a gauge may be written as an OpenMetrics {}, not a {}",
                t.as_str(),
                self.kind.as_str()
            )));
        }
        let fits = match t {
            OpenMetricsType::Info => {
                self.name.len() > "_info".len() && self.name.ends_with("_info")
            }
            OpenMetricsType::StateSet => self.label_names.contains(&self.name),
        };
        if !fits {
            return Err(options(match t {
                OpenMetricsType::Info => format!(
                    "an OpenMetrics info's name must end in \"_info\", got {:?}",
                    self.name
                ),
                OpenMetricsType::StateSet => format!(
                    "an OpenMetrics state set needs a label named as the family, {:?}",
                    self.name
                ),
            }));
        }
        Ok(())
    }
}

fn check_native(n: &NativeOpts) -> Result<()> {
    if !(n.bucket_factor > 1.0 && n.bucket_factor.is_finite()) {
        return Err(options(format!(
            "a native histogram's bucket factor must be finite and greater than 1, got {}",
            n.bucket_factor
        )));
    }
    if !(n.zero_threshold >= 0.0 && n.zero_threshold.is_finite()) {
        return Err(options(format!(
            "a native histogram's zero threshold must be finite and not negative, got {}",
            n.zero_threshold
        )));
    }
    Ok(())
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidName, msg)
}

fn options(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOptions, msg)
}

fn check_increasing(v: &[f64], what: &str) -> Result<()> {
    if v.iter().any(|x| x.is_nan()) {
        return Err(options(format!("{what} must not be NaN")));
    }
    if v.windows(2).any(|w| w[0] >= w[1]) {
        return Err(options(format!(
            "{what} must be strictly increasing, got {v:?}"
        )));
    }
    Ok(())
}

/// Checks a unit against `[a-zA-Z_][a-zA-Z0-9_]*`.
fn check_unit_chars(unit: &str) -> std::result::Result<(), ()> {
    if is_legacy_label_name(unit) {
        Ok(())
    } else {
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names() {
        let d = FamilyDesc::new("http.server.requests_total", Kind::Counter)
            .labels(&["http.method", "花火"])
            .normalized()
            .unwrap();
        assert_eq!(d.name, "http.server.requests");
        assert_eq!(d.label_names, ["http.method", "花火"]);
        for bad in ["", "a\0"] {
            let e = FamilyDesc::new(bad, Kind::Gauge).normalized().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidName, "{bad:?}");
        }
    }

    #[test]
    fn label_names_alike_when_underscored() {
        // A scraper without UTF-8 would see `a_b` twice.
        let e = FamilyDesc::new("g", Kind::Gauge)
            .labels(&["a.b", "a_b"])
            .normalized()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidName);
        assert!(e.to_string().contains("a_b"), "{e}");
        // ... and `le` where a histogram has its own.
        let e = FamilyDesc::new("h", Kind::Histogram)
            .labels(&["shmetrics.overflow"])
            .normalized()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidName);
    }

    #[test]
    fn counter_total_is_stripped() {
        let d = FamilyDesc::new("reqs_total", Kind::Counter)
            .normalized()
            .unwrap();
        assert_eq!(d.name, "reqs");
        let g = FamilyDesc::new("reqs_total", Kind::Gauge)
            .normalized()
            .unwrap();
        assert_eq!(g.name, "reqs_total");
        // The unit `total`: the name keeps it (samples `reqs_total_total`).
        let t = FamilyDesc::new("reqs_total", Kind::Counter)
            .unit("total")
            .normalized()
            .unwrap();
        assert_eq!(t.name, "reqs_total");
        let bare = FamilyDesc::new("reqs", Kind::Counter).unit("total");
        assert_eq!(
            bare.normalized().unwrap_err().kind(),
            ErrorKind::InvalidName
        );
    }

    #[test]
    fn name_as_given_is_kept_only_for_counters_without_total() {
        let norm = |name: &str, kind| {
            let d = FamilyDesc::new(name, kind).name_as_given();
            let d = d.normalized().unwrap();
            (d.name, d.name_as_given)
        };
        assert_eq!(norm("reqs", Kind::Counter), ("reqs".into(), true));
        // `reqs_total` as given is what the default exposes anyway.
        assert_eq!(norm("reqs_total", Kind::Counter), ("reqs".into(), false));
        assert_eq!(norm("temp", Kind::Gauge), ("temp".into(), false));
    }

    #[test]
    fn reserved_labels() {
        let h = FamilyDesc::new("h", Kind::Histogram).labels(&["le"]);
        assert_eq!(h.normalized().unwrap_err().kind(), ErrorKind::InvalidName);
        let s = FamilyDesc::new("s", Kind::Summary).labels(&["quantile"]);
        assert_eq!(s.normalized().unwrap_err().kind(), ErrorKind::InvalidName);
        // `le` is fine outside histograms.
        assert!(FamilyDesc::new("c", Kind::Counter)
            .labels(&["le"])
            .normalized()
            .is_ok());
        let g = FamilyDesc::new("g", Kind::Gauge)
            .labels(&["pid"])
            .gauge_mode(GaugeMode::All);
        assert_eq!(g.normalized().unwrap_err().kind(), ErrorKind::InvalidName);
        assert!(FamilyDesc::new("g", Kind::Gauge)
            .labels(&["pid"])
            .normalized()
            .is_ok());
        let o = FamilyDesc::new("c", Kind::Counter).labels(&[OVERFLOW_LABEL]);
        assert_eq!(o.normalized().unwrap_err().kind(), ErrorKind::InvalidName);
        let dup = FamilyDesc::new("c", Kind::Counter).labels(&["a", "a"]);
        assert_eq!(dup.normalized().unwrap_err().kind(), ErrorKind::InvalidName);
    }

    #[test]
    fn buckets() {
        let d = FamilyDesc::new("h", Kind::Histogram).normalized().unwrap();
        assert_eq!(d.buckets, DEFAULT_BUCKETS);
        let inf = FamilyDesc::new("h", Kind::Histogram).buckets(&[1.0, f64::INFINITY]);
        assert_eq!(inf.normalized().unwrap().buckets, vec![1.0]);
        for bad in [&[2.0, 1.0][..], &[1.0, 1.0], &[f64::NAN], &[f64::INFINITY]] {
            let e = FamilyDesc::new("h", Kind::Histogram)
                .buckets(bad)
                .normalized()
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidOptions, "{bad:?}");
        }
        let c = FamilyDesc::new("c", Kind::Counter).buckets(&[1.0]);
        assert_eq!(
            c.normalized().unwrap_err().kind(),
            ErrorKind::InvalidOptions
        );
    }

    #[test]
    fn units() {
        assert!(FamilyDesc::new("size_bytes", Kind::Gauge)
            .unit("bytes")
            .normalized()
            .is_ok());
        let e = FamilyDesc::new("size", Kind::Gauge)
            .unit("bytes")
            .normalized()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidName);
    }

    #[test]
    fn gauge_mode_names_round_trip() {
        for m in GaugeMode::ALL {
            assert_eq!(GaugeMode::parse(m.as_str()), Some(m));
            assert_eq!(GaugeMode::from_u32(m as u32), Some(m));
        }
    }
}

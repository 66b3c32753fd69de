//! The data model every other module shares: a family's metric type, a
//! gauge's mode and a summary's window. Plain types that the handles
//! ([`crate::Series`] carries all three), the errors (which carry an
//! overflow series), the family definitions and the window's update code
//! all name, so they live here, below all of those, and this module names
//! no other of the crate: the modules above it form no cycle
//! (`scripts/import-cycles.py`).

/// The metric type of a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Kind {
    /// A monotonic counter.
    Counter = 1,
    /// A value that goes up and down.
    Gauge = 2,
    /// A classic histogram with fixed bucket bounds.
    Histogram = 3,
    /// A summary: `_count`, `_sum` and, with quantiles, their estimates over
    /// a sliding window.
    Summary = 4,
}

impl Kind {
    /// The kind with this numeric value (its `repr(u32)`), if any.
    pub fn from_u32(v: u32) -> Option<Kind> {
        Some(match v {
            1 => Kind::Counter,
            2 => Kind::Gauge,
            3 => Kind::Histogram,
            4 => Kind::Summary,
            _ => return None,
        })
    }

    /// The lower-case name used in `# TYPE` lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
        }
    }

    /// The suffixes of the names a family of this kind named `x` takes in
    /// the expositions: its metric family name (`x`; a counter's is
    /// `x_total` in the Prometheus text format), and its sample names.
    /// No two families of a store share one (see [`crate::Store::register`]).
    pub(crate) fn exposed_suffixes(self) -> &'static [&'static str] {
        match self {
            Kind::Counter => &["", "_total", "_created"],
            Kind::Gauge => &[""],
            Kind::Histogram => &["", "_bucket", "_count", "_sum", "_created"],
            Kind::Summary => &["", "_count", "_sum", "_created"],
        }
    }
}

/// Every suffix of [`Kind::exposed_suffixes`], of any kind.
pub(crate) const EXPOSED_SUFFIXES: [&str; 6] =
    ["", "_total", "_created", "_bucket", "_count", "_sum"];

/// How a gauge's per-process values are combined, as in prometheus_client's
/// multiprocess mode, plus `Shared`.
///
/// Modes starting with `Live` count only processes that are alive. The
/// others also count processes that died, until a new process takes over
/// the dead one's writer slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum GaugeMode {
    /// One series per process, labelled `pid`.
    All = 1,
    /// One series per live process, labelled `pid`.
    LiveAll = 2,
    /// The sum over all processes.
    Sum = 3,
    /// The sum over live processes (the usual choice for in-flight gauges).
    #[default]
    LiveSum = 4,
    /// The maximum over all processes.
    Max = 5,
    /// The maximum over live processes.
    LiveMax = 6,
    /// The minimum over all processes.
    Min = 7,
    /// The minimum over live processes.
    LiveMin = 8,
    /// The value most recently set by any process.
    MostRecent = 9,
    /// The value most recently set by a live process.
    LiveMostRecent = 10,
    /// One value shared by all processes: `set` overwrites it, `inc` adds to
    /// it. This is what PromPHP's APCu storage and nginx-lua-prometheus do.
    Shared = 11,
    /// The mean over live processes that set the gauge: prom-client's
    /// `average` aggregator (for event-loop lag, say).
    LiveAverage = 12,
}

impl GaugeMode {
    /// All modes, for iteration in tests and bindings.
    pub const ALL: [GaugeMode; 12] = [
        GaugeMode::All,
        GaugeMode::LiveAll,
        GaugeMode::Sum,
        GaugeMode::LiveSum,
        GaugeMode::Max,
        GaugeMode::LiveMax,
        GaugeMode::Min,
        GaugeMode::LiveMin,
        GaugeMode::MostRecent,
        GaugeMode::LiveMostRecent,
        GaugeMode::Shared,
        GaugeMode::LiveAverage,
    ];

    /// The mode with this numeric value (its `repr(u32)`), if any.
    pub fn from_u32(v: u32) -> Option<GaugeMode> {
        Some(match v {
            1 => GaugeMode::All,
            2 => GaugeMode::LiveAll,
            3 => GaugeMode::Sum,
            4 => GaugeMode::LiveSum,
            5 => GaugeMode::Max,
            6 => GaugeMode::LiveMax,
            7 => GaugeMode::Min,
            8 => GaugeMode::LiveMin,
            9 => GaugeMode::MostRecent,
            10 => GaugeMode::LiveMostRecent,
            11 => GaugeMode::Shared,
            12 => GaugeMode::LiveAverage,
            _ => return None,
        })
    }

    /// The prometheus_client name of the mode (`"livesum"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            GaugeMode::All => "all",
            GaugeMode::LiveAll => "liveall",
            GaugeMode::Sum => "sum",
            GaugeMode::LiveSum => "livesum",
            GaugeMode::Max => "max",
            GaugeMode::LiveMax => "livemax",
            GaugeMode::Min => "min",
            GaugeMode::LiveMin => "livemin",
            GaugeMode::MostRecent => "mostrecent",
            GaugeMode::LiveMostRecent => "livemostrecent",
            GaugeMode::Shared => "shared",
            GaugeMode::LiveAverage => "liveaverage",
        }
    }

    /// Parses a prometheus_client mode name.
    pub fn parse(s: &str) -> Option<GaugeMode> {
        GaugeMode::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Whether dead processes' values are left out.
    pub fn live_only(self) -> bool {
        matches!(
            self,
            GaugeMode::LiveAll
                | GaugeMode::LiveSum
                | GaugeMode::LiveMax
                | GaugeMode::LiveMin
                | GaugeMode::LiveMostRecent
                | GaugeMode::LiveAverage
        )
    }

    /// Whether the mode emits one series per process with a `pid` label.
    pub fn per_process(self) -> bool {
        matches!(self, GaugeMode::All | GaugeMode::LiveAll)
    }
}

/// A family's window: how many sets, and how long each period is. Its
/// update and read code is in `window.rs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window {
    pub age_buckets: u32,
    pub period_ms: u32,
}

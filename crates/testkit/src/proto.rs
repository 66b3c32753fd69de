//! What the worker and the tests agree on: family definitions, label
//! values and the meaning of each ack word.

use shmetrics_core::{FamilyDesc, GaugeMode, Kind, NativeOpts};

/// Ack words.
pub mod word {
    /// Acknowledged counter increments.
    pub const COUNTER: usize = 0;
    /// Acknowledged histogram observations.
    pub const HIST: usize = 1;
    /// Sum of acknowledged observed values, scaled by [`super::SUM_SCALE`].
    pub const HIST_SUM: usize = 2;
    /// Set by the test: the worker stops and exits cleanly.
    pub const STOP: usize = 3;
    /// Set by the worker when its work is done (it then waits for STOP or
    /// its death, or exits, depending on the mode).
    pub const DONE: usize = 4;
    /// The worker's pid.
    pub const PID: usize = 5;
    /// Set by the worker once it holds all its handles.
    pub const READY: usize = 6;
    /// `create` mode: series created and incremented so far (series
    /// `"{id}-{n}"` for every `n` below this value exist); `ttl` mode:
    /// short-lived series added so far.
    pub const CREATED: usize = 7;
    /// `fork` mode: the first child's pid (it updates).
    pub const CHILD_A_PID: usize = 8;
    /// `fork` mode: the first child's acknowledged increments.
    pub const CHILD_A_ACKS: usize = 9;
    /// `fork` mode: the second child's pid (it never updates).
    pub const CHILD_B_PID: usize = 10;
    /// `fork` mode: the children's exit statuses as waitpid reported them,
    /// plus one (0 = not reaped).
    pub const CHILD_A_STATUS: usize = 11;
    /// `fork` mode: see [`CHILD_A_STATUS`].
    pub const CHILD_B_STATUS: usize = 12;
    /// `create` mode: set once the incarnation's own family is registered.
    pub const FAMILY_DONE: usize = 13;
    /// `ttl` mode: updates of a short-lived series after its TTL that
    /// failed as stale (the update expired it, or a sweep had).
    pub const STALE: usize = 14;
}

/// Observed values are multiples of `1 / SUM_SCALE`, so that their sums
/// are exact in f64 and can be acknowledged as integers.
pub const SUM_SCALE: f64 = 4.0;

/// `churn` mode: series per family.
pub const CHURN_SERIES: usize = 1000;
/// `churn` mode: the counter family (labels `a`, `b`).
pub const CHURN_COUNTER: &str = "tk_churn_ops";
/// `churn` mode: the histogram family (label `r`).
pub const CHURN_HIST: &str = "tk_churn_latency";
/// Bucket bounds of the test histograms: 11 bounds, 12 buckets with +Inf.
pub const BUCKETS: [f64; 11] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];
/// Largest observed value (exclusive), before scaling: values spread over
/// every bucket including +Inf.
pub const MAX_OBSERVED: u64 = 2048;

/// The churn counter family.
pub fn churn_counter() -> FamilyDesc {
    FamilyDesc::new(CHURN_COUNTER, Kind::Counter)
        .help("Operations of the churn test.")
        .labels(&["a", "b"])
}

/// The churn histogram family.
pub fn churn_hist() -> FamilyDesc {
    FamilyDesc::new(CHURN_HIST, Kind::Histogram)
        .help("Latency of the churn test.")
        .labels(&["r"])
        .buckets(&BUCKETS)
}

/// Label values of churn counter series `i`.
pub fn churn_counter_labels(i: usize) -> [String; 2] {
    [format!("a{}", i % 25), format!("b{}", i / 25)]
}

/// Label value of churn histogram series `i`.
pub fn churn_hist_label(i: usize) -> String {
    format!("r{i}")
}

/// `observe` mode: the histogram family (label `s`).
pub const OBS_HIST: &str = "tk_obs_latency";
/// `observe` mode: number of series.
pub const OBS_SERIES: usize = 6;

/// The observe-mode histogram family.
pub fn obs_hist() -> FamilyDesc {
    FamilyDesc::new(OBS_HIST, Kind::Histogram)
        .labels(&["s"])
        .buckets(&BUCKETS)
}

/// `summary` mode: the summary family, one series per distribution
/// (label `dist`).
pub const SUMMARY: &str = "tk_summary_seconds";

/// Quantiles the `summary` family reports: from the minimum to the
/// maximum, and the usual ones in between.
pub const SUMMARY_QUANTILES: [f64; 11] =
    [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0];

/// The summary-mode family: a window long enough that no test outlives it.
pub fn summary() -> FamilyDesc {
    FamilyDesc::new(SUMMARY, Kind::Summary)
        .labels(&["dist"])
        .quantiles(&SUMMARY_QUANTILES)
        .max_age(std::time::Duration::from_secs(3600), 5)
}

/// Latency-shaped values, the same for the same distribution and seed:
/// `uniform` (1 ms to 1 s), `lognormal` (median 50 ms, sigma 1) and
/// `bimodal` (70% around 5 ms, 30% around 500 ms). `None` for another
/// name.
pub fn latencies(dist: &str, seed: u64, n: usize) -> Option<Vec<f64>> {
    let mut rng = crate::rng::Rng::new(seed);
    let mut one: Box<dyn FnMut(usize) -> f64> = match dist {
        "uniform" => Box::new(move |_| 0.001 + 0.999 * rng.uniform()),
        "lognormal" => Box::new(move |_| (0.05f64.ln() + rng.normal()).exp()),
        "bimodal" => Box::new(move |i| {
            let mu = if i % 10 < 7 { 0.005f64 } else { 0.5 };
            (mu.ln() + 0.3 * rng.normal()).exp()
        }),
        _ => return None,
    };
    Some((0..n).map(&mut one).collect())
}

/// `native` mode: the native histogram family (no labels).
pub const NATIVE: &str = "tk_native_seconds";

/// The native-mode family: default options (schema 3) but no bucket
/// limit, so that snapshots show every bucket at full resolution.
pub fn native_hist() -> FamilyDesc {
    FamilyDesc::new(NATIVE, Kind::Histogram).native(NativeOpts {
        max_buckets: 0,
        ..NativeOpts::default()
    })
}

/// What a native-mode worker observes: lognormal latencies
/// ([`latencies`]), every 7th negated and every 50th replaced by 0, so
/// that both sides and the zero bucket are used.
pub fn native_values(seed: u64, n: usize) -> Vec<f64> {
    let mut v = latencies("lognormal", seed, n).expect("a known distribution");
    for (i, x) in v.iter_mut().enumerate() {
        if i % 50 == 49 {
            *x = 0.0;
        } else if i % 7 == 6 {
            *x = -*x;
        }
    }
    v
}

/// `exemplars` mode: a counter family with exemplars (no labels).
pub const EXEMPLAR_COUNTER: &str = "tk_exemplar_jobs";
/// `exemplars` mode: a histogram family with exemplars (no labels).
pub const EXEMPLAR_HIST: &str = "tk_exemplar_seconds";

/// The exemplars-mode counter family.
pub fn exemplar_counter() -> FamilyDesc {
    FamilyDesc::new(EXEMPLAR_COUNTER, Kind::Counter).exemplars(true)
}

/// The exemplars-mode histogram family: buckets `1`, `2` and `+Inf`.
pub fn exemplar_hist() -> FamilyDesc {
    FamilyDesc::new(EXEMPLAR_HIST, Kind::Histogram)
        .buckets(&[1.0, 2.0])
        .exemplars(true)
}

/// The trace id an exemplars-mode worker `w` gives its `i`th update.
pub fn exemplar_trace(w: u64, i: u64) -> String {
    format!("w{w}-{i}")
}

/// The value an exemplars-mode observation puts in bucket `b` (0, 1 or
/// 2, the last being `+Inf`).
pub fn exemplar_value(b: u64) -> f64 {
    b as f64 + 0.5
}

/// `incs` mode: the counter family (label `k`, one series `k="x"`).
pub const REUSE_COUNTER: &str = "tk_reuse_incs";

/// The incs-mode counter family.
pub fn reuse_counter() -> FamilyDesc {
    FamilyDesc::new(REUSE_COUNTER, Kind::Counter).labels(&["k"])
}

/// `touch` mode: the counter each worker increments some series of.
pub fn touch_counter() -> FamilyDesc {
    FamilyDesc::new("tk_touch", Kind::Counter).labels(&["k"])
}

/// Whether writer `writer` touches series `k` when each touches `percent`
/// of them: a fixed pseudo-random choice, different for every writer.
pub fn touches(writer: u64, k: u64, percent: u64) -> bool {
    let mut x = (writer << 32 | k).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) % 100 < percent
}

/// `gauge` mode: the family a worker `set`s, for a mode.
pub fn gauge_set_family(mode: GaugeMode) -> FamilyDesc {
    FamilyDesc::new(format!("tk_gauge_set_{}", mode.as_str()), Kind::Gauge)
        .labels(&["g"])
        .gauge_mode(mode)
}

/// `gauge` mode: the family a worker increments (adds to), for a mode.
pub fn gauge_inc_family(mode: GaugeMode) -> FamilyDesc {
    FamilyDesc::new(format!("tk_gauge_inc_{}", mode.as_str()), Kind::Gauge)
        .labels(&["g"])
        .gauge_mode(mode)
}

/// `gauge` mode with `claim=1`: a counter whose increment claims a slot.
pub fn claim_counter() -> FamilyDesc {
    FamilyDesc::new("tk_claim", Kind::Counter)
}

/// `create` mode: the counter family whose series are created (label `k`).
pub const CREATE_COUNTER: &str = "tk_created";

/// The create-mode counter family.
pub fn create_counter() -> FamilyDesc {
    FamilyDesc::new(CREATE_COUNTER, Kind::Counter).labels(&["k"])
}

/// The label value of the `n`-th series created by create-mode incarnation
/// `id`.
pub fn create_label(id: u64, n: u64) -> String {
    format!("{id}-{n}")
}

/// The family that create-mode incarnation `id` registers (registration
/// takes the store lock, too).
pub fn create_family(id: u64) -> FamilyDesc {
    FamilyDesc::new(format!("tk_fam_{id}"), Kind::Gauge)
        .labels(&["x"])
        .gauge_mode(GaugeMode::Sum)
}

/// `fork` mode: the counter family (no labels).
pub fn fork_counter() -> FamilyDesc {
    FamilyDesc::new("tk_fork_incs", Kind::Counter)
}

/// `ttl` mode: the counter family of series kept busy (label `k`), with a
/// TTL: its series never stay idle that long, so none may expire.
pub const TTL_HOT: &str = "tk_ttl_hot";
/// `ttl` mode: series of the busy family.
pub const TTL_HOT_SERIES: usize = 8;
/// `ttl` mode: the histogram family of short-lived series (label `id`,
/// one series per worker incarnation and step), with a short TTL.
pub const TTL_CHURN: &str = "tk_ttl_churn";
/// The short-lived family's TTL.
pub const TTL_CHURN_MS: u64 = 200;
/// The short-lived family's series limit: far fewer than a kill storm
/// creates, so that it runs only if expired records are reused.
pub const TTL_CHURN_MAX: u32 = 512;
/// How often a `ttl`-mode worker adds a short-lived series.
pub const TTL_CHURN_EVERY_MS: u64 = 20;
/// How many series later a `ttl`-mode worker updates a short-lived
/// series once more: 15 x 20 ms, past its TTL.
pub const TTL_CHURN_LATE: usize = 15;

/// The ttl-mode busy counter family.
pub fn ttl_hot() -> FamilyDesc {
    FamilyDesc::new(TTL_HOT, Kind::Counter)
        .labels(&["k"])
        .ttl(std::time::Duration::from_secs(5))
}

/// The ttl-mode short-lived histogram family.
pub fn ttl_churn() -> FamilyDesc {
    FamilyDesc::new(TTL_CHURN, Kind::Histogram)
        .labels(&["id"])
        .buckets(&BUCKETS)
        .max_series(TTL_CHURN_MAX)
        .ttl(std::time::Duration::from_millis(TTL_CHURN_MS))
}

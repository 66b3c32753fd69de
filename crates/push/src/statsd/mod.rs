//! StatsD and DogStatsD from a shmetrics store.
//!
//! Workers aggregate for free: they only add into shared memory. A
//! [`Flusher`] in the exporter takes a snapshot every interval and sends
//! one line per series (a few per histogram) in as few datagrams as fit,
//! over UDP or (DogStatsD) a Unix datagram socket.
//!
//! # Lines
//!
//! | store | `statsd` flavor | `dogstatsd` flavor |
//! |---|---|---|
//! | counter | `name:delta\|c` | `name:delta\|c\|#k:v` |
//! | gauge | `name:value\|g` | `name:value\|g\|#k:v` |
//! | histogram | `name_count:delta\|c`, `name_sum:delta\|c` | `name:b1:b2\|d\|@rate\|#k:v` |
//! | summary | `name_count:delta\|c`, `name_sum:delta\|c` | `name:mean\|d\|@rate\|#k:v` |
//!
//! - **Names** are the family's, after the prefix, with any character but
//!   ASCII letters, digits and `_` (that is, `:`) made `_`. A counter has
//!   no `_total`.
//! - **Labels.** DogStatsD gets them as tags, `|#name:value,...` in the
//!   family's order, with characters outside letters, digits, `_ - . /`
//!   (and `:` in values) made `_`. StatsD has no tags: labels are folded
//!   into the name as `.name.value` pairs, each part with characters
//!   outside ASCII letters, digits, `_` and `-` made `_` (so `.` in a value
//!   cannot add a level): `http_requests.route._api.code.200`. A histogram's
//!   suffix comes before them: `latency_count.route._api`. Labels with an
//!   empty value are left out; `pid` (gauge modes `all`/`liveall`) and
//!   `shmetrics_overflow` are labels like the others.
//! - **Values** are written as integers when they are (`3`), otherwise in
//!   the shortest form that reads back as the same number (`0.25`,
//!   `1e-7`). NaN and infinities cannot be sent: they are left out and
//!   counted.
//! - **Negative gauges.** StatsD reads a leading sign as relative to the
//!   current value, so a negative gauge is sent as `name:0|g` and then
//!   `name:-5|g`, in the same datagram. DogStatsD gets the same two lines
//!   (harmless there, and right for relays that follow StatsD).
//! - **Distributions** (DogStatsD). Each bucket's new observations are
//!   represented by the bucket's *upper bound* (`le`; `+Inf` by the highest
//!   finite bound): a quantile the agent computes is then never below the
//!   one Prometheus' `histogram_quantile` would bound it by, and the value
//!   is exactly one the histogram was declared with. A bucket that gained
//!   `n` observations is one value with sample rate `1/n` (see
//!   [`sample_rate`]): 1000 new observations in the 0.1 bucket are
//!   `:0.1` with `@0.001`. Buckets that gained the same `n` share a line
//!   (value packing: `name:0.1:0.5|d|@0.5`); a line holds as many values
//!   as fit in a datagram, and continues on another line of the same name
//!   and tags. A summary has no buckets: its new observations are
//!   represented by their mean, with rate `1/count`, so that the agent's
//!   count and sum are right. The agent's sum of a histogram is that of
//!   the bounds, not the true sum, which DogStatsD cannot be told.
//! - **Datagrams** hold as many lines as fit in
//!   [`Config::max_datagram`], separated by `\n`, in snapshot order
//!   (families as registered, series as created). A line is never split;
//!   one longer than a datagram is left out and counted.
//!
//! See [`Encoder`] for deltas, resets and the first flush, and
//! [`Flusher`] for timing and errors.

mod config;
mod encode;
mod send;
mod stats;

pub use config::{
    Address, Config, ConfigError, Flavor, DEFAULT_INTERVAL_SECS, DEFAULT_MAX_DATAGRAM,
    MAX_DATAGRAM, MIN_DATAGRAM,
};
pub use encode::{sample_rate, Datagrams, Dropped, Encoder};
pub use send::{Flusher, SendError, Statsd};
pub use stats::Stats;

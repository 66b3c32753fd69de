//! Tests of remote_write against real receivers that the tests start on
//! loopback ports: Debian's `prometheus` (with
//! `--web.enable-remote-write-receiver`) and `victoria-metrics`, fed by
//! the real `shmetrics serve` binary; and the encoded bodies decoded with
//! prost and snap. Tests of StatsD against the real Etsy StatsD (npm's
//! `statsd`, under Debian's `nodejs`), and of DogStatsD against a strict
//! parser of its datagram format, over UDP and a Unix datagram socket.
//! OTLP/HTTP export to a receiver that decodes with the official
//! OpenTelemetry definitions (`it/otlp.rs`).
//!
//! Every receiver these tests use must be installed (`./run-tests`
//! installs them): a missing one fails the test, it never skips.
//!
//! The modules live under `tests/it/` so that Cargo builds one test binary.

#[path = "it/dogstatsd.rs"]
mod dogstatsd;
#[path = "it/encode.rs"]
mod encode;
#[path = "it/etsy.rs"]
mod etsy;
#[path = "it/fallback.rs"]
mod fallback;
#[path = "it/otelcol.rs"]
mod otelcol;
#[path = "it/otlp.rs"]
mod otlp;
#[path = "it/outage.rs"]
mod outage;
#[path = "it/prometheus.rs"]
mod prometheus;
#[path = "it/prometheus3.rs"]
mod prometheus3;
#[path = "it/secured.rs"]
mod secured;
#[path = "it/statsd_util.rs"]
#[allow(dead_code)]
mod statsd_util;
#[path = "it/util.rs"]
#[allow(dead_code)]
mod util;
#[path = "it/victoria.rs"]
mod victoria;

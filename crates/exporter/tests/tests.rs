//! Integration tests of the exporter against real peers: HTTP clients,
//! promtool, prometheus_client's parsers, a real Prometheus server (over
//! HTTP and over HTTPS with basic auth), TLS clients with and without
//! client certificates, writer processes, slow and idle clients, signals.
//!
//! Every tool these tests use must be installed (`./run-tests` installs
//! them): a missing one fails the test, it never skips.
//!
//! The modules live under `tests/it/` so that Cargo builds one test binary.

#[path = "it/auth_flood.rs"]
mod auth_flood;
#[path = "it/clients.rs"]
mod clients;
#[path = "it/concurrent.rs"]
mod concurrent;
#[path = "it/conventions.rs"]
mod conventions;
#[path = "it/deploy.rs"]
mod deploy;
#[path = "it/flood.rs"]
mod flood;
#[path = "it/flood_load.rs"]
mod flood_load;
#[path = "it/formats.rs"]
mod formats;
#[path = "it/prometheus.rs"]
mod prometheus;
#[path = "it/prometheus3.rs"]
mod prometheus3;
#[path = "it/read_only.rs"]
mod read_only;
#[path = "it/signals.rs"]
mod signals;
#[path = "it/status_page.rs"]
mod status_page;
#[path = "it/store_faults.rs"]
mod store_faults;
#[path = "it/store_follow.rs"]
mod store_follow;
#[path = "it/store_later.rs"]
mod store_later;
#[path = "it/store_owner.rs"]
mod store_owner;
#[path = "it/utf8.rs"]
mod utf8;
#[path = "it/util.rs"]
mod util;
#[path = "it/web_config.rs"]
mod web_config;
#[path = "it/wipe_flag.rs"]
mod wipe_flag;

/// Not a test: the body of the worker processes that some tests start
/// (this binary run again with `--exact worker_process`, see
/// [`util::Rerun`]). Without the environment variable, as in a normal
/// `cargo test`, it does nothing.
#[test]
fn worker_process() {
    let Ok(mode) = std::env::var(util::WORKER_MODE) else {
        return;
    };
    let store = std::path::PathBuf::from(std::env::var_os(util::WORKER_STORE).unwrap());
    let arg = std::env::var(util::WORKER_ARG).unwrap_or_default();
    match mode.as_str() {
        "prometheus" => prometheus::worker(&store, &arg),
        "native" => prometheus::native_worker(&store, &arg),
        "churn" => concurrent::worker(&store, &arg),
        other => panic!("unknown worker mode {other:?}"),
    }
}

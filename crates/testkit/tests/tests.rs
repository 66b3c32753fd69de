//! Multi-process tests of the shmetrics store: real worker processes
//! (`shmetrics-testworker`), killed with SIGKILL at random instants.
//!
//! `SHMETRICS_LONG=1` makes the kill storms long (10,000 kills).

mod common;

mod concurrent_read;
mod exemplars;
mod fork;
mod gauge_modes;
mod kill_storm;
mod lock_holder;
mod native_histograms;
mod scrape_during_kills;
mod slot_reuse;
mod sparse_writers;
mod summary_quantiles;
mod ttl_kill_storm;

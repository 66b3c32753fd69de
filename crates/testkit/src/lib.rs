//! The test kit of shmetrics: what every crate's tests share, and the
//! multi-process tests of the store.
//!
//! - [`binary`]: the binaries under test, built once and located;
//! - [`http`]: a small blocking HTTP/1.1 client, free ports;
//! - [`process`]: processes killed on drop, waited for with a deadline;
//! - [`wait`]: polling with a deadline;
//! - [`serve`]: a real `shmetrics serve` on a loopback port;
//! - `server` (feature `exporter`): the exporter in the test process;
//! - [`temp`]: temporary directories and stores;
//! - [`tools`]: the reference tools (promtool);
//! - [`reexec`]: worker processes that are the test binary run again;
//! - [`worker`], [`ack`], [`proto`], [`check`], [`rng`]: the multi-process
//!   tests in `tests/`, which spawn `shmetrics-testworker` processes (this
//!   crate's binary), kill them with SIGKILL at random instants and check
//!   the store afterwards. The worker and the tests talk through an
//!   [`AckFile`]: a small memory-mapped file of atomic counters in which a
//!   worker records each update *after* the store acknowledged it, so
//!   that what the store holds can be compared with what was
//!   acknowledged, whenever the worker died.
//!
//! Every wait in this crate is bounded: when a bound is reached the test
//! fails, it never hangs and never skips.

#![allow(unsafe_code)]

pub mod ack;
pub mod binary;
pub mod check;
pub mod http;
#[cfg(feature = "tls")]
pub mod pki;
pub mod process;
pub mod proto;
pub mod reexec;
pub mod rng;
pub mod serve;
#[cfg(feature = "exporter")]
pub mod server;
pub mod temp;
pub mod tools;
pub mod wait;
pub mod worker;

pub use ack::AckFile;
pub use binary::shmetrics_bin;
pub use serve::Serve;
pub use temp::{create_store, store_with_counter, tempdir, Tmpfs};
pub use wait::{wait_for, PATIENCE};
pub use worker::Worker;

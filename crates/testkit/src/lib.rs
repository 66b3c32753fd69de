//! Shared pieces of the multi-process tests of the shmetrics store.
//!
//! The tests in `tests/` spawn `shmetrics-testworker` processes (this
//! crate's binary), kill them with SIGKILL at random instants and check the
//! store afterwards. The worker and the tests talk through an [`AckFile`]:
//! a small memory-mapped file of atomic counters in which a worker records
//! each update *after* the store acknowledged it, so that what the store
//! holds can be compared with what was acknowledged, whenever the worker
//! died.

#![allow(unsafe_code)]

pub mod ack;
pub mod check;
pub mod proto;
pub mod rng;

pub use ack::AckFile;

//! Updates through a series handle: the hot path. Each is one or two atomic
//! operations in this process's writer slot: no lock, no system call, and
//! no allocation unless the call fails. The `_exemplar` variants also
//! write an exemplar record, and allocate nothing either for up to 16
//! exemplar labels. The update ops (`shmetrics_op`) are here too: the
//! cached calls (`cache.rs`) take them.

use std::panic::catch_unwind;

use shmetrics_core::{Series, Store};

use crate::error::{ffi_body, panicked, shmetrics_result, FfiError};
use crate::ptr;
use crate::types::{shmetrics_series, shmetrics_store, shmetrics_str};

/// The update a cached call makes (`shmetrics_update`'s `op`).
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shmetrics_op {
    /// `shmetrics_counter_add` of `v`.
    SHMETRICS_OP_COUNTER_ADD = 1,
    /// `shmetrics_gauge_set` to `v`.
    SHMETRICS_OP_GAUGE_SET = 2,
    /// `shmetrics_gauge_add` of `v`.
    SHMETRICS_OP_GAUGE_ADD = 3,
    /// `shmetrics_observe` of `v`.
    SHMETRICS_OP_OBSERVE = 4,
    /// `shmetrics_gauge_set_to_current_time`; `v` is ignored.
    SHMETRICS_OP_GAUGE_SET_TO_CURRENT_TIME = 5,
}

/// One of the updates a series handle takes, with its value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    CounterAdd(f64),
    GaugeSet(f64),
    GaugeAdd(f64),
    GaugeSetToCurrentTime,
    Observe(f64),
}

impl Op {
    /// The update `code` (a `shmetrics_op`) of `v`; `None` for an unknown
    /// code.
    #[inline(always)]
    pub(crate) fn new(code: u32, v: f64) -> Option<Op> {
        use shmetrics_op::*;
        Some(match code {
            c if c == SHMETRICS_OP_COUNTER_ADD as u32 => Op::CounterAdd(v),
            c if c == SHMETRICS_OP_GAUGE_SET as u32 => Op::GaugeSet(v),
            c if c == SHMETRICS_OP_GAUGE_ADD as u32 => Op::GaugeAdd(v),
            c if c == SHMETRICS_OP_OBSERVE as u32 => Op::Observe(v),
            c if c == SHMETRICS_OP_GAUGE_SET_TO_CURRENT_TIME as u32 => Op::GaugeSetToCurrentTime,
            _ => return None,
        })
    }

    /// Makes the update on `s`.
    #[inline(always)]
    pub(crate) fn apply(self, st: &Store, s: Series) -> shmetrics_core::Result<()> {
        match self {
            Op::CounterAdd(v) => st.counter_add(s, v),
            Op::GaugeSet(v) => st.gauge_set(s, v),
            Op::GaugeAdd(v) => st.gauge_add(s, v),
            Op::GaugeSetToCurrentTime => st.gauge_set_to_current_time(s),
            Op::Observe(v) => st.observe(s, v),
        }
    }
}

/// Update `code` (a `shmetrics_op`) of `v`.
pub(crate) fn op_of(code: u32, v: f64) -> Result<Op, FfiError> {
    Op::new(code, v).ok_or_else(|| {
        FfiError::Other(
            shmetrics_result::SHMETRICS_INVALID_ARGUMENT,
            format!("unknown update op {code}"),
        )
    })
}

/// Update `OP` (a `shmetrics_op` code) of `v` through a series handle.
///
/// The path of nearly every update comes first: non-NULL, aligned
/// pointers and a handle that [`Series::from_raw_plain`] decodes (no TTL,
/// no native buckets, not a summary), whose update succeeds, return
/// `SHMETRICS_OK` with no error plumbing on the way (measured under
/// callgrind through LuaJIT, a counter add and a histogram observe took
/// about 110 instructions less, 512 before and about 400 after, than
/// when every handle went through `ffi_body!` and `Series::from_raw`;
/// `benches/lua`). Anything else runs the update
/// again the whole way, in [`full`], which decodes every kind of handle
/// and reports the failure as every exported function does. A core
/// update fails before it writes anything, so the second run counts
/// nothing twice. A panic is reported as it is, not run again.
///
/// The update is a constant, not a closure that [`full`] calls too: a
/// closure with two callers stayed out of line, and the decoded handle
/// went through the stack to it. With the constant, the update has one
/// caller here and is compiled into it, the handle in registers, and
/// `full` is one function for all updates (measured with
/// `crates/ffi/benches/hotpath.sh`).
#[inline(always)]
fn update<const OP: u32>(
    function: &'static str,
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    let plain = catch_unwind(|| plain::<OP>(store, series, v));
    match plain {
        Ok(true) => shmetrics_result::SHMETRICS_OK,
        Ok(false) => full(function, store, series, OP, v),
        Err(payload) => panicked(function, payload),
    }
}

/// [`update`]'s path of nearly every update: whether update `OP` of `v`
/// succeeded on a handle that [`Series::from_raw_plain`] decodes. Out of
/// line, with its arguments in registers: inlined into `catch_unwind`'s
/// closure, it was left out of line by LLVM with the update itself, and
/// the decoded handle went through the stack to it.
#[inline(never)]
fn plain<const OP: u32>(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> bool {
    let Ok(st) = ptr::object(store, "store") else {
        return false;
    };
    let Ok(h) = ptr::read(series, "series") else {
        return false;
    };
    let Some(op) = Op::new(OP, v) else {
        return false;
    };
    match Series::from_raw_plain(&h.opaque) {
        Some(s) => op.apply(&st.store, s).is_ok(),
        None => false,
    }
}

/// [`update`]'s whole way: checks, decodes and reports.
#[cold]
#[inline(never)]
fn full(
    function: &'static str,
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    op: u32,
    v: f64,
) -> shmetrics_result {
    crate::error::run(function, || {
        let store = ptr::object(store, "store")?;
        let s = ptr::read(series, "series")?.to_core()?;
        op_of(op, v)?.apply(&store.store, s)?;
        Ok(())
    })
}

const COUNTER_ADD: u32 = shmetrics_op::SHMETRICS_OP_COUNTER_ADD as u32;
const GAUGE_SET: u32 = shmetrics_op::SHMETRICS_OP_GAUGE_SET as u32;
const GAUGE_ADD: u32 = shmetrics_op::SHMETRICS_OP_GAUGE_ADD as u32;
const GAUGE_SET_TO_CURRENT_TIME: u32 = shmetrics_op::SHMETRICS_OP_GAUGE_SET_TO_CURRENT_TIME as u32;
const OBSERVE: u32 = shmetrics_op::SHMETRICS_OP_OBSERVE as u32;

/// Adds `v` to a counter. Fails with `SHMETRICS_INVALID_VALUE` if `v` is
/// negative, NaN or `+Inf`, `SHMETRICS_WRONG_TYPE` if the series is no
/// counter.
#[no_mangle]
pub extern "C" fn shmetrics_counter_add(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    update::<{ COUNTER_ADD }>("shmetrics_counter_add", store, series, v)
}

/// Adds one to a counter.
#[no_mangle]
pub extern "C" fn shmetrics_counter_inc(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
) -> shmetrics_result {
    update::<{ COUNTER_ADD }>("shmetrics_counter_inc", store, series, 1.0)
}

/// Sets a gauge to `v`. Fails with `SHMETRICS_INVALID_VALUE` if `v` is
/// NaN.
#[no_mangle]
pub extern "C" fn shmetrics_gauge_set(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    update::<{ GAUGE_SET }>("shmetrics_gauge_set", store, series, v)
}

/// Adds `v` (negative to decrease) to a gauge. Fails with
/// `SHMETRICS_INVALID_VALUE` if `v` is NaN.
#[no_mangle]
pub extern "C" fn shmetrics_gauge_add(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    update::<{ GAUGE_ADD }>("shmetrics_gauge_add", store, series, v)
}

/// Sets a gauge to the current Unix time in seconds.
#[no_mangle]
pub extern "C" fn shmetrics_gauge_set_to_current_time(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
) -> shmetrics_result {
    update::<{ GAUGE_SET_TO_CURRENT_TIME }>(
        "shmetrics_gauge_set_to_current_time",
        store,
        series,
        0.0,
    )
}

/// Records an observation `v` in a histogram or a summary. Fails with
/// `SHMETRICS_INVALID_VALUE` if `v` is NaN.
#[no_mangle]
pub extern "C" fn shmetrics_observe(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    update::<{ OBSERVE }>("shmetrics_observe", store, series, v)
}

/// Exemplar labels converted on the stack; more go to a `Vec`. Exemplars
/// seldom have more than one or two (a trace id, a span id).
const STACK_LABELS: usize = 16;

/// Runs `f` on the exemplar labels given as `n` names and `n` values, as
/// `&str` pairs, checked only for UTF-8: the store checks the rest.
pub(crate) fn with_exemplar(
    names: *const shmetrics_str,
    values: *const shmetrics_str,
    n: usize,
    f: impl FnOnce(&[(&str, &str)]) -> Result<(), FfiError>,
) -> Result<(), FfiError> {
    let names = ptr::slice(names, n, "names")?;
    let values = ptr::slice(values, n, "values")?;
    let pair = |(k, v): (&shmetrics_str, &shmetrics_str)| -> Result<_, FfiError> {
        Ok((k.to_str("names")?, v.to_str("values")?))
    };
    if n <= STACK_LABELS {
        let mut buf = [("", ""); STACK_LABELS];
        for (slot, p) in buf.iter_mut().zip(names.iter().zip(values)) {
            *slot = pair(p)?;
        }
        f(&buf[..n])
    } else {
        let labels = names
            .iter()
            .zip(values)
            .map(pair)
            .collect::<Result<Vec<_>, _>>()?;
        f(&labels)
    }
}

/// Adds `v` to a counter, as `shmetrics_counter_add`, and records an
/// OpenMetrics exemplar of it: the `n` labels `names[i]="values[i]"` (a
/// trace id, say), `v`, and the current time. The OpenMetrics exposition
/// shows the latest exemplar of each series over all processes. `names`
/// and `values` may be NULL when `n` is 0 (an exemplar without labels).
///
/// Exemplars are samples: if another thread of this process writes the
/// series' exemplar at the same instant, this one is dropped (the
/// increment is not).
///
/// Nothing is recorded, neither the increment nor the exemplar, when the
/// call fails: `SHMETRICS_INVALID_OPTIONS` if the family was not
/// registered with `exemplars`; `SHMETRICS_INVALID_NAME` if a label name
/// is not a valid label name or is given twice; `SHMETRICS_INVALID_VALUE`
/// if the names and values have more than 128 characters together (the
/// OpenMetrics limit), or `v` is negative, NaN or `+Inf`;
/// `SHMETRICS_INVALID_UTF8` if a name or value is not UTF-8;
/// `SHMETRICS_WRONG_TYPE` if the series is no counter.
#[no_mangle]
pub extern "C" fn shmetrics_counter_add_exemplar(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
    names: *const shmetrics_str,
    values: *const shmetrics_str,
    n: usize,
) -> shmetrics_result {
    ffi_body!("shmetrics_counter_add_exemplar", {
        let store = ptr::object(store, "store")?;
        let s = ptr::read(series, "series")?.to_core()?;
        with_exemplar(names, values, n, |labels| {
            Ok(store.store.counter_add_with_exemplar(s, v, labels)?)
        })
    })
}

/// Adds one to a counter and records an exemplar of it: as
/// `shmetrics_counter_add_exemplar` with `v` = 1.
#[no_mangle]
pub extern "C" fn shmetrics_counter_inc_exemplar(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    names: *const shmetrics_str,
    values: *const shmetrics_str,
    n: usize,
) -> shmetrics_result {
    ffi_body!("shmetrics_counter_inc_exemplar", {
        let store = ptr::object(store, "store")?;
        let s = ptr::read(series, "series")?.to_core()?;
        with_exemplar(names, values, n, |labels| {
            Ok(store.store.counter_inc_with_exemplar(s, labels)?)
        })
    })
}

/// Records an observation `v` in a histogram, as `shmetrics_observe`, and
/// an exemplar of it in the classic bucket it falls in (the first whose
/// upper bound is at least `v`): the `n` labels `names[i]="values[i]"`,
/// `v`, and the current time. The OpenMetrics exposition shows the latest
/// exemplar of each bucket over all processes.
///
/// Fails, recording nothing, as `shmetrics_counter_add_exemplar` does
/// (`v` may be negative, not NaN); summaries keep no exemplars
/// (`SHMETRICS_WRONG_TYPE`).
#[no_mangle]
pub extern "C" fn shmetrics_observe_exemplar(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
    names: *const shmetrics_str,
    values: *const shmetrics_str,
    n: usize,
) -> shmetrics_result {
    ffi_body!("shmetrics_observe_exemplar", {
        let store = ptr::object(store, "store")?;
        let s = ptr::read(series, "series")?.to_core()?;
        with_exemplar(names, values, n, |labels| {
            Ok(store.store.observe_with_exemplar(s, v, labels)?)
        })
    })
}

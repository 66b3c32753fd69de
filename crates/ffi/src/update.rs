//! Updates through a series handle: the hot path. Each is one or two atomic
//! operations in this process's writer slot: no lock, no system call, and
//! no allocation unless the call fails. The `_exemplar` variants also
//! write an exemplar record, and allocate nothing either for up to 16
//! exemplar labels.

use std::panic::{catch_unwind, AssertUnwindSafe};

use shmetrics_core::{Series, Store};

use crate::error::{ffi_body, panicked, shmetrics_result, FfiError};
use crate::ptr;
use crate::types::{shmetrics_series, shmetrics_store, shmetrics_str};

/// An update through a series handle: `f` with the store and the handle.
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
#[inline(always)]
fn update(
    function: &'static str,
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    f: impl Fn(&Store, Series) -> shmetrics_core::Result<()>,
) -> shmetrics_result {
    let plain = catch_unwind(AssertUnwindSafe(|| {
        let Ok(st) = ptr::object(store, "store") else {
            return false;
        };
        let Ok(h) = ptr::read(series, "series") else {
            return false;
        };
        match Series::from_raw_plain(&h.opaque) {
            Some(s) => f(&st.store, s).is_ok(),
            None => false,
        }
    }));
    match plain {
        Ok(true) => shmetrics_result::SHMETRICS_OK,
        Ok(false) => full(function, store, series, &f),
        Err(payload) => panicked(function, payload),
    }
}

/// [`update`]'s whole way: checks, decodes and reports.
#[cold]
#[inline(never)]
fn full(
    function: &'static str,
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    f: &dyn Fn(&Store, Series) -> shmetrics_core::Result<()>,
) -> shmetrics_result {
    crate::error::run(function, || {
        let store = ptr::object(store, "store")?;
        f(&store.store, ptr::read(series, "series")?.to_core()?)?;
        Ok(())
    })
}

/// Adds `v` to a counter. Fails with `SHMETRICS_INVALID_VALUE` if `v` is
/// negative, NaN or `+Inf`, `SHMETRICS_WRONG_TYPE` if the series is no
/// counter.
#[no_mangle]
pub extern "C" fn shmetrics_counter_add(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    update("shmetrics_counter_add", store, series, |st, s| {
        st.counter_add(s, v)
    })
}

/// Adds one to a counter.
#[no_mangle]
pub extern "C" fn shmetrics_counter_inc(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
) -> shmetrics_result {
    update("shmetrics_counter_inc", store, series, |st, s| {
        st.counter_inc(s)
    })
}

/// Sets a gauge to `v`. Fails with `SHMETRICS_INVALID_VALUE` if `v` is
/// NaN.
#[no_mangle]
pub extern "C" fn shmetrics_gauge_set(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    update("shmetrics_gauge_set", store, series, |st, s| {
        st.gauge_set(s, v)
    })
}

/// Adds `v` (negative to decrease) to a gauge. Fails with
/// `SHMETRICS_INVALID_VALUE` if `v` is NaN.
#[no_mangle]
pub extern "C" fn shmetrics_gauge_add(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    update("shmetrics_gauge_add", store, series, |st, s| {
        st.gauge_add(s, v)
    })
}

/// Sets a gauge to the current Unix time in seconds.
#[no_mangle]
pub extern "C" fn shmetrics_gauge_set_to_current_time(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
) -> shmetrics_result {
    update(
        "shmetrics_gauge_set_to_current_time",
        store,
        series,
        |st, s| st.gauge_set_to_current_time(s),
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
    update("shmetrics_observe", store, series, |st, s| st.observe(s, v))
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

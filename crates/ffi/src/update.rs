//! Updates through a series handle: the hot path. Each is one or two atomic
//! operations in this process's writer slot: no lock, no system call, and
//! no allocation unless the call fails.

use crate::error::{ffi_body, shmetrics_result};
use crate::ptr;
use crate::types::{shmetrics_series, shmetrics_store};

/// Adds `v` to a counter. Fails with `SHMETRICS_INVALID_VALUE` if `v` is
/// negative or NaN, `SHMETRICS_WRONG_TYPE` if the series is no counter.
#[no_mangle]
pub extern "C" fn shmetrics_counter_add(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    ffi_body!("shmetrics_counter_add", {
        let store = ptr::object(store, "store")?;
        store
            .store
            .counter_add(ptr::read(series, "series")?.to_core()?, v)?;
        Ok(())
    })
}

/// Adds one to a counter.
#[no_mangle]
pub extern "C" fn shmetrics_counter_inc(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
) -> shmetrics_result {
    ffi_body!("shmetrics_counter_inc", {
        let store = ptr::object(store, "store")?;
        store
            .store
            .counter_inc(ptr::read(series, "series")?.to_core()?)?;
        Ok(())
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
    ffi_body!("shmetrics_gauge_set", {
        let store = ptr::object(store, "store")?;
        store
            .store
            .gauge_set(ptr::read(series, "series")?.to_core()?, v)?;
        Ok(())
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
    ffi_body!("shmetrics_gauge_add", {
        let store = ptr::object(store, "store")?;
        store
            .store
            .gauge_add(ptr::read(series, "series")?.to_core()?, v)?;
        Ok(())
    })
}

/// Sets a gauge to the current Unix time in seconds.
#[no_mangle]
pub extern "C" fn shmetrics_gauge_set_to_current_time(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
) -> shmetrics_result {
    ffi_body!("shmetrics_gauge_set_to_current_time", {
        let store = ptr::object(store, "store")?;
        store
            .store
            .gauge_set_to_current_time(ptr::read(series, "series")?.to_core()?)?;
        Ok(())
    })
}

/// Records an observation `v` in a histogram or a summary. Fails with
/// `SHMETRICS_INVALID_VALUE` if `v` is NaN.
#[no_mangle]
pub extern "C" fn shmetrics_observe(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    v: f64,
) -> shmetrics_result {
    ffi_body!("shmetrics_observe", {
        let store = ptr::object(store, "store")?;
        store
            .store
            .observe(ptr::read(series, "series")?.to_core()?, v)?;
        Ok(())
    })
}

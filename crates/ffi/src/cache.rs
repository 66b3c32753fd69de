//! Per-process caches of families and series, for runtimes that build
//! their metric objects again for every request (PHP under php-fpm) and
//! pay for every struct they fill: a family is registered once per
//! process under a key the caller chooses, then found by that key; a
//! series is found by its label values joined in one string. Updates take
//! the family's token, the joined label values and the value: plain
//! arguments, no struct to build per call.
//!
//! The caches hang off a store handle and live as long as it (for
//! `shmetrics_store_open_persistent` handles, the process). They hold
//! nothing the store does not check again: a series handle that went
//! stale (its series expired or was deleted, or the store was wiped by
//! any process) fails its update with `SHMETRICS_STALE_HANDLE`, and the
//! cache then looks the series up again, registering the family again
//! from its description first if the store was wiped, and retries once.
//! A family keeps at most
//! [`MAX_CACHED_SERIES`](crate::cached::MAX_CACHED_SERIES) series handles, so label
//! values that come and go do not grow a process's cache for its life.
//!
//! These are the C functions; the caches are in `cached.rs`, and the ops
//! `shmetrics_update` takes (`shmetrics_op`) in `update.rs`.

use std::ffi::c_char;
use std::panic::catch_unwind;

use crate::cached::Cache;
use crate::error::{ffi_body, shmetrics_result, FfiError};
use crate::ptr::{self, Out};
use crate::types::{shmetrics_family_desc, shmetrics_store, shmetrics_str};
use crate::update::{op_of, with_exemplar, Op};

/// The token of the family this store handle cached under `key` (`key_len`
/// bytes, any bytes) with `shmetrics_family_cache`, or 0 if it has none.
/// No error is recorded: on 0, call `shmetrics_family_cache`.
///
/// With a handle from `shmetrics_store_open_persistent`, the cache lasts
/// as long as the process, so a runtime that builds its metric objects
/// again for every request registers each family once per process and
/// finds it with this call afterwards.
#[no_mangle]
pub extern "C" fn shmetrics_family_cached(
    store: *const shmetrics_store,
    key: *const c_char,
    key_len: usize,
) -> u32 {
    catch_unwind(|| {
        let store = ptr::object(store, "store").ok()?;
        let key = ptr::bytes(key, key_len, "key").ok()?;
        Cache::lock(&store.cache).token(key)
    })
    .ok()
    .flatten()
    .unwrap_or(0)
}

/// Registers a family as `shmetrics_register` does and caches it in this
/// store handle under `key` (`key_len` bytes, chosen by the caller: it
/// must tell apart every definition the caller may register, e.g. a
/// serialization of the whole description); `*token` is its token, never
/// 0, for `shmetrics_update` and `shmetrics_series_cached`. If `key` is
/// cached already, `*token` is its token and `desc` is not read.
///
/// Fails as `shmetrics_register` does; `*token` is then 0.
#[no_mangle]
pub extern "C" fn shmetrics_family_cache(
    store: *const shmetrics_store,
    key: *const c_char,
    key_len: usize,
    desc: *const shmetrics_family_desc,
    token: *mut u32,
) -> shmetrics_result {
    ffi_body!("shmetrics_family_cache", {
        let token = Out::new(token, "token")?;
        token.write(0);
        let store = ptr::object(store, "store")?;
        let key = ptr::bytes(key, key_len, "key")?;
        let mut cache = Cache::lock(&store.cache);
        if let Some(t) = cache.token(key) {
            token.write(t);
            return Ok(());
        }
        let desc = ptr::read(desc, "desc")?.to_core()?;
        token.write(cache.register(&store.store, key, desc)?);
        Ok(())
    })
}

/// Makes update `op` (a `shmetrics_op`) of `v` on the series of cached
/// family `token` whose label values are `values` (`values_len` bytes):
/// the family's label values in order, each UTF-8, joined by the byte
/// 0xFF (which UTF-8 never contains); the empty string for a family
/// without labels.
///
/// The series is looked up (or created) on its first update through this
/// handle, then cached. A series that does not fit is updated as the
/// family's overflow series, as with `shmetrics_series_get`, and the call
/// succeeds. A cached series whose handle went stale (expired, deleted,
/// the store wiped by any process) is looked up again, the family
/// registered again first if needed, and the update made once more.
///
/// Fails as the update and `shmetrics_series_get` do, and with
/// `SHMETRICS_INVALID_ARGUMENT` for an unknown `token` or `op`.
#[no_mangle]
pub extern "C" fn shmetrics_update(
    store: *const shmetrics_store,
    token: u32,
    op: u32,
    values: *const c_char,
    values_len: usize,
    v: f64,
) -> shmetrics_result {
    ffi_body!("shmetrics_update", {
        let store = ptr::object(store, "store")?;
        let values = ptr::bytes(values, values_len, "values")?;
        let op = op_of(op, v)?;
        let st = &store.store;
        Cache::lock(&store.cache).update(st, token, values, |s| op.apply(st, s))
    })
}

/// Makes update `op` of `v` as `shmetrics_update` does, with an
/// OpenMetrics exemplar as `shmetrics_counter_add_exemplar` and
/// `shmetrics_observe_exemplar` take it (`n` label names and values).
/// `op` is `SHMETRICS_OP_COUNTER_ADD` or `SHMETRICS_OP_OBSERVE`; nothing
/// is recorded when the call fails, as with those two.
#[no_mangle]
pub extern "C" fn shmetrics_update_exemplar(
    store: *const shmetrics_store,
    token: u32,
    op: u32,
    values: *const c_char,
    values_len: usize,
    v: f64,
    names: *const shmetrics_str,
    exemplar_values: *const shmetrics_str,
    n: usize,
) -> shmetrics_result {
    ffi_body!("shmetrics_update_exemplar", {
        let store = ptr::object(store, "store")?;
        let values = ptr::bytes(values, values_len, "values")?;
        let st = &store.store;
        with_exemplar(names, exemplar_values, n, |labels| {
            let mut cache = Cache::lock(&store.cache);
            match op_of(op, v)? {
                Op::CounterAdd(v) => cache.update(st, token, values, |s| {
                    st.counter_add_with_exemplar(s, v, labels)
                }),
                Op::Observe(v) => cache.update(st, token, values, |s| {
                    st.observe_with_exemplar(s, v, labels)
                }),
                _ => Err(FfiError::Other(
                    shmetrics_result::SHMETRICS_INVALID_ARGUMENT,
                    format!("update op {op} takes no exemplar"),
                )),
            }
        })
    })
}

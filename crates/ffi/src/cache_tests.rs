//! Tests of the cached calls (`cache.rs`) and of reopening persistent
//! handles.

use std::ffi::c_char;
use std::ptr::null_mut;

use crate::cached::Cache;
use crate::error::last_error_string;
use crate::error::shmetrics_result::*;
use crate::tests::{default_opts, open_store, render, render_handle, s, zeroed_desc};
use crate::types::shmetrics_kind::*;
use crate::update::shmetrics_op::*;
use crate::*;

fn key(k: &str) -> (*const c_char, usize) {
    (k.as_ptr().cast(), k.len())
}

/// Caches a counter with labels `a`, `b` under `k`.
fn cache_counter(st: *mut shmetrics_store, k: &str, name: &str) -> u32 {
    let labels = [s("a"), s("b")];
    let mut d = zeroed_desc();
    d.name = s(name);
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = 2;
    let (kp, kl) = key(k);
    let mut token = 99;
    let r = shmetrics_family_cache(st, kp, kl, &d, &mut token);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    token
}

fn update(
    st: *mut shmetrics_store,
    token: u32,
    op: u32,
    values: &[u8],
    v: f64,
) -> shmetrics_result {
    shmetrics_update(st, token, op, values.as_ptr().cast(), values.len(), v)
}

#[test]
fn a_family_is_registered_once_and_found_by_its_key() {
    let st = open_store();
    let (kp, kl) = key("def-1");
    assert_eq!(shmetrics_family_cached(st.ptr, kp, kl), 0);
    let token = cache_counter(st.ptr, "def-1", "req");
    assert_ne!(token, 0);
    assert_eq!(shmetrics_family_cached(st.ptr, kp, kl), token);
    // The same key again gives the same token without reading the desc.
    let mut again = 0;
    let r = shmetrics_family_cache(st.ptr, kp, kl, std::ptr::null(), &mut again);
    assert_eq!((r, again), (SHMETRICS_OK, token));
    // Another key with a conflicting definition is refused by the store.
    let mut d = zeroed_desc();
    d.name = s("req");
    d.kind = SHMETRICS_KIND_GAUGE as u32;
    let (kp2, kl2) = key("def-2");
    let mut t2 = 5;
    let r = shmetrics_family_cache(st.ptr, kp2, kl2, &d, &mut t2);
    assert_eq!((r, t2), (SHMETRICS_CONFLICT, 0));
    assert_eq!(shmetrics_family_cached(st.ptr, kp2, kl2), 0);
}

#[test]
fn updates_find_series_by_joined_label_values() {
    let st = open_store();
    let t = cache_counter(st.ptr, "k", "req");
    let op = SHMETRICS_OP_COUNTER_ADD as u32;
    assert_eq!(update(st.ptr, t, op, b"x\xffy", 2.0), SHMETRICS_OK);
    assert_eq!(update(st.ptr, t, op, b"x\xffy", 1.0), SHMETRICS_OK);
    assert_eq!(update(st.ptr, t, op, b"\xff", 1.0), SHMETRICS_OK);
    let text = render(&st, 0);
    assert!(text.contains("req_total{a=\"x\",b=\"y\"} 3\n"), "{text}");
    assert!(text.contains("req_total{a=\"\",b=\"\"} 1\n"), "{text}");
    // Wrong counts, invalid UTF-8, unknown tokens and ops.
    assert_eq!(update(st.ptr, t, op, b"x", 1.0), SHMETRICS_LABEL_COUNT);
    assert!(last_error_string().contains("expected 2 label values, got 1"));
    assert_eq!(
        update(st.ptr, t, op, b"x\xffy\xffz", 1.0),
        SHMETRICS_LABEL_COUNT
    );
    assert_eq!(
        update(st.ptr, t, op, b"x\xff\xc3", 1.0),
        SHMETRICS_INVALID_UTF8
    );
    assert_eq!(
        update(st.ptr, t + 1, op, b"x\xffy", 1.0),
        SHMETRICS_INVALID_ARGUMENT
    );
    assert_eq!(
        update(st.ptr, 0, op, b"x\xffy", 1.0),
        SHMETRICS_INVALID_ARGUMENT
    );
    assert_eq!(
        update(st.ptr, t, 77, b"x\xffy", 1.0),
        SHMETRICS_INVALID_ARGUMENT
    );
    assert_eq!(
        update(st.ptr, t, op, b"x\xffy", -1.0),
        SHMETRICS_INVALID_VALUE
    );
    let obs = SHMETRICS_OP_OBSERVE as u32;
    assert_eq!(update(st.ptr, t, obs, b"x\xffy", 1.0), SHMETRICS_WRONG_TYPE);
}

#[test]
fn a_family_without_labels_takes_the_empty_string() {
    let st = open_store();
    let mut d = zeroed_desc();
    d.name = s("up");
    d.kind = SHMETRICS_KIND_GAUGE as u32;
    let (kp, kl) = key("g");
    let mut t = 0;
    assert_eq!(
        shmetrics_family_cache(st.ptr, kp, kl, &d, &mut t),
        SHMETRICS_OK
    );
    assert_eq!(
        update(st.ptr, t, SHMETRICS_OP_GAUGE_SET as u32, b"", 4.0),
        SHMETRICS_OK
    );
    assert_eq!(
        update(st.ptr, t, SHMETRICS_OP_GAUGE_ADD as u32, b"", -1.5),
        SHMETRICS_OK
    );
    assert_eq!(
        update(st.ptr, t, SHMETRICS_OP_GAUGE_ADD as u32, b"x", 1.0),
        SHMETRICS_LABEL_COUNT
    );
    assert!(render(&st, 0).contains("\nup 2.5\n"));
}

#[test]
fn a_wipe_by_another_handle_registers_the_family_again() {
    let st = open_store();
    let t = cache_counter(st.ptr, "k", "req");
    let op = SHMETRICS_OP_COUNTER_ADD as u32;
    assert_eq!(update(st.ptr, t, op, b"x\xffy", 5.0), SHMETRICS_OK);
    // Another handle of the same file (another process's, as far as the
    // store can tell) wipes it.
    let p = st.path.to_str().unwrap();
    let mut other = null_mut();
    let opts = default_opts();
    assert_eq!(
        shmetrics_store_open(p.as_ptr().cast(), p.len(), &opts, &mut other),
        SHMETRICS_OK
    );
    assert_eq!(shmetrics_store_wipe(other), SHMETRICS_OK);
    assert!(!render(&st, 0).contains("req_total"));
    assert_eq!(
        update(st.ptr, t, op, b"x\xffy", 1.0),
        SHMETRICS_OK,
        "{}",
        last_error_string()
    );
    assert!(render(&st, 0).contains("req_total{a=\"x\",b=\"y\"} 1\n"));
    shmetrics_store_close(other);
}

#[test]
fn updates_with_exemplars_go_through_the_cache() {
    let st = open_store();
    let labels = [s("a")];
    let mut d = zeroed_desc();
    d.name = s("jobs");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = 1;
    d.exemplars = 1;
    let (kp, kl) = key("e");
    let mut t = 0;
    assert_eq!(
        shmetrics_family_cache(st.ptr, kp, kl, &d, &mut t),
        SHMETRICS_OK
    );
    let names = [s("trace_id")];
    let values = [s("abc")];
    let v = b"q";
    let r = shmetrics_update_exemplar(
        st.ptr,
        t,
        SHMETRICS_OP_COUNTER_ADD as u32,
        v.as_ptr().cast(),
        1,
        2.0,
        names.as_ptr(),
        values.as_ptr(),
        1,
    );
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    let text = render(&st, 1);
    assert!(
        text.contains("jobs_total{a=\"q\"} 2 # {trace_id=\"abc\"} 2"),
        "{text}"
    );
    let r = shmetrics_update_exemplar(
        st.ptr,
        t,
        SHMETRICS_OP_GAUGE_SET as u32,
        v.as_ptr().cast(),
        1,
        2.0,
        names.as_ptr(),
        values.as_ptr(),
        1,
    );
    assert_eq!(r, SHMETRICS_INVALID_ARGUMENT);
}

#[test]
fn a_persistent_handle_is_reopened_when_its_path_names_another_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replaced");
    let p = path.to_str().unwrap();
    let persistent = || shmetrics_store_persistent(p.as_ptr().cast(), p.len(), false);
    let reopen = |create: bool| {
        let mut opts = default_opts();
        opts.create = u8::from(create);
        let mut out = null_mut();
        let r = shmetrics_store_reopen_persistent(p.as_ptr().cast(), p.len(), &opts, &mut out);
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        out
    };
    assert!(persistent().is_null());
    let first = reopen(true);
    assert_eq!(persistent(), first);
    assert_eq!(reopen(true), first);
    // Removed: no handle until it is opened again, with create.
    std::fs::remove_file(&path).unwrap();
    assert!(persistent().is_null());
    assert_eq!(
        reopen(false),
        first,
        "without create, a removed store keeps its handle"
    );
    let second = reopen(true);
    assert_ne!(second, first);
    assert_eq!(persistent(), second);
    // Replaced by a rename: another file at the path.
    let other = dir.path().join("other");
    let o = other.to_str().unwrap();
    let mut h = null_mut();
    let opts = default_opts();
    let mut create = opts;
    create.create = 1;
    assert_eq!(
        shmetrics_store_open(o.as_ptr().cast(), o.len(), &create, &mut h),
        SHMETRICS_OK
    );
    shmetrics_store_close(h);
    std::fs::rename(&other, &path).unwrap();
    assert!(persistent().is_null());
    let third = reopen(false);
    assert_ne!(third, second);
    assert_eq!(persistent(), third);
    // open_persistent keeps returning the process's current handle.
    let mut out = null_mut();
    assert_eq!(
        shmetrics_store_open_persistent(p.as_ptr().cast(), p.len(), &opts, &mut out),
        SHMETRICS_OK
    );
    assert_eq!(out, third);
}

/// Two users of one process share a persistent handle, as the `http` and
/// `stream` Lua VMs of one nginx worker do. One follows a replaced file
/// and gives its old handle back; the other goes on writing through the
/// old handle until it follows too, and only then is the handle freed.
/// (Before the handles counted references, the first close freed the
/// handle under the second user: a use after free, and then a double
/// free when it closed it as well.)
#[test]
fn a_persistent_handle_shared_by_two_users_lives_until_both_close_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared");
    let p = path.to_str().unwrap();
    let mut opts = default_opts();
    opts.create = 1;
    let open = |reopen: bool| {
        let mut out = null_mut();
        let r = if reopen {
            shmetrics_store_reopen_persistent(p.as_ptr().cast(), p.len(), &opts, &mut out)
        } else {
            shmetrics_store_open_persistent(p.as_ptr().cast(), p.len(), &opts, &mut out)
        };
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        out
    };
    let (http, stream) = (open(false), open(false));
    assert_eq!(http, stream);
    let token = cache_counter(stream, "k", "jobs");
    // The file is replaced; the http VM follows and closes its old handle.
    std::fs::remove_file(&path).unwrap();
    let http_new = open(true);
    assert_ne!(http_new, http);
    shmetrics_store_close_persistent(http);
    // The stream VM still writes through the old handle: it is alive.
    let op = SHMETRICS_OP_COUNTER_ADD as u32;
    assert_eq!(update(stream, token, op, b"x\xffy", 2.0), SHMETRICS_OK);
    let text = render_handle(stream, 0);
    assert!(text.contains("jobs_total{a=\"x\",b=\"y\"} 2\n"), "{text}");
    // It follows too: the reopen finds the http VM's new handle.
    let stream_new = open(true);
    assert_eq!(stream_new, http_new);
    shmetrics_store_close_persistent(stream);
    // Both hold the new handle: one close leaves it open for the other.
    shmetrics_store_close_persistent(http_new);
    assert_eq!(
        shmetrics_store_persistent(p.as_ptr().cast(), p.len(), false),
        stream_new
    );
    shmetrics_store_close_persistent(stream_new);
    assert!(shmetrics_store_persistent(p.as_ptr().cast(), p.len(), false).is_null());
}

/// Label values that come and go (a TTL family's) leave the cache bounded:
/// past its cap a family drops half of its handles, and every update
/// still lands on its series.
#[test]
fn the_series_cache_of_a_family_stays_bounded() {
    let st = open_store();
    let labels = [s("a")];
    let mut d = zeroed_desc();
    d.name = s("rotating");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = 1;
    d.ttl_ms = 100;
    let (kp, kl) = key("rotating");
    let mut token = 0;
    assert_eq!(
        shmetrics_family_cache(st.ptr, kp, kl, &d, &mut token),
        SHMETRICS_OK
    );
    let handle = crate::ptr::object(st.ptr, "store").unwrap();
    Cache::lock(&handle.cache).set_series_cap(16);
    let op = SHMETRICS_OP_COUNTER_ADD as u32;
    let mut most = 0;
    // Five generations of 40 label values; each expires (TTL 100 ms)
    // before the next takes its space in the store (64 series).
    for generation in 0..5 {
        for i in 0..40 {
            let v = format!("g{generation}v{i}");
            assert_eq!(update(st.ptr, token, op, v.as_bytes(), 1.0), SHMETRICS_OK);
            assert_eq!(update(st.ptr, token, op, v.as_bytes(), 2.0), SHMETRICS_OK);
            most = most.max(Cache::lock(&handle.cache).cached_series(token));
        }
        let text = render(&st, 0);
        for i in 0..40 {
            let line = format!("rotating_total{{a=\"g{generation}v{i}\"}} 3\n");
            assert!(text.contains(&line), "{line} in {text}");
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert!(most <= 16, "the cache held {most} handles");
}

//! The update path as raw N-API callbacks: `inc(id, v)`, `add(id, v)`,
//! `set(id, v)` and `observe(id, v)`, on a series id from
//! `NativeFamily.seriesId`.
//!
//! Hand-written because napi-rs's generated wrappers cost about 250 ns a
//! call on this machine (a method on a class, about 470 ns), against 32 ns
//! for a raw callback: more than prom-client's whole `inc()` in
//! JavaScript. The raw callbacks read two arguments and call the core,
//! nothing else. All of this crate's `unsafe` is here.

use std::cell::RefCell;
use std::ffi::CString;
use std::ptr;
use std::sync::Arc;

use napi::sys::{self, napi_callback_info, napi_env, napi_value};
use shmetrics_core::{Series, Store};

use crate::errors::code;

thread_local! {
    /// The series handles made on this thread (Node's main thread, or a
    /// worker thread, which loads its own instance of the addon), by id:
    /// one per label set of each metric object, as prom-client keeps an
    /// object per label set. An id is given back when the JavaScript
    /// object that holds it is garbage (`forgetSeries`), so a process that
    /// makes and drops metrics again and again does not grow.
    static SERIES: RefCell<Ids> = const { RefCell::new(Ids { all: Vec::new(), free: Vec::new() }) };
}

/// Series handles by id, and the ids given back, to be given out again.
struct Ids {
    all: Vec<Option<(Arc<Store>, Series)>>,
    free: Vec<u32>,
}

/// Keeps a series handle and returns its id for the calls below.
pub(crate) fn keep(store: Arc<Store>, series: Series) -> u32 {
    SERIES.with_borrow_mut(|ids| {
        if let Some(id) = ids.free.pop() {
            ids.all[id as usize] = Some((store, series));
            return id;
        }
        ids.all.push(Some((store, series)));
        u32::try_from(ids.all.len() - 1).unwrap_or(u32::MAX)
    })
}

/// The handle of `id`, replaced (a series looked up again after another
/// process removed it).
pub(crate) fn replace(id: u32, store: Arc<Store>, series: Series) -> bool {
    SERIES.with_borrow_mut(|ids| match ids.all.get_mut(id as usize) {
        Some(slot @ Some(_)) => {
            *slot = Some((store, series));
            true
        }
        _ => false,
    })
}

/// Gives the id of a series handle back, once the JavaScript object that
/// held it is garbage: its handle (and the store it keeps open) goes, and
/// the id is given out again. An id not in use is left alone.
#[napi_derive::napi]
pub fn forget_series(id: u32) {
    SERIES.with_borrow_mut(|ids| {
        if let Some(slot) = ids.all.get_mut(id as usize) {
            if slot.take().is_some() {
                ids.free.push(id);
            }
        }
    });
}

/// Throws a JavaScript `Error` whose message starts with the error kind,
/// as `errors::to_js` writes it. Returns `undefined` for the callback.
fn throw(env: napi_env, kind: &str, message: &str) -> napi_value {
    let text = format!("[{kind}] {message}").replace('\0', "\\0");
    // UNWRAP: the NULs were just replaced.
    let text = CString::new(text).expect("no NUL");
    // SAFETY: `env` is the live environment of the current callback, and
    // `text` outlives the call (Node copies it).
    unsafe { sys::napi_throw_error(env, ptr::null(), text.as_ptr()) };
    ptr::null_mut()
}

/// The two arguments, a series id and a number.
///
/// # Safety
/// `env` and `info` must be those Node passed to the running callback.
unsafe fn args(env: napi_env, info: napi_callback_info) -> Option<(u32, f64)> {
    let mut argc = 2usize;
    let mut argv = [ptr::null_mut(); 2];
    // SAFETY: by the caller's contract; `argv` has room for `argc` values,
    // and Node fills the missing ones with `undefined`.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok {
        return None;
    }
    let (mut id, mut v) = (0u32, 0f64);
    // SAFETY: `argv` holds values of this callback's scope; a value of
    // another type makes the call fail with a status, nothing else.
    let ok = unsafe {
        sys::napi_get_value_uint32(env, argv[0], &mut id) == sys::Status::napi_ok
            && sys::napi_get_value_double(env, argv[1], &mut v) == sys::Status::napi_ok
    };
    ok.then_some((id, v))
}

/// Runs one update on the series of the callback's id.
///
/// # Safety
/// As [`args`].
unsafe fn update(
    env: napi_env,
    info: napi_callback_info,
    op: fn(&Store, Series, f64) -> shmetrics_core::Result<()>,
) -> napi_value {
    // SAFETY: passed on from the callback.
    let Some((id, v)) = (unsafe { args(env, info) }) else {
        return throw(env, "InvalidOptions", "expected a series id and a number");
    };
    let result = SERIES.with_borrow(|ids| {
        let handle = ids.all.get(id as usize).and_then(Option::as_ref);
        handle.map(|(store, s)| op(store, *s, v))
    });
    match result {
        Some(Ok(())) => ptr::null_mut(),
        Some(Err(e)) => throw(env, code(e.kind()), &e.to_string()),
        None => throw(env, "InvalidOptions", &format!("no series with id {id}")),
    }
}

/// The raw callback type.
type Callback = unsafe extern "C" fn(napi_env, napi_callback_info) -> napi_value;

macro_rules! callbacks {
    ($($name:ident => $op:expr;)*) => {
        $(
            unsafe extern "C" fn $name(env: napi_env, info: napi_callback_info) -> napi_value {
                // SAFETY: Node calls this with the callback's env and info.
                unsafe { update(env, info, $op) }
            }
        )*
        /// The callbacks by their JavaScript names (NUL-terminated).
        const CALLBACKS: &[(&str, Callback)] = &[$((concat!(stringify!($name), "\0"), $name),)*];
    };
}

callbacks! {
    inc => Store::counter_add;
    add => Store::gauge_add;
    set => Store::gauge_set;
    observe => Store::observe;
}

/// Adds the callbacks to the module's exports.
pub(crate) fn export(env: napi_env, exports: napi_value) -> napi::Result<()> {
    for (name, cb) in CALLBACKS {
        let name = name.as_ptr().cast::<std::ffi::c_char>();
        let mut f = ptr::null_mut();
        // SAFETY: `env` is the module's environment during its
        // initialisation, `name` NUL-terminated (-1: its length is found
        // by the NUL), and `cb` a callback of the right signature.
        let status =
            unsafe { sys::napi_create_function(env, name, -1, Some(*cb), ptr::null_mut(), &mut f) };
        napi::check_status!(status)?;
        // SAFETY: as above; `exports` is the module's exports object.
        let status = unsafe { sys::napi_set_named_property(env, exports, name, f) };
        napi::check_status!(status)?;
    }
    Ok(())
}

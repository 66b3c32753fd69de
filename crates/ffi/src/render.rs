//! Rendering the store in a Prometheus exposition format.

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};

use shmetrics_core::{FamilyView, Snapshot};
use shmetrics_expo::Format;

use crate::error::{ffi_body, shmetrics_result, FfiError};
use crate::ptr::{self, Out, OutBuf};
use crate::types::{shmetrics_buf, shmetrics_format, shmetrics_store, shmetrics_str, RenderCache};

/// What a `SHMETRICS_FORMAT_*` value asks for: an exposition format, or
/// a page as a client library writes it.
#[derive(Clone, Copy)]
enum Page {
    Expo(Format),
    ClientRuby,
    /// A store's series for PromPHP, serialized for PHP; sorted or not.
    PromPhp(bool),
}

impl Page {
    fn encode_store(self, snap: &Snapshot, out: &mut Vec<u8>) {
        match self {
            Page::Expo(f) => shmetrics_expo::encode(snap, f, out),
            Page::ClientRuby => {
                let all: Vec<FamilyView<'_>> = snap.families().collect();
                shmetrics_expo::client_ruby::encode(&all, out);
            }
            Page::PromPhp(sorted) => {
                let all: Vec<FamilyView<'_>> = snap.families().collect();
                shmetrics_expo::promphp::encode(&all, sorted, out);
            }
        }
    }

    fn encode_families(self, families: &[FamilyView<'_>], out: &mut Vec<u8>) {
        match self {
            Page::Expo(f) => shmetrics_expo::encode_families(families, f, out),
            Page::ClientRuby => shmetrics_expo::client_ruby::encode(families, out),
            Page::PromPhp(sorted) => shmetrics_expo::promphp::encode(families, sorted, out),
        }
    }
}

fn page_from_u32(v: u32) -> Result<Page, FfiError> {
    match v {
        x if x == shmetrics_format::SHMETRICS_FORMAT_PROMETHEUS_TEXT as u32 => {
            Ok(Page::Expo(Format::PrometheusText))
        }
        x if x == shmetrics_format::SHMETRICS_FORMAT_OPENMETRICS as u32 => {
            Ok(Page::Expo(Format::OpenMetrics))
        }
        x if x == shmetrics_format::SHMETRICS_FORMAT_CLIENT_RUBY_TEXT as u32 => {
            Ok(Page::ClientRuby)
        }
        x if x == shmetrics_format::SHMETRICS_FORMAT_PROMPHP_SERIES as u32 => {
            Ok(Page::PromPhp(false))
        }
        x if x == shmetrics_format::SHMETRICS_FORMAT_PROMPHP_SERIES_SORTED as u32 => {
            Ok(Page::PromPhp(true))
        }
        _ => Err(FfiError::Other(
            shmetrics_result::SHMETRICS_INVALID_ARGUMENT,
            format!(
                "format {v} is not an exposition format; use SHMETRICS_FORMAT_PROMETHEUS_TEXT (0), \
                 SHMETRICS_FORMAT_OPENMETRICS (1), SHMETRICS_FORMAT_CLIENT_RUBY_TEXT (2), \
                 SHMETRICS_FORMAT_PROMPHP_SERIES (3) or SHMETRICS_FORMAT_PROMPHP_SERIES_SORTED (4)"
            ),
        )),
    }
}

/// The render cache, started afresh if a panic left it poisoned.
fn lock(m: &Mutex<RenderCache>) -> MutexGuard<'_, RenderCache> {
    m.lock().unwrap_or_else(|poisoned| {
        let mut g = poisoned.into_inner();
        *g = RenderCache::default();
        m.clear_poison();
        g
    })
}

/// Takes a snapshot of the store and renders it in `format` (a
/// `SHMETRICS_FORMAT_*` value) into `buf`, which has room for `cap` bytes.
/// `*len` is set to the exposition's length in bytes; no NUL is written.
///
/// If the exposition is longer than `cap`, nothing is copied, `*len` says
/// how long it is, and the call returns `SHMETRICS_BUFFER_TOO_SMALL`: call
/// again with a larger buffer (`buf` may be NULL when `cap` is 0, to ask
/// for the size). The store may grow in between, so allow some slack, or
/// loop. `shmetrics_render_alloc` avoids the second call.
///
/// Reading takes no lock on the store and never blocks a writer. The
/// handle keeps the last snapshot to refresh it cheaply next time; calls
/// on one handle render one at a time.
#[no_mangle]
pub extern "C" fn shmetrics_render(
    store: *const shmetrics_store,
    format: u32,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> shmetrics_result {
    ffi_body!("shmetrics_render", {
        let len = Out::new(len, "len")?;
        len.write(0);
        let store = ptr::object(store, "store")?;
        let page = page_from_u32(format)?;
        let buf = OutBuf::new(buf, cap, "buf")?;
        let mut cache = lock(&store.render);
        let RenderCache { snap, out } = &mut *cache;
        store.store.snapshot_into(snap)?;
        out.clear();
        page.encode_store(snap, out);
        len.write(out.len());
        if out.len() > buf.cap() {
            return Err(FfiError::Other(
                shmetrics_result::SHMETRICS_BUFFER_TOO_SMALL,
                format!(
                    "the exposition is {} bytes, the buffer has room for {}; call again with a \
                     larger buffer",
                    out.len(),
                    buf.cap()
                ),
            ));
        }
        buf.write(out);
        Ok(())
    })
}

/// Takes a snapshot of the store and renders it in `format` (a
/// `SHMETRICS_FORMAT_*` value) into a new buffer owned by the library:
/// `*out` is the buffer on success, NULL on failure. Read it with
/// `shmetrics_buf_data` and `shmetrics_buf_len`, then free it with
/// `shmetrics_buf_free`. This is the simpler choice for PHP and LuaJIT:
/// copy it into a string (`FFI::string`, `ffi.string`) and free it at once.
#[no_mangle]
pub extern "C" fn shmetrics_render_alloc(
    store: *const shmetrics_store,
    format: u32,
    out: *mut *mut shmetrics_buf,
) -> shmetrics_result {
    ffi_body!("shmetrics_render_alloc", {
        let out = Out::new(out, "out")?;
        out.write(std::ptr::null_mut());
        let store = ptr::object(store, "store")?;
        let page = page_from_u32(format)?;
        let mut cache = lock(&store.render);
        store.store.snapshot_into(&mut cache.snap)?;
        let mut data = Vec::new();
        page.encode_store(&cache.snap, &mut data);
        data.push(0); // for C callers that want a string; not counted
        out.write(ptr::into_raw(Box::new(shmetrics_buf { data })));
        Ok(())
    })
}

/// Like `shmetrics_render_alloc`, with only the families named in
/// `names` (`count` strings, each the name as the store keeps it: a
/// counter's without `_total`, as `shmetrics_family_info` gives it), in
/// that order; a name the store does not hold is left out. For an app's
/// own page, which shows the metrics of its registry: the Ruby binding
/// renders a registry's metrics on `Shmetrics::DataStore` so, in
/// `SHMETRICS_FORMAT_CLIENT_RUBY_TEXT`. `names` may be NULL when `count`
/// is 0 (an empty page, but OpenMetrics' `# EOF`).
#[no_mangle]
pub extern "C" fn shmetrics_render_families_alloc(
    store: *const shmetrics_store,
    format: u32,
    names: *const shmetrics_str,
    count: usize,
    out: *mut *mut shmetrics_buf,
) -> shmetrics_result {
    ffi_body!("shmetrics_render_families_alloc", {
        let out = Out::new(out, "out")?;
        out.write(std::ptr::null_mut());
        let store = ptr::object(store, "store")?;
        let page = page_from_u32(format)?;
        let names = ptr::slice(names, count, "names")?
            .iter()
            .map(|n| n.to_str("names"))
            .collect::<Result<Vec<&str>, FfiError>>()?;
        let mut cache = lock(&store.render);
        store.store.snapshot_into(&mut cache.snap)?;
        let mut data = Vec::new();
        page.encode_families(&shmetrics_expo::select(&cache.snap, &names), &mut data);
        data.push(0); // for C callers that want a string; not counted
        out.write(ptr::into_raw(Box::new(shmetrics_buf { data })));
        Ok(())
    })
}

/// The bytes of a buffer from `shmetrics_render_alloc`, followed by a NUL
/// that `shmetrics_buf_len` does not count; NULL for a NULL buffer. Valid
/// until the buffer is freed. (The type is `uint8_t` rather than `char` so
/// that PHP FFI hands back a pointer for `FFI::string($p, $len)` instead of
/// converting it to a string itself.)
#[no_mangle]
pub extern "C" fn shmetrics_buf_data(buf: *const shmetrics_buf) -> *const u8 {
    match ptr::object(buf, "buf") {
        Ok(b) => b.data.as_ptr(),
        Err(_) => std::ptr::null(),
    }
}

/// The length in bytes of a buffer from `shmetrics_render_alloc`; 0 for a
/// NULL buffer.
#[no_mangle]
pub extern "C" fn shmetrics_buf_len(buf: *const shmetrics_buf) -> usize {
    ptr::object(buf, "buf").map_or(0, |b| b.data.len() - 1)
}

/// Frees a buffer from `shmetrics_render_alloc`. NULL is ignored.
#[no_mangle]
pub extern "C" fn shmetrics_buf_free(buf: *mut shmetrics_buf) {
    let _ = ffi_body!("shmetrics_buf_free", {
        ptr::free(buf);
        Ok(())
    });
}

/// The HTTP `Content-Type` to send with an exposition in `format` (a
/// `SHMETRICS_FORMAT_*` value), or NULL for an unknown format. The string
/// is static: do not free it.
#[no_mangle]
pub extern "C" fn shmetrics_format_content_type(format: u32) -> *const c_char {
    match page_from_u32(format) {
        Ok(Page::Expo(Format::PrometheusText) | Page::ClientRuby) => {
            c"text/plain; version=0.0.4; charset=utf-8".as_ptr()
        }
        Ok(Page::Expo(Format::OpenMetrics)) => {
            c"application/openmetrics-text; version=1.0.0; charset=utf-8".as_ptr()
        }
        Ok(Page::PromPhp(_)) => c"application/vnd.php.serialized".as_ptr(),
        // `page_from_u32` never gives the protobuf format: the C ABI
        // renders text only.
        Ok(Page::Expo(Format::Protobuf)) | Err(_) => std::ptr::null(),
    }
}

/// The format to answer a scrape with, from its HTTP `Accept` header
/// (`accept`, `accept_len` bytes; NULL or not UTF-8 means no header), as
/// the exporter negotiates among the text formats: OpenMetrics when the
/// client prefers it, Prometheus text 0.0.4 otherwise. The protobuf format
/// (which the C ABI does not render) is never chosen: a client that asks
/// for it first, as Prometheus does with native histograms enabled, gets
/// its next choice. Returns a `SHMETRICS_FORMAT_*` value.
#[no_mangle]
pub extern "C" fn shmetrics_negotiate(accept: *const c_char, accept_len: usize) -> u32 {
    let header = if accept.is_null() {
        None
    } else {
        ptr::bytes(accept, accept_len, "accept")
            .ok()
            .and_then(|b| std::str::from_utf8(b).ok())
    };
    match shmetrics_expo::negotiate_text(header) {
        Format::OpenMetrics => shmetrics_format::SHMETRICS_FORMAT_OPENMETRICS as u32,
        // `negotiate_text` never picks the protobuf format.
        Format::PrometheusText | Format::Protobuf => {
            shmetrics_format::SHMETRICS_FORMAT_PROMETHEUS_TEXT as u32
        }
    }
}

//! The C ABI's pointer-reading code, exercised without a store so that
//! Miri can run it (`cargo +nightly miri test -p shmetrics-ffi --lib
//! miri_`, run by `./run-tests`): every pointer a C caller passes is read
//! through `ptr.rs`, and these tests pass it NULL, misaligned, empty,
//! oversized and valid pointers, through the helpers and through the
//! exported functions that read them before touching a store. Under Miri
//! an out-of-bounds read, a use of uninitialised memory or an invalid
//! value fails the test; under `cargo test` they check the results.

use std::ffi::c_char;
use std::ptr::{null, null_mut};

use crate::error::last_error_string;
use crate::error::shmetrics_result::*;
use crate::ptr::{self, Out, OutBuf};
use crate::result::FfiError;
use crate::tests::{s, zeroed_desc};
use crate::types::shmetrics_kind::*;
use crate::*;

/// A pointer to `u64`s that is one byte off their alignment.
fn misaligned(words: &[u64; 2]) -> *const u64 {
    words.as_ptr().cast::<u8>().wrapping_add(1).cast()
}

#[test]
fn miri_helpers_check_null_misaligned_and_oversized_pointers() {
    let words = [7u64, 9];
    assert_eq!(ptr::read(words.as_ptr(), "w").unwrap(), 7);
    assert!(matches!(
        ptr::read(null::<u64>(), "w"),
        Err(FfiError::Null("w"))
    ));
    assert!(matches!(
        ptr::read(misaligned(&words), "w"),
        Err(FfiError::Misaligned("w"))
    ));
    assert_eq!(ptr::slice(words.as_ptr(), 2, "w").unwrap(), &[7, 9]);
    assert!(ptr::slice(null::<u64>(), 0, "w").unwrap().is_empty());
    assert!(matches!(
        ptr::slice(null::<u64>(), 1, "w"),
        Err(FfiError::Null("w"))
    ));
    assert!(matches!(
        ptr::slice(misaligned(&words), 1, "w"),
        Err(FfiError::Misaligned("w"))
    ));
    assert!(matches!(
        ptr::slice(words.as_ptr(), usize::MAX / 4, "w"),
        Err(FfiError::TooLong("w", _))
    ));
    let text = b"abc";
    assert_eq!(ptr::bytes(text.as_ptr().cast(), 3, "t").unwrap(), b"abc");
    assert!(Out::new(null_mut::<u64>(), "o").is_err());
}

#[test]
fn miri_out_buffers_are_written_within_their_capacity() {
    let mut buf = [0xAAu8; 4];
    let out = OutBuf::new(buf.as_mut_ptr().cast(), 3, "buf").unwrap();
    assert!(!out.write_c_string(b"hello"), "does not fit");
    assert_eq!(buf, *b"he\0\xAA", "two bytes and the NUL, nothing past cap");
    let out = OutBuf::new(buf.as_mut_ptr().cast(), 4, "buf").unwrap();
    assert!(out.write_c_string(b"hey"));
    assert_eq!(&buf, b"hey\0");
    assert!(OutBuf::new(null_mut(), 1, "buf").is_err());
    let empty = OutBuf::new(null_mut(), 0, "buf").unwrap();
    assert!(!empty.write_c_string(b"x"));
    assert_eq!(empty.write(b"x"), 0);
}

#[test]
fn miri_family_descriptions_are_read_through_their_pointers() {
    let labels = [s("route"), s("status")];
    let buckets = [0.1, 1.0, 10.0];
    let mut d = zeroed_desc();
    d.name = s("req_seconds");
    d.help = s("Latency.");
    d.kind = SHMETRICS_KIND_HISTOGRAM as u32;
    d.label_names = labels.as_ptr();
    d.label_count = labels.len();
    d.buckets = buckets.as_ptr();
    d.bucket_count = buckets.len();
    let core = d.to_core().unwrap();
    assert_eq!(core.label_names, ["route", "status"]);
    assert_eq!(core.buckets, buckets);
    // A count without its pointer, a misaligned array, invalid UTF-8.
    d.label_names = null();
    assert!(matches!(
        d.to_core(),
        Err(FfiError::Null("desc.label_names"))
    ));
    d.label_names = labels.as_ptr();
    let words = [0u64; 2];
    d.buckets = misaligned(&words).cast();
    d.bucket_count = 1;
    assert!(matches!(
        d.to_core(),
        Err(FfiError::Misaligned("desc.buckets"))
    ));
    d.buckets = buckets.as_ptr();
    let bad = [b'a', 0xFF];
    d.help = shmetrics_str {
        ptr: bad.as_ptr().cast(),
        len: bad.len(),
    };
    assert!(d.to_core().is_err());
}

#[test]
fn miri_exported_calls_refuse_bad_pointers_before_any_store() {
    let mut d = zeroed_desc();
    d.name = s("jobs");
    let mut f = shmetrics_family::default();
    assert_eq!(
        shmetrics_register(null_mut(), &d, &mut f),
        SHMETRICS_NULL_PARAMETER
    );
    assert!(last_error_string().contains("store"));
    let f = shmetrics_family::default();
    let mut series = shmetrics_series::default();
    assert_eq!(
        shmetrics_series_get(null_mut(), &f, null(), 0, &mut series),
        SHMETRICS_NULL_PARAMETER
    );
    assert_eq!(
        shmetrics_counter_add(null_mut(), &series, 1.0),
        SHMETRICS_NULL_PARAMETER
    );
    assert_eq!(
        shmetrics_observe(null_mut(), null(), 1.0),
        SHMETRICS_NULL_PARAMETER
    );
    let words = [0u64; 2];
    let odd = misaligned(&words).cast::<shmetrics_store>().cast_mut();
    assert_eq!(
        shmetrics_counter_add(odd, &series, 1.0),
        SHMETRICS_INVALID_ARGUMENT
    );
}

#[test]
fn miri_the_last_error_is_copied_into_buffers_of_any_size() {
    let _ = shmetrics_counter_add(null_mut(), null(), 1.0);
    let mut len = 0;
    assert_eq!(
        shmetrics_last_error(null_mut(), 0, &mut len),
        SHMETRICS_BUFFER_TOO_SMALL
    );
    assert!(len > 0);
    let mut small = [0 as c_char; 4];
    assert_eq!(
        shmetrics_last_error(small.as_mut_ptr(), small.len(), &mut len),
        SHMETRICS_BUFFER_TOO_SMALL
    );
    assert_eq!(small[3], 0, "NUL-terminated");
    let mut whole = vec![0 as c_char; len + 1];
    assert_eq!(
        shmetrics_last_error(whole.as_mut_ptr(), whole.len(), &mut len),
        SHMETRICS_OK
    );
    assert_eq!(ptr::c_str(whole.as_ptr()).len(), len);
    assert_eq!(
        shmetrics_last_error(null_mut(), 0, null_mut()),
        SHMETRICS_NULL_PARAMETER
    );
    for code in 0..64 {
        assert!(!ptr::c_str(shmetrics_strerror(code)).is_empty());
    }
}

//! Registering families and finding series.

use shmetrics_core::{ErrorKind, MAX_LABELS};

use crate::error::{ffi_body, shmetrics_result, FfiError};
use crate::ptr::{self, Out};
use crate::types::{
    shmetrics_family, shmetrics_family_desc, shmetrics_series, shmetrics_store, shmetrics_str,
};

/// Registers a family, or returns the existing family of the same name if
/// its definition is the same (from this or any other process). On success
/// `*out` is the family handle; on failure it is zeroed.
///
/// Fails with `SHMETRICS_INVALID_NAME` or `SHMETRICS_INVALID_OPTIONS` for
/// a bad definition, `SHMETRICS_CONFLICT` if the name is taken by a
/// different definition or if a name the family would expose (`x`,
/// `x_total`, `x_bucket`, `x_count`, `x_sum`, `x_created`, as its type has
/// them) is exposed by another family of any type, `SHMETRICS_STORE_FULL`
/// if there is no room, and
/// `SHMETRICS_INVALID_UTF8` if a string is not UTF-8.
#[no_mangle]
pub extern "C" fn shmetrics_register(
    store: *const shmetrics_store,
    desc: *const shmetrics_family_desc,
    out: *mut shmetrics_family,
) -> shmetrics_result {
    ffi_body!("shmetrics_register", {
        let out = Out::new(out, "out")?;
        out.write(shmetrics_family::default());
        let store = ptr::object(store, "store")?;
        let desc = ptr::read(desc, "desc")?.to_core()?;
        out.write(store.store.register(&desc)?.into());
        Ok(())
    })
}

/// Copies `n` label values into `buf` as `&str`s, without allocating.
fn label_values(
    family: &shmetrics_family,
    values: *const shmetrics_str,
    n: usize,
    buf: &mut [&str; MAX_LABELS],
) -> Result<usize, FfiError> {
    let values = ptr::slice(values, n, "values")?;
    if values.len() > MAX_LABELS {
        return Err(FfiError::Other(
            shmetrics_result::SHMETRICS_LABEL_COUNT,
            format!(
                "expected {} label values, got {}",
                family.label_count,
                values.len()
            ),
        ));
    }
    for (slot, v) in buf.iter_mut().zip(values) {
        *slot = v.to_str("values")?;
    }
    Ok(values.len())
}

/// Gets or creates the series of `family` with these `n` label values
/// (given in the family's label name order; any UTF-8, stored exactly),
/// and stores its handle in `*out`. Keep the handle: updates through it
/// are the fast path. Finding an existing series takes no lock and
/// allocates nothing.
///
/// If the new series does not fit (the family's or the store's limits),
/// returns `SHMETRICS_OVERFLOW` *and* fills `*out` with the family's
/// overflow series, labelled `shmetrics_overflow="true"`, so the caller can
/// still record. On any other failure `*out` is zeroed; updates through a
/// zeroed handle fail with `SHMETRICS_STALE_HANDLE`.
///
/// Fails with `SHMETRICS_LABEL_COUNT` if `n` is not the family's label
/// count, `SHMETRICS_STALE_HANDLE` if the store was wiped since the family
/// was registered, `SHMETRICS_READ_ONLY` on a read-only store.
#[no_mangle]
pub extern "C" fn shmetrics_series_get(
    store: *const shmetrics_store,
    family: *const shmetrics_family,
    values: *const shmetrics_str,
    n: usize,
    out: *mut shmetrics_series,
) -> shmetrics_result {
    ffi_body!("shmetrics_series_get", {
        let out = Out::new(out, "out")?;
        out.write(shmetrics_series::default());
        let store = ptr::object(store, "store")?;
        let family = ptr::read(family, "family")?;
        let mut buf = [""; MAX_LABELS];
        let n = label_values(&family, values, n, &mut buf)?;
        match store.store.series(&family.to_core()?, &buf[..n]) {
            Ok(s) => {
                out.write(s.into());
                Ok(())
            }
            Err(e) => {
                if e.kind() == ErrorKind::Overflow {
                    if let Some(s) = e.overflow_series() {
                        out.write(s.into());
                    }
                }
                Err(e.into())
            }
        }
    })
}

/// Places the handle `*series` for the calling process, in place.
///
/// A handle carries the writer slot of the process it was made in. In a
/// child after `fork()`, a handle made before the fork (by a prefork
/// master, say) still updates the right series, but through the slow
/// path: every update finds the series' cells in the child's slot again,
/// about three times the cost of an update. Placed again in the child, it
/// takes the fast path. A handle placed for this process already is left
/// as it is, so this can be called on every handle a forked child uses,
/// once.
///
/// It rewrites `*series`: no other thread may read or copy it meanwhile.
/// A handle that cannot be placed (a read-only store, a stale handle, a
/// writer slot with no room for the series) is left as it is; its updates
/// report why.
#[no_mangle]
pub extern "C" fn shmetrics_series_place(
    store: *const shmetrics_store,
    series: *mut shmetrics_series,
) -> shmetrics_result {
    ffi_body!("shmetrics_series_place", {
        let store = ptr::object(store, "store")?;
        let s = ptr::read(series, "series")?.to_core()?;
        let placed = store.store.placed(s);
        if placed != s {
            Out::new(series, "series")?.write(placed.into());
        }
        Ok(())
    })
}

/// Sets `*out` to whether updates through `*series` take the fast path in
/// the calling process: whether the handle was made, or placed
/// (`shmetrics_series_place`), for this process's writer slot. A handle
/// made before a `fork()` is not, in the child.
#[no_mangle]
pub extern "C" fn shmetrics_series_is_placed(
    store: *const shmetrics_store,
    series: *const shmetrics_series,
    out: *mut bool,
) -> shmetrics_result {
    ffi_body!("shmetrics_series_is_placed", {
        let out = Out::new(out, "out")?;
        out.write(false);
        let store = ptr::object(store, "store")?;
        let s = ptr::read(series, "series")?.to_core()?;
        out.write(store.store.is_placed(&s));
        Ok(())
    })
}

/// Deletes the series of `family` with these `n` label values; `*existed`
/// says whether it existed. Handles to it, in every process, become
/// stale: an update through one fails with `SHMETRICS_STALE_HANDLE`, and
/// getting the same labels again makes a new series that starts from zero
/// (retry the update through it). The space is reclaimed by
/// `shmetrics_store_wipe`.
#[no_mangle]
pub extern "C" fn shmetrics_series_delete(
    store: *const shmetrics_store,
    family: *const shmetrics_family,
    values: *const shmetrics_str,
    n: usize,
    existed: *mut bool,
) -> shmetrics_result {
    ffi_body!("shmetrics_series_delete", {
        let existed = Out::new(existed, "existed")?;
        existed.write(false);
        let store = ptr::object(store, "store")?;
        let family = ptr::read(family, "family")?;
        let mut buf = [""; MAX_LABELS];
        let n = label_values(&family, values, n, &mut buf)?;
        existed.write(store.store.delete(&family.to_core()?, &buf[..n])?);
        Ok(())
    })
}

/// Deletes every series of `family` (prometheus_client's `clear()`,
/// nginx-lua-prometheus's `reset()`); the family and its overflow series
/// stay. `*deleted` is how many series were deleted. What
/// `shmetrics_series_delete` says of handles holds for each of them.
#[no_mangle]
pub extern "C" fn shmetrics_family_clear(
    store: *const shmetrics_store,
    family: *const shmetrics_family,
    deleted: *mut usize,
) -> shmetrics_result {
    ffi_body!("shmetrics_family_clear", {
        let deleted = Out::new(deleted, "deleted")?;
        deleted.write(0);
        let store = ptr::object(store, "store")?;
        let family = ptr::read(family, "family")?;
        deleted.write(store.store.clear(&family.to_core()?)?);
        Ok(())
    })
}

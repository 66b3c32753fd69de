//! Reading the store as data: a snapshot whose families and series a
//! binding walks, for clients that build their own sample objects
//! (PromPHP's `collect()`) instead of rendering an exposition.
//!
//! `shmetrics_snapshot_take` copies the store's merged contents once;
//! `shmetrics_snapshot_family` and `shmetrics_snapshot_series` then fill
//! plain structs whose pointers point into the snapshot, valid until
//! `shmetrics_snapshot_free`. Every array is built when the snapshot is
//! taken, so the walk itself allocates nothing and cannot fail but for an
//! index out of range.

#![allow(non_camel_case_types)]

use std::ops::Range;

use shmetrics_core::{Snapshot, Value};

use crate::error::{ffi_body, shmetrics_result, FfiError};
use crate::ptr::{self, Out};
use crate::types::{shmetrics_store, shmetrics_str};

/// A snapshot of a store, made by `shmetrics_snapshot_take` and freed by
/// `shmetrics_snapshot_free`. It does not change when the store does.
/// Walk it from one thread at a time.
#[derive(Debug)]
pub struct shmetrics_snapshot {
    /// The strings and counts the pointers below point into. Never
    /// changed after the snapshot is taken, so its buffers stay put.
    _snap: Snapshot,
    families: Vec<shmetrics_family_info>,
    /// Per family, its range of `series`.
    members: Vec<Range<usize>>,
    series: Vec<shmetrics_series_info>,
    /// The arrays of label names and values the infos point into.
    _strs: Vec<shmetrics_str>,
    /// The quantile arrays the series infos point into.
    _quantiles: Vec<shmetrics_quantile>,
}

/// A family of a snapshot, filled by `shmetrics_snapshot_family`. Its
/// pointers are valid until the snapshot is freed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmetrics_family_info {
    /// The name as registered, without suffixes (a counter's `_total` is
    /// not part of it: the store removes it on registration).
    pub name: shmetrics_str,
    /// The help text, unescaped.
    pub help: shmetrics_str,
    /// The unit, empty if none.
    pub unit: shmetrics_str,
    /// The metric type: a `SHMETRICS_KIND_*` value.
    pub kind: u32,
    /// For gauges, the `SHMETRICS_GAUGE_*` mode; 0 for other types.
    pub gauge_mode: u32,
    /// The label names: `label_count` strings (NULL when 0).
    pub label_names: *const shmetrics_str,
    /// How many label names; every series has as many label values.
    pub label_count: usize,
    /// A histogram's classic upper bounds, without +Inf: `bucket_count`
    /// doubles (NULL when 0, as for a native-only histogram and for
    /// every other type).
    pub buckets: *const f64,
    /// How many bounds.
    pub bucket_count: usize,
    /// How many series `shmetrics_snapshot_series` gives for the family.
    pub series_count: usize,
    /// 1 for a counter registered with `name_as_given` and a name without
    /// `_total`: the Prometheus text and protobuf formats name it `name`.
    /// 0 otherwise: a counter is `name_total` there (and in OpenMetrics
    /// always).
    pub name_as_given: u8,
}

/// One quantile estimate of a summary series.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct shmetrics_quantile {
    /// The quantile, in [0, 1].
    pub quantile: f64,
    /// Its estimate over the family's window (within 0.99% of the exact
    /// value); NaN when the window holds no observation.
    pub value: f64,
}

/// A series of a snapshot, filled by `shmetrics_snapshot_series`. Its
/// pointers are valid until the snapshot is freed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmetrics_series_info {
    /// The label values, in the order of the family's label names: its
    /// `label_count` strings (NULL when 0).
    pub label_values: *const shmetrics_str,
    /// A label the store adds, empty if none: `pid` for the gauge modes
    /// `ALL` and `LIVEALL`, `shmetrics_overflow` for a family's overflow
    /// series.
    pub extra_label_name: shmetrics_str,
    /// Its value (the process id, or `true`).
    pub extra_label_value: shmetrics_str,
    /// A counter's total or a gauge's value; a histogram's or a summary's
    /// sum of observations.
    pub value: f64,
    /// A histogram's or a summary's count of observations (a summary's
    /// since the series was created); 0 for counters and gauges.
    pub count: u64,
    /// A histogram's cumulative bucket counts, one per bound of the family
    /// and a last one for +Inf (which equals `count`): `bucket_count + 1`
    /// values; NULL for other types.
    pub cumulative: *const u64,
    /// A summary's quantiles, in increasing order: `quantile_count` of
    /// them (NULL when 0).
    pub quantiles: *const shmetrics_quantile,
    /// How many quantiles.
    pub quantile_count: usize,
}

fn str_of(s: &str) -> shmetrics_str {
    shmetrics_str {
        ptr: s.as_ptr().cast(),
        len: s.len(),
    }
}

/// A pointer to `v[r]`, NULL when the range is empty.
fn at<T>(v: &[T], r: &Range<usize>) -> *const T {
    if r.is_empty() {
        std::ptr::null()
    } else {
        v[r.start..r.end].as_ptr()
    }
}

/// The label arrays and quantiles of a snapshot, gathered first so that
/// they no longer move when the infos point into them.
#[derive(Default)]
struct Arrays {
    strs: Vec<shmetrics_str>,
    quantiles: Vec<shmetrics_quantile>,
    /// Per family: its label names in `strs`.
    names: Vec<Range<usize>>,
    /// Per series: its label values in `strs`, its quantiles.
    values: Vec<(Range<usize>, Range<usize>)>,
}

impl Arrays {
    fn push_strs<'a>(&mut self, it: impl Iterator<Item = &'a str>) -> Range<usize> {
        let start = self.strs.len();
        self.strs.extend(it.map(str_of));
        start..self.strs.len()
    }

    fn gather(snap: &Snapshot) -> Arrays {
        let mut a = Arrays::default();
        for f in snap.families() {
            let names = a.push_strs(f.label_names());
            a.names.push(names);
            for s in f.series() {
                let values = a.push_strs(s.label_values());
                let start = a.quantiles.len();
                if let Value::Summary { quantiles, .. } = s.value() {
                    a.quantiles
                        .extend(quantiles.iter().map(|q| shmetrics_quantile {
                            quantile: q.quantile,
                            value: q.value,
                        }));
                }
                a.values.push((values, start..a.quantiles.len()));
            }
        }
        a
    }
}

/// The series info of `s`, whose arrays are at `values` and `quantiles`.
fn series_info(
    s: shmetrics_core::SeriesView<'_>,
    a: &Arrays,
    values: &Range<usize>,
    quantiles: &Range<usize>,
) -> shmetrics_series_info {
    let extra = s.labels().nth(values.len());
    let (value, count, cumulative) = match s.value() {
        Value::Counter(v) | Value::Gauge(v) => (v, 0, std::ptr::null()),
        Value::Histogram {
            cumulative, sum, ..
        } => (
            sum,
            cumulative.last().copied().unwrap_or(0),
            cumulative.as_ptr(),
        ),
        Value::Summary { count, sum, .. } => (sum, count, std::ptr::null()),
    };
    shmetrics_series_info {
        label_values: at(&a.strs, values),
        extra_label_name: str_of(extra.map_or("", |e| e.0)),
        extra_label_value: str_of(extra.map_or("", |e| e.1)),
        value,
        count,
        cumulative,
        quantiles: at(&a.quantiles, quantiles),
        quantile_count: quantiles.len(),
    }
}

impl shmetrics_snapshot {
    fn new(snap: Snapshot) -> shmetrics_snapshot {
        let a = Arrays::gather(&snap);
        let mut families = Vec::with_capacity(a.names.len());
        let mut members = Vec::with_capacity(a.names.len());
        let mut series = Vec::with_capacity(a.values.len());
        for (f, names) in snap.families().zip(&a.names) {
            let start = series.len();
            for s in f.series() {
                let (values, quantiles) = &a.values[series.len()];
                series.push(series_info(s, &a, values, quantiles));
            }
            let buckets = f.buckets();
            families.push(shmetrics_family_info {
                name: str_of(f.name()),
                help: str_of(f.help()),
                unit: str_of(f.unit()),
                kind: f.kind() as u32,
                gauge_mode: match f.kind() {
                    shmetrics_core::Kind::Gauge => f.gauge_mode() as u32,
                    _ => 0,
                },
                label_names: at(&a.strs, names),
                label_count: names.len(),
                buckets: if buckets.is_empty() {
                    std::ptr::null()
                } else {
                    buckets.as_ptr()
                },
                bucket_count: buckets.len(),
                series_count: series.len() - start,
                name_as_given: u8::from(f.name_as_given()),
            });
            members.push(start..series.len());
        }
        shmetrics_snapshot {
            _snap: snap,
            families,
            members,
            series,
            _strs: a.strs,
            _quantiles: a.quantiles,
        }
    }
}

fn out_of_range(what: &str, index: usize, count: usize) -> FfiError {
    FfiError::Other(
        shmetrics_result::SHMETRICS_INVALID_ARGUMENT,
        format!("{what} {index} is out of range: the snapshot has {count}"),
    )
}

/// Takes a consistent snapshot of the store: every family and series with
/// its values merged over all processes, as the exporter would serve them
/// now. On success `*out` is the snapshot, to be freed with
/// `shmetrics_snapshot_free`; on failure it is NULL.
///
/// Families come in registration order, series in creation order. Reading
/// takes no lock on the store and never blocks a writer.
#[no_mangle]
pub extern "C" fn shmetrics_snapshot_take(
    store: *const shmetrics_store,
    out: *mut *mut shmetrics_snapshot,
) -> shmetrics_result {
    ffi_body!("shmetrics_snapshot_take", {
        let out = Out::new(out, "out")?;
        out.write(std::ptr::null_mut());
        let store = ptr::object(store, "store")?;
        let snap = store.store.snapshot()?;
        out.write(ptr::into_raw(Box::new(shmetrics_snapshot::new(snap))));
        Ok(())
    })
}

/// How many families the snapshot has; 0 for a NULL snapshot.
#[no_mangle]
pub extern "C" fn shmetrics_snapshot_family_count(snap: *const shmetrics_snapshot) -> usize {
    ptr::object(snap, "snap").map_or(0, |s| s.families.len())
}

/// Fills `*out` with family `index` (from 0) of the snapshot. Fails with
/// `SHMETRICS_INVALID_ARGUMENT` if there is no such family.
#[no_mangle]
pub extern "C" fn shmetrics_snapshot_family(
    snap: *const shmetrics_snapshot,
    index: usize,
    out: *mut shmetrics_family_info,
) -> shmetrics_result {
    ffi_body!("shmetrics_snapshot_family", {
        let out = Out::new(out, "out")?;
        let snap = ptr::object(snap, "snap")?;
        let info = snap.families.get(index);
        out.write(*info.ok_or_else(|| out_of_range("family", index, snap.families.len()))?);
        Ok(())
    })
}

/// Fills `*out` with series `index` (from 0) of family `family` of the
/// snapshot. Fails with `SHMETRICS_INVALID_ARGUMENT` if there is no such
/// family or series.
#[no_mangle]
pub extern "C" fn shmetrics_snapshot_series(
    snap: *const shmetrics_snapshot,
    family: usize,
    index: usize,
    out: *mut shmetrics_series_info,
) -> shmetrics_result {
    ffi_body!("shmetrics_snapshot_series", {
        let out = Out::new(out, "out")?;
        let snap = ptr::object(snap, "snap")?;
        let members = snap
            .members
            .get(family)
            .ok_or_else(|| out_of_range("family", family, snap.families.len()))?;
        let info = snap.series[members.clone()].get(index);
        out.write(*info.ok_or_else(|| out_of_range("series", index, members.len()))?);
        Ok(())
    })
}

/// Frees a snapshot from `shmetrics_snapshot_take`, and with it every
/// pointer its infos hold. NULL is ignored.
#[no_mangle]
pub extern "C" fn shmetrics_snapshot_free(snap: *mut shmetrics_snapshot) {
    let _ = ffi_body!("shmetrics_snapshot_free", {
        ptr::free(snap);
        Ok(())
    });
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;

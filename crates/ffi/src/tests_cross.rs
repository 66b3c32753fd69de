//! Through the C ABI, between two store handles on one file (each its own
//! writer, as two processes): a series deleted, cleared or wiped by one
//! makes the other's cached handle fail with `SHMETRICS_STALE_HANDLE`, and
//! getting the series again gives a new one from zero. A family whose
//! exposed names collide with another's is refused with
//! `SHMETRICS_CONFLICT`; near-collisions render a page promtool accepts.

use std::process::Command;
use std::ptr::null_mut;

use crate::error::last_error_string;
use crate::error::shmetrics_result::*;
use crate::tests::{counter, default_opts, open_store, register, render, s, series, zeroed_desc};
use crate::types::shmetrics_kind::{self, *};
use crate::*;

/// A second handle on the store file of `st`, closed on drop.
struct Other(*mut shmetrics_store);

impl Drop for Other {
    fn drop(&mut self) {
        shmetrics_store_close(self.0);
    }
}

fn reopen(path: &std::path::Path) -> Other {
    let p = path.to_str().unwrap();
    let mut out = null_mut();
    let r = shmetrics_store_open(p.as_ptr().cast(), p.len(), &default_opts(), &mut out);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    Other(out)
}

/// Registers counter `name` with label `k` through `store`.
fn counter_on(store: *mut shmetrics_store, name: &str) -> shmetrics_family {
    let labels = [s("k")];
    let mut d = zeroed_desc();
    d.name = s(name);
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = 1;
    let mut f = shmetrics_family::default();
    assert_eq!(shmetrics_register(store, &d, &mut f), SHMETRICS_OK);
    f
}

#[test]
fn delete_clear_and_wipe_make_another_handles_series_stale() {
    let st = open_store();
    let other = reopen(&st.path);
    let f = counter(&st, "jobs_total", &[s("k")]);
    let (_, a) = series(&st, &f, &[s("a")]);
    let (_, b) = series(&st, &f, &[s("b")]);
    assert_eq!(shmetrics_counter_add(st.ptr, &a, 5.0), SHMETRICS_OK);
    let fo = counter_on(other.0, "jobs");

    // Deleted by the other handle: stale here, and new from zero.
    let mut existed = false;
    let va = [s("a")];
    let r = shmetrics_series_delete(other.0, &fo, va.as_ptr(), 1, &mut existed);
    assert_eq!((r, existed), (SHMETRICS_OK, true));
    assert_eq!(shmetrics_counter_inc(st.ptr, &a), SHMETRICS_STALE_HANDLE);
    assert!(last_error_string().contains("look the series up again"));
    let (r, a2) = series(&st, &f, &[s("a")]);
    assert_eq!(r, SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(st.ptr, &a2), SHMETRICS_OK);
    assert!(render(&st, 0).contains("jobs_total{k=\"a\"} 1\n"));

    // Cleared by the other handle: every series of the family.
    let mut deleted = 0;
    assert_eq!(
        shmetrics_family_clear(other.0, &fo, &mut deleted),
        SHMETRICS_OK
    );
    assert_eq!(deleted, 2);
    for h in [&a2, &b] {
        assert_eq!(shmetrics_counter_inc(st.ptr, h), SHMETRICS_STALE_HANDLE);
    }
    assert!(!render(&st, 0).contains("jobs_total{"));

    // Wiped by the other handle: the family is stale too.
    let (_, b2) = series(&st, &f, &[s("b")]);
    assert_eq!(shmetrics_store_wipe(other.0), SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(st.ptr, &b2), SHMETRICS_STALE_HANDLE);
    assert_eq!(series(&st, &f, &[s("b")]).0, SHMETRICS_STALE_HANDLE);
    let f2 = counter(&st, "jobs_total", &[s("k")]);
    let (_, b3) = series(&st, &f2, &[s("b")]);
    assert_eq!(shmetrics_counter_inc(st.ptr, &b3), SHMETRICS_OK);
    assert!(render(&st, 0).contains("jobs_total{k=\"b\"} 1\n"));

    // A reset keeps series and handles: values restart from zero.
    assert_eq!(shmetrics_store_reset(other.0), SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(st.ptr, &b3), SHMETRICS_OK);
    assert!(render(&st, 0).contains("jobs_total{k=\"b\"} 1\n"));
}

fn family(st: &crate::tests::TestStore, name: &str, kind: shmetrics_kind) -> shmetrics_result {
    let mut d = zeroed_desc();
    d.name = s(name);
    d.kind = kind as u32;
    register(st, &d).0
}

#[test]
fn colliding_exposed_names_are_refused() {
    let st = open_store();
    assert_eq!(family(&st, "x", SHMETRICS_KIND_COUNTER), SHMETRICS_OK);
    assert_eq!(
        family(&st, "x_total", SHMETRICS_KIND_GAUGE),
        SHMETRICS_CONFLICT
    );
    let msg = last_error_string();
    for part in ["gauge \"x_total\"", "counter \"x\"", "would expose"] {
        assert!(msg.contains(part), "{msg:?} lacks {part:?}");
    }
    assert_eq!(family(&st, "h", SHMETRICS_KIND_HISTOGRAM), SHMETRICS_OK);
    assert_eq!(
        family(&st, "h_bucket", SHMETRICS_KIND_GAUGE),
        SHMETRICS_CONFLICT
    );
    assert_eq!(
        family(&st, "h_sum", SHMETRICS_KIND_SUMMARY),
        SHMETRICS_CONFLICT
    );
    assert!(last_error_string().contains("histogram \"h\""));
}

/// Families whose names come close without colliding, each with a value,
/// render a page that promtool parses and lints clean (exit 1 would be a
/// parse error, such as a second `TYPE` line for one name; exit 3 a lint
/// finding).
#[test]
fn near_collisions_render_a_page_promtool_accepts() {
    let st = open_store();
    let near = [
        ("x", SHMETRICS_KIND_COUNTER),
        ("x_totals", SHMETRICS_KIND_GAUGE),
        ("x_total_bytes", SHMETRICS_KIND_GAUGE),
        ("x_info", SHMETRICS_KIND_GAUGE),
        ("y", SHMETRICS_KIND_HISTOGRAM),
        ("y_buckets", SHMETRICS_KIND_GAUGE),
        ("y_counts", SHMETRICS_KIND_COUNTER),
        ("z", SHMETRICS_KIND_SUMMARY),
        ("z_buckets", SHMETRICS_KIND_GAUGE),
        ("z_sum_seconds", SHMETRICS_KIND_GAUGE),
        ("w_sum", SHMETRICS_KIND_COUNTER),
    ];
    for (name, kind) in near {
        let mut d = zeroed_desc();
        d.name = s(name);
        d.help = s("Near another name.");
        d.kind = kind as u32;
        let (r, f) = register(&st, &d);
        assert_eq!(r, SHMETRICS_OK, "{name}: {}", last_error_string());
        let (_, h) = series(&st, &f, &[]);
        let r = match kind {
            SHMETRICS_KIND_COUNTER => shmetrics_counter_inc(st.ptr, &h),
            SHMETRICS_KIND_GAUGE => shmetrics_gauge_set(st.ptr, &h, 2.0),
            _ => shmetrics_observe(st.ptr, &h, 0.3),
        };
        assert_eq!(r, SHMETRICS_OK);
    }
    // Refused: it would repeat the counter's `x_total`.
    assert_eq!(
        family(&st, "x_total", SHMETRICS_KIND_GAUGE),
        SHMETRICS_CONFLICT
    );
    let page = render(&st, 0);
    assert!(page.contains("# TYPE x_total counter\n"), "{page}");
    assert!(page.contains("# TYPE x_totals gauge\n"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("page.prom");
    std::fs::write(&file, &page).unwrap();
    let out = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .expect("promtool (apt-get install prometheus) must be on the PATH");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool refused the page ({}):\n{said}\n{page}",
        out.status
    );
}

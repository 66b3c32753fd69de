//! Tests of the ABI called from Rust: null handling, error mapping,
//! handles, rendering.

use std::ffi::c_char;
use std::ptr::{null, null_mut};

use crate::error::last_error_string;
use crate::error::shmetrics_result::{self, *};
use crate::types::shmetrics_kind::*;
use crate::*;

pub(crate) fn s(v: &str) -> shmetrics_str {
    shmetrics_str {
        ptr: v.as_ptr().cast::<c_char>(),
        len: v.len(),
    }
}

pub(crate) fn zeroed_desc() -> shmetrics_family_desc {
    shmetrics_family_desc {
        name: s(""),
        help: s(""),
        unit: s(""),
        label_names: null(),
        label_count: 0,
        kind: 0,
        gauge_mode: 0,
        buckets: null(),
        bucket_count: 0,
        quantiles: null(),
        quantile_count: 0,
        max_age_ms: 0,
        age_buckets: 0,
        max_series: 0,
        native: 0,
        native_bucket_factor: 0.0,
        native_zero_threshold: 0.0,
        native_max_buckets: 0,
        exemplars: 0,
        ttl_ms: 0,
        name_as_given: 0,
        name_rules: 0,
        hints: 0,
    }
}

pub(crate) struct TestStore {
    _dir: tempfile::TempDir,
    pub(crate) path: std::path::PathBuf,
    pub(crate) ptr: *mut shmetrics_store,
}

impl Drop for TestStore {
    fn drop(&mut self) {
        shmetrics_store_close(self.ptr);
    }
}

pub(crate) fn open_store() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let p = path.to_str().unwrap();
    let mut opts = default_opts();
    opts.max_series = 64;
    opts.label_bytes = 1 << 16;
    opts.max_writers = 4;
    let mut out = null_mut();
    let r = shmetrics_store_open(p.as_ptr().cast(), p.len(), &opts, &mut out);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    assert!(!out.is_null());
    TestStore {
        _dir: dir,
        path,
        ptr: out,
    }
}

pub(crate) fn default_opts() -> shmetrics_options {
    let mut d = shmetrics_options {
        create: 0,
        read_only: 0,
        mode: 0,
        max_families: 0,
        max_series: 0,
        label_bytes: 0,
        max_writers: 0,
        cells_per_writer: 0,
        sketch_cells_per_writer: 0,
        owner: 0,
        group: 0,
    };
    assert_eq!(shmetrics_options_default(&mut d), SHMETRICS_OK);
    d
}

pub(crate) fn register(
    st: &TestStore,
    desc: &shmetrics_family_desc,
) -> (shmetrics_result, shmetrics_family) {
    let mut f = shmetrics_family::default();
    let r = shmetrics_register(st.ptr, desc, &mut f);
    (r, f)
}

pub(crate) fn counter(st: &TestStore, name: &str, labels: &[shmetrics_str]) -> shmetrics_family {
    let mut d = zeroed_desc();
    d.name = s(name);
    d.help = s("Help text.");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = labels.len();
    let (r, f) = register(st, &d);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    f
}

pub(crate) fn series(
    st: &TestStore,
    f: &shmetrics_family,
    values: &[shmetrics_str],
) -> (shmetrics_result, shmetrics_series) {
    let mut out = shmetrics_series::default();
    let r = shmetrics_series_get(st.ptr, f, values.as_ptr(), values.len(), &mut out);
    (r, out)
}

pub(crate) fn render(st: &TestStore, format: u32) -> String {
    render_handle(st.ptr, format)
}

/// [`render`] of a handle not owned by a [`TestStore`].
pub(crate) fn render_handle(st: *mut shmetrics_store, format: u32) -> String {
    let mut len = 0;
    let r = shmetrics_render(st, format, null_mut(), 0, &mut len);
    assert!(
        matches!(r, SHMETRICS_BUFFER_TOO_SMALL | SHMETRICS_OK),
        "{r:?}"
    );
    let mut buf = vec![0u8; len + 4096];
    let r = shmetrics_render(st, format, buf.as_mut_ptr().cast(), buf.len(), &mut len);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    buf.truncate(len);
    String::from_utf8(buf).unwrap()
}

/// UTF-8 names (Prometheus 3) pass through the C ABI as given; the page
/// `shmetrics_render` writes escapes them with `underscores`, for any
/// scraper. Bytes that are not UTF-8 and empty names are refused.
#[test]
fn utf8_names() {
    let st = open_store();
    let f = counter(&st, "http.server.requests", &[s("http.method"), s("x.花")]);
    let (r, one) = series(&st, &f, &[s("GET"), s("x")]);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    assert_eq!(shmetrics_counter_inc(st.ptr, &one), SHMETRICS_OK);
    let text = render(&st, 0);
    assert!(
        text.contains("http_server_requests_total{http_method=\"GET\",x__=\"x\"} 1\n"),
        "{text}"
    );
    let mut d = zeroed_desc();
    d.kind = SHMETRICS_KIND_GAUGE as u32;
    let bad = [0xffu8, b'a'];
    d.name = shmetrics_str {
        ptr: bad.as_ptr().cast(),
        len: bad.len(),
    };
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_UTF8);
    d.name = s("");
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_NAME);
    // One name to scrapers without UTF-8: refused.
    d.name = s("http_server_requests_total");
    assert_eq!(
        register(&st, &d).0,
        SHMETRICS_CONFLICT,
        "{}",
        last_error_string()
    );
    assert!(
        last_error_string().contains("UTF-8"),
        "{}",
        last_error_string()
    );
}

#[test]
fn end_to_end() {
    let st = open_store();
    let f = counter(&st, "http_requests_total", &[s("route"), s("status")]);
    assert_eq!(f.kind, SHMETRICS_KIND_COUNTER as u32);
    assert_eq!(f.label_count, 2);
    let (r, ok) = series(&st, &f, &[s("/"), s("200")]);
    assert_eq!(r, SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(st.ptr, &ok), SHMETRICS_OK);
    assert_eq!(shmetrics_counter_add(st.ptr, &ok, 2.5), SHMETRICS_OK);
    // The same labels give the same handle.
    assert_eq!(series(&st, &f, &[s("/"), s("200")]), (SHMETRICS_OK, ok));

    let text = render(&st, 0);
    assert!(
        text.contains("http_requests_total{route=\"/\",status=\"200\"} 3.5\n"),
        "{text}"
    );
    let om = render(&st, 1);
    assert!(om.ends_with("# EOF\n"), "{om}");

    let mut stats = shmetrics_stats::default();
    assert_eq!(shmetrics_store_stats(st.ptr, &mut stats), SHMETRICS_OK);
    assert_eq!(stats.families, 1);
    assert_eq!(stats.series_capacity, 64);
    assert_eq!(stats.series_allocated, 2); // the series and the overflow series

    let mut existed = false;
    let vals = [s("/"), s("200")];
    assert_eq!(
        shmetrics_series_delete(st.ptr, &f, vals.as_ptr(), 2, &mut existed),
        SHMETRICS_OK
    );
    assert!(existed);
    assert_eq!(
        shmetrics_series_delete(st.ptr, &f, vals.as_ptr(), 2, &mut existed),
        SHMETRICS_OK
    );
    assert!(!existed);

    // Clearing deletes every series but the overflow series.
    assert_eq!(series(&st, &f, &[s("/a"), s("200")]).0, SHMETRICS_OK);
    assert_eq!(series(&st, &f, &[s("/b"), s("500")]).0, SHMETRICS_OK);
    let mut deleted = 99usize;
    assert_eq!(
        shmetrics_family_clear(st.ptr, &f, &mut deleted),
        SHMETRICS_OK
    );
    assert_eq!(deleted, 2);
    assert!(!render(&st, 0).contains("route="), "{}", render(&st, 0));
    assert_eq!(
        shmetrics_family_clear(st.ptr, &f, &mut deleted),
        SHMETRICS_OK
    );
    assert_eq!(deleted, 0);

    assert_eq!(shmetrics_store_reset(st.ptr), SHMETRICS_OK);
    assert_eq!(shmetrics_store_release_slot(st.ptr), SHMETRICS_OK);
    assert_eq!(shmetrics_store_wipe(st.ptr), SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(st.ptr, &ok), SHMETRICS_STALE_HANDLE);
    assert_eq!(series(&st, &f, &vals).0, SHMETRICS_STALE_HANDLE);
}

#[test]
fn native_histograms() {
    let st = open_store();
    let mut d = zeroed_desc();
    d.name = s("rpc_seconds");
    d.kind = SHMETRICS_KIND_HISTOGRAM as u32;
    d.native_bucket_factor = 2.0; // schema 0
    let (r, f) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    let (r, h) = series(&st, &f, &[]);
    assert_eq!(r, SHMETRICS_OK);
    for v in [0.75, 3.0, 3.5] {
        assert_eq!(shmetrics_observe(st.ptr, &h, v), SHMETRICS_OK);
    }
    // Native only: the text formats carry `+Inf`, `_count` and `_sum`.
    let text = render(&st, 0);
    assert!(
        text.contains("rpc_seconds_bucket{le=\"+Inf\"} 3\nrpc_seconds_count 3\n"),
        "{text}"
    );
    // The same definition is the same family; another factor conflicts.
    assert_eq!(register(&st, &d), (SHMETRICS_OK, f));
    d.native_bucket_factor = 1.1;
    assert_eq!(register(&st, &d).0, SHMETRICS_CONFLICT);
    // `native` alone: every option at its default (1.1 is schema 3).
    let mut on = zeroed_desc();
    on.name = s("defaults_seconds");
    on.kind = SHMETRICS_KIND_HISTOGRAM as u32;
    on.native = 1;
    let (r, _) = register(&st, &on);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    on.native = 0;
    on.native_bucket_factor = 1.1;
    assert_eq!(
        register(&st, &on).0,
        SHMETRICS_OK,
        "the same definition, spelt out"
    );
    // A factor left 0 beside another native option is the default too.
    d.name = s("other");
    d.native_bucket_factor = 0.0;
    d.native_max_buckets = 10;
    assert_eq!(register(&st, &d).0, SHMETRICS_OK, "{}", last_error_string());
    // A factor of 1 or less is refused, and so are native options on
    // anything but a histogram.
    d.name = s("third");
    d.native_bucket_factor = 1.0;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.native_bucket_factor = 1.5;
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
}

/// Every line of an OpenMetrics exposition but `_created`, with each
/// exemplar's timestamp checked to be a plausible time and replaced by `T`.
fn normalized_openmetrics(text: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.contains("_created")) {
        if line.contains(" # {") {
            let (head, ts) = line.rsplit_once(' ').unwrap();
            let t: f64 = ts.parse().unwrap();
            assert!(now - 600.0 < t && t < now + 600.0, "{line}");
            out.push_str(head);
            out.push_str(" T\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn exemplars() {
    let st = open_store();
    let mut d = zeroed_desc();
    let labels = [s("queue")];
    d.name = s("jobs");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = 1;
    d.exemplars = 1;
    let (r, jobs) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    let (_, a) = series(&st, &jobs, &[s("a")]);
    let (_, b) = series(&st, &jobs, &[s("b")]);
    let (names, values) = ([s("trace_id")], [s("t1")]);
    assert_eq!(
        shmetrics_counter_add_exemplar(st.ptr, &a, 2.0, names.as_ptr(), values.as_ptr(), 1),
        SHMETRICS_OK,
        "{}",
        last_error_string()
    );
    // The latest exemplar wins; label values are escaped.
    let (names, values) = ([s("trace_id"), s("span_id")], [s("t\\2\n"), s("s2")]);
    assert_eq!(
        shmetrics_counter_add_exemplar(st.ptr, &a, 0.5, names.as_ptr(), values.as_ptr(), 2),
        SHMETRICS_OK
    );
    // No labels: NULL arrays with n = 0.
    assert_eq!(
        shmetrics_counter_inc_exemplar(st.ptr, &b, null(), null(), 0),
        SHMETRICS_OK
    );

    let mut d = zeroed_desc();
    d.name = s("lat");
    d.kind = SHMETRICS_KIND_HISTOGRAM as u32;
    let bounds = [1.0, 2.0];
    d.buckets = bounds.as_ptr();
    d.bucket_count = 2;
    d.exemplars = 1;
    let (r, lat) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    let (_, l) = series(&st, &lat, &[]);
    let (names, values) = ([s("trace_id"), s("user")], [s("x"), s("é")]);
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, &l, 0.5, names.as_ptr(), values.as_ptr(), 2),
        SHMETRICS_OK
    );
    assert_eq!(shmetrics_observe(st.ptr, &l, 1.5), SHMETRICS_OK);
    let (names, values) = ([s("trace_id")], [s("inf")]);
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, &l, 3.0, names.as_ptr(), values.as_ptr(), 1),
        SHMETRICS_OK
    );
    // More labels than fit on the stack (20 one-character names).
    let many: Vec<String> = (b'a'..=b't').map(|c| (c as char).to_string()).collect();
    let many_names: Vec<shmetrics_str> = many.iter().map(|n| s(n)).collect();
    let empties = vec![s(""); many.len()];
    assert_eq!(
        shmetrics_counter_add_exemplar(
            st.ptr,
            &b,
            1.0,
            many_names.as_ptr(),
            empties.as_ptr(),
            many.len()
        ),
        SHMETRICS_OK,
        "{}",
        last_error_string()
    );

    let want = "# TYPE jobs counter\n\
                jobs_total{queue=\"a\"} 2.5 # {trace_id=\"t\\\\2\\n\",span_id=\"s2\"} 0.5 T\n\
                jobs_total{queue=\"b\"} 2 # {a=\"\",b=\"\",c=\"\",d=\"\",e=\"\",f=\"\",g=\"\",h=\"\",i=\"\",j=\"\",k=\"\",l=\"\",m=\"\",n=\"\",o=\"\",p=\"\",q=\"\",r=\"\",s=\"\",t=\"\"} 1 T\n\
                # TYPE lat histogram\n\
                lat_bucket{le=\"1.0\"} 1 # {trace_id=\"x\",user=\"é\"} 0.5 T\n\
                lat_bucket{le=\"2.0\"} 2\n\
                lat_bucket{le=\"+Inf\"} 3 # {trace_id=\"inf\"} 3 T\n\
                lat_count 3\n\
                lat_sum 5\n\
                # EOF\n";
    assert_eq!(normalized_openmetrics(&render(&st, 1)), want);
    // The text format 0.0.4 has no exemplars.
    assert!(!render(&st, 0).contains(" # "));

    // A refused exemplar refuses the update: nothing below is counted.
    let refused = |names: &[shmetrics_str], values: &[shmetrics_str], v: f64| {
        let n = names.len();
        (
            shmetrics_counter_add_exemplar(st.ptr, &a, v, names.as_ptr(), values.as_ptr(), n),
            shmetrics_observe_exemplar(st.ptr, &l, v, names.as_ptr(), values.as_ptr(), n),
        )
    };
    let x121 = "x".repeat(121);
    let x120 = "x".repeat(120);
    let bad_utf8 = [0xffu8];
    let bad_utf8 = shmetrics_str {
        ptr: bad_utf8.as_ptr().cast(),
        len: 1,
    };
    for (names, values, v, code) in [
        (vec![s("__x")], vec![s("x")], 1.0, SHMETRICS_INVALID_NAME),
        (vec![s("")], vec![s("x")], 1.0, SHMETRICS_INVALID_NAME),
        (
            vec![s("t"), s("t")],
            vec![s("1"), s("2")],
            1.0,
            SHMETRICS_INVALID_NAME,
        ),
        (
            vec![s("trace_id")],
            vec![s(&x121)],
            1.0,
            SHMETRICS_INVALID_VALUE,
        ),
        (
            vec![s("trace_id")],
            vec![s("x")],
            f64::NAN,
            SHMETRICS_INVALID_VALUE,
        ),
        (
            vec![s("trace_id")],
            vec![bad_utf8],
            1.0,
            SHMETRICS_INVALID_UTF8,
        ),
        (vec![bad_utf8], vec![s("x")], 1.0, SHMETRICS_INVALID_UTF8),
    ] {
        assert_eq!(refused(&names, &values, v), (code, code), "{names:?}");
    }
    let r = refused(&[s("trace_id")], &[s(&x121)], 1.0);
    assert_eq!(r.0, SHMETRICS_INVALID_VALUE);
    assert!(
        last_error_string().contains("128"),
        "{}",
        last_error_string()
    );
    // 200 labels: past the stack buffer, refused by the store.
    let names: Vec<String> = (0..200).map(|i| format!("l{i}")).collect();
    let names: Vec<shmetrics_str> = names.iter().map(|n| s(n)).collect();
    let values = vec![s(""); 200];
    assert_eq!(refused(&names, &values, 1.0).0, SHMETRICS_INVALID_VALUE);
    // A negative increment is refused for a counter, fine for a histogram.
    assert_eq!(
        shmetrics_counter_add_exemplar(st.ptr, &a, -1.0, null(), null(), 0),
        SHMETRICS_INVALID_VALUE
    );
    assert!(normalized_openmetrics(&render(&st, 1))
        .contains("jobs_total{queue=\"a\"} 2.5 # {trace_id=\"t\\\\2\\n\",span_id=\"s2\"} 0.5 T\n"));
    assert!(render(&st, 0).contains("lat_count 3\n"));
    // 120 characters with the name's 8: at the limit.
    let (names, values) = ([s("trace_id")], [s(&x120)]);
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, &l, -1.0, names.as_ptr(), values.as_ptr(), 1),
        SHMETRICS_OK
    );
    // NULL arrays with a count.
    assert_eq!(
        shmetrics_counter_add_exemplar(st.ptr, &a, 1.0, null(), values.as_ptr(), 1),
        SHMETRICS_NULL_PARAMETER
    );
    assert!(
        last_error_string().contains("`names`"),
        "{}",
        last_error_string()
    );
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, &l, 1.0, names.as_ptr(), null(), 1),
        SHMETRICS_NULL_PARAMETER
    );

    // The wrong type, and a family without exemplars.
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, &a, 1.0, null(), null(), 0),
        SHMETRICS_WRONG_TYPE
    );
    assert_eq!(
        shmetrics_counter_inc_exemplar(st.ptr, &l, null(), null(), 0),
        SHMETRICS_WRONG_TYPE
    );
    let plain = counter(&st, "plain", &[]);
    let (_, p) = series(&st, &plain, &[]);
    assert_eq!(
        shmetrics_counter_inc_exemplar(st.ptr, &p, null(), null(), 0),
        SHMETRICS_INVALID_OPTIONS
    );
    assert!(last_error_string().contains("exemplars"));
    assert!(render(&st, 0).contains("plain_total 0\n"));
    let mut d = zeroed_desc();
    d.name = s("sm");
    d.kind = SHMETRICS_KIND_SUMMARY as u32;
    let (_, sm) = register(&st, &d);
    let (_, sms) = series(&st, &sm, &[]);
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, &sms, 1.0, null(), null(), 0),
        SHMETRICS_WRONG_TYPE
    );

    // Registering: part of the definition; counters and histograms with
    // classic buckets only.
    let mut d = zeroed_desc();
    d.name = s("plain");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.exemplars = 1;
    assert_eq!(register(&st, &d).0, SHMETRICS_CONFLICT);
    d.name = s("g");
    d.kind = SHMETRICS_KIND_GAUGE as u32;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.kind = SHMETRICS_KIND_SUMMARY as u32;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.kind = SHMETRICS_KIND_HISTOGRAM as u32;
    d.native = 1;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    assert!(
        last_error_string().contains("classic"),
        "{}",
        last_error_string()
    );
    d.bucket_count = 1;
    d.buckets = bounds.as_ptr();
    assert_eq!(register(&st, &d).0, SHMETRICS_OK, "{}", last_error_string());

    // After a wipe the handles are stale.
    assert_eq!(shmetrics_store_wipe(st.ptr), SHMETRICS_OK);
    assert_eq!(
        shmetrics_counter_inc_exemplar(st.ptr, &a, null(), null(), 0),
        SHMETRICS_STALE_HANDLE
    );
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, &l, 1.0, null(), null(), 0),
        SHMETRICS_STALE_HANDLE
    );
}

#[test]
fn error_codes_and_messages() {
    let st = open_store();
    let f = counter(&st, "jobs", &[s("queue")]);
    let (_, c) = series(&st, &f, &[s("q")]);

    assert_eq!(
        shmetrics_counter_add(st.ptr, &c, f64::NAN),
        SHMETRICS_INVALID_VALUE
    );
    assert!(
        last_error_string().contains("NaN"),
        "{}",
        last_error_string()
    );
    assert_eq!(
        shmetrics_counter_add(st.ptr, &c, -1.0),
        SHMETRICS_INVALID_VALUE
    );
    assert_eq!(
        shmetrics_counter_add(st.ptr, &c, f64::INFINITY),
        SHMETRICS_INVALID_VALUE
    );
    assert!(last_error_string().contains("infinite"));
    assert_eq!(shmetrics_gauge_set(st.ptr, &c, 1.0), SHMETRICS_WRONG_TYPE);
    assert_eq!(shmetrics_observe(st.ptr, &c, 1.0), SHMETRICS_WRONG_TYPE);

    assert_eq!(series(&st, &f, &[]).0, SHMETRICS_LABEL_COUNT);
    assert_eq!(series(&st, &f, &[s("a"), s("b")]).0, SHMETRICS_LABEL_COUNT);
    let many = vec![s("x"); 65];
    assert_eq!(series(&st, &f, &many).0, SHMETRICS_LABEL_COUNT);
    assert!(last_error_string().contains("expected 1 label values, got 65"));

    let bad = [0xffu8, 0xfe];
    let bad = shmetrics_str {
        ptr: bad.as_ptr().cast(),
        len: 2,
    };
    let (r, out) = series(&st, &f, &[bad]);
    assert_eq!(r, SHMETRICS_INVALID_UTF8);
    assert_eq!(out, shmetrics_series::default(), "zeroed on failure");

    let mut d = zeroed_desc();
    d.name = s("bad-name");
    d.kind = SHMETRICS_KIND_GAUGE as u32;
    d.name_rules = shmetrics_name_rules::SHMETRICS_NAMES_LEGACY as u32;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_NAME);
    assert!(last_error_string().contains("[a-zA-Z_:][a-zA-Z0-9_:]*"));
    d.name_rules = 2;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.name_rules = shmetrics_name_rules::SHMETRICS_NAMES_UTF8 as u32;
    assert_eq!(
        register(&st, &d).0,
        SHMETRICS_OK,
        "any UTF-8 name by default"
    );
    d.name = s("");
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_NAME);
    d.name = s("jobs");
    assert_eq!(register(&st, &d).0, SHMETRICS_CONFLICT);
    d.name = s("g");
    d.kind = 9;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.gauge_mode = 3;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.kind = SHMETRICS_KIND_GAUGE as u32;
    d.gauge_mode = 13;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.gauge_mode = 11;
    let (r, g) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK);
    let (_, gs) = series(&st, &g, &[]);
    assert_eq!(shmetrics_gauge_set(st.ptr, &gs, 5.0), SHMETRICS_OK);
    assert_eq!(shmetrics_gauge_add(st.ptr, &gs, -2.0), SHMETRICS_OK);
    assert!(render(&st, 0).contains("\ng 3\n"));
    assert_eq!(
        shmetrics_gauge_set_to_current_time(st.ptr, &gs),
        SHMETRICS_OK
    );
    assert_eq!(shmetrics_counter_inc(st.ptr, &gs), SHMETRICS_WRONG_TYPE);

    // A label name array pointer that is NULL with a count.
    d.name = s("h");
    d.kind = SHMETRICS_KIND_HISTOGRAM as u32;
    d.gauge_mode = 0;
    d.label_count = 1;
    assert_eq!(register(&st, &d).0, SHMETRICS_NULL_PARAMETER);
    assert!(last_error_string().contains("desc.label_names"));
    d.label_count = 0;
    let bounds = [1.0, 0.5];
    d.buckets = bounds.as_ptr();
    d.bucket_count = 2;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    let bounds = [0.5, 1.0];
    d.buckets = bounds.as_ptr();
    let (r, h) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK);
    let (_, hs) = series(&st, &h, &[]);
    assert_eq!(shmetrics_observe(st.ptr, &hs, 0.7), SHMETRICS_OK);
    assert_eq!(
        shmetrics_observe(st.ptr, &hs, f64::NAN),
        SHMETRICS_INVALID_VALUE
    );
    let text = render(&st, 0);
    assert!(text.contains("h_bucket{le=\"1.0\"} 1\n"), "{text}");

    assert_eq!(
        shmetrics_render(st.ptr, 7, null_mut(), 0, &mut 0),
        SHMETRICS_INVALID_ARGUMENT
    );
    assert!(shmetrics_format_content_type(7).is_null());
}

#[test]
fn null_parameters() {
    let st = open_store();
    let f = counter(&st, "c", &[]);
    let (_, c) = series(&st, &f, &[]);
    let d = zeroed_desc();
    let mut fam = shmetrics_family::default();
    let mut ser = shmetrics_series::default();
    let mut len = 0usize;
    let mut b = false;
    let mut st_out: *mut shmetrics_store = null_mut();
    let mut buf_out: *mut shmetrics_buf = null_mut();
    let mut stats = shmetrics_stats::default();
    let n = SHMETRICS_NULL_PARAMETER;

    assert_eq!(shmetrics_options_default(null_mut()), n);
    assert_eq!(shmetrics_store_open(null(), 3, null(), &mut st_out), n);
    assert_eq!(shmetrics_store_open(null(), 0, null(), null_mut()), n);
    assert_eq!(shmetrics_store_stats(null(), &mut stats), n);
    assert_eq!(shmetrics_store_stats(st.ptr, null_mut()), n);
    assert_eq!(shmetrics_store_reset(null()), n);
    assert_eq!(shmetrics_store_wipe(null()), n);
    assert_eq!(shmetrics_store_release_slot(null()), n);
    assert_eq!(shmetrics_register(null(), &d, &mut fam), n);
    assert_eq!(shmetrics_register(st.ptr, null(), &mut fam), n);
    assert_eq!(shmetrics_register(st.ptr, &d, null_mut()), n);
    assert_eq!(shmetrics_series_get(null(), &f, null(), 0, &mut ser), n);
    assert_eq!(shmetrics_series_get(st.ptr, null(), null(), 0, &mut ser), n);
    assert_eq!(shmetrics_series_get(st.ptr, &f, null(), 1, &mut ser), n);
    assert_eq!(shmetrics_series_get(st.ptr, &f, null(), 0, null_mut()), n);
    assert_eq!(shmetrics_series_delete(null(), &f, null(), 0, &mut b), n);
    assert_eq!(
        shmetrics_series_delete(st.ptr, null(), null(), 0, &mut b),
        n
    );
    assert_eq!(
        shmetrics_series_delete(st.ptr, &f, null(), 0, null_mut()),
        n
    );
    assert_eq!(shmetrics_family_clear(null(), &f, &mut 0), n);
    assert_eq!(shmetrics_family_clear(st.ptr, null(), &mut 0), n);
    assert_eq!(shmetrics_family_clear(st.ptr, &f, null_mut()), n);
    assert_eq!(shmetrics_counter_add(null(), &c, 1.0), n);
    assert_eq!(shmetrics_counter_inc(null(), &c), n);
    assert_eq!(shmetrics_gauge_set(null(), &c, 1.0), n);
    assert_eq!(shmetrics_gauge_add(null(), &c, 1.0), n);
    assert_eq!(shmetrics_gauge_set_to_current_time(null(), &c), n);
    assert_eq!(shmetrics_observe(null(), &c, 1.0), n);
    assert_eq!(
        shmetrics_counter_add_exemplar(null(), &c, 1.0, null(), null(), 0),
        n
    );
    assert_eq!(
        shmetrics_counter_add_exemplar(st.ptr, null(), 1.0, null(), null(), 0),
        n
    );
    assert_eq!(
        shmetrics_counter_inc_exemplar(null(), &c, null(), null(), 0),
        n
    );
    assert_eq!(
        shmetrics_counter_inc_exemplar(st.ptr, null(), null(), null(), 0),
        n
    );
    assert_eq!(
        shmetrics_observe_exemplar(null(), &c, 1.0, null(), null(), 0),
        n
    );
    assert_eq!(
        shmetrics_observe_exemplar(st.ptr, null(), 1.0, null(), null(), 0),
        n
    );
    assert_eq!(shmetrics_render(null(), 0, null_mut(), 0, &mut len), n);
    assert_eq!(shmetrics_render(st.ptr, 0, null_mut(), 0, null_mut()), n);
    assert_eq!(shmetrics_render(st.ptr, 0, null_mut(), 10, &mut len), n);
    assert_eq!(shmetrics_render_alloc(null(), 0, &mut buf_out), n);
    assert_eq!(shmetrics_render_alloc(st.ptr, 0, null_mut()), n);
    assert!(shmetrics_buf_data(null()).is_null());
    assert_eq!(shmetrics_buf_len(null()), 0);
    shmetrics_buf_free(null_mut());
    shmetrics_store_close(null_mut());

    // The message names the function and the argument.
    assert_eq!(shmetrics_counter_inc(null(), &c), n);
    assert_eq!(
        last_error_string(),
        "shmetrics_counter_inc: argument `store` is NULL"
    );
    // A string with a NULL pointer and a length.
    let mut d = zeroed_desc();
    d.name = shmetrics_str {
        ptr: null(),
        len: 1,
    };
    d.kind = 1;
    assert_eq!(shmetrics_register(st.ptr, &d, &mut fam), n);
    assert!(last_error_string().contains("desc.name"));
}

#[test]
fn bad_handles_are_refused() {
    let st = open_store();
    // Zeroed handles: no kind.
    let zero = shmetrics_series::default();
    assert_eq!(shmetrics_counter_inc(st.ptr, &zero), SHMETRICS_STALE_HANDLE);
    assert!(last_error_string().contains("shmetrics_series_get"));
    let zf = shmetrics_family::default();
    assert_eq!(series(&st, &zf, &[]).0, SHMETRICS_STALE_HANDLE);

    // A handle from another store handle of the same file.
    let f = counter(&st, "c", &[]);
    let (_, c) = series(&st, &f, &[]);
    let p = st.path.to_str().unwrap();
    let mut other = null_mut();
    assert_eq!(
        shmetrics_store_open(p.as_ptr().cast(), p.len(), null(), &mut other),
        SHMETRICS_OK
    );
    assert_eq!(shmetrics_counter_inc(other, &c), SHMETRICS_STALE_HANDLE);
    assert_eq!(
        shmetrics_series_get(other, &f, null(), 0, &mut shmetrics_series::default()),
        SHMETRICS_STALE_HANDLE
    );
    shmetrics_store_close(other);
}

/// Series handles with arbitrary contents (and a valid kind and mode, so
/// they get past the decoding): every update gives a code, never a crash
/// or a panic. This is what the store's own bounds checks promise.
#[test]
fn forged_series_handles_never_panic() {
    let st = open_store();
    let f = counter(&st, "c", &[]);
    let (ex_names, ex_values) = ([s("trace_id")], [s("abc")]);
    let (_, real) = series(&st, &f, &[]);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..20_000u64 {
        let mut h = real;
        // Keep the tag and epoch (word 0) half the time, so the offsets
        // are what gets tested.
        for (w, word) in h.opaque.iter_mut().enumerate() {
            if w == 0 && i % 2 == 0 {
                continue;
            }
            let r = next();
            *word = match r % 4 {
                0 => *word,
                1 => r,
                2 => r & 0xffff_ffff,
                _ => *word ^ (1 << (r % 64)),
            };
        }
        // A valid kind (1..=4) and gauge mode (1..=11).
        let k = 1 + next() % 4;
        let m = 1 + next() % 11;
        h.opaque[3] = k | m << 32;
        let (mut placed, mut is_placed) = (h, false);
        for r in [
            shmetrics_series_is_placed(st.ptr, &h, &mut is_placed),
            shmetrics_series_place(st.ptr, &mut placed),
            shmetrics_counter_inc(st.ptr, &placed),
            shmetrics_counter_inc(st.ptr, &h),
            shmetrics_counter_add(st.ptr, &h, 1.5),
            shmetrics_gauge_set(st.ptr, &h, 1.0),
            shmetrics_gauge_add(st.ptr, &h, 1.0),
            shmetrics_observe(st.ptr, &h, 0.3),
            shmetrics_counter_add_exemplar(
                st.ptr,
                &h,
                1.5,
                ex_names.as_ptr(),
                ex_values.as_ptr(),
                1,
            ),
            shmetrics_counter_inc_exemplar(st.ptr, &h, ex_names.as_ptr(), ex_values.as_ptr(), 1),
            shmetrics_observe_exemplar(st.ptr, &h, 0.3, ex_names.as_ptr(), ex_values.as_ptr(), 1),
        ] {
            assert_ne!(r, SHMETRICS_PANIC, "{h:?}: {}", last_error_string());
        }
    }
}

#[test]
fn ttl_expires_idle_series_and_stale_handles_look_up_again() {
    let st = open_store();
    let labels = [s("user")];
    let mut d = zeroed_desc();
    d.name = s("visits");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = 1;
    // Out of range: below the 100 ms minimum, above about 49 days.
    for bad in [1, 99, u64::from(u32::MAX) + 1, u64::MAX] {
        d.ttl_ms = bad;
        assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS, "{bad}");
        assert!(
            last_error_string().contains("TTL"),
            "{}",
            last_error_string()
        );
    }
    d.ttl_ms = 150;
    let (r, f) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    // The TTL is part of the definition.
    d.ttl_ms = 0;
    assert_eq!(register(&st, &d).0, SHMETRICS_CONFLICT);

    let (r, alice) = series(&st, &f, &[s("alice")]);
    assert_eq!(r, SHMETRICS_OK);
    assert_eq!(shmetrics_counter_add(st.ptr, &alice, 5.0), SHMETRICS_OK);
    assert!(render(&st, 0).contains("visits_total{user=\"alice\"} 5\n"));

    // Idle for longer than the TTL: no longer exported, before any sweep.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let text = render(&st, 0);
    assert!(!text.contains("alice"), "{text}");

    // A new label set in the family sweeps it: the old handle is stale.
    let (r, bob) = series(&st, &f, &[s("bob")]);
    assert_eq!(r, SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(st.ptr, &bob), SHMETRICS_OK);
    assert_eq!(
        shmetrics_counter_inc(st.ptr, &alice),
        SHMETRICS_STALE_HANDLE
    );
    // Looking it up again gives a new series, from zero.
    let (r, alice2) = series(&st, &f, &[s("alice")]);
    assert_eq!(r, SHMETRICS_OK);
    assert_ne!(alice2, alice);
    assert_eq!(shmetrics_counter_inc(st.ptr, &alice2), SHMETRICS_OK);
    let text = render(&st, 0);
    assert!(text.contains("visits_total{user=\"alice\"} 1\n"), "{text}");
    assert!(text.contains("visits_total{user=\"bob\"} 1\n"), "{text}");
    let mut stats = shmetrics_stats::default();
    assert_eq!(shmetrics_store_stats(st.ptr, &mut stats), SHMETRICS_OK);
    assert_eq!(stats.series_expired_total, 1);
}

#[test]
fn overflow_fills_the_overflow_series() {
    let st = open_store();
    let mut d = zeroed_desc();
    let labels = [s("user")];
    d.name = s("logins");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.label_names = labels.as_ptr();
    d.label_count = 1;
    d.max_series = 1;
    let (r, f) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK);
    let (r, a) = series(&st, &f, &[s("alice")]);
    assert_eq!(r, SHMETRICS_OK);
    let (r, b) = series(&st, &f, &[s("bob")]);
    assert_eq!(r, SHMETRICS_OVERFLOW);
    assert_ne!(b, shmetrics_series::default());
    assert_ne!(b, a);
    assert!(last_error_string().contains("shmetrics_overflow"));
    assert_eq!(shmetrics_counter_inc(st.ptr, &b), SHMETRICS_OK);
    let text = render(&st, 0);
    assert!(
        text.contains("logins_total{user=\"\",shmetrics_overflow=\"true\"} 1\n"),
        "{text}"
    );
}

#[test]
fn read_only_and_foreign_files() {
    let st = open_store();
    let f = counter(&st, "c", &[]);
    let (_, c) = series(&st, &f, &[]);
    assert_eq!(shmetrics_counter_add(st.ptr, &c, 4.0), SHMETRICS_OK);
    let p = st.path.to_str().unwrap();
    let mut opts = default_opts();
    opts.read_only = 1;
    let mut ro = null_mut();
    assert_eq!(
        shmetrics_store_open(p.as_ptr().cast(), p.len(), &opts, &mut ro),
        SHMETRICS_OK
    );
    let ro_store = TestStore {
        _dir: tempfile::tempdir().unwrap(),
        path: st.path.clone(),
        ptr: ro,
    };
    let mut fam = shmetrics_family::default();
    let mut d = zeroed_desc();
    d.name = s("c");
    d.kind = 1;
    // Registering an existing family works read-only; a new one does not.
    assert_eq!(shmetrics_register(ro, &d, &mut fam), SHMETRICS_OK);
    assert_eq!(series(&ro_store, &fam, &[]).0, SHMETRICS_READ_ONLY);
    assert_eq!(shmetrics_store_wipe(ro), SHMETRICS_READ_ONLY);
    assert!(render(&ro_store, 0).contains("c_total 4\n"));

    let foreign = st.path.with_file_name("foreign");
    std::fs::write(&foreign, vec![b'x'; 8192]).unwrap();
    let fp = foreign.to_str().unwrap();
    let mut out = std::ptr::NonNull::<shmetrics_store>::dangling().as_ptr();
    assert_eq!(
        shmetrics_store_open(fp.as_ptr().cast(), fp.len(), null(), &mut out),
        SHMETRICS_FOREIGN_FILE
    );
    assert!(out.is_null());
    assert!(last_error_string().contains(fp), "{}", last_error_string());
    assert_eq!(std::fs::read(&foreign).unwrap(), vec![b'x'; 8192]);

    let mut opts = default_opts();
    opts.max_series = 0;
    let np = st.path.with_file_name("new");
    let np = np.to_str().unwrap();
    assert_eq!(
        shmetrics_store_open(np.as_ptr().cast(), np.len(), &opts, &mut out),
        SHMETRICS_INVALID_OPTIONS
    );
}

#[test]
fn render_buffer_handling() {
    let st = open_store();
    let f = counter(&st, "c", &[]);
    let (_, c) = series(&st, &f, &[]);
    assert_eq!(shmetrics_counter_inc(st.ptr, &c), SHMETRICS_OK);
    let want = "# HELP c_total Help text.\n# TYPE c_total counter\nc_total 1\n";
    let mut len = 0;
    let mut small = [0u8; 10];
    assert_eq!(
        shmetrics_render(st.ptr, 0, small.as_mut_ptr().cast(), small.len(), &mut len),
        SHMETRICS_BUFFER_TOO_SMALL
    );
    assert_eq!(len, want.len());
    assert_eq!(small, [0u8; 10], "nothing copied");
    let mut exact = vec![0u8; len];
    assert_eq!(
        shmetrics_render(st.ptr, 0, exact.as_mut_ptr().cast(), exact.len(), &mut len),
        SHMETRICS_OK
    );
    assert_eq!(std::str::from_utf8(&exact).unwrap(), want);

    let mut b = null_mut();
    assert_eq!(shmetrics_render_alloc(st.ptr, 0, &mut b), SHMETRICS_OK);
    assert_eq!(shmetrics_buf_len(b), want.len());
    assert_eq!(
        crate::ptr::c_str(shmetrics_buf_data(b).cast()),
        want,
        "NUL-terminated"
    );
    shmetrics_buf_free(b);

    for (code, format) in [
        (0, shmetrics_expo::Format::PrometheusText),
        (1, shmetrics_expo::Format::OpenMetrics),
    ] {
        assert_eq!(
            crate::ptr::c_str(shmetrics_format_content_type(code)),
            format.content_type()
        );
    }
}

#[test]
fn options_mirror_the_store_defaults() {
    let o = default_opts();
    let back = shmetrics_core::Options::from(&o);
    let def = shmetrics_core::Options::default();
    assert_eq!(format!("{back:?}"), format!("{def:?}"));
    assert_eq!(
        crate::ptr::c_str(shmetrics_version()),
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn unsafe_code_lives_in_ptr_rs_only() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() == "ptr.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let needle = ["unsafe", " {"].concat();
        let needle_fn = ["unsafe", " fn"].concat();
        let needle_impl = ["unsafe", " impl"].concat();
        for n in [needle, needle_fn, needle_impl] {
            assert!(!text.contains(&n), "{} contains `{n}`", path.display());
        }
    }
}

#[test]
fn results_are_u32_sized() {
    assert_eq!(std::mem::size_of::<shmetrics_result>(), 4);
    assert_eq!(std::mem::size_of::<shmetrics_series>(), 56);
    assert_eq!(std::mem::size_of::<shmetrics_family>(), 56);
}

/// Family handles with arbitrary contents: series lookups give a code,
/// and the store stays usable.
///
/// Known core issue: `Store::series` indexes the family table with the
/// handle's index unchecked when it creates a series, so a forged index
/// past the table panics (caught here as `SHMETRICS_PANIC`, with the store
/// lock released by unwinding). Those panics are tolerated; any other is a
/// failure.
#[test]
fn forged_family_handles_never_crash() {
    let st = open_store();
    let f = counter(&st, "c", &[s("a")]);
    let (_, kept) = series(&st, &f, &[s("kept")]);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..500u64 {
        let mut h = f;
        for (w, word) in h.opaque.iter_mut().enumerate() {
            if w == 0 {
                continue; // keep tag and epoch, or nothing gets past the check
            }
            let r = next();
            *word = match r % 4 {
                0 => *word,
                1 => r,
                2 => r & 0xffff_ffff,
                _ => *word ^ (1 << (r % 64)),
            };
        }
        // A valid kind (1..=4) and gauge mode (1..=11).
        let k = 1 + next() % 4;
        let m = 1 + next() % 11;
        h.opaque[1] = (h.opaque[1] & 0xffff_ffff) | k << 32;
        h.opaque[2] = m | (h.opaque[2] & !0xffff_ffff);
        let label = format!("v{i}");
        let (r, _) = series(&st, &h, &[s(&label)]);
        if r == SHMETRICS_PANIC {
            let msg = last_error_string();
            assert!(
                msg.contains("index out of bounds: the len is 4096"),
                "unexpected panic: {msg}"
            );
        }
    }
    // Forged lookups may use up capacity, but the store keeps working.
    assert_eq!(shmetrics_counter_inc(st.ptr, &kept), SHMETRICS_OK);
    assert!(render(&st, 0).contains("c_total{a=\"kept\"} 1\n"));
}

#[test]
fn persistent_handles_are_one_per_path_and_never_freed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("persistent");
    let p = path.to_str().unwrap();
    let open = |opts: &shmetrics_options| {
        let mut out = std::ptr::NonNull::<shmetrics_store>::dangling().as_ptr();
        let r = shmetrics_store_open_persistent(p.as_ptr().cast(), p.len(), opts, &mut out);
        (r, out)
    };
    // A failure is not remembered: the next call may succeed.
    let mut opts = default_opts();
    opts.create = 0;
    let (r, out) = open(&opts);
    assert_eq!(r, SHMETRICS_IO, "{}", last_error_string());
    assert!(out.is_null());
    opts.create = 1;
    let (r, first) = open(&opts);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    // The same path gives the same handle, whatever the capacities asked.
    opts.max_series = 7;
    let (r, again) = open(&opts);
    assert_eq!(r, SHMETRICS_OK);
    assert_eq!(first, again);
    // Read-only is a different handle.
    opts.read_only = 1;
    let (r, ro) = open(&opts);
    assert_eq!(r, SHMETRICS_OK);
    assert_ne!(ro, first);
    assert_eq!(shmetrics_store_wipe(ro), SHMETRICS_READ_ONLY);

    // Closing a persistent handle does nothing: it still works after.
    shmetrics_store_close(first);
    let st = TestStore {
        _dir: tempfile::tempdir().unwrap(),
        path: path.clone(),
        ptr: first,
    };
    let f = counter(&st, "persisted_total", &[]);
    let (r, c) = series(&st, &f, &[]);
    assert_eq!(r, SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(first, &c), SHMETRICS_OK);
    shmetrics_store_close(first);
    assert_eq!(shmetrics_counter_inc(first, &c), SHMETRICS_OK);
    assert!(render(&st, 0).contains("persisted_total 2\n"));
    // A plain handle of the same file is a handle of its own.
    let mut plain = null_mut();
    assert_eq!(
        shmetrics_store_open(p.as_ptr().cast(), p.len(), null(), &mut plain),
        SHMETRICS_OK
    );
    assert_ne!(plain, first);
    shmetrics_store_close(plain);
    // TestStore's drop closes `first` once more: still a no-op.
    drop(st);
    assert_eq!(shmetrics_counter_inc(first, &c), SHMETRICS_OK);
    assert_eq!(
        shmetrics_store_open_persistent(null(), 1, null(), &mut plain),
        SHMETRICS_NULL_PARAMETER
    );
}

/// The lines of /proc/self/maps that map the file at `path`, found by its
/// inode: maps names a store by the temporary name it was created under.
fn mappings_of(path: &std::path::Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(path).unwrap().ino().to_string();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter(|l| l.split_whitespace().nth(4) == Some(inode.as_str()))
        .count()
}

#[test]
fn close_persistent_unmaps_and_forgets_the_handle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("closed-persistent");
    let p = path.to_str().unwrap();
    let open = || {
        let mut out = null_mut();
        let r =
            shmetrics_store_open_persistent(p.as_ptr().cast(), p.len(), &default_opts(), &mut out);
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        out
    };
    let first = open();
    assert_eq!(open(), first);
    let st = TestStore {
        _dir: tempfile::tempdir().unwrap(),
        path: path.clone(),
        ptr: first,
    };
    let f = counter(&st, "closed_total", &[]);
    let (r, c) = series(&st, &f, &[]);
    assert_eq!(r, SHMETRICS_OK);
    assert_eq!(shmetrics_counter_inc(first, &c), SHMETRICS_OK);
    assert!(mappings_of(&path) > 0, "the store is mapped");
    drop(st); // shmetrics_store_close: nothing for a persistent handle
    assert!(mappings_of(&path) > 0);
    // Opened twice: the first close gives one reference back.
    shmetrics_store_close_persistent(first);
    assert!(mappings_of(&path) > 0, "one reference is left");
    shmetrics_store_close_persistent(first);
    assert_eq!(mappings_of(&path), 0, "the store is unmapped");
    // The path opens again, as a new handle of the same file, whose count
    // the first handle's update is in.
    let second = open();
    assert!(mappings_of(&path) > 0);
    let st = TestStore {
        _dir: tempfile::tempdir().unwrap(),
        path: path.clone(),
        ptr: second,
    };
    assert!(render(&st, 0).contains("closed_total 1\n"));
    drop(st);
    shmetrics_store_close_persistent(second);
    assert_eq!(mappings_of(&path), 0);
    // A plain handle is closed as by shmetrics_store_close; NULL is ignored.
    let mut plain = null_mut();
    assert_eq!(
        shmetrics_store_open(p.as_ptr().cast(), p.len(), null(), &mut plain),
        SHMETRICS_OK
    );
    assert!(mappings_of(&path) > 0);
    shmetrics_store_close_persistent(plain);
    assert_eq!(mappings_of(&path), 0);
    shmetrics_store_close_persistent(null_mut());
}

#[test]
fn negotiate_follows_the_accept_header() {
    let n = |h: &str| shmetrics_negotiate(h.as_ptr().cast(), h.len());
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(n(prometheus), 1);
    assert_eq!(n("text/plain;version=0.0.4"), 0);
    // Prometheus with native histograms asks for protobuf first; the C ABI
    // renders text only, so it gets its next choice.
    let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(n(native), 1);
    assert_eq!(
        n("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"),
        0
    );
    assert_eq!(n("application/openmetrics-text;q=0,text/plain"), 0);
    assert_eq!(n(""), 0);
    assert_eq!(shmetrics_negotiate(null(), 0), 0);
    let bad = [0xffu8, 0xfe];
    assert_eq!(shmetrics_negotiate(bad.as_ptr().cast(), 2), 0);
}

#[test]
fn version_numbers_are_the_version_strings() {
    let numbers = format!(
        "{}.{}.{}",
        shmetrics_version_major(),
        shmetrics_version_minor(),
        shmetrics_version_patch()
    );
    let version = crate::ptr::c_str(shmetrics_version());
    assert!(
        version == numbers || version.starts_with(&format!("{numbers}-")),
        "{version} is not {numbers}"
    );
    assert_eq!(
        shmetrics_version_major().to_string(),
        env!("CARGO_PKG_VERSION_MAJOR")
    );
}

/// One flipped bit in the lock word (byte 512 of the file, see the
/// layout) once made registration hang forever; through the C ABI it
/// now repairs the word, in bounded time.
#[test]
fn a_flipped_lock_bit_does_not_hang_registration() {
    use std::os::unix::fs::FileExt;
    let st = open_store();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&st.path)
        .unwrap();
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, 512).unwrap();
    file.write_all_at(&[b[0] ^ 1], 512).unwrap();
    let start = std::time::Instant::now();
    counter(&st, "after_flip", &[]);
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
    let mut stats = shmetrics_stats::default();
    assert_eq!(shmetrics_store_stats(st.ptr, &mut stats), SHMETRICS_OK);
    assert_eq!(stats.lock_recoveries_total, 1);
}

#[test]
fn path_now_tells_a_replaced_store_from_a_removed_one() {
    let st = open_store();
    let now = |st: &TestStore| {
        let mut out = shmetrics_path_now::SHMETRICS_PATH_OTHER;
        assert_eq!(shmetrics_store_path_now(st.ptr, &mut out), SHMETRICS_OK);
        out
    };
    assert_eq!(now(&st), shmetrics_path_now::SHMETRICS_PATH_SAME);
    std::fs::rename(&st.path, st.path.with_extension("old")).unwrap();
    assert_eq!(now(&st), shmetrics_path_now::SHMETRICS_PATH_GONE);
    std::fs::write(&st.path, b"another file").unwrap();
    assert_eq!(now(&st), shmetrics_path_now::SHMETRICS_PATH_OTHER);
    assert_eq!(
        shmetrics_store_path_now(null(), &mut shmetrics_path_now::SHMETRICS_PATH_SAME),
        SHMETRICS_NULL_PARAMETER
    );
}

/// The flags of the input structs are bytes that C may set to any value:
/// 2 (as a C `bool` holding garbage, or `flags & 2` stored as is) reads
/// as true, the same as 1.
#[test]
fn flag_bytes_other_than_one_read_as_true() {
    let st = open_store();
    let mut d = zeroed_desc();
    d.name = s("http_status");
    d.kind = SHMETRICS_KIND_COUNTER as u32;
    d.name_as_given = 2;
    d.exemplars = 0x80;
    assert_eq!(register(&st, &d).0, SHMETRICS_OK, "{}", last_error_string());
    // The same definition with 1: no conflict.
    d.name_as_given = 1;
    d.exemplars = 1;
    let (r, f) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    // And 0 is another definition.
    d.name_as_given = 0;
    assert_eq!(register(&st, &d).0, SHMETRICS_CONFLICT);
    let (_, c) = series(&st, &f, &[]);
    assert_eq!(shmetrics_counter_add(st.ptr, &c, 2.0), SHMETRICS_OK);
    assert!(
        render(&st, 0).contains("\nhttp_status 2\n"),
        "{}",
        render(&st, 0)
    );

    let p = st.path.to_str().unwrap();
    let mut opts = default_opts();
    opts.read_only = 2;
    opts.create = 0xff;
    let mut ro = null_mut();
    assert_eq!(
        shmetrics_store_open(p.as_ptr().cast(), p.len(), &opts, &mut ro),
        SHMETRICS_OK
    );
    let ro_store = TestStore {
        _dir: tempfile::tempdir().unwrap(),
        path: st.path.clone(),
        ptr: ro,
    };
    assert_eq!(series(&ro_store, &f, &[]).0, SHMETRICS_READ_ONLY);
}

/// `hints` reaches the exposition: short bounds and no `_created`; unknown
/// bits and contradicting ones are refused.
#[test]
fn hints_shape_the_page() {
    use crate::types::shmetrics_hint::*;
    let st = open_store();
    let bounds = [1.0, 2.5];
    let mut d = zeroed_desc();
    d.name = s("rt");
    d.kind = SHMETRICS_KIND_HISTOGRAM as u32;
    d.buckets = bounds.as_ptr();
    d.bucket_count = bounds.len();
    d.hints = 1 << 7;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.hints = SHMETRICS_HINT_NO_CREATED as u32 | SHMETRICS_HINT_CREATED_IN_TEXT as u32;
    assert_eq!(register(&st, &d).0, SHMETRICS_INVALID_OPTIONS);
    d.hints = SHMETRICS_HINT_SHORT_BOUNDS as u32 | SHMETRICS_HINT_NO_CREATED as u32;
    let (r, f) = register(&st, &d);
    assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
    let (_, h) = series(&st, &f, &[]);
    assert_eq!(shmetrics_observe(st.ptr, &h, 2.0), SHMETRICS_OK);
    let text = render(&st, 0);
    assert!(text.contains("rt_bucket{le=\"1\"} 0\n"), "{text}");
    assert!(text.contains("rt_bucket{le=\"2.5\"} 1\n"), "{text}");
    let om = render(&st, 1);
    assert!(!om.contains("_created"), "{om}");
}

#[test]
fn render_families_picks_and_orders() {
    let st = open_store();
    for name in ["a", "b", "c"] {
        let f = counter(&st, name, &[]);
        let (_, c) = series(&st, &f, &[]);
        assert_eq!(shmetrics_counter_inc(st.ptr, &c), SHMETRICS_OK);
    }
    let families = |format: u32, names: &[&str]| {
        let names: Vec<shmetrics_str> = names.iter().map(|n| s(n)).collect();
        let mut b = null_mut();
        let r =
            shmetrics_render_families_alloc(st.ptr, format, names.as_ptr(), names.len(), &mut b);
        assert_eq!(r, SHMETRICS_OK, "{}", last_error_string());
        let text = crate::ptr::c_str(shmetrics_buf_data(b).cast()).to_owned();
        shmetrics_buf_free(b);
        text
    };
    let counter_text =
        |n: &str| format!("# HELP {n}_total Help text.\n# TYPE {n}_total counter\n{n}_total 1\n");
    assert_eq!(
        families(0, &["c", "x", "a"]),
        counter_text("c") + &counter_text("a")
    );
    assert_eq!(families(0, &[]), "");
    let om = families(1, &["b"]);
    assert!(
        om.starts_with("# TYPE b counter\n") && om.ends_with("# EOF\n"),
        "{om}"
    );
    assert_eq!(
        families(2, &["b"]),
        "# TYPE b_total counter\n# HELP b_total Help text.\nb_total 1.0\n"
    );
    // The whole store in prometheus-client's (Ruby) spelling, as rendered.
    assert!(render(&st, 2)
        .starts_with("# TYPE a_total counter\n# HELP a_total Help text.\na_total 1.0\n"));
    assert_eq!(
        crate::ptr::c_str(shmetrics_format_content_type(2)),
        "text/plain; version=0.0.4; charset=utf-8"
    );

    let mut b = null_mut();
    assert_eq!(
        shmetrics_render_families_alloc(st.ptr, 0, null(), 0, &mut b),
        SHMETRICS_OK
    );
    shmetrics_buf_free(b);
    assert_eq!(
        shmetrics_render_families_alloc(st.ptr, 0, null(), 1, &mut b),
        SHMETRICS_NULL_PARAMETER
    );
    assert!(b.is_null());
    assert_eq!(
        shmetrics_render_families_alloc(st.ptr, 5, null(), 0, &mut b),
        SHMETRICS_INVALID_ARGUMENT
    );

    // The series for PromPHP, for PHP's unserialize(): the whole store, or
    // some families, as shmetrics_expo::promphp writes them.
    let snap = crate::ptr::object(st.ptr, "store")
        .unwrap()
        .store
        .snapshot()
        .unwrap();
    for (format, sorted) in [(3, false), (4, true)] {
        let all: Vec<_> = snap.families().collect();
        let mut want = Vec::new();
        shmetrics_expo::promphp::encode(&all, sorted, &mut want);
        assert_eq!(render(&st, format).as_bytes(), want);
        let mut want = Vec::new();
        shmetrics_expo::promphp::encode(&shmetrics_expo::select(&snap, &["b"]), sorted, &mut want);
        assert_eq!(families(format, &["b"]).as_bytes(), want);
        assert!(families(format, &["b"])
            .starts_with("a:2:{s:8:\"families\";a:1:{i:0;a:12:{i:0;s:7:\"b_total\";"));
        assert_eq!(
            crate::ptr::c_str(shmetrics_format_content_type(format)),
            "application/vnd.php.serialized"
        );
    }
    assert_eq!(
        families(3, &[]),
        "a:2:{s:8:\"families\";a:0:{}s:5:\"lists\";a:0:{}}"
    );
}

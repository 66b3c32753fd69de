//! The shared test vectors (tests/vectors/updates.json) through the C ABI,
//! the layer PHP and Lua call. The Python, PHP and Lua bindings run the
//! same file through their own APIs; all must render the same text.

use std::ffi::c_char;
use std::path::PathBuf;
use std::ptr::{null, null_mut};

use serde_json::Value;
use shmetrics::*;

fn vectors() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/updates.json");
    let text = std::fs::read_to_string(&path).expect("tests/vectors/updates.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn s(v: &str) -> shmetrics_str {
    shmetrics_str {
        ptr: v.as_ptr().cast::<c_char>(),
        len: v.len(),
    }
}

fn value(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) if s == "NaN" => f64::NAN,
        Value::String(s) if s == "+Inf" => f64::INFINITY,
        Value::String(s) if s == "-Inf" => f64::NEG_INFINITY,
        other => panic!("bad value {other}"),
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn error_code(name: &str) -> shmetrics_result {
    use shmetrics_result::*;
    match name {
        "invalid_value" => SHMETRICS_INVALID_VALUE,
        "label_count" => SHMETRICS_LABEL_COUNT,
        "invalid_name" => SHMETRICS_INVALID_NAME,
        "invalid_options" => SHMETRICS_INVALID_OPTIONS,
        other => panic!("unknown error kind {other}"),
    }
}

struct Store {
    _dir: tempfile::TempDir,
    ptr: *mut shmetrics_store,
}

impl Drop for Store {
    fn drop(&mut self) {
        shmetrics_store_close(self.ptr);
    }
}

fn open() -> Store {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors.shm");
    let p = path.to_str().unwrap();
    let mut out = null_mut();
    assert_eq!(
        shmetrics_store_open(p.as_ptr().cast(), p.len(), null(), &mut out),
        shmetrics_result::SHMETRICS_OK
    );
    Store {
        _dir: dir,
        ptr: out,
    }
}

/// Registers `fam` (a vector's family object) under the core's name rules.
fn register(st: &Store, fam: &Value) -> (shmetrics_result, shmetrics_family) {
    register_with(st, fam, shmetrics_name_rules::SHMETRICS_NAMES_UTF8)
}

/// Registers `fam` under `rules`.
fn register_with(
    st: &Store,
    fam: &Value,
    rules: shmetrics_name_rules,
) -> (shmetrics_result, shmetrics_family) {
    let name = fam["name"].as_str().unwrap();
    let help = fam["help"].as_str().unwrap();
    let labels = strings(&fam["labels"]);
    let label_strs: Vec<shmetrics_str> = labels.iter().map(|l| s(l)).collect();
    let buckets: Vec<f64> = fam["buckets"]
        .as_array()
        .map(|a| a.iter().map(value).collect())
        .unwrap_or_default();
    let quantiles: Vec<f64> = fam["quantiles"]
        .as_array()
        .map(|a| a.iter().map(value).collect())
        .unwrap_or_default();
    let (kind, mode) = match fam["kind"].as_str().unwrap() {
        "counter" => (shmetrics_kind::SHMETRICS_KIND_COUNTER, 0),
        "gauge" => {
            assert_eq!(fam["mode"], "shared", "the vectors use shared gauges");
            (
                shmetrics_kind::SHMETRICS_KIND_GAUGE,
                shmetrics_gauge_mode::SHMETRICS_GAUGE_SHARED as u32,
            )
        }
        "histogram" => (shmetrics_kind::SHMETRICS_KIND_HISTOGRAM, 0),
        "summary" => (shmetrics_kind::SHMETRICS_KIND_SUMMARY, 0),
        other => panic!("unknown kind {other}"),
    };
    let desc = shmetrics_family_desc {
        name: s(name),
        help: s(help),
        unit: s(""),
        label_names: label_strs.as_ptr(),
        label_count: label_strs.len(),
        kind: kind as u32,
        gauge_mode: mode,
        buckets: if buckets.is_empty() {
            null()
        } else {
            buckets.as_ptr()
        },
        bucket_count: buckets.len(),
        quantiles: if quantiles.is_empty() {
            null()
        } else {
            quantiles.as_ptr()
        },
        quantile_count: quantiles.len(),
        max_age_ms: 0,
        age_buckets: 0,
        max_series: 0,
        native: u8::from(fam.get("native").is_some()),
        native_bucket_factor: fam["native"]["bucket_factor"].as_f64().unwrap_or(0.0),
        native_zero_threshold: 0.0,
        native_max_buckets: 0,
        exemplars: u8::from(fam["exemplars"].as_bool().unwrap_or(false)),
        ttl_ms: 0,
        name_as_given: 0,
        name_rules: rules as u32,
        hints: 0,
    };
    let mut f = shmetrics_family::default();
    let r = shmetrics_register(st.ptr, &desc, &mut f);
    (r, f)
}

/// Applies one op; returns the first failing result, or OK.
fn apply(st: &Store, families: &[(String, shmetrics_family)], op: &Value) -> shmetrics_result {
    if let Some(ex) = op.get("exemplar") {
        return apply_with_exemplar(st, families, op, ex);
    }
    let name = op["family"].as_str().unwrap();
    let fam = &families.iter().find(|(n, _)| n == name).unwrap().1;
    let labels = strings(&op["labels"]);
    let vals: Vec<shmetrics_str> = labels.iter().map(|l| s(l)).collect();
    let mut series = shmetrics_series::default();
    let r = shmetrics_series_get(st.ptr, fam, vals.as_ptr(), vals.len(), &mut series);
    if r != shmetrics_result::SHMETRICS_OK {
        return r;
    }
    let v = value(&op["value"]);
    match (op["op"].as_str().unwrap(), fam.kind) {
        ("inc", k) if k == shmetrics_kind::SHMETRICS_KIND_COUNTER as u32 => {
            shmetrics_counter_add(st.ptr, &series, v)
        }
        ("inc", _) => shmetrics_gauge_add(st.ptr, &series, v),
        ("set", _) => shmetrics_gauge_set(st.ptr, &series, v),
        ("observe", _) => shmetrics_observe(st.ptr, &series, v),
        (other, _) => panic!("unknown op {other}"),
    }
}

/// Applies an op with an exemplar (`{"name": "value", ...}`; serde_json
/// gives its names sorted, the order the vectors write them in).
fn apply_with_exemplar(
    st: &Store,
    families: &[(String, shmetrics_family)],
    op: &Value,
    ex: &Value,
) -> shmetrics_result {
    let name = op["family"].as_str().unwrap();
    let fam = &families.iter().find(|(n, _)| n == name).unwrap().1;
    let labels = strings(&op["labels"]);
    let vals: Vec<shmetrics_str> = labels.iter().map(|l| s(l)).collect();
    let mut series = shmetrics_series::default();
    let r = shmetrics_series_get(st.ptr, fam, vals.as_ptr(), vals.len(), &mut series);
    if r != shmetrics_result::SHMETRICS_OK {
        return r;
    }
    let ex = ex.as_object().expect("an exemplar is an object");
    let names: Vec<shmetrics_str> = ex.keys().map(|k| s(k)).collect();
    let values: Vec<shmetrics_str> = ex.values().map(|v| s(v.as_str().unwrap())).collect();
    let v = value(&op["value"]);
    let n = names.len();
    match op["op"].as_str().unwrap() {
        "inc" => {
            shmetrics_counter_add_exemplar(st.ptr, &series, v, names.as_ptr(), values.as_ptr(), n)
        }
        "observe" => {
            shmetrics_observe_exemplar(st.ptr, &series, v, names.as_ptr(), values.as_ptr(), n)
        }
        other => panic!("no exemplar for op {other}"),
    }
}

/// An OpenMetrics exposition as the vectors write it: without `_created`
/// samples, each exemplar's timestamp replaced by `T`.
fn normalize_openmetrics(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let name = line.split(['{', ' ']).next().unwrap_or("");
        if name.ends_with("_created") {
            continue;
        }
        match line.contains(" # {") {
            true => {
                out.push_str(line.rsplit_once(' ').unwrap().0);
                out.push_str(" T\n");
            }
            false => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn render(st: &Store, format: u32) -> String {
    let mut buf = null_mut();
    assert_eq!(
        shmetrics_render_alloc(st.ptr, format, &mut buf),
        shmetrics_result::SHMETRICS_OK
    );
    // SAFETY: the buffer is valid until shmetrics_buf_free, and holds
    // shmetrics_buf_len bytes at shmetrics_buf_data.
    let bytes =
        unsafe { std::slice::from_raw_parts(shmetrics_buf_data(buf), shmetrics_buf_len(buf)) }
            .to_vec();
    shmetrics_buf_free(buf);
    String::from_utf8(bytes).unwrap()
}

#[test]
fn every_case_renders_exactly_and_reports_its_errors() {
    let v = vectors();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 4);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let st = open();
        let families: Vec<(String, shmetrics_family)> = case["families"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let (r, fam) = register(&st, f);
                assert_eq!(r, shmetrics_result::SHMETRICS_OK, "{name}: register {f}");
                (f["name"].as_str().unwrap().to_owned(), fam)
            })
            .collect();
        for op in case["ops"].as_array().unwrap() {
            assert_eq!(
                apply(&st, &families, op),
                shmetrics_result::SHMETRICS_OK,
                "{name}: {op}"
            );
        }
        for e in case["errors"].as_array().unwrap() {
            let want = error_code(e["error"].as_str().unwrap());
            assert_eq!(apply(&st, &families, e), want, "{name}: {e}");
        }
        // A fresh store through the C ABI holds only the case's families.
        assert_eq!(render(&st, 0), case["text"].as_str().unwrap(), "{name}");
        if let Some(om) = case.get("openmetrics") {
            assert_eq!(
                normalize_openmetrics(&render(&st, 1)),
                om.as_str().unwrap(),
                "{name}"
            );
        }
    }
}

#[test]
fn bad_definitions_are_refused_with_their_kind() {
    let v = vectors();
    let st = open();
    let legacy = open();
    for e in v["register_errors"].as_array().unwrap() {
        let want = error_code(e["error"].as_str().unwrap());
        // Under the legacy rules (PHP, Lua, Ruby), every case is refused.
        let (r, _) = register_with(
            &legacy,
            &e["family"],
            shmetrics_name_rules::SHMETRICS_NAMES_LEGACY,
        );
        assert_eq!(r, want, "legacy rules: {e}");
        // Under the core's (UTF-8) rules, the legacy-only ones register.
        let (r, _) = register(&st, &e["family"]);
        if e["legacy_only"] == true {
            assert_eq!(r, shmetrics_result::SHMETRICS_OK, "UTF-8 rules: {e}");
        } else {
            assert_eq!(r, want, "UTF-8 rules: {e}");
        }
    }
}

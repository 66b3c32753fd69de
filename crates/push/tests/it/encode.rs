//! The encoded bodies, decoded with snap and with prost through this
//! file's own copy of the remote_write 1.0 messages (as the specification
//! lists them), independent of the crate's.

use std::collections::BTreeMap;

use prost::Message;
use shmetrics_core::{FamilyDesc, Kind, Options, Store};
use shmetrics_push::{encode, encode_v2, timeseries, ExternalLabels};

#[derive(Clone, PartialEq, prost::Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

const TS: i64 = 1_700_000_000_123;

/// A store with every kind of family, one label with an empty value and
/// one whose name starts with an upper-case letter.
fn store(dir: &std::path::Path) -> Store {
    let store = Store::open(dir.join("store"), &Options::default()).unwrap();
    let jobs = store
        .register(
            &FamilyDesc::new("jobs_total", Kind::Counter)
                .help("Jobs.")
                .labels(&["queue", "host"]),
        )
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["email", "worker-7"]).unwrap(), 7.0)
        .unwrap();
    store
        .counter_add(store.series(&jobs, &["", "worker-7"]).unwrap(), 1.5)
        .unwrap();
    let temp = store
        .register(&FamilyDesc::new("temperature", Kind::Gauge).labels(&["Zone"]))
        .unwrap();
    store
        .gauge_set(store.series(&temp, &["north"]).unwrap(), -4.25)
        .unwrap();
    let lat = store
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .labels(&["route"])
                .buckets(&[0.5, 1.0, 2.5]),
        )
        .unwrap();
    let s = store.series(&lat, &["/a"]).unwrap();
    for v in [0.25, 0.75, 0.75, 2.0, 10.0] {
        store.observe(s, v).unwrap();
    }
    let size = store
        .register(&FamilyDesc::new("size_bytes", Kind::Summary))
        .unwrap();
    let s = store.series(&size, &[]).unwrap();
    store.observe(s, 100.0).unwrap();
    store.observe(s, 28.0).unwrap();
    store
}

fn decode(chunks: &[shmetrics_push::Chunk]) -> Vec<TimeSeries> {
    let mut all = Vec::new();
    for c in chunks {
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&c.body)
            .expect("a snappy block");
        let req = WriteRequest::decode(raw.as_slice()).expect("a WriteRequest");
        assert_eq!(
            c.samples,
            req.timeseries
                .iter()
                .map(|t| t.samples.len() as u64)
                .sum::<u64>()
        );
        all.extend(req.timeseries);
    }
    all
}

/// The series as `name{a="x",b="y"}` → (value, timestamp), labels in the
/// order they were sent.
fn render(series: &[TimeSeries]) -> BTreeMap<String, (f64, i64)> {
    series
        .iter()
        .map(|t| {
            assert_eq!(t.samples.len(), 1, "{t:?}");
            let labels: Vec<String> = t
                .labels
                .iter()
                .map(|l| format!("{}={:?}", l.name, l.value))
                .collect();
            (
                labels.join(","),
                (t.samples[0].value, t.samples[0].timestamp),
            )
        })
        .collect()
}

#[test]
fn decoded_body_has_the_exposition_names_sorted_labels_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let snap = store.snapshot().unwrap();
    // `host` clashes with a series label (the series keeps its own).
    let external = ExternalLabels::parse(&["host=web-1", "dc=eu"]).unwrap();
    let chunks = encode(timeseries(&snap, &external, TS, false), 5000);
    assert_eq!(chunks.len(), 1);
    let series = decode(&chunks);

    for t in &series {
        let names: Vec<&str> = t.labels.iter().map(|l| l.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "labels sorted by name, no repeats");
        assert!(names.contains(&"__name__"));
        assert!(t.labels.iter().all(|l| !l.value.is_empty()), "{t:?}");
        assert_eq!(t.samples[0].timestamp, TS);
    }

    let got = render(&series);
    let want: BTreeMap<String, (f64, i64)> = [
        (
            r#"__name__="jobs_total",dc="eu",host="worker-7",queue="email""#,
            7.0,
        ),
        // The empty `queue` value is no label.
        (r#"__name__="jobs_total",dc="eu",host="worker-7""#, 1.5),
        // `Zone` sorts before `__name__` in byte order.
        (
            r#"Zone="north",__name__="temperature",dc="eu",host="web-1""#,
            -4.25,
        ),
        (
            r#"__name__="latency_seconds_bucket",dc="eu",host="web-1",le="0.5",route="/a""#,
            1.0,
        ),
        (
            r#"__name__="latency_seconds_bucket",dc="eu",host="web-1",le="1.0",route="/a""#,
            3.0,
        ),
        (
            r#"__name__="latency_seconds_bucket",dc="eu",host="web-1",le="2.5",route="/a""#,
            4.0,
        ),
        (
            r#"__name__="latency_seconds_bucket",dc="eu",host="web-1",le="+Inf",route="/a""#,
            5.0,
        ),
        (
            r#"__name__="latency_seconds_sum",dc="eu",host="web-1",route="/a""#,
            13.75,
        ),
        (
            r#"__name__="latency_seconds_count",dc="eu",host="web-1",route="/a""#,
            5.0,
        ),
        (r#"__name__="size_bytes_sum",dc="eu",host="web-1""#, 128.0),
        (r#"__name__="size_bytes_count",dc="eu",host="web-1""#, 2.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), (v, TS)))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn large_snapshots_are_split_into_requests_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let snap = store.snapshot().unwrap();
    let whole = decode(&encode(
        timeseries(&snap, &ExternalLabels::default(), TS, false),
        5000,
    ));
    assert_eq!(whole.len(), 11);
    let chunks = encode(timeseries(&snap, &ExternalLabels::default(), TS, false), 4);
    assert_eq!(
        chunks.iter().map(|c| c.samples).collect::<Vec<_>>(),
        [4, 4, 3]
    );
    assert_eq!(decode(&chunks), whole);
}

#[test]
fn bad_settings_are_refused() {
    use shmetrics_push::{Config, ConfigError};
    for bad in ["le=1", "__x=1", "9a=1", "novalue", "a="] {
        assert!(
            matches!(
                ExternalLabels::parse(&[bad]),
                Err(ConfigError::BadExternalLabel { .. })
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        ExternalLabels::parse(&["a=1", "a=2"]),
        Err(ConfigError::DuplicateExternalLabel { .. })
    ));
    assert!(matches!(
        Config::new(&["ftp://example.invalid/api/v1/write"]),
        Err(ConfigError::UnsupportedScheme { .. })
    ));
    let e = Config::new(&["http://u:secret@127.0.0.1:1/w"]).unwrap_err();
    assert!(matches!(e, ConfigError::CredentialsInUrl { .. }));
    assert!(!e.to_string().contains("secret"), "{e}");
    assert!(matches!(
        Config::new(&["not a url"]),
        Err(ConfigError::BadUrl { .. })
    ));
    assert!(matches!(
        Config::new(&["http://127.0.0.1:1/w", "http://127.0.0.1:1/w"]),
        Err(ConfigError::DuplicateUrl { .. })
    ));
    let c = Config::new(&["http://127.0.0.1:1/w"]).unwrap();
    assert!(c.clone().with_interval_secs(0.0).is_err());
    assert!(c.clone().with_interval_secs(f64::NAN).is_err());
    assert!(c.with_queue_batches(0).is_err());
}

#[test]
fn a_counter_named_as_given_keeps_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
    let status = store
        .register(&FamilyDesc::new("http_status", Kind::Counter).name_as_given())
        .unwrap();
    store
        .counter_add(store.series(&status, &[]).unwrap(), 3.0)
        .unwrap();
    let snap = store.snapshot().unwrap();
    let chunks = encode(timeseries(&snap, &ExternalLabels::default(), TS, false), 10);
    let got = render(&decode(&chunks));
    let want: BTreeMap<String, (f64, i64)> =
        [(r#"__name__="http_status""#.to_string(), (3.0, TS))].into();
    assert_eq!(got, want);
}

// ----- remote write 2.0 ---------------------------------------------------------------

#[derive(Clone, PartialEq, prost::Message)]
struct RequestV2 {
    #[prost(string, repeated, tag = "4")]
    symbols: Vec<String>,
    #[prost(message, repeated, tag = "5")]
    timeseries: Vec<TimeSeriesV2>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TimeSeriesV2 {
    #[prost(uint32, repeated, tag = "1")]
    labels_refs: Vec<u32>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<SampleV2>,
    #[prost(message, optional, tag = "5")]
    metadata: Option<MetadataV2>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SampleV2 {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
    #[prost(int64, tag = "3")]
    start_timestamp: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct MetadataV2 {
    #[prost(int32, tag = "1")]
    r#type: i32,
    #[prost(uint32, tag = "3")]
    help_ref: u32,
    #[prost(uint32, tag = "4")]
    unit_ref: u32,
}

/// A 2.0 request's series, resolved through its symbols, as 1.0's:
/// each chunk's table starts with "" and holds each string once, and its
/// series come sorted by their labels other than `__name__`.
fn decode_v2(
    chunks: &[shmetrics_push::Chunk],
) -> Vec<(TimeSeries, MetadataV2, String, String, i64)> {
    let mut all = Vec::new();
    for c in chunks {
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&c.body)
            .expect("a snappy block");
        let req = RequestV2::decode(raw.as_slice()).expect("a v2 Request");
        assert_eq!(
            req.symbols.first().map(String::as_str),
            Some(""),
            "{:?}",
            req.symbols
        );
        let mut seen = std::collections::HashSet::new();
        assert!(
            req.symbols.iter().all(|s| seen.insert(s)),
            "a symbol twice: {:?}",
            req.symbols
        );
        let sym = |i: u32| req.symbols[i as usize].clone();
        let but_name = |t: &TimeSeriesV2| {
            let pairs = t.labels_refs.chunks(2).map(|p| (sym(p[0]), sym(p[1])));
            pairs.filter(|(n, _)| n != "__name__").collect::<Vec<_>>()
        };
        let order: Vec<_> = req.timeseries.iter().map(but_name).collect();
        assert!(order.is_sorted(), "{order:?}");
        for t in req.timeseries {
            assert_eq!(t.labels_refs.len() % 2, 0);
            let labels = t
                .labels_refs
                .chunks(2)
                .map(|p| Label {
                    name: sym(p[0]),
                    value: sym(p[1]),
                })
                .collect();
            let m = t.metadata.clone().expect("metadata on every series");
            let start = t.samples[0].start_timestamp;
            let samples = t
                .samples
                .iter()
                .map(|s| Sample {
                    value: s.value,
                    timestamp: s.timestamp,
                })
                .collect();
            all.push((
                TimeSeries { labels, samples },
                m.clone(),
                sym(m.help_ref),
                sym(m.unit_ref),
                start,
            ));
        }
    }
    all
}

#[test]
fn remote_write_2_0_carries_the_same_series_with_interned_strings_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let snap = store.snapshot().unwrap();
    let ext = ExternalLabels::parse(&["dc=eu"]).unwrap();
    let v1 = decode(&encode(timeseries(&snap, &ext, TS, false), 5000));
    for max in [5000, 4, 1] {
        let v2 = decode_v2(&encode_v2(&snap, &ext, TS, false, false, max));
        // The same series, labels and samples as 1.0 (in another order).
        let mut same: Vec<TimeSeries> = v2.iter().map(|(t, ..)| t.clone()).collect();
        let mut want = v1.clone();
        let by_labels = |a: &TimeSeries, b: &TimeSeries| {
            let key = |t: &TimeSeries| {
                t.labels
                    .iter()
                    .map(|l| (l.name.clone(), l.value.clone()))
                    .collect::<Vec<_>>()
            };
            key(a).cmp(&key(b))
        };
        want.sort_by(by_labels);
        same.sort_by(by_labels);
        assert_eq!(same, want, "max {max}");
        for (t, m, help, _unit, start) in &v2 {
            let name = &t
                .labels
                .iter()
                .find(|l| l.name == "__name__")
                .unwrap()
                .value;
            // 1 counter, 2 gauge, 3 histogram, 5 summary.
            let want = if name.starts_with("jobs") {
                (1, "Jobs.")
            } else if name.starts_with("temperature") {
                (2, "")
            } else if name.starts_with("latency") {
                (3, "")
            } else {
                (5, "")
            };
            assert_eq!(m.r#type, want.0, "{name}");
            if !want.1.is_empty() {
                assert_eq!(help, want.1, "{name}");
            }
            // A start time for counters, histograms and summaries, none for gauges.
            assert_eq!(*start > 0, m.r#type != 2, "{name}: {start}");
        }
    }
}

#[test]
fn remote_write_2_0_puts_the_series_that_share_their_most_varied_value_in_one_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store"), &Options::default()).unwrap();
    // Two families with the same labels: `route` has 3 values, `code` 2.
    for name in ["requests", "errors"] {
        let desc = FamilyDesc::new(name, Kind::Counter).labels(&["route", "code"]);
        let family = store.register(&desc).unwrap();
        for route in ["/a", "/b", "/c"] {
            for code in ["200", "500"] {
                let s = store.series(&family, &[route, code]).unwrap();
                store.counter_add(s, 1.0).unwrap();
            }
        }
    }
    let snap = store.snapshot().unwrap();
    let chunks = encode_v2(&snap, &ExternalLabels::default(), TS, false, false, 4);
    let text = |t: &TimeSeries| {
        let labels = t.labels.iter().map(|l| format!("{}={}", l.name, l.value));
        labels.collect::<Vec<_>>().join(",")
    };
    let requests: Vec<Vec<String>> = chunks
        .iter()
        .map(|c| {
            let series = decode_v2(std::slice::from_ref(c));
            series.iter().map(|(t, ..)| text(t)).collect()
        })
        .collect();
    // One request per route, with both families' series of it, sorted
    // by their labels but the name (the families in their order on ties).
    let want = |route: &str| {
        [
            ("200", "requests"),
            ("200", "errors"),
            ("500", "requests"),
            ("500", "errors"),
        ]
        .map(|(code, name)| format!("__name__={name}_total,code={code},route={route}"))
        .to_vec()
    };
    assert_eq!(requests, [want("/a"), want("/b"), want("/c")]);
}

//! The protobuf encoder: stores written through a real `Store`, encoded,
//! decoded back with prost into the message structs and compared in full
//! (native histograms included); edge cases of native buckets and
//! quantiles through `fill_metric` with hand-built values.

use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;
use shmetrics_core::{
    BucketRun, FamilyDesc, GaugeMode, Kind, NativeBuckets, NativeOpts, Options, Quantile, Store,
    Value,
};

use super::proto::*;
use super::*;
use crate::extra::ExtraSample;

/// The module's writer on a whole snapshot, as `crate::encode_with`
/// calls it for `Format::Protobuf` (names escaped with underscores).
fn encode_all(
    snap: &shmetrics_core::Snapshot,
    extra: &[ExtraFamily<'_>],
    escaping: Escaping,
    out: &mut Vec<u8>,
) {
    encode(snap.families(), extra, escaping, out, None);
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    t0: u64,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_series: 256,
        label_bytes: 1 << 16,
        max_writers: 4,
        ..Options::default()
    };
    let store = Store::open(dir.path().join("store"), &opts).unwrap();
    Fixture {
        _dir: dir,
        store,
        t0: now_ns() - 1_000_000_000,
    }
}

/// What a checked creation time is replaced with.
const CT: Timestamp = Timestamp {
    seconds: 1,
    nanos: 0,
};

impl Fixture {
    /// Encodes the store, checks that the bytes are exactly prost's
    /// encoding of the messages they decode to, and returns those messages
    /// with every creation time checked to lie between the fixture's
    /// creation and now, then replaced by [`CT`].
    fn families(&self) -> Vec<MetricFamily> {
        let mut out = b"prefix".to_vec();
        encode_all(
            &self.store.snapshot().unwrap(),
            &[],
            Escaping::Underscores,
            &mut out,
        );
        let body = out.strip_prefix(b"prefix").expect("encode appends");
        let mut families = decode_all(body);
        let t1 = now_ns() + 1_000_000_000;
        for f in &mut families {
            for m in &mut f.metric {
                let ct = [
                    m.counter.as_mut().map(|c| &mut c.created_timestamp),
                    m.histogram.as_mut().map(|h| &mut h.created_timestamp),
                    m.summary.as_mut().map(|s| &mut s.created_timestamp),
                ];
                for ts in ct.into_iter().flatten() {
                    let Some(t) = ts.as_mut() else { continue };
                    let ns = t.seconds as u64 * 1_000_000_000 + t.nanos as u64;
                    assert!(
                        (0..1_000_000_000).contains(&t.nanos) && self.t0 <= ns && ns <= t1,
                        "{t:?} not in [{}, {t1}]",
                        self.t0
                    );
                    *t = CT;
                }
            }
        }
        families
    }
}

/// Decodes a body of length-delimited `MetricFamily` messages, and checks
/// that re-encoding them with prost gives the same bytes: the streaming
/// encoder writes exactly what prost writes for the whole family.
fn decode_all(body: &[u8]) -> Vec<MetricFamily> {
    let mut families = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        families.push(MetricFamily::decode_length_delimited(&mut rest).expect("a MetricFamily"));
    }
    let again: Vec<u8> = families
        .iter()
        .flat_map(|f| f.encode_length_delimited_to_vec())
        .collect();
    assert_eq!(again, body, "not prost's own encoding");
    families
}

fn label(name: &str, value: &str) -> LabelPair {
    LabelPair {
        name: Some(name.into()),
        value: Some(value.into()),
    }
}

fn family(name: &str, help: &str, t: MetricType, metric: Vec<Metric>) -> MetricFamily {
    MetricFamily {
        name: Some(name.into()),
        help: Some(help.into()),
        r#type: Some(t as i32),
        metric,
        unit: None,
    }
}

fn counter(labels: Vec<LabelPair>, v: f64, created: Option<Timestamp>) -> Metric {
    Metric {
        label: labels,
        counter: Some(Counter {
            value: Some(v),
            exemplar: None,
            created_timestamp: created,
        }),
        ..Metric::default()
    }
}

fn gauge(labels: Vec<LabelPair>, v: f64) -> Metric {
    Metric {
        label: labels,
        gauge: Some(Gauge { value: Some(v) }),
        ..Metric::default()
    }
}

fn bucket(upper_bound: f64, cumulative_count: u64) -> Bucket {
    Bucket {
        cumulative_count: Some(cumulative_count),
        upper_bound: Some(upper_bound),
        ..Bucket::default()
    }
}

fn span(offset: i32, length: u32) -> BucketSpan {
    BucketSpan {
        offset: Some(offset),
        length: Some(length),
    }
}

#[test]
fn empty_store_is_an_empty_body() {
    let f = fixture();
    assert_eq!(f.families(), []);
}

#[test]
fn counters_are_named_with_total() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("http_requests_total", Kind::Counter)
                .help("Requests served.")
                .labels(&["route", "status"]),
        )
        .unwrap();
    let ok = s.series(&c, &["/", "200"]).unwrap();
    let err = s.series(&c, &["/login", "500"]).unwrap();
    s.counter_add(ok, 3.0).unwrap();
    s.counter_inc(err).unwrap();
    s.counter_add(err, 0.5).unwrap();
    let plain = s.register(&FamilyDesc::new("jobs", Kind::Counter)).unwrap();
    s.series(&plain, &[]).unwrap();

    assert_eq!(
        f.families(),
        [
            family(
                "http_requests_total",
                "Requests served.",
                MetricType::Counter,
                vec![
                    counter(
                        vec![label("route", "/"), label("status", "200")],
                        3.0,
                        Some(CT)
                    ),
                    counter(
                        vec![label("route", "/login"), label("status", "500")],
                        1.5,
                        Some(CT)
                    ),
                ]
            ),
            // Help is always set, if empty; a zero value is written.
            family(
                "jobs_total",
                "",
                MetricType::Counter,
                vec![counter(vec![], 0.0, Some(CT))]
            ),
        ]
    );
}

#[test]
fn counters_named_as_given_keep_their_name() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(&FamilyDesc::new("http_status", Kind::Counter).name_as_given())
        .unwrap();
    s.counter_add(s.series(&c, &[]).unwrap(), 2.0).unwrap();
    assert_eq!(
        f.families(),
        [family(
            "http_status",
            "",
            MetricType::Counter,
            vec![counter(vec![], 2.0, Some(CT))]
        )]
    );
}

#[test]
fn gauges_by_mode() {
    let f = fixture();
    let s = &f.store;
    let sum = s
        .register(
            &FamilyDesc::new("queue_bytes", Kind::Gauge)
                .help("Queued.")
                .unit("bytes"),
        )
        .unwrap();
    s.gauge_set(s.series(&sum, &[]).unwrap(), -2.5).unwrap();
    let mut per_process = Vec::new();
    for mode in [GaugeMode::All, GaugeMode::LiveAll] {
        let name = format!("workers_busy_{}", per_process.len());
        let g = s
            .register(
                &FamilyDesc::new(&name, Kind::Gauge)
                    .labels(&["pool"])
                    .gauge_mode(mode),
            )
            .unwrap();
        s.gauge_set(s.series(&g, &["web"]).unwrap(), 7.0).unwrap();
        per_process.push(name);
    }
    let max = s
        .register(&FamilyDesc::new("peak", Kind::Gauge).gauge_mode(GaugeMode::Max))
        .unwrap();
    s.gauge_set(s.series(&max, &[]).unwrap(), 4.0).unwrap();

    let pid = std::process::id().to_string();
    let mut want = vec![MetricFamily {
        unit: Some("bytes".into()),
        ..family(
            "queue_bytes",
            "Queued.",
            MetricType::Gauge,
            vec![gauge(vec![], -2.5)],
        )
    }];
    for name in &per_process {
        want.push(family(
            name,
            "",
            MetricType::Gauge,
            vec![gauge(vec![label("pool", "web"), label("pid", &pid)], 7.0)],
        ));
    }
    want.push(family(
        "peak",
        "",
        MetricType::Gauge,
        vec![gauge(vec![], 4.0)],
    ));
    assert_eq!(f.families(), want);
}

#[test]
fn classic_histogram_has_no_inf_bucket() {
    let f = fixture();
    let s = &f.store;
    let h = s
        .register(
            &FamilyDesc::new("latency_seconds", Kind::Histogram)
                .help("Latency.")
                .unit("seconds")
                .labels(&["route"])
                .buckets(&[0.1, 0.5, 1.0]),
        )
        .unwrap();
    let a = s.series(&h, &["/a"]).unwrap();
    for o in [0.05, 0.3, 0.3, 0.7, 5.0] {
        s.observe(a, o).unwrap();
    }
    s.series(&h, &["/b"]).unwrap();

    let hist = |route: &str, count: u64, sum: f64, buckets: Vec<Bucket>| Metric {
        label: vec![label("route", route)],
        histogram: Some(Histogram {
            sample_count: Some(count),
            sample_sum: Some(sum),
            bucket: buckets,
            created_timestamp: Some(CT),
            ..Histogram::default()
        }),
        ..Metric::default()
    };
    assert_eq!(
        f.families(),
        [MetricFamily {
            unit: Some("seconds".into()),
            ..family(
                "latency_seconds",
                "Latency.",
                MetricType::Histogram,
                vec![
                    hist(
                        "/a",
                        5,
                        [0.05, 0.3, 0.3, 0.7, 5.0].iter().sum(),
                        vec![bucket(0.1, 1), bucket(0.5, 3), bucket(1.0, 4)]
                    ),
                    hist(
                        "/b",
                        0,
                        0.0,
                        vec![bucket(0.1, 0), bucket(0.5, 0), bucket(1.0, 0)]
                    ),
                ]
            )
        }]
    );
}

#[test]
fn native_histograms_from_the_store() {
    let f = fixture();
    let s = &f.store;
    // Native only, at schema 0 (bucket i is (2^(i-1), 2^i]).
    let n = s
        .register(
            &FamilyDesc::new("native_seconds", Kind::Histogram)
                .help("Native.")
                .labels(&["route"])
                .native(NativeOpts {
                    bucket_factor: 2.0,
                    ..NativeOpts::default()
                }),
        )
        .unwrap();
    let a = s.series(&n, &["/a"]).unwrap();
    let obs = [0.0, 0.3, 0.3, 1.0, 3.0, 100.0, -2.0];
    for o in obs {
        s.observe(a, o).unwrap();
    }
    s.series(&n, &["/b"]).unwrap();
    // Classic and native, at the default schema 3.
    let b = s
        .register(
            &FamilyDesc::new("both_seconds", Kind::Histogram)
                .help("Both.")
                .buckets(&[1.0])
                .native(NativeOpts::default()),
        )
        .unwrap();
    let ab = s.series(&b, &[]).unwrap();
    s.observe(ab, 0.5).unwrap();
    s.observe(ab, 2.0).unwrap();

    let threshold = 2f64.powi(-64);
    let metric = |labels: Vec<LabelPair>, h: Histogram| Metric {
        label: labels,
        histogram: Some(Histogram {
            created_timestamp: Some(CT),
            zero_threshold: Some(threshold),
            ..h
        }),
        ..Metric::default()
    };
    assert_eq!(
        f.families(),
        [
            family(
                "native_seconds",
                "Native.",
                MetricType::Histogram,
                vec![
                    metric(
                        vec![label("route", "/a")],
                        Histogram {
                            sample_count: Some(7),
                            sample_sum: Some(obs.iter().sum()),
                            schema: Some(0),
                            zero_count: Some(1),
                            // 0.3 x2 in -1, 1.0 in 0, 3.0 in 2, then a
                            // gap of four, 100 in 7.
                            positive_span: vec![span(-1, 4), span(4, 1)],
                            positive_delta: vec![2, -1, -1, 1, 0],
                            negative_span: vec![span(1, 1)],
                            negative_delta: vec![1],
                            ..Histogram::default()
                        }
                    ),
                    metric(
                        vec![label("route", "/b")],
                        Histogram {
                            sample_count: Some(0),
                            sample_sum: Some(0.0),
                            schema: Some(0),
                            zero_count: Some(0),
                            ..Histogram::default()
                        }
                    ),
                ]
            ),
            family(
                "both_seconds",
                "Both.",
                MetricType::Histogram,
                vec![metric(
                    vec![],
                    Histogram {
                        sample_count: Some(2),
                        sample_sum: Some(2.5),
                        bucket: vec![bucket(1.0, 1)],
                        schema: Some(3),
                        zero_count: Some(0),
                        positive_span: vec![span(-8, 1), span(15, 1)],
                        positive_delta: vec![1, 0],
                        ..Histogram::default()
                    }
                )]
            ),
        ]
    );
}

#[test]
fn summary_count_and_sum() {
    let f = fixture();
    let s = &f.store;
    let sm = s
        .register(
            &FamilyDesc::new("rpc_seconds", Kind::Summary)
                .help("RPC time.")
                .labels(&["service"]),
        )
        .unwrap();
    let a = s.series(&sm, &["a"]).unwrap();
    s.observe(a, 1.5).unwrap();
    s.observe(a, 2.5).unwrap();
    assert_eq!(
        f.families(),
        [family(
            "rpc_seconds",
            "RPC time.",
            MetricType::Summary,
            vec![Metric {
                label: vec![label("service", "a")],
                summary: Some(Summary {
                    sample_count: Some(2),
                    sample_sum: Some(4.0),
                    quantile: vec![],
                    created_timestamp: Some(CT),
                }),
                ..Metric::default()
            }]
        )]
    );
}

#[test]
fn overflow_label_and_unescaped_values() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("hits", Kind::Counter)
                .labels(&["user"])
                .max_series(1),
        )
        .unwrap();
    s.counter_inc(s.series(&c, &["a\"b\\c\nd é"]).unwrap())
        .unwrap();
    let over = s.series_or_overflow(&c, &["bob"]).unwrap();
    s.counter_add(over, 2.0).unwrap();
    assert_eq!(
        f.families(),
        [family(
            "hits_total",
            "",
            MetricType::Counter,
            vec![
                counter(
                    vec![label("user", ""), label("shmetrics_overflow", "true")],
                    2.0,
                    Some(CT)
                ),
                // Label values travel as they are: no escaping in protobuf.
                counter(vec![label("user", "a\"b\\c\nd é")], 1.0, Some(CT)),
            ]
        )]
    );
}

#[test]
fn families_without_series_are_left_out() {
    let f = fixture();
    let s = &f.store;
    s.register(&FamilyDesc::new("zeta", Kind::Counter).help("Z."))
        .unwrap();
    let g = s.register(&FamilyDesc::new("alpha", Kind::Gauge)).unwrap();
    s.series(&g, &[]).unwrap();
    s.register(&FamilyDesc::new("mid", Kind::Summary)).unwrap();
    assert_eq!(
        f.families(),
        [family(
            "alpha",
            "",
            MetricType::Gauge,
            vec![gauge(vec![], 0.0)]
        )]
    );
}

#[test]
fn extra_families_follow_the_store() {
    let f = fixture();
    let g = f
        .store
        .register(&FamilyDesc::new("up_here", Kind::Gauge))
        .unwrap();
    f.store
        .gauge_set(f.store.series(&g, &[]).unwrap(), 1.0)
        .unwrap();
    let extra = [
        ExtraFamily {
            name: "exporter_scrapes",
            help: "Scrapes.",
            kind: Kind::Counter,
            samples: vec![ExtraSample {
                labels: vec![("format", "protobuf")],
                value: 3.0,
            }],
        },
        ExtraFamily {
            name: "exporter_nothing",
            help: "Left out.",
            kind: Kind::Counter,
            samples: vec![],
        },
        ExtraFamily {
            name: "exporter_last_seconds",
            help: "Last.",
            kind: Kind::Histogram, // written as a gauge
            samples: vec![ExtraSample {
                labels: vec![],
                value: 0.25,
            }],
        },
    ];
    let mut out = Vec::new();
    encode_all(
        &f.store.snapshot().unwrap(),
        &extra,
        Escaping::Underscores,
        &mut out,
    );
    assert_eq!(
        decode_all(&out),
        [
            family("up_here", "", MetricType::Gauge, vec![gauge(vec![], 1.0)]),
            // No creation time: the exporter's own counters have none.
            family(
                "exporter_scrapes_total",
                "Scrapes.",
                MetricType::Counter,
                vec![counter(vec![label("format", "protobuf")], 3.0, None)]
            ),
            family(
                "exporter_last_seconds",
                "Last.",
                MetricType::Gauge,
                vec![gauge(vec![], 0.25)]
            ),
        ]
    );
}

#[test]
fn created_timestamp_splits_seconds_and_nanos() {
    let mut m = Metric::default();
    fill_metric(&mut m, [], Value::Counter(1.0), 1_700_000_000_123_456_789);
    assert_eq!(
        m.counter.unwrap().created_timestamp,
        Some(Timestamp {
            seconds: 1_700_000_000,
            nanos: 123_456_789
        })
    );
    let mut m = Metric::default();
    fill_metric(&mut m, [], Value::Counter(1.0), 0);
    assert_eq!(m.counter.unwrap().created_timestamp, None, "0 is unknown");
}

// ----- native histograms and quantiles, built by hand ------------------------

/// The histogram `fill_metric` makes of a native-only value.
fn native(nb: NativeBuckets<'_>, count: u64, sum: f64) -> Histogram {
    let mut m = Metric::default();
    let cumulative = [count];
    let value = Value::Histogram {
        bounds: &[],
        cumulative: &cumulative,
        sum,
        native: Some(nb),
    };
    fill_metric(&mut m, [("a", "b")], value, 5_000_000_000);
    assert_eq!(m.label, [label("a", "b")]);
    assert!(m.counter.is_none() && m.gauge.is_none() && m.summary.is_none());
    m.histogram.unwrap()
}

fn nb<'a>(pos: BucketRun<'a>, neg: BucketRun<'a>) -> NativeBuckets<'a> {
    NativeBuckets {
        schema: 3,
        zero_threshold: 2.938735877055719e-39,
        zero_count: 2,
        positive: pos,
        negative: neg,
    }
}

fn run(offset: i32, counts: &[u64]) -> BucketRun<'_> {
    BucketRun { offset, counts }
}

#[test]
fn native_histogram_fields() {
    let h = native(nb(run(-2, &[1, 2, 4]), run(5, &[3])), 12, -1.5);
    assert_eq!(
        h,
        Histogram {
            sample_count: Some(12),
            sample_sum: Some(-1.5),
            schema: Some(3),
            zero_threshold: Some(2.938735877055719e-39),
            zero_count: Some(2),
            negative_span: vec![span(5, 1)],
            negative_delta: vec![3],
            positive_span: vec![span(-2, 3)],
            positive_delta: vec![1, 1, 2],
            created_timestamp: Some(Timestamp {
                seconds: 5,
                nanos: 0
            }),
            ..Histogram::default()
        }
    );
}

#[test]
fn native_spans_split_at_gaps_longer_than_two() {
    // (offset, counts) -> (spans as (offset, length), deltas)
    type Case<'a> = (i32, &'a [u64], &'a [(i32, u32)], &'a [i64]);
    let cases: &[Case] = &[
        // Zeros at either end are skipped.
        (0, &[0, 0, 5, 0], &[(2, 1)], &[5]),
        // A gap of one or two stays in the span, as zero counts.
        (1, &[3, 0, 4], &[(1, 3)], &[3, -3, 4]),
        (1, &[3, 0, 0, 4], &[(1, 4)], &[3, -3, 0, 4]),
        // A gap of three starts a span, at offset 3 from the last one's end.
        (1, &[3, 0, 0, 0, 4], &[(1, 1), (3, 1)], &[3, 1]),
        // Deltas run across spans; offsets may be negative.
        (
            -10,
            &[7, 7, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 9],
            &[(-10, 2), (4, 3), (3, 1)],
            &[7, 0, -6, -1, 2, 7],
        ),
        // Nothing at all.
        (4, &[0, 0], &[], &[]),
        (4, &[], &[], &[]),
    ];
    for &(offset, counts, want_spans, want_deltas) in cases {
        let h = native(
            nb(run(offset, counts), run(-3, &[0, 6, 0, 0, 0, 6])),
            0,
            0.0,
        );
        let spans: Vec<BucketSpan> = want_spans.iter().map(|&(o, l)| span(o, l)).collect();
        assert_eq!(h.positive_span, spans, "{offset} {counts:?}");
        assert_eq!(h.positive_delta, want_deltas, "{offset} {counts:?}");
        // The negative side is encoded the same way, on its own.
        assert_eq!(h.negative_span, [span(-2, 1), span(3, 1)]);
        assert_eq!(h.negative_delta, [6, 0]);
    }
}

#[test]
fn empty_native_histogram_gets_a_no_op_span() {
    let empty = NativeBuckets {
        schema: 0,
        zero_threshold: 0.0,
        zero_count: 0,
        positive: BucketRun::default(),
        negative: run(0, &[0, 0]),
    };
    let h = native(empty, 0, 0.0);
    assert_eq!(h.positive_span, [span(0, 0)]);
    assert_eq!(h.positive_delta, [] as [i64; 0]);
    assert_eq!(h.negative_span, []);
    assert_eq!(
        (h.schema, h.zero_threshold, h.zero_count),
        (Some(0), Some(0.0), Some(0))
    );

    // Not needed (so not added) when a zero threshold, a zero count or a
    // bucket already says "native".
    let threshold = NativeBuckets {
        zero_threshold: 1e-9,
        ..empty
    };
    assert_eq!(native(threshold, 0, 0.0).positive_span, []);
    let zeros = NativeBuckets {
        zero_count: 1,
        ..empty
    };
    assert_eq!(native(zeros, 1, 0.0).positive_span, []);
    let negative = NativeBuckets {
        negative: run(1, &[1]),
        ..empty
    };
    let h = native(negative, 1, -1.0);
    assert_eq!(
        (h.positive_span, h.negative_span),
        (vec![], vec![span(1, 1)])
    );
}

#[test]
fn classic_and_native_together() {
    let mut m = Metric::default();
    let counts = [1, 1];
    let value = Value::Histogram {
        bounds: &[1.0, 2.0],
        cumulative: &[1, 2, 3],
        sum: 6.5,
        native: Some(NativeBuckets {
            schema: 0,
            zero_threshold: 0.0,
            zero_count: 0,
            positive: run(0, &counts),
            negative: BucketRun::default(),
        }),
    };
    fill_metric(&mut m, [], value, 0);
    let h = m.histogram.unwrap();
    assert_eq!(h.bucket, [bucket(1.0, 1), bucket(2.0, 2)]);
    assert_eq!(h.sample_count, Some(3));
    assert_eq!(
        (h.positive_span, h.positive_delta),
        (vec![span(0, 2)], vec![1, 0])
    );
}

#[test]
fn summary_quantiles() {
    let mut m = Metric::default();
    let quantiles = [
        Quantile {
            quantile: 0.5,
            value: 0.25,
        },
        Quantile {
            quantile: 0.99,
            value: f64::NAN,
        },
    ];
    let value = Value::Summary {
        count: 7,
        sum: 3.5,
        quantiles: &quantiles,
    };
    fill_metric(&mut m, [("service", "a")], value, 2_500_000_000);
    let s = m.summary.clone().unwrap();
    assert_eq!((s.sample_count, s.sample_sum), (Some(7), Some(3.5)));
    assert_eq!(
        s.created_timestamp,
        Some(Timestamp {
            seconds: 2,
            nanos: 500_000_000
        })
    );
    assert_eq!(s.quantile.len(), 2);
    assert_eq!(
        (s.quantile[0].quantile, s.quantile[0].value),
        (Some(0.5), Some(0.25))
    );
    assert_eq!(s.quantile[1].quantile, Some(0.99));
    assert!(
        s.quantile[1].value.unwrap().is_nan(),
        "an empty window is NaN"
    );

    // And through the wire: NaN survives.
    let back = Metric::decode(m.encode_to_vec().as_slice()).unwrap();
    assert!(back.summary.unwrap().quantile[1].value.unwrap().is_nan());
}

#[test]
fn refilling_a_metric_leaves_nothing_behind() {
    let mut m = Metric::default();
    let counts = [1, 0, 0, 0, 1];
    let big = Value::Histogram {
        bounds: &[1.0, 2.0],
        cumulative: &[1, 2, 2],
        sum: 2.0,
        native: Some(nb(run(0, &counts), run(0, &counts))),
    };
    fill_metric(&mut m, [("a", "1"), ("b", "2"), ("pid", "7")], big, 9);
    let small = Value::Histogram {
        bounds: &[],
        cumulative: &[4],
        sum: 1.0,
        native: None,
    };
    fill_metric(&mut m, [("a", "x")], small, 0);
    let mut fresh = Metric::default();
    fill_metric(&mut fresh, [("a", "x")], small, 0);
    assert_eq!(m, fresh);
    // From one kind to another.
    fill_metric(&mut m, [], Value::Gauge(1.0), 9);
    assert_eq!(m, gauge(vec![], 1.0));
    let q = [Quantile {
        quantile: 0.5,
        value: 1.0,
    }];
    let summary = Value::Summary {
        count: 1,
        sum: 1.0,
        quantiles: &q,
    };
    fill_metric(&mut m, [], summary, 0);
    fill_metric(&mut m, [], Value::Counter(2.0), 0);
    assert_eq!(m, counter(vec![], 2.0, None));
}

#[test]
fn repeated_scalars_are_not_packed() {
    // proto2's default, as in client_model's metrics.proto: field 13,
    // wire type 0 (varint), zigzag(1) = 2, zigzag(-1) = 1, one key each.
    let h = Histogram {
        positive_delta: vec![1, -1],
        ..Histogram::default()
    };
    assert_eq!(h.encode_to_vec(), [13 << 3, 2, 13 << 3, 1]);
    // A packed encoding (wire type 2) decodes too.
    let packed = [(13 << 3) | 2, 2, 2, 1];
    assert_eq!(Histogram::decode(&packed[..]).unwrap(), h);
}

#[test]
fn metric_types() {
    assert_eq!(metric_type(Kind::Counter) as i32, 0);
    assert_eq!(metric_type(Kind::Gauge) as i32, 1);
    assert_eq!(metric_type(Kind::Summary) as i32, 2);
    assert_eq!(metric_type(Kind::Histogram) as i32, 4);
}

/// Exemplars decode back from `Counter.exemplar` and `Bucket.exemplar`;
/// a `+Inf` bucket is written only to hold the `+Inf` exemplar.
#[test]
fn exemplars_decode_back() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(&FamilyDesc::new("jobs_total", Kind::Counter).exemplars(true))
        .unwrap();
    s.counter_inc_with_exemplar(s.series(&c, &[]).unwrap(), &[("trace_id", "abc")])
        .unwrap();
    let h = s
        .register(
            &FamilyDesc::new("lat", Kind::Histogram)
                .buckets(&[1.0, 2.0])
                .exemplars(true),
        )
        .unwrap();
    let l = s.series(&h, &[]).unwrap();
    s.observe_with_exemplar(l, 1.5, &[("trace_id", "mid")])
        .unwrap();
    let families = f.families();
    let check = |e: &Option<proto::Exemplar>, trace: &str, v: f64| {
        let e = e.as_ref().expect("an exemplar");
        assert_eq!(e.label, [label("trace_id", trace)]);
        assert_eq!(e.value, Some(v));
        let t = e.timestamp.unwrap();
        let ns = t.seconds as u64 * 1_000_000_000 + t.nanos as u64;
        assert!(f.t0 <= ns && ns <= now_ns(), "{t:?}");
    };
    let counter = families[0].metric[0].counter.as_ref().unwrap();
    check(&counter.exemplar, "abc", 1.0);
    let hist = families[1].metric[0].histogram.as_ref().unwrap();
    assert_eq!(hist.bucket.len(), 2, "no +Inf bucket without its exemplar");
    assert!(hist.bucket[0].exemplar.is_none());
    check(&hist.bucket[1].exemplar, "mid", 1.5);

    s.observe_with_exemplar(l, 7.0, &[("trace_id", "inf")])
        .unwrap();
    let families = f.families();
    let hist = families[1].metric[0].histogram.as_ref().unwrap();
    assert_eq!(hist.bucket.len(), 3);
    assert_eq!(hist.bucket[2].upper_bound, Some(f64::INFINITY));
    assert_eq!(hist.bucket[2].cumulative_count, Some(2));
    check(&hist.bucket[2].exemplar, "inf", 7.0);
}

/// Names outside the legacy set: as they are with `allow-utf-8`, else
/// escaped (the family name with its `_total`, label names, exemplar
/// label names); legacy names as they are.
#[test]
fn utf8_names_by_escaping() {
    let f = fixture();
    let s = &f.store;
    let c = s
        .register(
            &FamilyDesc::new("http.requests", Kind::Counter)
                .labels(&["http.method", "code"])
                .exemplars(true),
        )
        .unwrap();
    s.counter_add_with_exemplar(
        s.series(&c, &["GET", "200"]).unwrap(),
        1.0,
        &[("trace.id", "t")],
    )
    .unwrap();
    let names = |escaping| {
        let mut out = Vec::new();
        encode_all(&s.snapshot().unwrap(), &[], escaping, &mut out);
        let fam = decode_all(&out).remove(0);
        let m = &fam.metric[0];
        let labels: Vec<String> = m.label.iter().map(|l| l.name().to_string()).collect();
        let ex = m.counter.as_ref().unwrap().exemplar.as_ref().unwrap();
        (
            fam.name().to_string(),
            labels,
            ex.label[0].name().to_string(),
        )
    };
    assert_eq!(
        names(Escaping::AllowUtf8),
        (
            "http.requests_total".into(),
            vec!["http.method".into(), "code".into()],
            "trace.id".into()
        )
    );
    assert_eq!(
        names(Escaping::Underscores),
        (
            "http_requests_total".into(),
            vec!["http_method".into(), "code".into()],
            "trace_id".into()
        )
    );
    assert_eq!(
        names(Escaping::Dots),
        (
            "http_dot_requests_total".into(),
            vec!["http_dot_method".into(), "code".into()],
            "trace_dot_id".into()
        )
    );
}

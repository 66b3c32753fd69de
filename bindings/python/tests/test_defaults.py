"""Defaults that dashboards depend on are prometheus_client's (issue 19):
a histogram made without buckets has prometheus_client's 15 bounds, so
panels built on `le="0.075"` or `le="7.5"` keep their data."""

from __future__ import annotations

import prometheus_client

import shmetrics

OBSERVATIONS = [0.001, 0.007, 0.06, 0.075, 0.2, 0.9, 3, 7.5, 9, 42]


def test_default_buckets_are_prometheus_clients():
    assert shmetrics.Histogram.DEFAULT_BUCKETS == prometheus_client.Histogram.DEFAULT_BUCKETS
    assert shmetrics.DEFAULT_BUCKETS == prometheus_client.Histogram.DEFAULT_BUCKETS
    assert len(shmetrics.Histogram.DEFAULT_BUCKETS) == 15
    assert isinstance(shmetrics.Histogram.DEFAULT_BUCKETS, tuple)


def test_default_histogram_matches_prometheus_client(store, scrape):
    ours = shmetrics.Histogram("latency_seconds", "Latency.")
    registry = prometheus_client.CollectorRegistry()
    theirs = prometheus_client.Histogram("latency_seconds", "Latency.", registry=registry)
    for v in OBSERVATIONS:
        ours.observe(v)
        theirs.observe(v)
    s = scrape()
    expected = {
        dict(labels)["le"]: value
        for metric in registry.collect()
        for name, labels, value, *_ in metric.samples
        if name == "latency_seconds_bucket"
    }
    assert len(expected) == 15
    got = {dict(labels)["le"]: v for (n, labels), v in s.samples.items() if n == "latency_seconds_bucket"}
    assert {float(le): v for le, v in got.items()} == {float(le): v for le, v in expected.items()}
    assert s.get("latency_seconds_bucket", le="0.075") == 4
    assert s.get("latency_seconds_bucket", le="7.5") == 8
    assert s.get("latency_seconds_count") == registry.get_sample_value("latency_seconds_count")


def test_native_only_histogram_keeps_no_classic_buckets(store, scrape):
    shmetrics.Histogram("rpc_seconds", "RPC.", native_histogram_bucket_factor=1.1).observe(0.2)
    s = scrape()
    assert [dict(l)["le"] for n, l in s.samples if n == "rpc_seconds_bucket"] == ["+Inf"]

"""Defaults that dashboards depend on are prometheus_client's (issue 19):
a histogram made without buckets has prometheus_client's 15 bounds, so
panels built on `le="0.075"` or `le="7.5"` keep their data; REGISTRY
carries the process, platform and GC collectors."""

from __future__ import annotations

import os
from typing import Dict, Set, Tuple

import prometheus_client
import prometheus_client.openmetrics.exposition
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

import shmetrics
from conftest import dump, samples_of

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


def default_families(page: str, openmetrics: bool = False) -> Dict[str, Tuple[str, str, Set[Tuple[str, Tuple[str, ...]]]]]:
    """The process_* and python_* families of a page, as prometheus_client's
    parser reads them: name -> (help, type, {(sample name, label names)})."""
    parse = parse_openmetrics if openmetrics else parse_text
    out: Dict[str, Tuple[str, str, Set[Tuple[str, Tuple[str, ...]]]]] = {}
    for f in parse(page):
        if f.name.startswith(("process_", "python_")):
            assert f.name not in out, f"{f.name} twice on the page"
            out[f.name] = (f.documentation, f.type, {(s.name, tuple(sorted(s.labels))) for s in f.samples})
    return out


def test_registry_has_prometheus_clients_default_collectors(store):
    """REGISTRY carries the process, platform and GC collectors, as
    prometheus_client's does: the in-process page has the same families
    (names, HELP, types, samples and label names) as prometheus_client's
    default page in the same process, read by prometheus_client's parsers."""
    theirs = prometheus_client.generate_latest().decode()
    ours = shmetrics.generate_latest().decode()
    expected = default_families(theirs)
    assert {"process_cpu_seconds", "process_resident_memory_bytes", "process_open_fds", "python_info",
            "python_gc_collections"} <= set(expected)
    assert default_families(ours) == expected
    om_theirs = prometheus_client.openmetrics.exposition.generate_latest(prometheus_client.REGISTRY).decode()
    assert default_families(shmetrics.generate_openmetrics().decode(), True) == default_families(om_theirs, True)
    # python_info, the same interpreter: the same sample.
    assert ('python_info{implementation="CPython"' in ours) and "python_info{" in theirs
    info = [line for line in ours.splitlines() if line.startswith("python_info{")]
    assert info == [line for line in theirs.splitlines() if line.startswith("python_info{")]
    # Unregistered, as in prometheus_client.
    shmetrics.REGISTRY.unregister(shmetrics.PROCESS_COLLECTOR)
    try:
        assert "process_cpu_seconds" not in default_families(shmetrics.generate_latest().decode())
    finally:
        shmetrics.REGISTRY.register(shmetrics.PROCESS_COLLECTOR)


def test_default_collectors_published_once_on_each_page(store):
    """A Publisher puts REGISTRY's collectors, the default ones too, into
    the store (gauges per live process, counters summed); the in-process
    page shows each of those families once, as its own collectors give
    them, and the exporter the published ones."""
    shmetrics.Publisher(interval=3600).publish()
    exported = samples_of(dump(store))
    pid = str(os.getpid())
    assert exported[("process_cpu_seconds_total", frozenset())] > 0
    assert exported[("process_resident_memory_bytes", frozenset({("pid", pid)}))] > 0
    assert any(n == "python_info" and ("pid", pid) in labels for n, labels in exported)
    page = shmetrics.generate_latest().decode()
    families = default_families(page)
    assert families["process_resident_memory_bytes"][2] == {("process_resident_memory_bytes", ())}
    assert families["process_cpu_seconds"][2] == {("process_cpu_seconds_total", ())}
    # A registry showing the store without the collectors (multiprocess
    # mode's endpoint) shows the published families.
    registry = shmetrics.CollectorRegistry()
    shmetrics.multiprocess.MultiProcessCollector(registry)
    assert registry.get_sample_value("process_resident_memory_bytes", {"pid": pid}) > 0

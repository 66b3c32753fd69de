"""Native (exponential) histograms: client_golang's options on `Histogram`,
observed from several processes, read back from the protobuf exposition
(the format Prometheus scrapes native buckets in) and from the text
formats, which carry the classic part."""

from __future__ import annotations

import multiprocessing

import pytest

import shmetrics
from conftest import dump_protobuf, protobuf_histograms

PROCESSES = 3  # the parent and two forked children
# Schema 0 (bucket factor 2): bucket i holds (2^(i-1), 2^i].
VALUES = [0.0, 0.25, 0.75, 3.0, 3.5, 100.0, -3.0]


def native_only() -> shmetrics.Histogram:
    return shmetrics.Histogram("rpc_seconds", "RPC latency.", ["route"],
                               native_histogram_bucket_factor=2.0,
                               native_histogram_zero_threshold=0.5)


def both() -> shmetrics.Histogram:
    return shmetrics.Histogram("job_seconds", "Job duration.", buckets=[1, 10],
                               native_histogram_max_bucket_number=0)


def observe_all() -> None:
    """What every process does: define the metrics (the same definitions
    find the same families) and observe VALUES into each."""
    for h in (native_only().labels("/a"), both()):
        for v in VALUES:
            h.observe(v)


def test_native_only_and_both_from_several_processes(store, scrape):
    observe_all()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=observe_all) for _ in range(PROCESSES - 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    n = PROCESSES
    total = sum(VALUES) * n

    hists = protobuf_histograms(dump_protobuf(store))
    [rpc] = hists["rpc_seconds"]
    assert rpc.labels == {"route": "/a"}
    assert rpc.count == len(VALUES) * n
    assert rpc.sum == pytest.approx(total)
    assert rpc.classic == [], "native only: no classic buckets"
    assert rpc.schema == 0
    assert rpc.zero_threshold == 0.5
    assert rpc.zero_count == 2 * n, "0 and 0.25 are within the zero threshold"
    # 0.75 in bucket 0, 3 and 3.5 in bucket 2, 100 in bucket 7: one gap of
    # one bucket is cheaper as a zero count, the gap of four is a new span.
    assert rpc.positive_spans == [(0, 3), (4, 1)]
    assert rpc.positive_deltas == [n, -n, 2 * n, -n]
    assert rpc.positive() == {0: n, 1: 0, 2: 2 * n, 7: n}
    assert rpc.negative_spans == [(2, 1)] and rpc.negative_deltas == [n]

    [job] = hists["job_seconds"]
    assert job.count == len(VALUES) * n and job.sum == pytest.approx(total)
    assert job.classic == [(1.0, 4 * n), (10.0, 6 * n)], "both: classic buckets too"
    assert job.schema == 3, "the default bucket factor, 1.1"
    assert job.zero_threshold == 2.0 ** -64, "the default threshold, raised to the store's least"
    assert job.zero_count == n
    assert sum(job.positive().values()) + sum(job.negative().values()) + job.zero_count == job.count

    # The text formats carry the classic part only.
    s = scrape()
    assert [le for (name, labels) in s.samples if name == "rpc_seconds_bucket"
            for k, le in labels if k == "le"] == ["+Inf"]
    assert s.get("rpc_seconds_bucket", route="/a", le="+Inf") == len(VALUES) * n
    assert s.get("rpc_seconds_count", route="/a") == len(VALUES) * n
    assert s.get("rpc_seconds_sum", route="/a") == pytest.approx(total)
    assert [s.get("job_seconds_bucket", le=le) for le in ["1.0", "10.0", "+Inf"]] == [4 * n, 6 * n, 7 * n]
    assert s.om[("rpc_seconds_count", frozenset({("route", "/a")}))] == len(VALUES) * n


def test_bucket_limit_lowers_the_resolution(store):
    h = shmetrics.Histogram("wide_seconds", "x", native_histogram_bucket_factor=2.0,
                            native_histogram_max_bucket_number=2)
    for v in [1, 4, 16, 64, 256]:
        h.observe(v)
    [w] = protobuf_histograms(dump_protobuf(store))["wide_seconds"]
    assert w.schema is not None and w.schema < 0
    assert len([c for c in w.positive().values() if c]) <= 2
    assert sum(w.positive().values()) == 5


@pytest.mark.parametrize("kwargs, words", [
    ({"native_histogram_bucket_factor": 1.0}, "bucket factor"),
    ({"native_histogram_bucket_factor": 0.5}, "bucket factor"),
    ({"native_histogram_bucket_factor": float("inf")}, "bucket factor"),
    ({"native_histogram_zero_threshold": -1.0}, "zero threshold"),
])
def test_bad_native_options(store, kwargs, words):
    with pytest.raises(shmetrics.InvalidOptionsError, match=words):
        shmetrics.Histogram("bad_seconds", "x", **kwargs)


def test_native_options_conflict_with_another_definition(store):
    shmetrics.Histogram("classic_seconds", "x", buckets=[1])
    with pytest.raises(shmetrics.ConflictError):
        shmetrics.Histogram("classic_seconds", "x", buckets=[1], native_histogram_bucket_factor=1.1)
    shmetrics.Histogram("native_seconds", "x", native_histogram_bucket_factor=2.0)
    shmetrics.Histogram("native_seconds", "x", native_histogram_bucket_factor=2.0)  # the same: fine
    with pytest.raises(shmetrics.ConflictError):
        shmetrics.Histogram("native_seconds", "x", native_histogram_bucket_factor=1.1)
    with pytest.raises(shmetrics.ConflictError):
        shmetrics.Histogram("native_seconds", "x")  # classic, with the default buckets

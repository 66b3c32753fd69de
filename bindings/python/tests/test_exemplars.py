"""Exemplars, as prometheus_client takes them (`inc(exemplar=...)`,
`observe(..., exemplar=...)`), on families created with `exemplars=True`:
the latest per series and bucket over every process, parsed back from the
exporter's OpenMetrics with prometheus_client's parser."""

from __future__ import annotations

import multiprocessing

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

import shmetrics

from conftest import dump


def _exemplars(store: shmetrics.Store) -> dict:
    """(sample name, labels) -> (exemplar labels, value) from OpenMetrics."""
    out = {}
    for fam in text_string_to_metric_families(dump(store, "openmetrics")):
        for s in fam.samples:
            if s.exemplar is not None:
                out[(s.name, frozenset(s.labels.items()))] = (s.exemplar.labels, s.exemplar.value)
    return out


def _child() -> None:
    c = shmetrics.Counter("jobs_total", "x", ["queue"], exemplars=True)
    c.labels("email").inc(2, exemplar={"trace_id": "child"})
    h = shmetrics.Histogram("job_seconds", "x", buckets=[0.1, 1], exemplars=True)
    h.observe(0.5, exemplar={"trace_id": "child-mid"})


def test_latest_exemplar_per_series_and_bucket_across_processes(store):
    c = shmetrics.Counter("jobs_total", "x", ["queue"], exemplars=True)
    h = shmetrics.Histogram("job_seconds", "x", buckets=[0.1, 1], exemplars=True)
    c.labels("email").inc(exemplar={"trace_id": "parent"})
    h.observe(0.05, exemplar={"trace_id": "parent-low"})
    h.observe(0.7, exemplar={"trace_id": "parent-mid"})
    p = multiprocessing.get_context("fork").Process(target=_child)
    p.start()
    p.join(60)
    assert p.exitcode == 0
    ex = _exemplars(store)
    # The child wrote last: its exemplars win where both wrote.
    assert ex[("jobs_total", frozenset({("queue", "email")}))] == ({"trace_id": "child"}, 2.0)
    le = lambda b: ("job_seconds_bucket", frozenset({("le", b)}))
    assert ex[le("0.1")] == ({"trace_id": "parent-low"}, 0.05)
    assert ex[le("1.0")] == ({"trace_id": "child-mid"}, 0.5)
    assert le("+Inf") not in ex
    # The values themselves are all counted.
    totals = {s.name: s.value for f in text_string_to_metric_families(dump(store, "openmetrics"))
              for s in f.samples if not s.labels or s.name.endswith("_count")}
    assert totals["job_seconds_count"] == 3


def test_exemplar_errors(store):
    plain = shmetrics.Counter("plain_total", "x")
    with pytest.raises(shmetrics.InvalidOptionsError, match="exemplars"):
        plain.inc(exemplar={"trace_id": "x"})
    c = shmetrics.Counter("ex_total", "x", exemplars=True)
    with pytest.raises(shmetrics.InvalidValueError, match="128"):
        c.inc(exemplar={"trace_id": "x" * 121})
    c.inc(exemplar={"trace_id": "x" * 120})  # 8 + 120 characters: at the limit
    with pytest.raises(shmetrics.InvalidNameError):
        c.inc(exemplar={"__trace": "x"})  # reserved; "trace-id" is taken (UTF-8)
    with pytest.raises(shmetrics.ConflictError):
        shmetrics.Counter("ex_total", "x")
    # A refused exemplar is no update: only the accepted one counted.
    assert dump(store).count("ex_total 1") == 1

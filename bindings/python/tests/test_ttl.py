"""Series TTL (`ttl_seconds=`): a series no process updated for the TTL is
no longer exported, and its space goes to the family's next new series. A
child object kept across the expiry keeps working: its next update brings
the series back, from zero. Parsed back with prometheus_client's parser."""

from __future__ import annotations

import multiprocessing
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

import shmetrics

from conftest import dump

TTL = 0.2
IDLE = 0.45


def _values(store: shmetrics.Store, name: str) -> dict:
    """label values -> value of the samples named `name`."""
    out = {}
    for fam in text_string_to_metric_families(dump(store, "text")):
        for s in fam.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def _child_updates(keys: list) -> None:
    c = shmetrics.Counter("visits_total", "x", ["user"], ttl_seconds=TTL)
    for k in keys:
        c.labels(k).inc(3)


def test_idle_series_expire_across_processes_and_come_back_from_zero(store):
    c = shmetrics.Counter("visits_total", "x", ["user"], ttl_seconds=TTL)
    kept = c.labels("alice")
    kept.inc()
    p = multiprocessing.get_context("fork").Process(target=_child_updates, args=(["bob", "carol"],))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert _values(store, "visits_total") == {
        (("user", "alice"),): 1.0,
        (("user", "bob"),): 3.0,
        (("user", "carol"),): 3.0,
    }
    # carol is kept busy from here; alice and bob go idle.
    carol = c.labels("carol")
    deadline = time.monotonic() + IDLE
    while time.monotonic() < deadline:
        carol.inc()
        time.sleep(TTL / 4)
    got = _values(store, "visits_total")
    assert list(got) == [(("user", "carol"),)]
    assert got[(("user", "carol"),)] >= 4.0
    # New label sets make a writer sweep: alice and bob expire for good,
    # and "dave" takes one's space.
    c.labels("dave").inc()
    # The cached child of an expired series still works: the series comes
    # back, from zero.
    kept.inc(5)
    got = _values(store, "visits_total")
    assert got[(("user", "alice"),)] == 5.0
    assert got[(("user", "dave"),)] == 1.0
    assert (("user", "bob"),) not in got


def test_every_metric_type_takes_ttl_seconds(store):
    g = shmetrics.Gauge("temp", "x", ["room"], ttl_seconds=TTL, multiprocess_mode="livesum")
    h = shmetrics.Histogram("lat_seconds", "x", ["route"], buckets=[0.1, 1], ttl_seconds=TTL)
    s = shmetrics.Summary("size_bytes", "x", ["route"], quantiles=[0.5], ttl_seconds=TTL)
    g.labels("kitchen").set(21.5)
    h.labels("/").observe(0.5)
    s.labels("/").observe(100)
    assert _values(store, "temp") == {(("room", "kitchen"),): 21.5}
    assert _values(store, "lat_seconds_count") == {(("route", "/"),): 1.0}
    assert _values(store, "size_bytes_count") == {(("route", "/"),): 1.0}
    time.sleep(IDLE)
    for name in ["temp", "lat_seconds_count", "size_bytes_count"]:
        assert _values(store, name) == {}, name
    # A new label set makes the writer sweep the family: "/" expires for
    # good, and comes back from zero. (An update of it would have expired
    # it first, too.)
    h.labels("/new").observe(0.1)
    h.labels("/").observe(2.0)
    assert _values(store, "lat_seconds_count") == {(("route", "/"),): 1.0, (("route", "/new"),): 1.0}
    assert _values(store, "lat_seconds_sum") == {(("route", "/"),): 2.0, (("route", "/new"),): 0.1}


@pytest.mark.parametrize("bad", [0, -1, 0.01, float("nan"), 10**9])
def test_bad_ttl_is_an_error(store, bad):
    with pytest.raises(shmetrics.InvalidOptionsError, match="TTL|ttl_seconds"):
        shmetrics.Counter("bad_total", "x", ttl_seconds=bad)

"""prometheus_client's semantics that the libraries built on it rely on
(prometheus-flask-exporter, prometheus-fastapi-instrumentator,
django-prometheus): arguments of any iterable or type, the registry's
private fields, unregistering and defining again, multiprocess mode's
shape. Code run through ``install_as_prometheus_client()`` runs in a
subprocess: this process imported the real prometheus_client already."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import shmetrics
from shmetrics.metrics import MetricWrapperBase
from shmetrics.multiprocess import MultiProcessCollector

from conftest import dump, samples_of


def test_labelnames_from_any_iterable(store):
    c = shmetrics.Counter("it_requests", "Requests.", {"method": 1, "code": 2}.keys())
    g = shmetrics.Gauge("it_temp", "Temp.", (n for n in ["room"]))
    c.labels("GET", "200").inc()
    g.labels("kitchen").set(3)
    assert c._labelnames == ("method", "code")
    s = samples_of(dump(store))
    assert s[("it_requests_total", frozenset({("method", "GET"), ("code", "200")}))] == 1
    with pytest.raises(TypeError, match="label names must be strings"):
        shmetrics.Counter("it_bad", "Bad.", [1, 2])


def test_label_values_of_any_type_become_strings(store):
    c = shmetrics.Counter("any_values", "Values.", ["a", "b"])
    c.labels(["x", 1], {"k": None}).inc()
    c.labels(a=3.5, b=None).inc()
    # The same strings are the same child, hashable or not.
    c.labels(["x", 1], {"k": None}).inc()
    s = samples_of(dump(store))
    assert s[("any_values_total", frozenset({("a", "['x', 1]"), ("b", "{'k': None}")}))] == 2
    assert s[("any_values_total", frozenset({("a", "3.5"), ("b", "None")}))] == 1


def test_metric_wrapper_base_and_collector_maps(store):
    reg = shmetrics.CollectorRegistry()
    c = shmetrics.Counter("maps_c", "C.", registry=reg)
    e = shmetrics.Enum("maps_e", "E.", states=["a", "b"], registry=reg)
    i = shmetrics.Info("maps_i", "I.", registry=reg)
    for m in (c, e, i, shmetrics.Gauge("maps_g", "G."), shmetrics.Histogram("maps_h", "H."),
              shmetrics.Summary("maps_s", "S.")):
        assert isinstance(m, MetricWrapperBase)
    assert not isinstance(object(), MetricWrapperBase)
    names = reg._collector_to_names
    assert set(names) == {c, e, i}
    assert sorted(names[c]) == ["maps_c", "maps_c_created", "maps_c_total"]
    assert reg._names_to_collectors["maps_c_total"] is c
    assert reg._names_to_collectors["maps_e"] is e
    # The default registry lists metrics made without registry=.
    g = shmetrics.Gauge("maps_default", "G.")
    assert g in shmetrics.REGISTRY._collector_to_names
    for collector in list(reg._collector_to_names):
        reg.unregister(collector)
    assert reg._collector_to_names == {}


def test_multiprocess_collector_refuses_a_missing_directory(store, tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="not a directory"):
        MultiProcessCollector(shmetrics.CollectorRegistry())
    with pytest.raises(ValueError):
        MultiProcessCollector(shmetrics.CollectorRegistry(), path=str(tmp_path / "missing"))


def test_metrics_of_a_registry_read_by_a_multiprocess_collector_reach_the_store(store):
    """The documented multiprocess shape (prometheus-flask-exporter's
    GunicornPrometheusMetrics): a CollectorRegistry() with a
    MultiProcessCollector, the metrics created with it. They go to the
    shared store: the exporter serves them, and so does the registry."""
    reg = shmetrics.CollectorRegistry()
    MultiProcessCollector(reg)
    c = shmetrics.Counter("mp_requests", "Requests.", ["path"], registry=reg)
    c.labels("/").inc(2)
    assert samples_of(dump(store))[("mp_requests_total", frozenset({("path", "/")}))] == 2
    assert reg.get_sample_value("mp_requests_total", {"path": "/"}) == 2


ALIASED = """
import os, shmetrics
shmetrics.configure(os.environ["STORE"])
shmetrics.install_as_prometheus_client()
import prometheus_client as pc
"""


def run_aliased(code: str, tmp_path: Path, **env: str) -> str:
    full = {k: v for k, v in os.environ.items()
            if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")}
    full.update(env, STORE=str(tmp_path / "aliased.shm"))
    out = subprocess.run([sys.executable, "-c", ALIASED + textwrap.dedent(code)], env=full,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_through_the_alias_registry_rules_are_prometheus_clients(tmp_path):
    out = run_aliased("""
        c = pc.Counter("again", "A.", ["a"])
        c.labels("x").inc(5)
        try:
            pc.Counter("again", "A.", ["a"])
        except ValueError as e:
            print("dup", str(e).startswith("Duplicated timeseries in CollectorRegistry:"))
        pc.REGISTRY.unregister(c)
        # Another definition once unregistered, then the first again, from zero.
        g = pc.Gauge("again", "A.")
        g.set(4)
        print("gauge", pc.REGISTRY.get_sample_value("again"))
        pc.REGISTRY.unregister(g)
        c2 = pc.Counter("again", "A.", ["a"])
        c2.labels("x").inc()
        print("counter", pc.REGISTRY.get_sample_value("again_total", {"a": "x"}))
        print("listed", c2 in pc.REGISTRY._collector_to_names, c in pc.REGISTRY._collector_to_names)
        # registry=None: no registry, so no clash, as in prometheus_client.
        h1 = pc.Histogram("unlisted", "U.", registry=None)
        h2 = pc.Histogram("unlisted", "U.", registry=None)
        print("unlisted", h1 in pc.REGISTRY._collector_to_names)
    """, tmp_path)
    assert out.split("\n")[:5] == ["dup True", "gauge 4.0", "counter 1.0", "listed True False",
                                    "unlisted False"]


@pytest.mark.parametrize("multiproc", [False, True])
def test_through_the_alias_gauges_default_as_in_prometheus_client(tmp_path, multiproc):
    """Single-process mode: one value, no pid label. Multiprocess mode
    (PROMETHEUS_MULTIPROC_DIR): mode all, labelled pid."""
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)} if multiproc else {}
    run_aliased("""
        g = pc.Gauge("temperature", "T.")
        g.set(21)
    """, tmp_path, **env)
    store = shmetrics.Store(str(tmp_path / "aliased.shm"))
    names = {labels for (name, labels) in samples_of(dump(store)) if name == "temperature"}
    assert len(names) == 1
    (labels,) = names
    assert ("pid" in dict(labels)) is multiproc

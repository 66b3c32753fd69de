"""Every metric type and method, checked through the exporter's output."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

import shmetrics


def test_counter_inc_and_labels(store, scrape):
    c = shmetrics.Counter("http_requests_total", "Requests served.", ["method", "code"])
    c.labels("get", "200").inc()
    c.labels("get", 200).inc(2)  # values are str()-ed, as in prometheus_client
    c.labels(method="post", code="500").inc(0.5)
    child = c.labels("get", "200")
    assert child is c.labels("get", "200"), "children are cached"
    child.inc()
    plain = shmetrics.Counter("jobs", "Jobs.")
    plain.inc()
    plain.inc(41)
    s = scrape()
    assert s.get("http_requests_total", method="get", code="200") == 4
    assert s.get("http_requests_total", method="post", code="500") == 0.5
    assert s.get("jobs_total") == 42
    assert s.om[("http_requests_total", frozenset({("method", "get"), ("code", "200")}))] == 4
    assert ("http_requests_created", frozenset({("method", "get"), ("code", "200")})) in s.om
    assert "# TYPE http_requests_total counter" in s.text


def test_names_from_namespace_subsystem_and_unit(store, scrape):
    c = shmetrics.Counter("served", "x", namespace="app", subsystem="http", unit="bytes")
    assert c._name == "app_http_served_bytes"
    c.inc(3)
    h = shmetrics.Histogram("latency_seconds", "x", unit="seconds", buckets=[1])
    assert h._name == "latency_seconds"
    h.observe(0.5)
    s = scrape()
    assert s.get("app_http_served_bytes_total") == 3
    assert s.get("latency_seconds_bucket", le="1.0") == 1


def test_gauge_methods(store, scrape):
    g = shmetrics.Gauge("temperature", "x", ["room"], multiprocess_mode="livesum")
    g.labels("a").set(20.5)
    g.labels("a").inc()
    g.labels("a").dec(0.5)
    g.labels("b").inc(-3)
    before = time.time()
    t = shmetrics.Gauge("last_run", "x", multiprocess_mode="max")
    t.set_to_current_time()
    s = scrape()
    assert s.get("temperature", room="a") == 21.0
    assert s.get("temperature", room="b") == -3
    assert before - 1 <= s.get("last_run") <= time.time() + 1


def test_gauge_default_mode_is_all_with_a_pid_label(store, scrape):
    import os

    g = shmetrics.Gauge("workers_busy", "x")
    g.set(7)
    assert scrape().get("workers_busy", pid=str(os.getpid())) == 7


@pytest.mark.parametrize("mode", ["all", "liveall", "sum", "livesum", "max", "livemax", "min",
                                  "livemin", "mostrecent", "livemostrecent", "shared", "liveaverage"])
def test_every_gauge_mode_is_accepted(store, scrape, mode):
    g = shmetrics.Gauge("g_" + mode, "x", multiprocess_mode=mode)
    g.set(4)
    values = [v for (n, _), v in scrape().samples.items() if n == "g_" + mode]
    assert values == [4]


def test_histogram(store, scrape):
    h = shmetrics.Histogram("req_seconds", "x", ["route"], buckets=[0.1, 0.5, 1, float("inf")])
    for v in [0.05, 0.1, 0.3, 0.7, 2]:
        h.labels("/").observe(v)
    default = shmetrics.Histogram("default_seconds", "x")
    default.observe(0.2)
    s = scrape()
    assert [s.get("req_seconds_bucket", route="/", le=le) for le in ["0.1", "0.5", "1.0", "+Inf"]] == [2, 3, 4, 5]
    assert s.get("req_seconds_count", route="/") == 5
    assert s.get("req_seconds_sum", route="/") == pytest.approx(3.15)
    les = sorted(float(dict(l)["le"]) for n, l in s.samples if n == "default_seconds_bucket")
    assert les == list(shmetrics.DEFAULT_BUCKETS)
    assert s.get("default_seconds_bucket", le="0.25") == 1


def test_summary(store, scrape):
    sm = shmetrics.Summary("payload_bytes", "x")
    sm.observe(10)
    sm.observe(32)
    s = scrape()
    assert s.get("payload_bytes_count") == 2
    assert s.get("payload_bytes_sum") == 42


def test_summary_quantiles_over_processes(store, scrape):
    import multiprocessing

    sm = shmetrics.Summary(
        "rt_seconds", "x", ["route"], quantiles=[0.5, 0.99], max_age_seconds=300, age_buckets=3
    )
    child = sm.labels("/")
    for v in range(1, 501):
        child.observe(v / 1000)
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=_observe_upper_half)
    p.start()
    p.join(60)
    assert p.exitcode == 0
    s = scrape()
    assert s.get("rt_seconds_count", route="/") == 1000
    # Values 0.001 .. 1.0, half from each process: within the sketch's 0.99%.
    assert s.get("rt_seconds", route="/", quantile="0.5") == pytest.approx(0.5, rel=0.0099)
    assert s.get("rt_seconds", route="/", quantile="0.99") == pytest.approx(0.99, rel=0.0099)
    empty = shmetrics.Summary("idle_seconds", "x", quantiles=[0.9])
    assert empty is not None
    assert math.isnan(scrape().get("idle_seconds", quantile="0.9"))


def _observe_upper_half():
    sm = shmetrics.Summary(
        "rt_seconds", "x", ["route"], quantiles=[0.5, 0.99], max_age_seconds=300, age_buckets=3
    )
    for v in range(501, 1001):
        sm.labels("/").observe(v / 1000)


def test_summary_options_are_checked(store):
    with pytest.raises(shmetrics.InvalidOptionsError, match=r"\[0, 1\]"):
        shmetrics.Summary("a_seconds", "x", quantiles=[1.5])
    with pytest.raises(shmetrics.InvalidOptionsError, match="max_age_seconds"):
        shmetrics.Summary("b_seconds", "x", quantiles=[0.5], max_age_seconds=-1)
    with pytest.raises(shmetrics.InvalidOptionsError, match="age_buckets"):
        shmetrics.Summary("c_seconds", "x", quantiles=[0.5], age_buckets=0)
    shmetrics.Summary("d_seconds", "x", quantiles=[0.5])
    with pytest.raises(shmetrics.ConflictError):
        shmetrics.Summary("d_seconds", "x", quantiles=[0.9])


def test_time_as_context_manager_and_decorator(store, scrape):
    h = shmetrics.Histogram("work_seconds", "x", buckets=[0.005, 10])
    sm = shmetrics.Summary("work2_seconds", "x")
    g = shmetrics.Gauge("last_seconds", "x", multiprocess_mode="max")
    with h.time():
        time.sleep(0.01)

    @h.time()
    def f(x):
        return x * 2

    @sm.time()
    async def g_async():
        await asyncio.sleep(0.01)
        return 5

    assert f(21) == 42 and f.__name__ == "f"
    assert asyncio.run(g_async()) == 5
    with g.time():
        time.sleep(0.01)
    s = scrape()
    assert s.get("work_seconds_count") == 2
    assert s.get("work_seconds_bucket", le="0.005") == 1, "the decorated call took no time; the block 10 ms"
    assert s.get("work2_seconds_count") == 1
    assert s.get("work2_seconds_sum") >= 0.01, "a coroutine is timed until it finishes"
    assert 0.01 <= s.get("last_seconds") < 5


def test_count_exceptions_and_track_inprogress(store, scrape):
    failures = shmetrics.Counter("failures", "x")
    inprogress = shmetrics.Gauge("inprogress", "x", multiprocess_mode="livesum")

    @failures.count_exceptions(ValueError)
    def fails(exc):
        raise exc

    for exc in [ValueError, KeyError, ValueError]:
        with pytest.raises(exc):
            fails(exc)
    with pytest.raises(ZeroDivisionError):
        with failures.count_exceptions():
            1 / 0

    seen = []

    @inprogress.track_inprogress()
    def busy():
        seen.append(scrape().get("inprogress"))

    busy()
    with inprogress.track_inprogress():
        seen.append(scrape().get("inprogress"))
    s = scrape()
    assert s.get("failures_total") == 3
    assert seen == [1, 1]
    assert s.get("inprogress") == 0


def test_remove_and_clear(store, scrape):
    c = shmetrics.Counter("hits", "x", ["path"])
    for p in ["a", "b", "c"]:
        c.labels(p).inc()
    stale = c.labels("a")
    c.remove("a")
    assert scrape().get("hits_total", path="a") is None
    assert c.labels("a") is not stale, "remove() forgets the cached child"
    c.labels("a").inc(5)
    assert scrape().get("hits_total", path="a") == 5, "a removed series starts again from zero"
    c.clear()
    assert not [n for n in scrape().names() if n.startswith("hits")]
    c.labels("b").inc()
    assert scrape().get("hits_total", path="b") == 1


def test_info(store, scrape):
    i = shmetrics.Info("build", "Build information.")
    i.info({"version": "1.2.3", "revision": "abc"})
    s = scrape()
    assert s.get("build_info", version="1.2.3", revision="abc") == 1
    i.info({"version": "1.2.4", "revision": "abd"})
    s = scrape()
    assert s.get("build_info", version="1.2.3", revision="abc") is None
    assert s.get("build_info", version="1.2.4", revision="abd") == 1
    with pytest.raises(shmetrics.ConflictError):
        i.info({"other": "key"})
    li = shmetrics.Info("component", "x", ["name"])
    li.labels("db").info({"version": "15"})
    assert scrape().get("component_info", name="db", version="15") == 1
    with pytest.raises(shmetrics.LabelError):
        li.labels("db").info({"name": "clash"})


def test_enum(store, scrape):
    e = shmetrics.Enum("task_state", "x", states=["starting", "running", "stopped"])
    e.state("running")
    s = scrape()
    assert [s.get("task_state", task_state=st) for st in ["starting", "running", "stopped"]] == [0, 1, 0]
    with pytest.raises(shmetrics.InvalidValueError, match="not one of its states"):
        e.state("exploded")
    le = shmetrics.Enum("conn_state", "x", ["peer"], states=["up", "down"])
    le.labels(peer="x").state("down")
    assert scrape().get("conn_state", peer="x", conn_state="down") == 1


def test_metrics_from_the_same_definition_share_series(store, scrape):
    a = shmetrics.Counter("shared_total", "x", ["k"])
    b = shmetrics.Counter("shared", "x", ["k"])
    a.labels("v").inc()
    b.labels("v").inc()
    assert scrape().get("shared_total", k="v") == 2


def test_exotic_label_values_are_stored_exactly(store, scrape):
    c = shmetrics.Counter("odd", "x", ["v"])
    values = ['quote"', "back\\slash", "new\nline", "ünïcødé ✓", ""]
    for v in values:
        c.labels(v).inc()
    s = scrape()
    for v in values:
        assert s.get("odd_total", v=v) == 1, repr(v)


def test_store_reset_and_wipe(store, scrape):
    c = shmetrics.Counter("r", "x")
    c.inc(3)
    store.reset()
    assert scrape().get("r_total") == 0
    store.wipe()
    assert "r_total" not in scrape().names()
    with pytest.raises(shmetrics.StaleHandleError):
        c.inc()
    c2 = shmetrics.Counter("r", "x")
    c2.inc()
    assert scrape().get("r_total") == 1


def test_nan_and_infinite_values(store, scrape):
    g = shmetrics.Gauge("g", "x", multiprocess_mode="max")
    g.set(math.inf)
    assert scrape().get("g") == math.inf
    h = shmetrics.Histogram("h", "x", buckets=[1])
    h.observe(math.inf)
    assert scrape().get("h_bucket", le="+Inf") == 1


def test_info_and_enum_label_mistakes(store):
    i = shmetrics.Info("i", "x", ["a"])
    e = shmetrics.Enum("e", "x", ["a"], states=["s"])
    for m in [i, e]:
        for f, words in [(lambda: m.labels(), "expected 1 label values"),
                         (lambda: m.labels(b="1"), "expected label names"),
                         (lambda: m.labels("1", a="1"), "expected label names"),
                         (lambda: m.labels("1").labels("2"), "already a child")]:
            with pytest.raises(shmetrics.LabelError, match=words):
                f()
    with pytest.raises(shmetrics.LabelError, match="without label names"):
        shmetrics.Info("j", "x").labels("1")
    with pytest.raises(shmetrics.LabelError, match="labels"):
        i.info({"k": "v"})
    with pytest.raises(shmetrics.LabelError, match="labels"):
        e.state("s")
    # A None value is refused, and the refused call's keys are not kept.
    with pytest.raises(ValueError, match="None"):
        i.labels("1").info({"k": None})
    i.labels("1").info({"other": "v"})

"""CollectorRegistry, REGISTRY.get_sample_value() and custom collectors
(issue 19): the registry reads the store's families through one native
snapshot, all processes summed, and runs custom collectors in the process
that renders the page. Values and pages are compared with the installed
prometheus_client's."""

from __future__ import annotations

import asyncio
import os
import urllib.request
from types import ModuleType
from typing import Any, Dict, List

import prometheus_client
import prometheus_client.openmetrics.exposition as om_exposition
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

import shmetrics
from shmetrics.registry import DuplicateTimeseries
from _workers import fork_ready
from conftest import dump, samples_of

# prometheus_client.core's names that shmetrics.core lacks (docs/python.md).
NOT_IN_CORE = {"BucketSpan", "NativeHistogram"}


def collector_for(lib: ModuleType) -> Any:
    """The same custom collector, written with `lib`'s family classes
    (shmetrics or prometheus_client: the names are the same)."""
    core = getattr(lib, "metrics_core", lib)

    class Pool:
        def collect(self) -> Any:
            yield core.CounterMetricFamily("pool_checkouts_total", "Checkouts.", value=12)
            g = core.GaugeMetricFamily("pool_size", "Connections by state.", labels=["state"])
            g.add_metric(["idle"], 3)
            g.add_metric(['say "hi"\\\n'], 1.5)
            yield g
            h = core.HistogramMetricFamily("pool_wait_seconds", "Wait.", labels=["db"], unit="seconds")
            h.add_metric(["main"], [("0.1", 2), ("1.0", 5), ("+Inf", 6)], sum_value=3.25)
            yield h
            yield core.SummaryMetricFamily("pool_query_bytes", "Bytes.", count_value=4, sum_value=1024)
            yield core.InfoMetricFamily("pool_driver", "Driver.", value={"name": "pg", "version": "3"})
            yield core.StateSetMetricFamily("pool_mode", "Mode.", value={"rw": True, "ro": False})
            yield core.UnknownMetricFamily("pool_misc", "Misc.\nsecond line", value=-2.5e-7)
            yield core.GaugeHistogramMetricFamily("pool_queue", "Queue.", buckets=[("1.0", 4), ("+Inf", 5)],
                                                  gsum_value=3)
            c = core.CounterMetricFamily("pool_errors", "Errors.", labels=["kind"], created=None)
            c.add_metric(["timeout"], 1, created=1700000000.5)
            yield c

    return Pool()


def samples(metrics: Any) -> Dict[Any, float]:
    return {(s.name, frozenset(s.labels.items())): s.value for m in metrics for s in m.samples}


def test_names_are_prometheus_clients():
    import prometheus_client.core
    import shmetrics.core

    missing = {n for n in prometheus_client.core.__all__ if not hasattr(shmetrics.core, n)}
    assert missing == NOT_IN_CORE
    for name in ("CollectorRegistry", "REGISTRY", "Metric"):
        assert hasattr(prometheus_client, name) and hasattr(shmetrics, name)
    assert shmetrics.Sample._fields == prometheus_client.core.Sample._fields[: len(shmetrics.Sample._fields)]
    assert shmetrics.Exemplar._fields == prometheus_client.samples.Exemplar._fields


def test_custom_collector_page_is_prometheus_clients_byte_for_byte(store):
    ours, theirs = shmetrics.CollectorRegistry(), prometheus_client.CollectorRegistry()
    ours.register(collector_for(shmetrics))
    theirs.register(collector_for(prometheus_client))
    assert samples(ours.collect()) == samples(theirs.collect())
    assert shmetrics.generate_latest(ours) == prometheus_client.generate_latest(theirs)
    page = shmetrics.generate_openmetrics(ours).decode()
    assert samples(parse_openmetrics(page)) == samples(
        parse_openmetrics(om_exposition.generate_latest(theirs).decode()))


def reference_float_text(f: float) -> str:
    """prometheus_client 0.26's number format, from Python's repr(): the
    oracle for the native writer's."""
    import math
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if math.isnan(f):
        return "NaN"
    text = repr(f)
    if f < 1e6 or "e" in text:
        return text
    whole, _, frac = text.partition(".")
    digits = (whole + frac).rstrip("0")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e+{len(whole) - 1:02d}"


def test_float_text_is_pythons_repr_with_prometheus_clients_exponents():
    import random
    import struct
    rng = random.Random(19)
    values = [0.0, -0.0, 1.0, 1e6, 999999.9999999999, 1e16, 1e-4, 1e-5, 1.7e9, -1e7, 5e-324]
    values += [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(50_000)]
    values += [rng.uniform(-1e8, 1e8) for _ in range(20_000)] + [float(rng.randrange(10**12)) for _ in range(5000)]
    for v in values:
        assert shmetrics._native.float_text(v) == reference_float_text(v), repr(v)


def test_store_page_is_prometheus_clients_byte_for_byte(store):
    """The store's families, rendered natively, against prometheus_client
    writing the same metrics (without _created, whose time differs)."""
    def populate(lib: ModuleType, registry: Any) -> None:
        c = lib.Counter("jobs", "Jobs \\ done\nhere.", ["queue"], registry=registry)
        c.labels('a"b').inc(3)
        c.labels("big").inc(2.5e7)
        lib.Counter("plain_total", "", registry=registry).inc(0.1 + 0.2)
        lib.Counter("sent", "Unit total: sent_total_total.", unit="total", registry=registry).inc()
        g = lib.Gauge("temp_celsius", "Temp.", ["room"], unit="celsius", registry=registry)
        g.labels("x").set(-1e7)
        g.labels("y").set(1e-5)
        h = lib.Histogram("lat_seconds", "Latency.", ["m"], registry=registry)
        for v in (0.001, 0.3, 7, 100):
            h.labels("get").observe(v)
        # Labels on both sides of `le`, given out of order: written sorted.
        both = lib.Histogram("route_seconds", "By route.", ["route", "code"], buckets=[1], registry=registry)
        both.labels("/a", "200").observe(0.5)
        lib.Histogram("sizes", "Sizes.", buckets=[-5, 0, 1e6, 2.5e7], registry=registry).observe(5e6)
        lib.Summary("req_bytes", "Bytes.", registry=registry).observe(123.456)
        lib.Counter("unused", "Never.", ["x"], registry=registry)
    for lib in (shmetrics, prometheus_client):
        lib.disable_created_metrics()
    try:
        ours, theirs = shmetrics.CollectorRegistry(), prometheus_client.CollectorRegistry()
        populate(shmetrics, ours)
        populate(prometheus_client, theirs)
        for escaping in ("allow-utf-8", "underscores", "dots", "values"):
            assert shmetrics.generate_latest(ours, escaping) == prometheus_client.generate_latest(theirs, escaping)
            assert (shmetrics.generate_openmetrics(ours, escaping)
                    == om_exposition.generate_latest(theirs, escaping))
    finally:
        for lib in (shmetrics, prometheus_client):
            lib.enable_created_metrics()


def test_created_is_time_time_when_the_series_was_made(store, monkeypatch):
    """`_created` is Python's `time.time()` when this process made the
    series, as in prometheus_client: a test that replaces it sees its time,
    on the page and in get_sample_value. A series made elsewhere first
    keeps that time."""
    import time
    registry = shmetrics.CollectorRegistry()
    theirs = prometheus_client.CollectorRegistry()
    monkeypatch.setattr(time, "time", lambda: 123.456)
    for lib, reg in ((shmetrics, registry), (prometheus_client, theirs)):
        lib.Counter("made", "Made.", registry=reg).inc()
        lib.Summary("sized", "Sized.", ["a", "b"], registry=reg).labels("c", "d").observe(1)
    assert shmetrics.generate_latest(registry) == prometheus_client.generate_latest(theirs)
    assert registry.get_sample_value("made_created") == 123.456
    # REGISTRY hands back the same family (and series) for a second object.
    shmetrics.Counter("found", "Found.").inc()
    monkeypatch.setattr(time, "time", lambda: 200.0)
    shmetrics.Counter("found", "Found.").inc()
    assert shmetrics.REGISTRY.get_sample_value("found_created") == 123.456, "found, not made"
    assert shmetrics.REGISTRY.get_sample_value("found_total") == 2
    # reset() starts the series again, made now.
    made = shmetrics.Counter("made_again", "Made again.", registry=registry)
    made.inc()
    monkeypatch.setattr(time, "time", lambda: 300.5)
    made.reset()
    assert registry.get_sample_value("made_again_created") == 300.5
    assert registry.get_sample_value("made_again_total") == 0


def test_get_sample_value_matches_prometheus_client(store):
    theirs = prometheus_client.CollectorRegistry()
    for lib, reg in ((shmetrics, None), (prometheus_client, theirs)):
        kw: Dict[str, Any] = {"registry": reg} if reg is not None else {}
        c = lib.Counter("jobs", "Jobs.", ["queue"], **kw)
        c.labels("mail").inc(3)
        c.labels(queue="sms").inc()
        g = lib.Gauge("temp_celsius", "T.", **kw, **({"multiprocess_mode": "max"} if lib is shmetrics else {}))
        g.set(21.5)
        h = lib.Histogram("job_seconds", "Job.", ["queue"], buckets=[0.1, 1, 1e6, 2.5e7], **kw)
        for v in (0.05, 0.5, 2, 3e6):
            h.labels("mail").observe(v)
        s = lib.Summary("payload_bytes", "P.", **kw)
        s.observe(100)
        s.observe(28)
        lib.Info("build", "Build.", **kw).info({"version": "1.2", "commit": "abc"})
        lib.Enum("phase", "Phase.", states=["starting", "running"], **kw).state("running")
    cases: List[Any] = [
        ("jobs_total", {"queue": "mail"}), ("jobs_total", {"queue": "sms"}),
        ("temp_celsius", {}),
        ("job_seconds_bucket", {"queue": "mail", "le": "0.1"}),
        ("job_seconds_bucket", {"queue": "mail", "le": "1.0"}),
        ("job_seconds_bucket", {"queue": "mail", "le": "1e+06"}),
        ("job_seconds_bucket", {"queue": "mail", "le": "2.5e+07"}),
        ("job_seconds_bucket", {"queue": "mail", "le": "+Inf"}),
        ("job_seconds_count", {"queue": "mail"}), ("job_seconds_sum", {"queue": "mail"}),
        ("payload_bytes_count", {}), ("payload_bytes_sum", {}),
        ("build_info", {"version": "1.2", "commit": "abc"}),
        ("phase", {"phase": "running"}), ("phase", {"phase": "starting"}),
    ]
    for name, labels in cases:
        want = theirs.get_sample_value(name, labels)
        assert want is not None, (name, labels)
        assert shmetrics.REGISTRY.get_sample_value(name, labels) == want, (name, labels)
        # A registry of its own is empty, as prometheus_client's: the store
        # shows through a MultiProcessCollector.
        assert shmetrics.CollectorRegistry().get_sample_value(name, labels) is None
        view = shmetrics.CollectorRegistry()
        shmetrics.multiprocess.MultiProcessCollector(view)
        assert view.get_sample_value(name, labels) == want
    assert shmetrics.REGISTRY.get_sample_value("jobs_total", {"queue": "none"}) is None
    assert shmetrics.REGISTRY.get_sample_value("jobs_total") is None


def test_gauge_default_mode_has_pid_label_as_in_multiprocess_mode(store):
    shmetrics.Gauge("workers", "W.").set(4)
    assert shmetrics.REGISTRY.get_sample_value("workers", {"pid": str(os.getpid())}) == 4
    assert shmetrics.REGISTRY.get_sample_value("workers") is None


def _child(ready: Any) -> None:
    shmetrics.Counter("handled", "H.").inc(5)
    ready.put(os.getpid())


def test_values_are_summed_over_processes(store):
    c = shmetrics.Counter("handled", "H.")
    c.inc(2)
    for p in fork_ready(_child, 3):
        p.join(60)
        assert p.exitcode == 0
    assert shmetrics.REGISTRY.get_sample_value("handled_total") == 17
    metric = next(m for m in shmetrics.REGISTRY.collect() if m.name == "handled")
    assert (metric.type, metric.documentation) == ("counter", "H.")
    assert isinstance(metric, shmetrics.Metric)


def test_register_unregister_and_duplicates(store):
    reg = shmetrics.CollectorRegistry(auto_describe=True)
    pool = collector_for(shmetrics)
    reg.register(pool)
    assert reg.get_sample_value("pool_checkouts_total") == 12
    with pytest.raises(DuplicateTimeseries) as err:
        reg.register(collector_for(shmetrics))
    assert isinstance(err.value, ValueError)
    assert "pool_checkouts_total" in str(err.value)
    reg.unregister(pool)
    assert reg.get_sample_value("pool_checkouts_total") is None
    reg.register(collector_for(shmetrics))
    # A shmetrics metric lives in its registry's store: registering it
    # elsewhere changes nothing; in its own registry its name is taken
    # until it is unregistered (its series stay in the store).
    c = shmetrics.Counter("kept", "K.", registry=reg)
    c.inc()
    with pytest.raises(DuplicateTimeseries):
        shmetrics.Gauge("kept_total", "K.", registry=reg)
    shmetrics.REGISTRY.register(c)
    reg.unregister(c)
    # Unregistered: the registry no longer shows it and its names are free.
    assert reg.get_sample_value("kept_total") is None
    shmetrics.Gauge("kept_total", "K.", registry=reg).set(5)
    assert reg.get_sample_value("kept_total") == 5
    assert shmetrics.REGISTRY.get_sample_value("kept_total") is None


def test_unregister_in_a_registry_of_its_own_is_prometheus_clients(store):
    """A registry of its own, as prometheus_client's: an unregistered
    metric leaves the page and its names may be taken again, by another
    type or by a new metric of the same name that starts from zero."""
    def run(lib: ModuleType) -> bytes:
        reg = lib.CollectorRegistry()
        s = lib.Summary("s", "Help.", registry=reg)
        s.observe(2)
        c = lib.Counter("c", "Help.", ["k"], registry=reg)
        c.labels("a").inc(3)
        i = lib.Info("i", "Help.", registry=reg)
        with pytest.raises(ValueError):
            lib.Gauge("s_count", "Help.", registry=reg)
        reg.unregister(s)
        lib.Gauge("s_count", "Help.", registry=reg).set(7)
        reg.unregister(c)
        reg.unregister(i)
        c.labels("a").inc()  # still counts, shown nowhere
        lib.Counter("c", "Help.", ["k"], registry=reg).labels("b").inc()
        lib.Info("i", "Help.", registry=reg).info({"x": "y"})
        return bytes(lib.generate_latest(reg))
    for lib in (shmetrics, prometheus_client):
        lib.disable_created_metrics()
    try:
        assert run(shmetrics) == run(prometheus_client)
    finally:
        for lib in (shmetrics, prometheus_client):
            lib.enable_created_metrics()


def test_unregister_from_registry_hides_the_family_in_this_process(store):
    """REGISTRY shows the shared store: an unregistered metric leaves its
    in-process pages, but its family stays in the store (other processes
    may be writing it) and the exporter still serves it."""
    reg = shmetrics.REGISTRY
    c = shmetrics.Counter("shared_jobs", "Jobs.", registry=reg)
    c.inc(2)
    reg.unregister(c)
    assert reg.get_sample_value("shared_jobs_total") is None
    assert b"shared_jobs" not in shmetrics.generate_latest()
    assert b"shared_jobs" not in shmetrics.generate_openmetrics()
    c.inc()
    assert samples_of(dump(store))[("shared_jobs_total", frozenset())] == 3
    # Defined again, as in prometheus_client: another definition works. The
    # store keeps the old family (other processes may be writing it), so
    # the new one lives in a store of this process, shown by the registry,
    # and the exporter keeps serving the old one.
    g = shmetrics.Gauge("shared_jobs", "Jobs.", registry=reg, multiprocess_mode="shared")
    g.set(7)
    assert reg.get_sample_value("shared_jobs") == 7
    assert reg.get_sample_value("shared_jobs_total") is None
    assert samples_of(dump(store))[("shared_jobs_total", frozenset())] == 3
    reg.unregister(g)
    assert reg.get_sample_value("shared_jobs") is None
    # The first definition again is the store's family again, from zero,
    # as a new metric starts in prometheus_client (its series are dropped
    # in the store).
    shmetrics.Counter("shared_jobs", "Jobs.", registry=reg).inc()
    assert reg.get_sample_value("shared_jobs_total") == 1
    assert b"shared_jobs_total 1.0" in shmetrics.generate_latest()
    assert samples_of(dump(store))[("shared_jobs_total", frozenset())] == 1


def test_new_info_shows_empty_until_set_as_in_prometheus_client(store):
    def run(lib: ModuleType) -> List[bytes]:
        reg = lib.CollectorRegistry()
        i = lib.Info("build", "Build.", registry=reg)
        by = lib.Info("lib", "Library.", ["name"], registry=reg)
        pages = [bytes(lib.generate_latest(reg))]
        by.labels("a")
        pages.append(bytes(lib.generate_latest(reg)))
        i.info({"version": "1.2"})
        by.labels("b").info({"v": "3"})
        pages.append(bytes(lib.generate_latest(reg)))
        return pages
    ours, theirs = run(shmetrics), run(prometheus_client)
    assert ours[:2] == theirs[:2]
    # Once set, the store's series: a child never set is not shown (its
    # keys are the store's label names, which it lacks).
    assert ours[2] == theirs[2].replace(b'lib_info{name="a"} 1.0\n', b"")


def test_family_classes_refuse_what_prometheus_client_refuses():
    import prometheus_client.core

    for lib in (shmetrics.core, prometheus_client.core):
        with pytest.raises(ValueError):
            lib.GaugeMetricFamily("g", "x", value=1, labels=["a"])
        with pytest.raises(ValueError):
            lib.GaugeMetricFamily("", "x")
        with pytest.raises(ValueError):
            lib.SummaryMetricFamily("s", "x", count_value=1)
        with pytest.raises(ValueError):
            lib.HistogramMetricFamily("h", "x", sum_value=1)
        with pytest.raises(ValueError):
            lib.Metric("m", "x", "nonsense")
    # prometheus_client 0.26 takes any UTF-8 name in a collector's
    # families, and so does shmetrics (the store's own names are classic).
    assert prometheus_client.core.GaugeMetricFamily("0bad", "x").name == "0bad"
    assert shmetrics.GaugeMetricFamily("0bad", "x").name == "0bad"
    assert shmetrics.Metric("m", "x", "untyped").type == "unknown"
    assert shmetrics.CounterMetricFamily("c_total", "x").name == "c"
    assert shmetrics.GaugeMetricFamily("g", "x", unit="bytes").name == "g_bytes"


def test_target_info(store):
    reg = shmetrics.CollectorRegistry(target_info={"service": "api"})
    assert reg.get_sample_value("target_info", {"service": "api"}) == 1
    assert reg.get_target_info() == {"service": "api"}
    reg.set_target_info(None)
    assert reg.get_sample_value("target_info", {"service": "api"}) is None


def test_page_has_store_then_collectors_and_parses(store):
    shmetrics.Counter("served", "S.", ["code"]).labels("200").inc(9)
    shmetrics.REGISTRY.register(collector_for(shmetrics))
    try:
        text = shmetrics.generate_latest().decode()
        om = shmetrics.generate_openmetrics().decode()
    finally:
        for c in list(shmetrics.REGISTRY._collectors):
            shmetrics.REGISTRY.unregister(c)
    assert text.index("served_total") < text.index("pool_checkouts_total")
    got = samples(parse_text(text))
    assert got[("served_total", frozenset({("code", "200")}))] == 9
    assert got[("pool_checkouts_total", frozenset())] == 12
    assert om.count("# EOF") == 1 and om.endswith("# EOF\n")
    got = samples(parse_openmetrics(om))
    assert got[("served_total", frozenset({("code", "200")}))] == 9
    assert got[("pool_mode", frozenset({("pool_mode", "rw")}))] == 1


def test_collectors_run_where_the_page_is_served(store):
    calls: List[int] = []

    class Ticks:
        def collect(self) -> Any:
            calls.append(1)
            yield shmetrics.GaugeMetricFamily("ticks", "Collections.", value=len(calls))

    reg = shmetrics.CollectorRegistry()
    reg.register(Ticks())
    httpd, thread = shmetrics.start_http_server(0, registry=reg)
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/metrics"
        for expected in (1.0, 2.0):
            with urllib.request.urlopen(url, timeout=30) as r:
                page = r.read().decode()
            assert samples(parse_text(page))[("ticks", frozenset())] == expected
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert shmetrics.REGISTRY.get_sample_value("ticks") is None

    sent: List[Dict[str, Any]] = []

    async def receive() -> Dict[str, Any]:
        return {"type": "http.request"}

    async def send(message: Dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/metrics", "headers": [(b"accept", b"application/openmetrics-text")]}
    asyncio.run(shmetrics.make_asgi_app(reg)(scope, receive, send))
    assert sent[0]["status"] == 200
    body = sent[1]["body"].decode()
    assert samples(parse_openmetrics(body))[("ticks", frozenset())] == 3.0


def test_restricted_registry_and_name_filter_match_prometheus_client(store):
    theirs = prometheus_client.CollectorRegistry()
    for lib, reg in ((shmetrics, shmetrics.REGISTRY), (prometheus_client, theirs)):
        lib.Counter("hits", "Hits.", ["path"], registry=reg).labels("/").inc(4)
        lib.Histogram("wait_seconds", "Wait.", buckets=[1], registry=reg).observe(0.5)
        lib.Counter("other", "Other.", registry=reg).inc()
    names = ["hits_total", "wait_seconds_count"]
    want = samples(parse_text(prometheus_client.generate_latest(theirs.restricted_registry(names)).decode()))
    assert set(k[0] for k in want) == set(names)
    restricted = shmetrics.REGISTRY.restricted_registry(names)
    assert samples(restricted.collect()) == want
    assert samples(parse_text(shmetrics.generate_latest(restricted).decode())) == want

    httpd, _ = shmetrics.start_http_server(0)
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/metrics?name[]=hits_total&name[]=wait_seconds_count"
        with urllib.request.urlopen(url, timeout=30) as r:
            assert samples(parse_text(r.read().decode())) == want
    finally:
        httpd.shutdown()
        httpd.server_close()

    sent: List[Dict[str, Any]] = []

    async def receive() -> Dict[str, Any]:
        return {"type": "http.request"}

    async def send(message: Dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/metrics", "headers": [],
             "query_string": b"name[]=hits_total&name[]=wait_seconds_count"}
    asyncio.run(shmetrics.make_asgi_app(store)(scope, receive, send))
    assert samples(parse_text(sent[1]["body"].decode())) == want


def test_histogram_upper_bounds_as_prometheus_clients(store):
    for buckets in ([0, 1, 2], [0, 1, 2, float("inf")], None):
        kw: Dict[str, Any] = {} if buckets is None else {"buckets": buckets}
        ours = shmetrics.Histogram("ub", "B.", registry=shmetrics.CollectorRegistry(), **kw)
        theirs = prometheus_client.Histogram("ub", "B.", registry=None, **kw)
        assert ours._upper_bounds == theirs._upper_bounds


def test_repr_and_str_are_prometheus_clients_shape(store):
    """`module.Class(name)`, the module being the one the class is imported
    from (prometheus_client's suite checks `prometheus_client.metrics.X`
    through the alias), and `type:name`."""
    import shmetrics.metrics
    made = [shmetrics.Counter("c", "C."), shmetrics.Gauge("g", "G."), shmetrics.Histogram("h", "H.", ["l"]),
            shmetrics.Summary("s", "S."), shmetrics.Info("i", "I."),
            shmetrics.Enum("e", "E.", states=["a", "b"])]
    reprs = [repr(m) for m in made]
    assert reprs == ["shmetrics.metrics.Counter(c)", "shmetrics.metrics.Gauge(g)", "shmetrics.metrics.Histogram(h)",
                     "shmetrics.metrics.Summary(s)", "shmetrics.metrics.Info(i)", "shmetrics.metrics.Enum(e)"]
    for m in made:
        assert getattr(shmetrics.metrics, type(m).__name__) is type(m)
    assert repr(made[2].labels("x")) == "shmetrics.metrics.Histogram(h)"
    assert [str(m) for m in made] == ["counter:c", "gauge:g", "histogram:h", "summary:s", "info:i", "stateset:e"]
    theirs = prometheus_client.CollectorRegistry()
    assert [str(m) for m in (prometheus_client.Counter("c", "C.", registry=theirs),
                             prometheus_client.Enum("e", "E.", states=["a"], registry=theirs))] == [
        "counter:c", "stateset:e"]

"""Values only the process can compute (custom collectors,
Gauge.set_function) reach the store, and so the exporter, through the
publisher; a dead process's published gauges leave the page."""

import multiprocessing
import os
import time

import shmetrics
from conftest import dump, samples_of


class Pool:
    """A driver's collector: counts it keeps itself."""

    def __init__(self) -> None:
        self.checkouts = 0

    def collect(self):
        c = shmetrics.CounterMetricFamily("pool_checkouts", "Checkouts.", labels=["db"])
        c.add_metric(["main"], self.checkouts)
        yield c
        g = shmetrics.GaugeMetricFamily("pool_size", "Connections.", value=4)
        yield g


def page(store):
    return samples_of(dump(store))


def _worker(q) -> None:
    reg = shmetrics.CollectorRegistry()
    pool = Pool()
    reg.register(pool)
    pool.checkouts = 5
    pub = shmetrics.Publisher(reg, interval=0.05)
    pub.start()
    pool.checkouts = 7
    time.sleep(0.3)
    q.put(os.getpid())
    time.sleep(60)


def test_collectors_and_functions_are_published_and_leave_with_their_process(store):
    q = multiprocessing.get_context("fork").Queue()
    p = multiprocessing.get_context("fork").Process(target=_worker, args=(q,))
    p.start()
    pid = str(q.get(timeout=30))
    got = page(store)
    assert got[("pool_checkouts_total", frozenset({("db", "main")}))] == 7
    assert got[("pool_size", frozenset({("pid", pid)}))] == 4
    p.kill()
    p.join(30)
    got = page(store)
    # The counter's counts stay, as a dead worker's do; its live gauge leaves.
    assert got[("pool_checkouts_total", frozenset({("db", "main")}))] == 7
    assert not any(name == "pool_size" for name, _ in got)


def test_set_function_reaches_the_store(store):
    depth = [3.0]
    g = shmetrics.Gauge("queue_depth", "Depth.", multiprocess_mode="livesum")
    g.set_function(lambda: depth[0])
    assert page(store)[("queue_depth", frozenset())] == 3
    depth[0] = 9
    # In-process collection runs the function and sets the store...
    assert shmetrics.REGISTRY.get_sample_value("queue_depth") == 9
    assert page(store)[("queue_depth", frozenset())] == 9
    # ...and so does the publisher's tick, for the exporter.
    depth[0] = 11
    pub = shmetrics.Publisher(interval=0.02).start()
    try:
        deadline = time.monotonic() + 10
        while page(store)[("queue_depth", frozenset())] != 11 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert page(store)[("queue_depth", frozenset())] == 11
    finally:
        pub.stop()


def test_a_failing_function_raises_the_applications_error(store):
    class Boom(Exception):
        pass

    broken = [False]

    def depth() -> float:
        if broken[0]:
            raise Boom()
        return 1.0

    shmetrics.Gauge("broken", "B.", multiprocess_mode="livesum").set_function(depth)
    broken[0] = True
    try:
        shmetrics.REGISTRY.get_sample_value("broken")
    except Boom:
        pass
    else:
        raise AssertionError("the function's own exception should propagate, not be replaced")

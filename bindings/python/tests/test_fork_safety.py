"""A process forked while another of its threads holds a lock of the
binding must not hang in the child (issue 33, item 6): gunicorn, uWSGI
and multiprocessing fork from processes that run threads (a publisher,
a store check, an in-process /metrics page).

Each child runs under a watchdog (SIGALRM): a child that hangs is killed
by it, and the test fails.

scripts/python-valgrind.sh runs these tests under valgrind's memcheck,
children included, with its leak check: hence their small stores (a few
writers, a few hundred MB of sparse file rather than the default's 18 GB,
which the leak check, reading every mapped page of every process, could
not get through in time)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import shmetrics
from shmetrics import _native

WATCHDOG = 10

# Capacities of the tests' stores: room for the 5,000 series of the first
# test, in a file of some 680 MB (four writers' sketch regions).
SMALL = dict(max_series=8192, max_families=64, label_bytes=1 << 20, max_writers=4)


@pytest.fixture
def store(tmp_path):
    """conftest's ``store``, small: a new store of ``SMALL`` capacities,
    made the default for the test."""
    s = shmetrics.configure(tmp_path / "test.shm", **SMALL)
    yield s
    _native.set_default_store(None)
    os.environ.pop("SHMETRICS_STORE", None)


def run_child(f) -> int:
    """Forks; the child runs ``f`` under the watchdog and exits 0 if it
    returned, 3 if it raised. The parent returns the child's status."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            signal.alarm(WATCHDOG)
            f()
            code = 0
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def test_child_forked_while_a_thread_renders_checks_a_replaced_store(tmp_path):
    path = tmp_path / "fork.shm"
    store = shmetrics.Store(str(path), **SMALL)
    c = shmetrics.Counter("fork_requests", "Requests.", ["route"], registry=store)
    for i in range(5_000):
        c.labels(f"/r{i}").inc()
    stop = threading.Event()

    def render() -> None:
        # The render holds the store's snapshot lock with the GIL released.
        while not stop.is_set():
            store.render()

    t = threading.Thread(target=render, daemon=True)
    t.start()
    try:
        # The store file is replaced: each child's first check opens the new one.
        os.unlink(path)
        shmetrics.Store(str(path), **SMALL)

        def child() -> None:
            assert store.check() is True
            # The metric made before goes to the new file, and shows there.
            c.labels("/child").inc()
            assert b'fork_requests_total{route="/child"} ' in store.render()

        statuses = []
        for _ in range(20):
            time.sleep(0.005)
            statuses.append(run_child(child))
    finally:
        stop.set()
        t.join()
    hung = [s for s in statuses if os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGALRM]
    assert not hung, f"{len(hung)} of {len(statuses)} children hung in check()"
    assert all(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0 for s in statuses), statuses
    # The parent goes on too.
    assert store.check() is True


def test_child_forked_while_a_thread_holds_a_registry_lock(store):
    """A registry's lock held by another thread at the fork (a thread in
    collect() or register()) is not held in the child."""
    reg = shmetrics.CollectorRegistry()
    shmetrics.Counter("fork_reg_first", "First.", registry=reg)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with reg._lock:
            holding.set()
            release.wait()

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    holding.wait()
    try:
        def child() -> None:
            shmetrics.Counter("fork_reg_child", "Child.", registry=reg).inc()
            assert reg.get_sample_value("fork_reg_child_total") == 1
            shmetrics.Gauge("fork_default_child", "Child.").set(1)

        status = run_child(child)
    finally:
        release.set()
        t.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_child_forked_while_a_thread_publishes(store):
    """The publisher's lock held at the fork is not held in the child."""
    from shmetrics import _publish
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with _publish._LOCK:
            holding.set()
            release.wait()

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    holding.wait()
    try:
        def child() -> None:
            g = shmetrics.Gauge("fork_fn", "F.", multiprocess_mode="livesum")
            g.set_function(lambda: 2)
            shmetrics.generate_latest()

        status = run_child(child)
    finally:
        release.set()
        t.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status

"""A store removed and created again under running processes (issue 23,
item 3): long-lived metric objects follow the new file once the store is
checked (`Store.check()`, the WSGI middleware, the timer thread), so the
exporter, which follows the path too, shows the updates made after the
replacement."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import shmetrics
from shmetrics import _native

from conftest import dump, samples_of, shmetrics_bin
from test_gunicorn import free_port, get, stop_all, wait_up

HERE = Path(__file__).resolve().parent


def replace(path: Path) -> None:
    """Removes the store file and creates a new one at its path, from
    another process, as a deploy script or a restarted exporter would."""
    if path.exists():
        os.unlink(path)
    subprocess.run([sys.executable, "-c", f"import shmetrics; shmetrics.Store({str(path)!r})"],
                   check=True, timeout=60)


def values(path: Path) -> dict:
    return samples_of(dump(shmetrics.Store(path, create=False, read_only=True)))


def test_check_reopens_a_replaced_store(tmp_path):
    path = tmp_path / "app.shm"
    store = _native.Store(path)
    plain = shmetrics.Counter("follow_plain", "Plain.", registry=store)
    routes = shmetrics.Counter("follow_routes", "By route.", ["route"], registry=store)
    latency = shmetrics.Histogram("follow_seconds", "Latency.", buckets=[1], registry=store)
    cached = routes.labels("/a")
    plain.inc()
    cached.inc()
    latency.observe(0.5)

    assert store.path_now() == "same"
    assert not store.check()
    os.unlink(path)
    assert store.path_now() == "gone"
    assert not store.check(), "nothing to open while the path is gone"
    plain.inc()  # still the old, removed file

    replace(path)
    assert store.path_now() == "other"
    assert store.check()
    assert store.generation == 1
    assert store.path_now() == "same"

    plain.inc(2)
    cached.inc(3)  # a child made before the reopen
    routes.labels("/b").inc(4)  # a child made after
    latency.observe(2)
    got = values(path)
    assert got[("follow_plain_total", frozenset())] == 2
    assert got[("follow_routes_total", frozenset({("route", "/a")}))] == 3
    assert got[("follow_routes_total", frozenset({("route", "/b")}))] == 4
    assert got[("follow_seconds_count", frozenset())] == 1
    assert got[("follow_seconds_bucket", frozenset({("le", "1.0")}))] == 0
    # The in-process page reads the file open now.
    page = samples_of(shmetrics.generate_latest(store).decode())
    assert page[("follow_plain_total", frozenset())] == 2

    # remove() and clear() act on the new file too.
    routes.remove("/b")
    assert ("follow_routes_total", frozenset({("route", "/b")})) not in values(path)

    # A second replacement: the objects follow again.
    replace(path)
    assert store.check() and store.generation == 2
    cached.inc()
    assert values(path)[("follow_routes_total", frozenset({("route", "/a")}))] == 1


def test_default_store_checked_by_check_store_and_the_page(tmp_path, monkeypatch):
    path = tmp_path / "default.shm"
    store = shmetrics.configure(path)
    c = shmetrics.Counter("follow_default", "Default store.")
    c.inc()
    replace(path)
    assert shmetrics.check_store()
    c.inc(5)
    assert values(path)[("follow_default_total", frozenset())] == 5
    replace(path)
    # generate_latest of the default store checks it first.
    page = samples_of(shmetrics.generate_latest().decode())
    assert store.generation == 2
    assert ("follow_default_total", frozenset()) not in page, "the new file has no update yet"
    c.inc()
    assert samples_of(shmetrics.generate_latest().decode())[("follow_default_total", frozenset())] == 1


def test_timer_thread_follows(tmp_path):
    path = tmp_path / "timer.shm"
    store = _native.Store(path)
    c = shmetrics.Counter("follow_timer", "Timer.", registry=store)
    check = shmetrics.start_store_check(interval=0.05, stores=[store])
    try:
        replace(path)
        deadline = time.monotonic() + 20
        while store.generation == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.generation == 1
        c.inc(7)
        assert values(path)[("follow_timer_total", frozenset())] == 7
    finally:
        check.stop()


def test_gunicorn_with_the_middleware_follows_a_replaced_store(tmp_path):
    """gunicorn, 2 workers behind CheckStoreMiddleware, and the exporter:
    the store is removed and created again while both run; the requests
    made after that are all counted in the new file the exporter serves."""
    store = tmp_path / "gunicorn.shm"
    env = dict(os.environ, SHMETRICS_STORE=str(store), PYTHONPATH=str(HERE))
    app_port, exporter_port = free_port(), free_port()
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{app_port}",
         "--log-level", "warning", "_follow_app:app"], env=env, stderr=subprocess.PIPE)
    exporter = None
    try:
        wait_up(app_port, "/", gunicorn, "gunicorn")
        exporter = subprocess.Popen([shmetrics_bin(), "serve", "--store", str(store),
                                     "--listen", f"127.0.0.1:{exporter_port}"],
                                    stderr=subprocess.PIPE)
        wait_up(exporter_port, "/healthz", exporter, "the exporter")
        for _ in range(20):
            assert get(app_port, "/")[0] == 200
        replace(store)
        # The middleware checks at most every 0.1 s: let each worker's
        # interval pass, then every request lands in the new file.
        time.sleep(0.3)
        for _ in range(50):
            assert get(app_port, "/")[0] == 200
        deadline = time.monotonic() + 20
        while True:
            status, body = get(exporter_port, "/metrics")
            assert status == 200
            got = samples_of(body.decode()).get(("follow_app_requests_total", frozenset()))
            if got == 50 or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # the exporter notices the new file at its next scrape
        assert got == 50
    finally:
        stop_all([exporter, gunicorn])

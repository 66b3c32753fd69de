"""A store removed and created again under running processes (issue 23,
item 3): long-lived metric objects follow the new file once the store is
checked (`Store.check()`, the WSGI middleware, the timer thread), so the
exporter, which follows the path too, shows the updates made after the
replacement."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import shmetrics
from shmetrics import _native

from conftest import dump, samples_of, shmetrics_bin
from test_frameworks import all_workers
from test_gunicorn import free_port, get, gunicorn_and_exporter, stop_all, wait_up, worker_pids

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


class Load:
    """Requests sent to `port` from 4 threads until stopped: how many, and
    the pids that served them."""

    def __init__(self, port: int) -> None:
        self.port, self.sent, self.pids, self.failures = port, 0, set(), []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run) for _ in range(4)]
        for t in self.threads:
            t.start()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                status, body = get(self.port, "/")
            except OSError as e:
                with self.lock:
                    self.failures.append(repr(e))
                continue
            with self.lock:
                if status == 200:
                    self.sent += 1
                    self.pids.add(int(body))
                else:
                    self.failures.append(status)

    def stop(self) -> int:
        self.stopping.set()
        for t in self.threads:
            t.join()
        assert not self.failures, self.failures[:5]
        return self.sent


def replace_under_load(app_port: int, store: Path) -> tuple:
    """Replaces `store` while requests keep coming, then sends 100 more
    once it settled. Returns the load (its `pids`: the workers that served)
    and the number of requests it sent around the replacement."""
    load = Load(app_port)
    time.sleep(0.3)
    replace(store)
    time.sleep(0.3)
    around = load.stop()
    time.sleep(0.3)
    for _ in range(100):
        assert get(app_port, "/")[0] == 200
    return load, around


def exporter_count(port: int, want, deadline_s: float = 20) -> dict:
    """The exporter's samples once `want(samples)` holds (it notices a new
    file at its next scrape), or the last ones after `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    while True:
        status, body = get(port, "/metrics")
        assert status == 200
        s = samples_of(body.decode())
        if want(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.2)


def test_gunicorn_follows_a_store_replaced_while_workers_serve(tmp_path):
    """gunicorn, 4 workers behind CheckStoreMiddleware, and the exporter.
    The store is removed while requests keep coming (they go to the removed
    file), created again, then replaced once more in the middle of the
    load. No worker dies, no request fails, and every request made after
    a replacement has settled is counted in the new file, by metric
    objects made before it."""
    store = tmp_path / "gunicorn.shm"
    with gunicorn_and_exporter(store, ["-w", "4"], "_follow_app:app") as (gunicorn, app_port, exporter_port):
        # The port answers once one worker listens; the others may still be
        # starting.
        for _ in range(100):
            workers = worker_pids(gunicorn.pid)
            if len(workers) == 4:
                break
            time.sleep(0.1)
        assert len(workers) == 4, workers
        ident = frozenset()
        root = frozenset({("route", "/")})

        load = Load(app_port)
        time.sleep(0.5)
        os.unlink(store)
        time.sleep(0.5)  # requests go on into the removed file
        during_gone = load.stop()
        assert during_gone > 0 and load.pids <= workers

        replace(store)
        time.sleep(0.3)  # past each worker's interval: the next request checks
        for _ in range(100):
            assert get(app_port, "/")[0] == 200
        s = exporter_count(exporter_port, lambda s: s.get(("follow_app_requests_total", ident)) == 100)
        assert s.get(("follow_app_requests_total", ident)) == 100, "every request after the re-creation"
        assert s[("follow_app_routes_total", root)] == 100, "through a child made before it"
        assert s[("follow_app_seconds_count", ident)] == 100

        # Replaced again in the middle of the load: requests around the
        # moment land in either file; the ones after it settles in the new.
        load, around = replace_under_load(app_port, store)
        s = exporter_count(exporter_port, lambda s: s.get(("follow_app_requests_total", ident), 0) >= 100)
        got = s.get(("follow_app_requests_total", ident), 0)
        assert 100 <= got <= 100 + around, (got, around)
        assert s[("follow_app_routes_total", root)] == got == s[("follow_app_seconds_count", ident)]

        assert load.pids <= workers and worker_pids(gunicorn.pid) == workers, "no worker died"
        assert gunicorn.poll() is None


def test_uvicorn_with_the_asgi_middleware_follows_a_replaced_store(tmp_path):
    """uvicorn, 2 workers, the app behind CheckStoreASGIMiddleware: the
    store replaced in the middle of the load; no worker dies, and the
    requests made once it has settled are counted in the new file, which
    the exporter serves."""
    store = tmp_path / "uvicorn.shm"
    env = dict(os.environ, SHMETRICS_STORE=str(store), PYTHONPATH=str(HERE))
    app_port, exporter_port = free_port(), free_port()
    uvicorn = subprocess.Popen([sys.executable, "-m", "uvicorn", "--workers", "2", "--host", "127.0.0.1",
                                "--port", str(app_port), "--lifespan", "off", "--log-level", "warning",
                                "_follow_app:asgi_app"], env=env, stderr=subprocess.PIPE)
    exporter = None
    try:
        wait_up(app_port, "/", uvicorn, "uvicorn")
        exporter = subprocess.Popen([shmetrics_bin(), "serve", "--store", str(store),
                                     "--listen", f"127.0.0.1:{exporter_port}"], stderr=subprocess.PIPE)
        wait_up(exporter_port, "/healthz", exporter, "the exporter")
        workers = all_workers(uvicorn.pid)
        load, around = replace_under_load(app_port, store)
        ident = frozenset()
        s = exporter_count(exporter_port, lambda s: s.get(("follow_app_requests_total", ident), 0) >= 100)
        got = s.get(("follow_app_requests_total", ident), 0)
        assert 100 <= got <= 100 + around, (got, around)
        assert s[("follow_app_routes_total", frozenset({("route", "/")}))] == got
        assert load.pids and load.pids <= workers and all_workers(uvicorn.pid) == workers, "no worker died"
    finally:
        stop_all([exporter, uvicorn])

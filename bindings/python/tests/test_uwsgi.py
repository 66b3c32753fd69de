"""A real uWSGI (PyPI's, in the test virtualenv), started with the ini of
docs/python.md (a master and 4 workers), serving an app that uses the
binding with no fork hook. Under a bounded load over loopback, the
exporter's page (`shmetrics serve`) must count exactly the successful
responses the client saw, through each of the ways uWSGI forks, recycles
and kills its workers. Only a request in flight when its worker was killed
may be counted or not: the client saw it fail, so it is the slack."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest

from conftest import REPO, Samples, samples_of, shmetrics_bin
from test_frameworks import wait_respawn
from test_gunicorn import free_port, get, stop_all, wait_up, worker_pids

HERE = Path(__file__).resolve().parent
DOC = REPO / "docs" / "python.md"
THREADS = 8


def doc_ini() -> str:
    """The uWSGI ini of docs/python.md."""
    blocks = re.findall(r"```ini\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1, "docs/python.md has one ini snippet, the uWSGI recipe"
    return blocks[0]


def uwsgi_bin() -> str:
    path = Path(sys.executable).parent / "uwsgi"
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is missing: ./run-tests (scripts/setup.sh's ensure_python_env) installs it")
    return str(path)


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    exporter_port: int
    log: Path
    dir: Path

    @property
    def master(self) -> int:
        return self.proc.pid

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def page(self) -> Samples:
        status, body = get(self.exporter_port, "/metrics")
        assert status == 200
        return samples_of(body.decode())


def ini_for(tmp_path: Path, port: int, module: str, store: Optional[Path], extra: List[str]) -> str:
    """The doc's ini with this test's port, module and store (or, for
    `store=None`, no SHMETRICS_STORE line), and `extra` lines."""
    ini = doc_ini()
    for old, new in [("127.0.0.1:8000", f"127.0.0.1:{port}"), ("myapp:app", module),
                     ("/dev/shm/myapp.shm", str(store))]:
        assert old in ini, f"the doc's ini has no {old!r}"
        ini = ini.replace(old, new)
    if store is None:
        ini = "".join(line for line in ini.splitlines(True) if "SHMETRICS_STORE" not in line)
    return ini + "\n".join([f"pythonpath = {HERE}", "disable-logging = true",
                            f"logto = {tmp_path / 'uwsgi.log'}", *extra, ""])


def listening(what: str, path: str, launch: Callable[[int], subprocess.Popen],
              log: Callable[[], str] = lambda: "") -> tuple[subprocess.Popen, int]:
    """`launch(port)` up and answering `path`, on a free port: another
    one, up to three times, if the port was taken in between (the tests'
    thousands of client connections take ephemeral ports too)."""
    for attempt in range(3):
        port = free_port()
        proc = launch(port)
        try:
            wait_up(port, path, proc, what)
            return proc, port
        except AssertionError as e:
            stop_all([proc])
            why = f"{e}\n{log()[-3000:]}"
            if attempt == 2 or "in use" not in why:
                raise AssertionError(why) from None
    raise AssertionError("unreachable")


@contextmanager
def uwsgi_and_exporter(tmp_path: Path, extra: List[str] = (), module: str = "_uwsgi_app:app",
                       store: Optional[Path] = None, multiproc_dir: bool = False) -> Iterator[Server]:
    """uWSGI with the doc's ini plus `extra`, and `shmetrics serve` on its
    store, both up; stops both after. With `multiproc_dir`, the store
    comes from PROMETHEUS_MULTIPROC_DIR (set by the ini) instead."""
    extra = list(extra)
    if multiproc_dir:
        store = tmp_path / "shmetrics.shm"
        extra = [f"env = PROMETHEUS_MULTIPROC_DIR={tmp_path}", *extra]
    else:
        store = store or tmp_path / "app.shm"
    env = {k: v for k, v in os.environ.items()
           if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")}
    log = tmp_path / "uwsgi.log"

    def start_uwsgi(port: int) -> subprocess.Popen:
        (tmp_path / "app.ini").write_text(ini_for(tmp_path, port, module, None if multiproc_dir else store, extra))
        return subprocess.Popen([uwsgi_bin(), "--ini", str(tmp_path / "app.ini")], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)

    def start_exporter(port: int) -> subprocess.Popen:
        return subprocess.Popen([shmetrics_bin(), "serve", "--store", str(store),
                                 "--listen", f"127.0.0.1:{port}"], stderr=subprocess.PIPE)

    def log_text() -> str:
        return log.read_text(errors="replace") if log.exists() else ""

    # /ready: not the counted route
    proc, port = listening("uWSGI", "/ready", start_uwsgi, log_text)
    exporter = None
    try:
        exporter, exporter_port = listening("the exporter", "/healthz", start_exporter)
        yield Server(proc, port, exporter_port, log, tmp_path)
    finally:
        stop_all([exporter, proc])


@dataclass
class Load:
    """What the client saw: responses with status 200, requests that
    failed (no response: the connection was closed or reset), and any
    other response (none is expected)."""
    ok: int = 0
    failed: int = 0
    bad: list = field(default_factory=list)  # (status, body) of any other response
    served: set = field(default_factory=set)  # pids that answered
    imported_in: set = field(default_factory=set)  # pids that imported the app they ran
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def one(self, port: int, path: str) -> None:
        try:
            status, body = get(port, path, timeout=20)
        except (OSError, http.client.HTTPException):
            with self.lock:
                self.failed += 1
            return
        if status != 200 or len(body.split()) != 2:
            with self.lock:
                self.bad.append((status, body[:200]))
            return
        pid, imported = body.split()
        with self.lock:
            self.ok += 1
            self.served.add(int(pid))
            self.imported_in.add(int(imported))

    def run(self, port: int, n: int, path: str = "/work") -> None:
        """`n` requests, THREADS at a time."""
        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(lambda _: self.one(port, path), range(n)))

    def run_until(self, port: int, done: Callable[[], bool], path: str = "/work", timeout: float = 30) -> None:
        """Requests, THREADS at a time, until `done()` (checked by each
        thread between requests) or `timeout` seconds."""
        deadline = time.monotonic() + timeout

        def loop() -> None:
            while not done() and time.monotonic() < deadline:
                self.one(port, path)

        with ThreadPoolExecutor(THREADS) as pool:
            for f in [pool.submit(loop) for _ in range(THREADS)]:
                f.result()


def assert_counted(server: Server, load: Load, route: str = "/work") -> Samples:
    """The exporter counts each of the client's successes once, and of its
    failures (requests whose worker was killed) at most once; the
    histogram agrees."""
    s = server.page()
    labels = frozenset({("route", route)})
    counted = s.get(("app_requests_total", labels), 0.0)
    observed = s.get(("app_request_seconds_count", labels), 0.0)
    why = f"client: {load.ok} ok, {load.failed} failed; exporter: {counted} counted, {observed} observed"
    assert not load.bad, f"responses other than 200: {load.bad[:5]}"
    assert load.ok <= counted <= load.ok + load.failed, why
    assert load.ok <= observed <= load.ok + load.failed, why
    buckets = [v for (n, l), v in s.items() if n == "app_request_seconds_bucket" and ("route", route) in l]
    assert buckets == sorted(buckets) and max(buckets) == observed, f"cumulative buckets: {buckets}"
    return s


@contextmanager
def background_load(port: int, load: Load, path: str = "/work?sleep=0.002") -> Iterator[None]:
    """Requests, THREADS at a time, all the while the block runs (at
    most 60 s)."""
    stop = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(load.run_until, port, stop.is_set, path, 60)
        try:
            wait_for("the load to start", lambda: load.ok > 100 or running.done())
            yield
        finally:
            stop.set()
            running.result(80)  # re-raises what the load raised


def workers_now(server: Server) -> set[int]:
    return worker_pids(server.master)


def wait_for(what: str, cond: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.parametrize("lazy", [False, True], ids=["preforked", "lazy-apps"])
def test_preforked_and_lazy_apps(tmp_path, lazy):
    with uwsgi_and_exporter(tmp_path, ["lazy-apps = true"] if lazy else []) as server:
        load = Load()
        load.run(server.port, 800)
        assert load.failed == 0, server.log_text()[-3000:]
        assert len(load.served) >= 2, f"only {load.served} served"
        if lazy:
            assert load.imported_in == load.served, "lazy-apps: each worker imported the app itself"
        else:
            assert load.imported_in == {server.master}, "preforked: the master imported the app"
        assert_counted(server, load)


def test_max_requests_recycling(tmp_path):
    with uwsgi_and_exporter(tmp_path, ["max-requests = 80", "min-worker-lifetime = 0"]) as server:
        load = Load()
        load.run(server.port, 800)
        assert load.failed == 0, server.log_text()[-3000:]
        assert len(load.served) >= 8, f"workers were expected to recycle; only {len(load.served)} pids served"
        assert_counted(server, load)
        # A recycled worker's writer slot goes to a later worker.
        out = subprocess.run([shmetrics_bin(), "inspect", "--store", str(server.dir / "app.shm")],
                             capture_output=True, text=True, check=True, timeout=60).stdout
        found = re.search(r"writers\s+(\d+) live, (\d+) dead, \d+ slots; (\d+) claims, (\d+) reuses", out)
        assert found, out
        live, dead, claims, reuses = map(int, found.groups())
        assert claims >= len(load.served) and reuses > 0 and live + dead < len(load.served), out


def test_harakiri_kills_a_slow_request(tmp_path):
    with uwsgi_and_exporter(tmp_path, ["harakiri = 2"]) as server:
        before = workers_now(server)
        slow = Load()
        killed = threading.Thread(target=slow.one, args=(server.port, "/slow"))
        killed.start()
        load = Load()
        # Load goes on, on the other workers, until harakiri closed the slow one.
        load.run_until(server.port, lambda: not killed.is_alive(), timeout=30)
        killed.join(30)
        assert (slow.ok, slow.failed) == (0, 1), "the slow request's worker was killed"
        found = re.search(r"HARAKIRI ON WORKER \d+ \(pid: (\d+)", server.log_text())
        assert found, server.log_text()[-3000:]
        victim = int(found[1])
        assert victim in before
        wait_for("the worker to go", lambda: victim not in workers_now(server))
        wait_for("4 workers again", lambda: len(workers_now(server)) == 4)
        load.run_until(server.port, lambda: bool(load.served - before), timeout=30)
        assert load.served - before, "the new worker served"
        assert load.failed == 0, server.log_text()[-3000:]
        s = assert_counted(server, load)
        # What the killed worker counted before it was killed is there.
        assert s[("app_slow_started_total", frozenset())] == 1
        assert ("app_requests_total", frozenset({("route", "/slow")})) not in s


def test_cheaper_spawns_and_kills_workers(tmp_path):
    extra = ["cheaper = 1", "cheaper-initial = 1", "cheaper-step = 1", "cheaper-overload = 1"]
    with uwsgi_and_exporter(tmp_path, extra) as server:
        wait_for("1 worker", lambda: len(workers_now(server)) == 1)
        load = Load()
        most = [1]

        def busy() -> bool:
            most[0] = max(most[0], len(workers_now(server)))
            return most[0] >= 3

        # Slow enough requests that 1 worker is overloaded: uWSGI spawns more.
        load.run_until(server.port, busy, path="/work?sleep=0.05", timeout=40)
        assert most[0] >= 3, f"cheaper spawned up to {most[0]} workers\n{server.log_text()[-3000:]}"
        # The load stops: uWSGI kills idle workers down to `cheaper`.
        wait_for("cheaper to kill workers", lambda: len(workers_now(server)) == 1, timeout=40)
        served_before = set(load.served)
        load.run(server.port, 200, path="/work?sleep=0.001")
        assert load.failed == 0, server.log_text()[-3000:]
        assert len(served_before) >= 3, f"only {served_before} served under load"
        assert_counted(server, load)


@pytest.mark.parametrize("how", ["SIGHUP", "touch-reload"])
def test_graceful_reload(tmp_path, how):
    touch = tmp_path / "reload.touch"
    touch.write_text("")
    extra = [f"touch-reload = {touch}"] if how == "touch-reload" else []
    with uwsgi_and_exporter(tmp_path, extra) as server:
        load = Load()
        before = workers_now(server)
        assert len(before) == 4
        with background_load(server.port, load):
            if how == "SIGHUP":
                server.proc.send_signal(signal.SIGHUP)
            else:
                os.utime(touch, (time.time() + 5, time.time() + 5))  # later than uWSGI saw
            wait_for("4 new workers", lambda: len(workers_now(server) - before) == 4, timeout=60)
            wait_for("a new worker to serve", lambda: bool(load.served - before), timeout=30)
        assert "binary reloading uWSGI" in server.log_text() or "reloading" in server.log_text()
        assert load.served & before and load.served - before, "old and new workers served"
        # uWSGI may close, unanswered, a connection an old worker had just
        # accepted when told to stop (docs/python.md): at most one per
        # worker, and the app never ran for it.
        assert load.failed <= len(before), f"{load.failed} requests failed across a graceful reload"
        s = assert_counted(server, load)
        assert s[("app_requests_total", frozenset({("route", "/work")}))] == load.ok


def test_worker_killed_with_sigkill(tmp_path):
    with uwsgi_and_exporter(tmp_path) as server:
        load = Load()
        before = workers_now(server)
        with background_load(server.port, load):
            victim = sorted(load.served & before)[0]
            os.kill(victim, signal.SIGKILL)  # under load: it may be in a request
            wait_for("uWSGI to see the worker die", lambda: "DAMN" in server.log_text())
            wait_for("a new worker", lambda: bool(workers_now(server) - before))
            wait_for("the new worker to serve", lambda: bool(load.served - before))
        assert victim not in workers_now(server)
        assert load.failed <= 1, "one worker, one request in flight at most"
        assert_counted(server, load)


def test_mule_writes_metrics(tmp_path):
    extra = ["env = APP_TO_MULE=1", f"mule = {HERE / '_uwsgi_mule.py'}"]
    with uwsgi_and_exporter(tmp_path, extra) as server:
        load = Load()
        load.run(server.port, 600)
        assert load.failed == 0, server.log_text()[-3000:]
        key = ("app_mule_messages_total", frozenset())
        found = re.search(r"spawned uWSGI mule 1 \(pid: (\d+)\)", server.log_text())
        assert found, server.log_text()[-3000:]
        mule = int(found[1])
        assert mule in workers_now(server) and mule not in load.served, "the mule runs beside the workers"
        wait_for("the mule to count every message", lambda: server.page().get(key) == load.ok, timeout=20)
        assert_counted(server, load)


def test_prometheus_client_code_unchanged(tmp_path):
    """The multiprocess-mode app, workers recycled by max-requests and one
    killed with SIGKILL between batches: exact on the exporter and on the
    app's own /metrics."""
    with uwsgi_and_exporter(tmp_path, ["max-requests = 100", "min-worker-lifetime = 0"], module="_uwsgi_prometheus_client_app:app",
                            multiproc_dir=True) as server:
        load = Load()

        def one(path: str) -> None:  # this app answers with its pid only
            status, body = get(server.port, path)
            assert status == 200
            with load.lock:
                load.ok += 1
                load.served.add(int(body))

        for _round in range(2):
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(lambda _: one("/work"), range(300)))
            before = workers_now(server)
            victim = sorted(load.served & before)[0]
            os.kill(victim, signal.SIGKILL)
            wait_respawn(server.master, before)  # the victim lingers a while unreaped
        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(lambda _: one("/work"), range(300)))
        assert len(load.served) > 4, "workers recycled and replaced"
        assert_counted(server, load)
        status, body = get(server.port, "/metrics")
        assert status == 200
        own = samples_of(body.decode())
        assert own[("app_requests_total", frozenset({("route", "/work")}))] == load.ok
        assert own[("app_request_seconds_count", frozenset({("route", "/work")}))] == load.ok

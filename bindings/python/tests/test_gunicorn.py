"""A real gunicorn (from PyPI) with 4 workers that restart every few dozen
requests, under a load of a few thousand requests; the exporter's /metrics
(`shmetrics serve`, a separate process) must show exact counts, consistent
histograms, and live gauge modes that count only live workers."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from conftest import samples_of, shmetrics_bin

HERE = Path(__file__).resolve().parent
ROUTES = ["/", "/users", "/orders", "/missing"]
REQUESTS = 3000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str, timeout: float = 10) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def wait_up(port: int, path: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited with {proc.returncode}: {proc.stderr.read().decode()}")
        try:
            get(port, path, timeout=2)
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{what} did not come up on port {port}")


def stop_all(procs: list) -> None:
    """SIGTERM each process still running, then SIGKILL after 20 s."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def worker_pids(master: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True)
    return {int(p) for p in out.stdout.split()}


@contextmanager
def gunicorn_and_exporter(store: Path, options: List[str], app: str
                          ) -> Iterator[Tuple[subprocess.Popen, int, int]]:
    """gunicorn (from this directory, with `options`) serving `app` on the
    store `store`, and `shmetrics serve` on the same store, both up; yields
    gunicorn's process and the two ports, and stops both after."""
    env = dict(os.environ, SHMETRICS_STORE=str(store), PYTHONPATH=str(HERE))
    app_port, exporter_port = free_port(), free_port()
    gunicorn = subprocess.Popen([sys.executable, "-m", "gunicorn", *options, "-b", f"127.0.0.1:{app_port}",
                                 "--log-level", "warning", app], env=env, stderr=subprocess.PIPE)
    exporter = None
    try:
        wait_up(app_port, "/", gunicorn, "gunicorn")
        exporter = subprocess.Popen([shmetrics_bin(), "serve", "--store", str(store),
                                     "--listen", f"127.0.0.1:{exporter_port}"],
                                    stderr=subprocess.PIPE)
        wait_up(exporter_port, "/healthz", exporter, "the exporter")
        yield gunicorn, app_port, exporter_port
    finally:
        stop_all([exporter, gunicorn])


@pytest.mark.parametrize("preload", [False, True], ids=["no-preload", "preload"])
def test_gunicorn_workers_restarting_under_load(tmp_path, preload):
    options = ["-c", str(HERE / "_gunicorn_conf.py"), "-w", "4", "--max-requests", "60",
               "--max-requests-jitter", "30", "--graceful-timeout", "5"]
    if preload:
        options.append("--preload")
    with gunicorn_and_exporter(tmp_path / "gunicorn.shm", options, "_gunicorn_app:app") as (
            gunicorn, app_port, exporter_port):
        sent: Counter = Counter()
        served_by: set = set()

        def one(i: int) -> tuple[str, int, bytes]:
            route = ROUTES[i % len(ROUTES)]
            for _ in range(5):  # a worker may be restarting: retry the connection
                try:
                    status, body = get(app_port, route)
                    return route, status, body
                except (ConnectionError, http.client.HTTPException):
                    time.sleep(0.05)
            raise AssertionError(f"request {i} to {route} failed five times")

        with ThreadPoolExecutor(8) as pool:
            # warm-up request from wait_up counted too
            for route, status, body in pool.map(one, range(REQUESTS)):
                sent[(route, str(status))] += 1
                served_by.add(int(body))
        sent[("/", "200")] += 1  # wait_up's request
        assert len(served_by) > 4 + 8, f"workers were expected to restart; only {len(served_by)} pids served"

        # The exporter's view, once the worker set is stable.
        for _ in range(50):
            status, body = get(exporter_port, "/metrics")
            assert status == 200
            s = samples_of(body.decode())
            live = worker_pids(gunicorn.pid)
            shown = {int(dict(l)["pid"]) for (n, l) in s if n == "app_worker_pid"}
            if shown == live and len(live) == 4:
                break
            time.sleep(0.2)
        assert shown == live and len(live) == 4, f"liveall shows {shown}, live workers are {live}"
        for pid in shown:
            assert s[("app_worker_pid", frozenset({("pid", str(pid))}))] == pid

        counted = {(dict(l)["route"], dict(l)["status"]): v for (n, l), v in s.items()
                   if n == "app_requests_total"}
        assert counted == dict(sent), "every request counted exactly once"
        assert s[("app_inflight", frozenset())] == 0, "livesum: nothing in flight"
        for route in ROUTES:
            n = sum(v for (r, _), v in sent.items() if r == route)
            buckets = [s[("app_request_seconds_bucket", frozenset({("route", route), ("le", le)}))]
                       for le in ["0.001", "0.01", "0.1", "1.0", "+Inf"]]
            assert buckets == sorted(buckets), f"cumulative buckets for {route}: {buckets}"
            assert buckets[-1] == n == s[("app_request_seconds_count", frozenset({("route", route)}))]
            assert 0 <= s[("app_request_seconds_sum", frozenset({("route", route)}))] < n

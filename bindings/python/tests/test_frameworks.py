"""A Flask app under gunicorn (written for prometheus_client's multiprocess
mode: child_exit hook, MultiProcessCollector endpoint, imports changed)
and a Starlette app under uvicorn, 4
workers each, serving /metrics in process and through the exporter: the
totals are exact after workers are killed with SIGKILL between batches of
requests (a request in flight when its worker dies is lost by both
libraries alike, so none is)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import samples_of, shmetrics_bin
from test_gunicorn import free_port, get, stop_all, wait_up, worker_pids

HERE = Path(__file__).resolve().parent
BATCH = 400


def total(port: int, path: str) -> float:
    status, body = get(port, path)
    assert status == 200
    s = samples_of(body.decode())
    return s.get(("app_request_seconds_count", frozenset({("route", "/work")})), 0.0), \
        s.get(("app_requests_total", frozenset({("route", "/work")})), 0.0)


def all_workers(master: int) -> set[int]:
    """The server's worker processes (uvicorn's may sit one level below)."""
    pids = worker_pids(master)
    return pids | {g for p in pids for g in worker_pids(p)}


def wait_respawn(master: int, survivors: set[int], timeout: float = 30) -> set[int]:
    """Waits until the server has started a worker in place of a killed
    one (on a busy machine that takes seconds, and a batch sent before
    then goes to the survivors only); returns the new processes."""
    deadline = time.monotonic() + timeout
    while not (new := all_workers(master) - survivors):
        assert time.monotonic() < deadline, "no worker was started in place of the killed one"
        time.sleep(0.1)
    return new


SERVERS = {
    # The multiprocess-mode setup: child_exit hook, MultiProcessCollector endpoint.
    "flask-gunicorn": lambda port: [sys.executable, "-m", "gunicorn", "-c", str(HERE / "_mp_gunicorn_conf.py"),
                                    "-w", "4", "-b", f"127.0.0.1:{port}",
                                    "--log-level", "warning", "_framework_apps:flask_app"],
    "starlette-uvicorn": lambda port: [sys.executable, "-m", "uvicorn", "--workers", "4", "--host", "127.0.0.1",
                                       "--port", str(port), "--log-level", "warning",
                                       "_framework_apps:starlette_app"],
}


@pytest.mark.parametrize("server", list(SERVERS))
def test_exact_totals_across_kill_9(tmp_path, server):
    store = tmp_path / "app.shm"
    env = dict(os.environ, SHMETRICS_STORE=str(store), PYTHONPATH=str(HERE))
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    port, exporter_port = free_port(), free_port()
    app = subprocess.Popen(SERVERS[server](port), env=env, stderr=subprocess.PIPE)
    exporter = None
    try:
        metrics = "/metrics/" if server.startswith("starlette") else "/metrics"  # a Mount's path ends in /
        wait_up(port, metrics, app, server)  # not a counted route: a retried request would count twice
        exporter = subprocess.Popen([shmetrics_bin(), "serve", "--store", str(store),
                                     "--listen", f"127.0.0.1:{exporter_port}"], stderr=subprocess.PIPE)
        wait_up(exporter_port, "/healthz", exporter, "the exporter")
        sent = 0
        served: set[int] = set()
        killed = 0
        replacements: set[int] = set()

        def one(i: int) -> int:
            status, body = get(port, f"/work/{i}")
            assert status == 200
            return int(body)

        for _round in range(3):
            with ThreadPoolExecutor(8) as pool:
                served.update(pool.map(one, range(BATCH)))
            sent += BATCH
            # No request is in flight: kill a worker that served some.
            before = all_workers(app.pid)
            victim = sorted(served & before)[0]
            os.kill(victim, signal.SIGKILL)
            killed += 1
            replacements |= wait_respawn(app.pid, before - {victim})
            time.sleep(0.5)
        # A replacement worker may still be starting (a spawned interpreter
        # imports the app) when a batch is sent: send batches until one of
        # them has served too, so that its updates are in the totals.
        deadline = time.monotonic() + 30
        while True:
            with ThreadPoolExecutor(8) as pool:
                served.update(pool.map(one, range(BATCH)))
            sent += BATCH
            if served & replacements or time.monotonic() > deadline:
                break
        assert killed == 3 and served & replacements, \
            f"no replacement worker served: {sorted(served)}, replacements {sorted(replacements)}"
        # The exporter, and the app's own /metrics in whichever worker answers.
        assert total(exporter_port, "/metrics") == (sent, sent)
        for _ in range(4):
            assert total(port, metrics) == (sent, sent)
    finally:
        stop_all([exporter, app])

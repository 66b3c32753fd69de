"""The libraries built on prometheus_client, under a real gunicorn (4
workers), switched to shmetrics by one line: prometheus-flask-exporter's
GunicornPrometheusMetrics (multiprocess mode, its gunicorn.conf.py), its
plain PrometheusMetrics, and django-prometheus in multiprocess mode. A
worker that served requests is killed with SIGKILL between batches (no
request in flight: one in flight when its worker dies is lost by both
libraries alike), three times; the exporter's page then counts exactly
the successful responses the client saw."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Tuple

import pytest

from conftest import samples_of, shmetrics_bin
from test_frameworks import all_workers, wait_respawn
from test_gunicorn import free_port, get, stop_all, wait_up

HERE = Path(__file__).resolve().parent
BATCH = 300


@dataclass
class App:
    """A gunicorn app: its module, gunicorn options, whether it runs in
    multiprocess mode, and the sample that counts its /work requests."""
    wsgi: str
    options: List[str]
    multiproc: bool
    sample: Tuple[str, FrozenSet[Tuple[str, str]]]


APPS: Dict[str, App] = {
    "flask-GunicornPrometheusMetrics": App(
        "_libs_flask_gunicorn:app", ["-c", str(HERE / "_libs_flask_gunicorn_conf.py")], True,
        ("flask_http_request_duration_seconds_count",
         frozenset({("method", "GET"), ("path", "/work"), ("status", "200")}))),
    "flask-PrometheusMetrics": App(
        "_libs_flask_plain:app", [], False,
        ("flask_http_request_duration_seconds_count",
         frozenset({("method", "GET"), ("path", "/work"), ("status", "200")}))),
    "django-prometheus-multiprocess": App(
        "_libs_django_wsgi:application", [], True,
        ("django_http_requests_total_by_view_transport_method_total",
         frozenset({("method", "GET"), ("transport", "http"), ("view", "work")}))),
}


def counted(port: int, sample: Tuple[str, FrozenSet[Tuple[str, str]]]) -> float:
    status, body = get(port, "/metrics")
    assert status == 200
    return samples_of(body.decode()).get(sample, 0.0)


def run_batches(port: int, master: int) -> Tuple[int, set]:
    """Batches of /work requests with a worker killed after each of the
    first three; returns how many succeeded and the pids that served."""
    sent = 0
    served: set[int] = set()
    replacements: set[int] = set()

    def one(i: int) -> int:
        status, body = get(port, "/work")
        assert status == 200
        return int(body)

    for _round in range(3):
        with ThreadPoolExecutor(8) as pool:
            served.update(pool.map(one, range(BATCH)))
        sent += BATCH
        before = all_workers(master)
        victim = sorted(served & before)[0]
        os.kill(victim, signal.SIGKILL)
        replacements |= wait_respawn(master, before - {victim})
        time.sleep(0.5)
    deadline = time.monotonic() + 30
    while True:
        with ThreadPoolExecutor(8) as pool:
            served.update(pool.map(one, range(BATCH)))
        sent += BATCH
        if served & replacements or time.monotonic() > deadline:
            break
    assert served & replacements, f"no replacement worker served: {sorted(served)}"
    return sent, served


@pytest.mark.parametrize("name", list(APPS))
def test_library_counts_exactly_across_kill_9(tmp_path, name):
    app = APPS[name]
    env = {k: v for k, v in os.environ.items()
           if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir",
                        "DJANGO_SETTINGS_MODULE")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    if app.multiproc:
        env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path)
        store = tmp_path / "shmetrics.shm"
    else:
        store = tmp_path / "app.shm"
        env["SHMETRICS_STORE"] = str(store)
    port, exporter_port, metrics_port = free_port(), free_port(), free_port()
    env["METRICS_PORT"] = str(metrics_port)
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", *app.options, "-w", "4",
                               "-b", f"127.0.0.1:{port}", "--log-level", "warning", app.wsgi],
                              env=env, stderr=subprocess.PIPE)
    exporter = None
    try:
        wait_up(port, "/ready", server, name)  # not a counted route
        exporter = subprocess.Popen([shmetrics_bin(), "serve", "--store", str(store),
                                     "--listen", f"127.0.0.1:{exporter_port}"], stderr=subprocess.PIPE)
        wait_up(exporter_port, "/healthz", exporter, "the exporter")
        sent, served = run_batches(port, server.pid)
        assert len(served) >= 4, f"only {len(served)} workers served"
        assert counted(exporter_port, app.sample) == sent
        if name == "flask-GunicornPrometheusMetrics":
            # The library's own endpoint (the master's, started when_ready).
            assert counted(metrics_port, app.sample) == sent
    finally:
        stop_all([exporter, server])

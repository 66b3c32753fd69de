"""Code written for prometheus_client's multiprocess mode (issue 19):
`shmetrics.multiprocess.MultiProcessCollector` and `mark_process_dead`,
and `PROMETHEUS_MULTIPROC_DIR` honoured as a store file in that
directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any, Dict

import prometheus_client.multiprocess
import pytest

import shmetrics
from shmetrics import _native, multiprocess
from conftest import dump, samples_of
from _workers import fork_ready

WRITE = """
import shmetrics
shmetrics.Counter("jobs", "Jobs.", ["queue"]).labels("mail").inc(5)
print(shmetrics.default_store().path)
"""


def run_writer(env: Dict[str, str]) -> str:
    """Runs a fresh interpreter that counts 5 jobs in its default store;
    returns the store's path as it printed it."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")}
    out = subprocess.run([sys.executable, "-c", WRITE], env={**clean, **env}, check=True,
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def test_names_are_prometheus_clients():
    for name in ("MultiProcessCollector", "mark_process_dead"):
        assert hasattr(prometheus_client.multiprocess, name)
        assert hasattr(multiprocess, name)


def test_prometheus_multiproc_dir_names_a_store_file_in_it(tmp_path):
    path = run_writer({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert path == str(tmp_path / "shmetrics.shm")
    store = _native.Store(path, create=False)
    assert samples_of(dump(store))[("jobs_total", frozenset({("queue", "mail")}))] == 5
    # The deprecated lower-case spelling too; SHMETRICS_STORE wins over both.
    assert run_writer({"prometheus_multiproc_dir": str(tmp_path)}) == path
    other = tmp_path / "other.shm"
    assert run_writer({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "SHMETRICS_STORE": str(other)}) == str(other)
    assert samples_of(dump(store))[("jobs_total", frozenset({("queue", "mail")}))] == 10


def test_configure_without_path_takes_the_multiproc_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("SHMETRICS_STORE", raising=False)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    try:
        store = shmetrics.configure()
        assert str(store.path) == str(tmp_path / "shmetrics.shm")
    finally:
        _native.set_default_store(None)
        os.environ.pop("SHMETRICS_STORE", None)


def test_collector_with_a_directory_path_reads_that_store(store, tmp_path):
    run_writer({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    shmetrics.Counter("jobs", "Jobs.", ["queue"]).labels("mail").inc(1)  # the default store
    registry = shmetrics.CollectorRegistry()
    assert registry.get_sample_value("jobs_total", {"queue": "mail"}) is None  # empty, as prometheus_client's
    multiprocess.MultiProcessCollector(registry, path=str(tmp_path))
    assert registry.get_sample_value("jobs_total", {"queue": "mail"}) == 5  # that store only
    alone = multiprocess.MultiProcessCollector(None, path=tmp_path / "shmetrics.shm")
    assert [m.name for m in alone.collect()] == ["jobs"]


def _work(ready: Any) -> None:
    shmetrics.Counter("handled", "H.").inc(10)
    shmetrics.Gauge("busy", "B.", multiprocess_mode="livesum").inc()
    ready.put(os.getpid())
    signal.pause()


def test_gunicorn_style_endpoint_counts_once_and_dead_workers(store):
    registry = shmetrics.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    shmetrics.Counter("handled", "H.").inc(1)
    procs = fork_ready(_work, 3)
    assert registry.get_sample_value("handled_total") == 31
    assert registry.get_sample_value("busy") == 3
    page = shmetrics.generate_latest(registry).decode()
    assert page.count("# TYPE handled_total counter") == 1
    victim = procs[0]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(60)
    assert multiprocess.mark_process_dead(victim.pid) is None
    # As in multiprocess mode: the dead worker's counts stay, its live
    # gauge is gone.
    assert registry.get_sample_value("handled_total") == 31
    assert registry.get_sample_value("busy") == 2
    for p in procs[1:]:
        p.kill()
        p.join(60)
    with pytest.raises(TypeError):
        multiprocess.mark_process_dead("123")  # type: ignore[arg-type]


def run_app(lib: str, directory: str) -> Any:
    env = {k: v for k, v in os.environ.items() if k != "SHMETRICS_STORE"}
    env["PROMETHEUS_MULTIPROC_DIR"] = directory
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "_mp_compare.py"), lib],
                         env=env, check=True, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout)


def test_same_app_reads_the_same_as_in_prometheus_client_multiprocess_mode(tmp_path):
    (tmp_path / "prom").mkdir()
    (tmp_path / "shm").mkdir()
    theirs = run_app("prometheus_client", str(tmp_path / "prom"))
    ours = run_app("shmetrics", str(tmp_path / "shm"))
    assert len(theirs) > 40
    # The one difference (docs/python.md): a process that created a gauge
    # of mode "all" and never set it has a 0 series in multiprocess mode,
    # none in the store.
    unset = ["app_each", "gauge", "app_each", [["pid", "parent"]], 0.0]
    assert unset in theirs and unset not in ours
    assert ours == [s for s in theirs if s != unset]
    assert ["app_idle", "counter", "app_idle_total", [], 0.0] in ours
    assert os.listdir(tmp_path / "shm") == ["shmetrics.shm"]

"""prometheus_client (0.26.0) against shmetrics through
`shmetrics.install_as_prometheus_client()`: the same code
(python/workload.py) in prometheus_client's single-process mode (its
default registry, two writer threads) and in its multiprocess mode
(PROMETHEUS_MULTIPROC_DIR, two forked writers, a MultiProcessCollector
endpoint), and after the switch (the same writers: two threads of one
process for the single-process app, two forked processes for the
multiprocess one; the store served by `shmetrics serve`). Each side's own endpoint is prometheus_client's
`start_http_server` (shmetrics's after the switch), which negotiates
OpenMetrics as Prometheus asks.

Compared as in test_nginx_lua.py (harness.py): the peer's endpoint against
the exporter (pages and Prometheus scrapes) and against the app's own
endpoint after the switch (`page-app`). A `pid` label's value becomes the
writer's name on both sides (parent, writer-0, writer-1).

Run by scripts/migration-tests.sh (SHMETRICS_BIN; the venv has both
prometheus_client and shmetrics).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import harness as h

HERE = Path(__file__).resolve().parent
REQUESTS = 600
MODES = ("single", "multiprocess")
PAIRS = {"single": "prometheus_client-single", "multiprocess": "prometheus_client-multiprocess"}


class App:
    """python/workload.py, running: its port and its pids by name."""

    def __init__(self, lib: str, mode: str, tmp: Path, env: dict[str, str]) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        portfile = tmp / "port"
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "python" / "workload.py"), lib, mode, str(portfile)],
            env={**os.environ, "MIGRATION_REQUESTS": str(REQUESTS), **env},
            stdout=subprocess.DEVNULL, stderr=open(tmp / "stderr", "w"),
        )
        h.wait_for(f"{lib} {mode}", lambda: self.proc.poll() is None and portfile.exists(), timeout=120)
        port, parent, *writers = portfile.read_text().split()
        self.address = f"127.0.0.1:{port}"
        self.pids = {parent: "parent", **{p: f"writer-{k}" for k, p in enumerate(writers)}}

    def page(self, openmetrics: bool) -> tuple[str, h.Page]:
        headers = {"Accept": h.ACCEPT_OPENMETRICS} if openmetrics else {}
        status, _, body = h.http_get(f"http://{self.address}/metrics", headers)
        assert status == 200, body[:500]
        if not openmetrics:
            h.promtool_check(body)
        return body, h.parse_page(body, openmetrics)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prometheus_client")
    others: list = []
    procs: list[subprocess.Popen] = []
    try:
        apps, exporters = {}, {}
        for mode in MODES:
            mp = tmp / mode / "multiproc"
            mp.mkdir(parents=True)
            peer_env = {"PROMETHEUS_MULTIPROC_DIR": str(mp)} if mode == "multiprocess" else {}
            apps[mode] = App("prometheus_client", mode, tmp / mode / "peer", peer_env)
            others.append(apps[mode])
            ours_mp = tmp / mode / "ours"
            ours_mp.mkdir(parents=True)
            store = ours_mp / "shmetrics.shm"
            ours_env = (
                {"PROMETHEUS_MULTIPROC_DIR": str(ours_mp)} if mode == "multiprocess" else {"SHMETRICS_STORE": str(store)}
            )
            apps[f"{mode}-ours"] = App("shmetrics", mode, tmp / mode / "ours-app", ours_env)
            others.append(apps[f"{mode}-ours"])
            exporters[mode] = f"127.0.0.1:{h.free_port()}"
            procs.append(subprocess.Popen(
                [h.env("SHMETRICS_BIN"), "serve", "--store", str(store), "--listen", exporters[mode]],
                stdout=subprocess.DEVNULL, stderr=open(tmp / f"exporter-{mode}.log", "w"),
            ))
        for addr in exporters.values():
            h.wait_for("exporter", lambda a=addr: h.http_get(f"http://{a}/healthz")[0] == 200)
        # Text 0.0.4 only, for both sides: prometheus_client negotiates too.
        proxies = {m: h.AcceptProxy(f"http://{a}") for m, a in exporters.items()}
        peer_proxies = {m: h.AcceptProxy(f"http://{apps[m].address}") for m in MODES}
        others += [*proxies.values(), *peer_proxies.values()]
        jobs, native_jobs = {}, {}
        for m in MODES:
            jobs.update({m: apps[m].address, f"{m}-text": peer_proxies[m].address,
                         f"{m}-ours": exporters[m], f"{m}-ours-text": proxies[m].address})
            native_jobs.update({m: apps[m].address, f"{m}-ours": exporters[m]})
        default = h.Prometheus(tmp / "prom-default", jobs)
        others.append(default)
        native = h.Prometheus(tmp / "prom-native", native_jobs, "native-histograms")
        others.append(native)
        p3 = h.Prometheus(tmp / "prom3", native_jobs, binary=h.prometheus3())
        others.append(p3)
        now = time.time()
        at = max(p.wait_scraped_after(now) for p in (default, native, p3))
        yield {"apps": apps, "exporters": exporters, "default": default, "native": native, "p3": p3, "at": at}
    finally:
        for o in reversed(others):
            o.close() if isinstance(o, (h.AcceptProxy, h.StaticPage)) else o.stop()
        for p in procs:
            p.terminate()
            p.wait(10)


def pids(run, mode: str) -> tuple[dict, dict]:
    return run["apps"][mode].pids, run["apps"][f"{mode}-ours"].pids


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_page(run, mode, openmetrics):
    """The exporter's page against the peer's own endpoint, in each format."""
    check = "page-openmetrics" if openmetrics else "page-text"
    _, peer = run["apps"][mode].page(openmetrics)
    ours = h.exporter_page(run["exporters"][mode], openmetrics)
    h.assert_no_unchosen(PAIRS[mode], h.diff_pages(check, peer, ours, *pids(run, mode)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_page_app(run, mode, openmetrics):
    """The app's own start_http_server after the switch against the peer's."""
    check = "page-app-openmetrics" if openmetrics else "page-app-text"
    _, peer = run["apps"][mode].page(openmetrics)
    _, ours = run["apps"][f"{mode}-ours"].page(openmetrics)
    h.assert_no_unchosen(PAIRS[mode], h.diff_pages(check, peer, ours, *pids(run, mode)))


def prometheus_diff(run, prom: str, check: str, mode: str, peer_job: str, job: str) -> list[h.Difference]:
    return h.diff_prometheus(check, run[prom], peer_job, job, run["at"], *pids(run, mode))


@pytest.mark.parametrize("mode", MODES)
def test_prometheus_default(run, mode):
    h.assert_no_unchosen(PAIRS[mode], prometheus_diff(run, "default", "prometheus-default", mode, mode, f"{mode}-ours"))


@pytest.mark.parametrize("mode", MODES)
def test_prometheus_text(run, mode):
    diffs = prometheus_diff(run, "default", "prometheus-text", mode, f"{mode}-text", f"{mode}-ours-text")
    h.assert_no_unchosen(PAIRS[mode], diffs)


@pytest.mark.parametrize("mode", MODES)
def test_prometheus_protobuf(run, mode):
    h.assert_serves_protobuf(run["exporters"][mode])
    h.assert_no_unchosen(PAIRS[mode], prometheus_diff(run, "native", "prometheus-protobuf", mode, mode, f"{mode}-ours"))


@pytest.mark.parametrize("mode", MODES)
def test_prometheus3_default(run, mode):
    """Prometheus 3 with its default scrape settings."""
    h.assert_no_unchosen(PAIRS[mode], prometheus_diff(run, "p3", "prometheus3-default", mode, mode, f"{mode}-ours"))


@pytest.mark.parametrize("mode", MODES)
def test_every_request_counted(run, mode):
    for side in (mode, f"{mode}-ours"):
        _, page = run["apps"][side].page(False)
        got = sum(s.value for s in page.samples if s.name == "myapp_http_requests_total")
        assert got == REQUESTS, side

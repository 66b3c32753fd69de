"""prom-client 15.1.3 against the `shmetrics` npm package: the same
workload (node/workload.js) through prom-client in one process
(`register.metrics()`), through prom-client's cluster mode (two workers,
the primary's `AggregatorRegistry.clusterMetrics()`, what a cluster app
serves), and after the one-line switch (two workers writing to the store,
served by `shmetrics serve`; the primary's own `clusterMetrics()` too).
The peers' pages are served as they are to Prometheus.

Compared as in test_client_ruby.py (harness.py). Run by
scripts/migration-tests.sh (SHMETRICS_BIN; NODE_PATH with prom-client and
the package, as scripts/node-tests.sh installs them).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import harness as h

HERE = Path(__file__).resolve().parent
REQUESTS = 600
PEERS = {"single": "prom-client-single", "cluster": "prom-client-cluster"}


def start(mode: str, tmp: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Starts node/workload.js in `mode`; returns it and its page once
    written."""
    out = tmp / f"{mode}.prom"
    proc = subprocess.Popen(
        ["node", str(HERE / "node" / "workload.js"), mode, str(REQUESTS), str(out)],
        env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=open(tmp / f"{mode}.log", "w"),
    )
    h.wait_for(f"{mode} page", lambda: out.exists() or proc.poll() is not None, timeout=60)
    assert out.exists(), (tmp / f"{mode}.log").read_text()[-3000:]
    return proc, out.read_text()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prom_client")
    store = tmp / "app.shm"
    others: list = []
    procs: list[subprocess.Popen] = []
    try:
        pages = {}
        for mode, env in (("prom-client-single", {}), ("prom-client-cluster", {}),
                          ("shmetrics", {"SHMETRICS_STORE": str(store)})):
            proc, pages[mode] = start(mode, tmp, env)
            procs.append(proc)
        exp = f"127.0.0.1:{h.free_port()}"
        procs.append(subprocess.Popen(
            [h.env("SHMETRICS_BIN"), "serve", "--store", str(store), "--listen", exp],
            stdout=subprocess.DEVNULL, stderr=open(tmp / "exporter.log", "w"),
        ))
        h.wait_for("exporter", lambda: h.http_get(f"http://{exp}/healthz")[0] == 200)
        statics = {k: h.StaticPage(pages[v]) for k, v in PEERS.items()}
        others += statics.values()
        jobs = {k: s.address for k, s in statics.items()}
        default = h.Prometheus(tmp / "prom-default", {**jobs, "shmetrics": exp})
        others.append(default)
        p3 = h.Prometheus(tmp / "prom3", {**jobs, "shmetrics": exp}, binary=h.prometheus3())
        others.append(p3)
        now = time.time()
        at = max(p.wait_scraped_after(now) for p in (default, p3))
        yield {"pages": pages, "exporter": exp, "default": default, "p3": p3, "at": at}
    finally:
        for o in reversed(others):
            o.close() if isinstance(o, h.StaticPage) else o.stop()
        for p in procs:
            p.terminate()
            p.wait(10)


def peer_page(run, peer: str) -> h.Page:
    body = run["pages"][PEERS[peer]]
    h.promtool_check(body)
    return h.parse_page(body, openmetrics=False)


@pytest.mark.parametrize("peer", PEERS)
def test_page_text(run, peer):
    ours = h.exporter_page(run["exporter"], openmetrics=False)
    h.assert_no_unchosen(PEERS[peer], h.diff_pages("page-text", peer_page(run, peer), ours))


@pytest.mark.parametrize("peer", PEERS)
def test_page_openmetrics(run, peer):
    """What the exporter answers a scraper that asks for OpenMetrics first:
    prom-client's families keep it to the text format."""
    ours = h.exporter_page(run["exporter"], openmetrics=True)
    h.assert_no_unchosen(PEERS[peer], h.diff_pages("page-openmetrics", peer_page(run, peer), ours))


@pytest.mark.parametrize("peer", PEERS)
def test_page_cluster(run, peer):
    """The primary's AggregatorRegistry.clusterMetrics() after the switch
    (an existing cluster app's own endpoint)."""
    body = run["pages"]["shmetrics"]
    h.promtool_check(body)
    ours = h.parse_page(body, openmetrics=False)
    h.assert_no_unchosen(PEERS[peer], h.diff_pages("page-cluster", peer_page(run, peer), ours))


@pytest.mark.parametrize("peer", PEERS)
def test_prometheus_default(run, peer):
    h.assert_no_unchosen(PEERS[peer], h.diff_prometheus("prometheus-default", run["default"], peer, "shmetrics", run["at"]))


@pytest.mark.parametrize("peer", PEERS)
def test_prometheus3_default(run, peer):
    """Prometheus 3 with its default scrape settings."""
    h.assert_no_unchosen(PEERS[peer], h.diff_prometheus("prometheus3-default", run["p3"], peer, "shmetrics", run["at"]))


def test_every_request_counted(run):
    for mode in ("prom-client-single", "prom-client-cluster", "shmetrics"):
        page = h.parse_page(run["pages"][mode], False)
        assert sum(s.value for s in page.samples if s.name == "myapp_http_requests_total") == REQUESTS, mode

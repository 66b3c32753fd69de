"""client_ruby (prometheus-client 4.2.5) on its own data stores against
`Shmetrics::DataStore`: the same workload (ruby/workload.rb) with
`Synchronized` (client_ruby's default: one process, two writing threads),
with `DirectFileStore` (two forked writers) and with `Shmetrics::DataStore`
(two forked writers, the store served by `shmetrics serve`). The peers'
pages are what `Prometheus::Client::Formats::Text` renders (what
`Prometheus::Middleware::Exporter` serves), served as they are to
Prometheus.

Compared as in test_nginx_lua.py (harness.py), with one rewrite: a `pid`
label's value (DirectFileStore's and the DataStore's gauges) becomes the
writer's index on both sides, as two runs never have the same pids.

Run by scripts/migration-tests.sh (SHMETRICS_BIN, the gem installed).
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
PEERS = {"synchronized": "client_ruby-synchronized", "direct_file": "client_ruby-directfile"}


def workload(kind: str, tmp: Path, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Runs ruby/workload.rb: the page its parent renders, and the pids of
    the parent and of its forked writers named parent, writer-0, writer-1."""
    out = tmp / f"{kind}.prom"
    r = subprocess.run(
        ["ruby", "-I", f"{h.env('CLIENT_RUBY_DIR')}/lib", str(HERE / "ruby" / "workload.rb"),
         kind, str(REQUESTS), str(out)],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    parent, *writers = out.with_name(out.name + ".pids").read_text().split()
    return out.read_text(), {parent: "parent", **{p: f"writer-{k}" for k, p in enumerate(writers)}}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("client_ruby")
    (tmp / "direct").mkdir()
    store = tmp / "app.shm"
    others: list = []
    procs: list[subprocess.Popen] = []
    try:
        pages, pids = {}, {}
        pages["synchronized"], pids["synchronized"] = workload("synchronized", tmp, {})
        pages["direct_file"], pids["direct_file"] = workload("direct_file", tmp, {"MIGRATION_DIR": str(tmp / "direct")})
        pages["shmetrics"], pids["shmetrics"] = workload("shmetrics", tmp, {"MIGRATION_STORE": str(store)})
        exp = f"127.0.0.1:{h.free_port()}"
        procs.append(subprocess.Popen(
            [h.env("SHMETRICS_BIN"), "serve", "--store", str(store), "--listen", exp],
            stdout=subprocess.DEVNULL, stderr=open(tmp / "exporter.log", "w"),
        ))
        h.wait_for("exporter", lambda: h.http_get(f"http://{exp}/healthz")[0] == 200)
        statics = {k: h.StaticPage(pages[k]) for k in PEERS}
        others += statics.values()
        proxy = h.AcceptProxy(f"http://{exp}")
        others.append(proxy)
        jobs = {k: s.address for k, s in statics.items()}
        default = h.Prometheus(tmp / "prom-default", {**jobs, "shmetrics": exp, "shmetrics-text": proxy.address})
        others.append(default)
        native = h.Prometheus(tmp / "prom-native", {**jobs, "shmetrics": exp}, "native-histograms")
        others.append(native)
        p3 = h.Prometheus(tmp / "prom3", {**jobs, "shmetrics": exp}, binary=h.prometheus3())
        others.append(p3)
        now = time.time()
        at = max(p.wait_scraped_after(now) for p in (default, native, p3))
        yield {"pages": pages, "pids": pids, "exporter": exp, "default": default, "native": native, "p3": p3,
               "at": at}
    finally:
        for o in reversed(others):
            o.close() if isinstance(o, (h.AcceptProxy, h.StaticPage)) else o.stop()
        for p in procs:
            p.terminate()
            p.wait(10)


def peer_page(run, peer: str) -> h.Page:
    body = run["pages"][peer]
    h.promtool_check(body)
    return h.parse_page(body, openmetrics=False)


def pages_diff(run, peer: str, check: str, ours: h.Page) -> list[h.Difference]:
    return h.diff_pages(check, peer_page(run, peer), ours, run["pids"][peer], run["pids"]["shmetrics"])


@pytest.mark.parametrize("peer", PEERS)
def test_page_text(run, peer):
    ours = h.exporter_page(run["exporter"], openmetrics=False)
    h.assert_no_unchosen(PEERS[peer], pages_diff(run, peer, "page-text", ours))


@pytest.mark.parametrize("peer", PEERS)
def test_page_openmetrics(run, peer):
    ours = h.exporter_page(run["exporter"], openmetrics=True)
    h.assert_no_unchosen(PEERS[peer], pages_diff(run, peer, "page-openmetrics", ours))


@pytest.mark.parametrize("peer", PEERS)
def test_page_marshal(run, peer):
    """client_ruby's own Text.marshal over the DataStore (the app's
    Prometheus::Middleware::Exporter after the switch)."""
    body = run["pages"]["shmetrics"]
    h.promtool_check(body)
    h.assert_no_unchosen(PEERS[peer], pages_diff(run, peer, "page-marshal", h.parse_page(body, False)))


def prometheus_diff(run, prom: str, check: str, peer: str, job: str) -> list[h.Difference]:
    return h.diff_prometheus(
        check, run[prom], peer, job, run["at"], run["pids"][peer], run["pids"]["shmetrics"]
    )


@pytest.mark.parametrize("peer", PEERS)
def test_prometheus_default(run, peer):
    h.assert_no_unchosen(PEERS[peer], prometheus_diff(run, "default", "prometheus-default", peer, "shmetrics"))


@pytest.mark.parametrize("peer", PEERS)
def test_prometheus_text(run, peer):
    h.assert_no_unchosen(PEERS[peer], prometheus_diff(run, "default", "prometheus-text", peer, "shmetrics-text"))


@pytest.mark.parametrize("peer", PEERS)
def test_prometheus_protobuf(run, peer):
    h.assert_serves_protobuf(run["exporter"])
    h.assert_no_unchosen(PEERS[peer], prometheus_diff(run, "native", "prometheus-protobuf", peer, "shmetrics"))


@pytest.mark.parametrize("peer", PEERS)
def test_prometheus3_default(run, peer):
    """Prometheus 3 with its default scrape settings."""
    h.assert_no_unchosen(PEERS[peer], prometheus_diff(run, "p3", "prometheus3-default", peer, "shmetrics"))


def test_every_writer_wrote(run):
    """Two writers on each side (two threads in Synchronized's one process)."""
    assert len(run["pids"]["direct_file"]) == 3 and len(run["pids"]["shmetrics"]) == 3
    for k in ("synchronized", "direct_file", "shmetrics"):
        page = h.parse_page(run["pages"][k], False)
        assert sum(s.value for s in page.samples if s.name == "myapp_http_requests_total") == REQUESTS, k

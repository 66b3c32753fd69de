"""nginx-lua-prometheus's shared dict against shmetrics' Lua binding: the
same workload (lua/workload.lua) in two real nginx (Debian's, with its lua
module), 2 workers each. The only difference between their nginx.conf is
the switch docs/migrating.md describes: the `init` line.

Compared, series by series, without normalising (harness.py):
- the pages: the peer's `/metrics` against the exporter's page in text
  0.0.4 and in OpenMetrics, and against the binding's own `collect()`;
- what a real Prometheus 2.42 stores from each, scraping both with its
  default settings (OpenMetrics first), through a proxy that asks for text
  0.0.4 only (Prometheus 3's `scrape_protocols: [PrometheusText0.0.4]`),
  and with `--enable-feature=native-histograms` (protobuf first): names,
  labels, values, and the targets' metadata (type, help).
A difference fails unless docs/migrating.md's table lists it as chosen.

Run by scripts/migration-tests.sh (SHMETRICS_LIBRARY, SHMETRICS_BIN,
NLP_PEER_DIR).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import harness as h

HERE = Path(__file__).resolve().parent
LUA_BINDING = h.REPO / "bindings" / "lua"
MODULES = Path("/usr/lib/nginx/modules")
PAIR = "nginx-lua-prometheus"
REQUESTS = 600
PREFIX = "myapp_"

PEER_INIT = 'require("prometheus").init("prometheus_metrics", {prefix = "%s", sync_interval = 0.1})' % PREFIX
OUR_INIT = 'require("shmetrics").init("{store}", {{prefix = "%s", library = "{library}"}})' % PREFIX


def nginx_conf(tmp: Path, port: int, init: str) -> str:
    user = "user root root;\n" if os.geteuid() == 0 else ""
    temps = "".join(f"    {k}_temp_path {tmp}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    peer = h.env("NLP_PEER_DIR")
    return f"""{user}daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes 2;
events {{ worker_connections 1024; }}
http {{
{temps}    access_log off;
    lua_package_path "{HERE}/lua/?.lua;{peer}/?.lua;{LUA_BINDING}/?.lua;;";
    lua_shared_dict prometheus_metrics 10M;
    init_worker_by_lua_block {{
        prometheus = {init}
        workload = require("workload")
        workload.define(prometheus)
    }}
    server {{
        listen 127.0.0.1:{port} reuseport;
        location = /work {{
            content_by_lua_block {{
                workload.run(tonumber(ngx.var.arg_i))
                ngx.say(ngx.worker.pid())
            }}
        }}
        location = /metrics {{
            content_by_lua_block {{ prometheus:collect() }}
        }}
    }}
}}
"""


class Nginx:
    def __init__(self, tmp: Path, init: str) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp
        self.port = h.free_port()
        conf = tmp / "nginx.conf"
        conf.write_text(nginx_conf(tmp, self.port, init))
        self.proc = subprocess.Popen(
            ["/usr/sbin/nginx", "-p", str(tmp), "-c", str(conf)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        h.wait_for(f"nginx ({tmp.name})", lambda: self.proc.poll() is None and self.get("/metrics")[0] == 200)

    def get(self, path: str, headers: dict | None = None) -> tuple[int, dict, str]:
        return h.http_get(f"http://127.0.0.1:{self.port}{path}", headers)

    def errors(self) -> str:
        log = self.tmp / "error.log"
        return log.read_text() if log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def drive(nginx: Nginx, n: int, threads: int = 8) -> set[str]:
    """Requests i = 0..n-1 from `threads` clients; the worker pids that served."""
    pids: set[str] = set()
    lock = threading.Lock()
    failures: list[str] = []

    def client(k: int) -> None:
        for i in range(k, n, threads):
            status, _, body = nginx.get(f"/work?i={i}")
            with lock:
                if status != 200:
                    failures.append(f"/work?i={i}: {status} {body[:200]}")
                pids.add(body.strip())

    ts = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not failures, failures[:5]
    return pids


def requests_total(body: str) -> float:
    page = h.parse_page(body, openmetrics=False)
    return sum(s.value for s in page.samples if s.name == f"{PREFIX}http_requests_total")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Both stacks, their Prometheus runs, the workload done and settled."""
    tmp = tmp_path_factory.mktemp("nlp")
    store = tmp / "store" / "nginx.metrics"
    store.parent.mkdir()
    started: list = []
    try:
        peer = Nginx(tmp / "peer", PEER_INIT)
        started.append(peer)
        ours = Nginx(tmp / "ours", OUR_INIT.format(store=store, library=h.env("SHMETRICS_LIBRARY")))
        started.append(ours)
        eport = h.free_port()
        exporter = subprocess.Popen(
            [h.env("SHMETRICS_BIN"), "serve", "--store", str(store), "--listen", f"127.0.0.1:{eport}"],
            stderr=open(tmp / "exporter.log", "w"),
        )
        started.append(exporter)
        exp = f"127.0.0.1:{eport}"
        h.wait_for("exporter", lambda: h.http_get(f"http://{exp}/metrics")[0] == 200)
        proxy = h.AcceptProxy(f"http://{exp}")
        started.append(proxy)
        peer_addr = f"127.0.0.1:{peer.port}"
        default = h.Prometheus(
            tmp / "prom-default", {"peer": peer_addr, "shmetrics": exp, "shmetrics-text": proxy.address}
        )
        started.append(default)
        native = h.Prometheus(tmp / "prom-native", {"peer": peer_addr, "shmetrics": exp}, "native-histograms")
        started.append(native)
        p3 = h.Prometheus(tmp / "prom3", {"peer": peer_addr, "shmetrics": exp}, binary=h.prometheus3())
        started.append(p3)

        for side in (peer, ours):
            pids = drive(side, REQUESTS)
            assert len(pids) == 2, f"{side.tmp.name}: requests served by {pids}, not by both workers"
        # nginx-lua-prometheus's workers add their counts every sync_interval.
        h.wait_for("the peer's counts", lambda: requests_total(peer.get("/metrics")[2]) == REQUESTS)
        h.wait_for("the exporter's counts", lambda: requests_total(h.http_get(f"http://{exp}/metrics")[2]) == REQUESTS)
        settled = time.time()
        at = max(p.wait_scraped_after(settled + 0.5) for p in (default, native, p3))
        yield {"peer": peer, "ours": ours, "exporter": exp, "default": default, "native": native, "p3": p3,
               "at": at}
        for side in (peer, ours):
            assert "[error]" not in side.errors(), side.errors()[-2000:]
    finally:
        for s in reversed(started):
            if isinstance(s, subprocess.Popen):
                s.terminate()
                s.wait(10)
            elif isinstance(s, h.AcceptProxy):
                s.close()
            else:
                s.stop()


def peer_page(run) -> h.Page:
    status, headers, body = run["peer"].get("/metrics")
    assert status == 200
    h.promtool_check(body)
    return h.parse_page(body, openmetrics=False)


def test_page_text(run):
    """The exporter's text 0.0.4 page (no Accept, as curl) against the peer's."""
    ours = h.exporter_page(run["exporter"], openmetrics=False)
    h.assert_no_unchosen(PAIR, h.diff_pages("page-text", peer_page(run), ours))


def test_page_openmetrics(run):
    """The exporter's OpenMetrics page (Prometheus's Accept) against the peer's."""
    ours = h.exporter_page(run["exporter"], openmetrics=True)
    h.assert_no_unchosen(PAIR, h.diff_pages("page-openmetrics", peer_page(run), ours))


def test_page_collect(run):
    """The binding's own `prometheus:collect()` in nginx against the peer's."""
    status, _, body = run["ours"].get("/metrics")
    assert status == 200
    h.promtool_check(body)
    h.assert_no_unchosen(PAIR, h.diff_pages("page-collect", peer_page(run), h.parse_page(body, False)))


def test_prometheus_default(run):
    """What Prometheus 2.42 stores with its default scrape (OpenMetrics first)."""
    diffs = h.diff_prometheus("prometheus-default", run["default"], "peer", "shmetrics", run["at"])
    h.assert_no_unchosen(PAIR, diffs)


def test_prometheus_text(run):
    """What Prometheus stores when the scrape asks for text 0.0.4 only."""
    diffs = h.diff_prometheus("prometheus-text", run["default"], "peer", "shmetrics-text", run["at"])
    h.assert_no_unchosen(PAIR, diffs)


def test_prometheus_protobuf(run):
    """What Prometheus 2.42 stores with native histograms on (protobuf first)."""
    h.assert_serves_protobuf(run["exporter"])
    diffs = h.diff_prometheus("prometheus-protobuf", run["native"], "peer", "shmetrics", run["at"])
    h.assert_no_unchosen(PAIR, diffs)


def test_both_sides_counted_everything(run):
    """The comparison is of a real workload: both pages count every request."""
    assert requests_total(run["peer"].get("/metrics")[2]) == REQUESTS
    assert requests_total(h.http_get(f"http://{run['exporter']}/metrics")[2]) == REQUESTS


def test_prometheus3_default(run):
    """What Prometheus 3 stores with its default scrape settings."""
    diffs = h.diff_prometheus("prometheus3-default", run["p3"], "peer", "shmetrics", run["at"])
    h.assert_no_unchosen(PAIR, diffs)

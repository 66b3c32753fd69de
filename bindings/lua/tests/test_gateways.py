"""Gateway plugins' metrics code on shmetrics, in a real nginx.

tests/gateways/ holds two exporters written for this test in the shape of
APISIX's and Kong's prometheus plugins, against nginx-lua-prometheus's
API and module (`require("prometheus")`, a shared dict's name in `init`).
The test changes only their require and init lines (the store's path in
place of the dict's name), as docs/lua.md's migration recipe says, and
runs both in one nginx with 2 workers: APISIX-style (init in
init_worker_by_lua, the page from `table.concat(prometheus:metric_data())`)
and Kong-style (init in init_by_lua, `init_worker()` in
init_worker_by_lua, the page from `collect()`), each updating from the log
phase of its own server. The pages are checked with promtool and
prometheus_client's parser against the requests sent.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from test_nginx import LUA_DIR, MODULES, NGINX, env, free_port, get, wait_for

PLUGINS = LUA_DIR / "tests" / "gateways"

# (file, the lines as the gateway has them, the lines on shmetrics); the
# store's path is filled in.
MIGRATIONS = {
    "apisix_style.lua": [
        ('local base_prometheus = require("prometheus")',
         'local base_prometheus = require("shmetrics")'),
        ('prometheus = base_prometheus.init("prometheus-metrics", "apisix_")',
         'prometheus = base_prometheus.init("{store}", "apisix_")'),
    ],
    "kong_style.lua": [
        ('prometheus = require("prometheus").init("prometheus_metrics", "kong_")',
         'prometheus = require("shmetrics").init("{store}", "kong_")'),
    ],
}

# Requests each gateway's server gets: path -> (status, count).
TRAFFIC = {"/a": (200, 30), "/b": (201, 12), "/missing": (404, 7)}


def migrate(name: str, store: Path, out_dir: Path) -> None:
    """Writes the plugin with only its require and init lines changed."""
    text = (PLUGINS / name).read_text()
    for old, new in MIGRATIONS[name]:
        assert text.count(old) == 1, f"{name} has no line {old!r}"
        text = text.replace(old, new.format(store=store))
    before = (PLUGINS / name).read_text().splitlines()
    after = text.splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(before) == len(after) and len(changed) == len(MIGRATIONS[name])
    (out_dir / name).write_text(text)


def conf(tmp: Path, ports: dict[str, int]) -> str:
    user = "user root root;\n" if os.geteuid() == 0 else ""
    temps = "".join(
        f"    {k}_temp_path {tmp}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    routes = "".join(
        f'        location = {path} {{ return {status} "{path}\\n"; }}\n'
        for path, (status, _) in TRAFFIC.items()
    )
    return f"""{user}daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes 2;
env SHMETRICS_LIBRARY;
events {{ worker_connections 256; }}
http {{
{temps}    access_log off;
    lua_package_path "{tmp}/plugins/?.lua;{LUA_DIR}/?.lua;;";
    init_by_lua_block {{
        kong_exporter = require("kong_style")
        kong_exporter.init()
    }}
    init_worker_by_lua_block {{
        kong_exporter.init_worker()
        apisix_exporter = require("apisix_style")
        apisix_exporter.http_init()
    }}
    server {{
        listen 127.0.0.1:{ports["apisix"]};
        log_by_lua_block {{ apisix_exporter.http_log() }}
{routes}    }}
    server {{
        listen 127.0.0.1:{ports["kong"]};
        log_by_lua_block {{ kong_exporter.log(kong_exporter.serialize()) }}
{routes}    }}
    server {{
        listen 127.0.0.1:{ports["metrics"]};
        location = /ready {{ return 200 "ok\\n"; }}
        location = /apisix/prometheus/metrics {{ content_by_lua_block {{ apisix_exporter.collect() }} }}
        location = /kong/metrics {{ content_by_lua_block {{ kong_exporter.collect() }} }}
    }}
}}
"""


def promtool_check(page: str) -> None:
    r = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    # promtool's lint warns about names (counters without _total among
    # them: the plugins' own names); only a parse error fails it here.
    assert "error while linting" not in r.stderr + r.stdout, r.stderr + r.stdout


def samples(page: str) -> dict[tuple[str, frozenset], float]:
    """The page's samples by name and labels, read by prometheus_client's
    parser (which names every counter sample `..._total`, whatever the
    page says: the page's own names are checked on its lines)."""
    out = {}
    for fam in text_string_to_metric_families(page):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def fetch_pages(port: int) -> dict[str, str]:
    """Both gateways' metrics pages."""
    pages = {}
    for gateway, path in (("apisix", "/apisix/prometheus/metrics"), ("kong", "/kong/metrics")):
        status, body = get(port, path)
        assert status == 200, body
        pages[gateway] = body
    return pages


def settled(pages: dict[str, str]) -> bool:
    """Whether both pages count every request of TRAFFIC in the series
    the test checks: the status counters and the latency histograms'
    `_count`. (A histogram's `_count` implies its `_sum`: the core adds
    an observation to the sum before it counts it, and reads the counts
    before the sums.)"""
    a, k = samples(pages["apisix"]), samples(pages["kong"])
    node = {"service": "svc-1", "consumer": "", "node": "127.0.0.1"}
    lat = {"service": "svc", "workspace": "default"}
    want = []
    for path, (status, count) in TRAFFIC.items():
        labels = dict(node, code=str(status), route=path, matched_uri=path, matched_host="127.0.0.1")
        want.append((a, "apisix_http_status_total", labels, count))
        want.append((a, "apisix_http_latency_count", dict(node, type="request", route=path), count))
        labels = dict(lat, route=path, code=str(status), source="service", consumer="")
        want.append((k, "kong_http_requests_total", labels, count))
        for name in ("kong_kong_latency_ms_count", "kong_request_latency_ms_count"):
            want.append((k, name, dict(lat, route=path), count))
    return all(s.get((name, frozenset(labels.items()))) == count for s, name, labels, count in want)


def run_gateways(tmp: Path) -> tuple[dict[str, str], str]:
    """Starts nginx with both plugins, sends TRAFFIC to each gateway and
    returns their pages and nginx's error log."""
    (tmp / "plugins").mkdir()
    migrate("apisix_style.lua", tmp / "apisix.metrics", tmp / "plugins")
    migrate("kong_style.lua", tmp / "kong.metrics", tmp / "plugins")
    ports = {k: free_port() for k in ("apisix", "kong", "metrics")}
    (tmp / "nginx.conf").write_text(conf(tmp, ports))
    e = dict(os.environ, SHMETRICS_LIBRARY=env("SHMETRICS_LIBRARY"))
    proc = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf")], env=e,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for("nginx", lambda: proc.poll() is None and get(ports["metrics"], "/ready", timeout=2)[0] == 200)
        for gateway in ("apisix", "kong"):
            for path, (status, count) in TRAFFIC.items():
                for _ in range(count):
                    assert get(ports[gateway], path)[0] == status
        # nginx runs a request's log phase after the response has gone, so
        # the last requests' updates may land just after their clients have
        # the answer: fetch until the pages count every request.
        deadline = time.monotonic() + 10
        while True:
            pages = fetch_pages(ports["metrics"])
            if settled(pages) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return pages, (tmp / "error.log").read_text()


def test_apisix_and_kong_style_plugins_run_unchanged_but_for_require_and_init(tmp_path: Path) -> None:
    pages, log = run_gateways(tmp_path)
    assert "[error]" not in log, log

    apisix = pages["apisix"]
    promtool_check(apisix)
    s = samples(apisix)
    node = {"service": "svc-1", "consumer": "", "node": "127.0.0.1"}
    for path, (status, count) in TRAFFIC.items():
        labels = dict(node, code=str(status), route=path, matched_uri=path, matched_host="127.0.0.1")
        assert s[("apisix_http_status_total", frozenset(labels.items()))] == count, path
        lat = dict(node, type="request", route=path)
        assert s[("apisix_http_latency_count", frozenset(lat.items()))] == count, path
        for direction in ("ingress", "egress"):
            bw = dict(node, type=direction, route=path)
            assert s[("apisix_bandwidth_total", frozenset(bw.items()))] > count * 10, (path, direction)
    # Counters keep the names the plugin gave them, the prefix applies to
    # every family, the error counter's included, and nothing failed.
    assert re.search(r"^# TYPE apisix_http_status counter$", apisix, re.M)
    assert re.search(r"^# TYPE apisix_bandwidth counter$", apisix, re.M)
    assert re.search(r'^apisix_http_status\{code="200",route="/a",', apisix, re.M)
    assert re.search(r'^apisix_bandwidth\{type="egress",route="/a",', apisix, re.M)
    assert "apisix_http_status_total" not in apisix and "apisix_bandwidth_total" not in apisix
    assert s[("apisix_nginx_metric_errors_total", frozenset())] == 0
    assert s[("apisix_nginx_http_current_connections", frozenset({("state", "active")}))] >= 1
    assert ("apisix_http_requests_total", frozenset()) in s

    kong = pages["kong"]
    promtool_check(kong)
    s = samples(kong)
    for path, (status, count) in TRAFFIC.items():
        labels = {"service": "svc", "route": path, "code": str(status), "source": "service",
                  "workspace": "default", "consumer": ""}
        assert s[("kong_http_requests_total", frozenset(labels.items()))] == count, path
        lat = frozenset({"service": "svc", "route": path, "workspace": "default"}.items())
        assert s[("kong_kong_latency_ms_count", lat)] == count, path
        assert s[("kong_kong_latency_ms_sum", lat)] == count * 0.5, path
        assert s[("kong_request_latency_ms_count", lat)] == count, path
        egress = {"service": "svc", "route": path, "direction": "egress", "workspace": "default", "consumer": ""}
        assert s[("kong_bandwidth_bytes_total", frozenset(egress.items()))] > count * 10, path
    assert re.search(r"^# TYPE kong_bandwidth_bytes counter$", kong, re.M)
    assert re.search(r'^kong_bandwidth_bytes\{service="svc",route="/a",', kong, re.M)
    assert s[("kong_nginx_metric_errors_total", frozenset())] == 0
    active = frozenset({"node_id": "node-1", "subsystem": "http", "state": "active"}.items())
    assert s[("kong_nginx_connections_total", active)] >= 1

#!/usr/bin/env python3
"""Benchmarks of the Lua binding in a real nginx (Debian's nginx with
libnginx-mod-http-lua), driven by wrk. Prints figures and ratios; no
pass/fail. Run through benches/lua/bench.sh, which builds and installs what
is needed.

1. Hot-path tax: req/s and the worker's CPU per request with 1 nginx worker
   in interleaved rounds: no log handler, an empty log_by_lua handler, the
   handler's reads alone, a counter plus a histogram update through
   shmetrics (the handler of docs/lua.md), the same with 11 update pairs
   (for the marginal cost of one), and the two updates with constant labels
   and no ngx.* call (a handler LuaJIT compiles whole).
2. Long tail: 100k series in the store, `wrk --latency` against a static
   location with 2 workers, (a) with no scrapes, (b) with the exporter
   scraped every 5 s, (c) with nginx's own /metrics (prometheus:collect(),
   rendered by the core inside a worker) scraped every 5 s.

    benches/lua/bench.sh [--seconds S] [--rounds R] [--tail-seconds T] [--only tax|tail]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LUA_DIR = REPO / "bindings" / "lua"
MODULES = Path("/usr/lib/nginx/modules")
LIB = os.environ.get("SHMETRICS_LIBRARY", str(REPO / "target/release/libshmetrics.so"))
BIN = os.environ.get("SHMETRICS_BIN", str(REPO / "target/release/shmetrics"))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str, timeout: float = 30) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_for(check, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"{what} did not come up")


INIT = """
    init_worker_by_lua_block {{
        prometheus = require("shmetrics").init("{store}", {{ library = "{lib}", max_series = 400000, label_bytes = 64 * 1024 * 1024 }})
        metric_requests = prometheus:counter("nginx_http_requests_total", "Number of HTTP requests", {{"route", "status"}})
        metric_latency = prometheus:histogram("nginx_http_request_duration_seconds", "HTTP request latency", {{"route"}})
    }}
"""

# The log handler of docs/lua.md. ngx.status and ngx.now() -
# ngx.req.start_time() instead of ngx.var.status and ngx.var.request_time:
# each ngx.var read costs about a microsecond in the log phase.
UPDATE = """
    log_by_lua_block {
        local route = ngx.var.uri
        metric_requests:inc(1, {route, ngx.status})
        metric_latency:observe(ngx.now() - ngx.req.start_time(), {route})
    }
"""

# The same reads, no update: to tell the handler's reads from shmetrics.
READS_ONLY = """
    log_by_lua_block {
        local route, status = ngx.var.uri, ngx.status
        local t = ngx.now() - ngx.req.start_time()
    }
"""

# The same handler with 11 update pairs: (this - UPDATE) / 10 is the
# marginal cost of one counter inc plus one histogram observe.
UPDATE_X11 = """
    log_by_lua_block {
        local route = ngx.var.uri
        local status, t = ngx.status, ngx.now() - ngx.req.start_time()
        for _ = 1, 11 do
            metric_requests:inc(1, {route, status})
            metric_latency:observe(t, {route})
        end
    }
"""


# The two updates with constant labels and no ngx.* call. lua-resty-core's
# ngx.var aborts LuaJIT's traces, which leaves the documented handler
# interpreted; this one compiles whole.
CONSTANT = """
    log_by_lua_block {
        metric_requests:inc(1, {"/", "200"})
        metric_latency:observe(0.001, {"/"})
    }
"""


class Nginx:
    def __init__(self, tmp: Path, workers: int, http_extra: str, pin: bool = False) -> None:
        self.tmp = tmp
        self.port = free_port()
        user = "user root root;\n" if os.geteuid() == 0 else ""
        # Pinned runs: the worker on CPU 0, wrk on CPU 1 (see wrk()), so the
        # two do not trade places on this 2-CPU machine.
        affinity = "worker_cpu_affinity 01;\n" if pin else ""
        temps = "".join(f"    {k}_temp_path {tmp}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = f"""{user}daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes {workers};
{affinity}events {{ worker_connections 4096; }}
http {{
{temps}    access_log off;
    lua_package_path "{LUA_DIR}/?.lua;;";
{http_extra}
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        location / {{ return 200 "ok\\n"; }}
        location = /metrics {{ content_by_lua_block {{ prometheus:collect() }} }}
    }}
}}
"""
        (tmp / "nginx.conf").write_text(conf)
        self.proc = subprocess.Popen(["/usr/sbin/nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf")],
                                     stderr=subprocess.PIPE)
        wait_for(lambda: self.proc.poll() is None and get(self.port, "/warmup", 2)[0] == 200, "nginx")

    def workers(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def cpu_ticks(self) -> int:
        total = 0
        for pid in self.workers():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        log = (self.tmp / "error.log").read_text() if (self.tmp / "error.log").exists() else ""
        errors = [l for l in log.splitlines() if "[error]" in l or "shmetrics:" in l]
        if errors:
            raise SystemExit("nginx logged errors:\n" + "\n".join(errors[:10]))


def wrk(port: int, seconds: int, threads: int, conns: int, path: str = "/", pin: bool = False) -> dict:
    out = subprocess.run((["taskset", "-c", "1"] if pin else []) + ["wrk", f"-t{threads}", f"-c{conns}", f"-d{seconds}s", "--latency",
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    def dur(s: str) -> float:
        m = re.match(r"([\d.]+)(us|ms|s|m)$", s)
        assert m, s
        return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]
    lat = re.search(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)", out)
    p99 = re.search(r"^\s+99%\s+(\S+)$", out, re.M)  # the Latency Distribution line
    reqs = re.search(r"(\d+) requests in", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {"rps": float(rps.group(1)), "requests": int(reqs.group(1)), "max": dur(lat.group(3)),
            "p99": dur(p99.group(1)), "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "errors": errors.group(1) if errors else "", "raw": out}


def hot_path_tax(seconds: int, rounds: int) -> None:
    print(f"== Hot-path tax: 1 nginx worker on CPU 0, wrk -t1 -c32 -d{seconds}s on CPU 1, {rounds} interleaved rounds")
    setups = {
        "no log handler": "",
        "empty log_by_lua": "    log_by_lua_block { }\n",
        "the handler's reads, no update": READS_ONLY,
        "shmetrics counter+histogram": UPDATE,
        "shmetrics, 11 update pairs": UPDATE_X11,
        # No ngx.* call: LuaJIT can compile the whole handler.
        "shmetrics, constant labels, no ngx.*": CONSTANT,
    }
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in setups}
    with tempfile.TemporaryDirectory() as d:
        store = Path(d) / "tax.metrics"
        for r in range(rounds):
            for name, handler in setups.items():
                tmp = Path(d) / f"{r}-{len(results[name])}-{abs(hash(name))}"
                tmp.mkdir()
                n = Nginx(tmp, 1, INIT.format(store=store, lib=LIB) + handler, pin=True)
                try:
                    wrk(n.port, 1, 1, 32, pin=True)  # warm the JIT and the label cache
                    t0 = n.cpu_ticks()
                    res = wrk(n.port, seconds, 1, 32, pin=True)
                    cpu_us = (n.cpu_ticks() - t0) / CLK_TCK / res["requests"] * 1e6
                    assert res["non2xx"] == 0 and not res["errors"], res["raw"]
                finally:
                    n.stop()
                results[name].append((res["rps"], cpu_us))
                print(f"   round {r + 1}: {name:30s} {res['rps']:10.0f} req/s  {cpu_us:6.2f} us CPU/req")
        # The updates really happened: the store has every request.
        status, body = get_store_total(store)
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in results.items()}
    print(f"   {'setup':30s} {'req/s (median)':>15s} {'worker CPU us/req':>18s}")
    for k, (rps, cpu) in med.items():
        print(f"   {k:30s} {rps:15.0f} {cpu:18.2f}")
    base, upd = med["empty log_by_lua"], med["shmetrics counter+histogram"]
    print(f"   shmetrics / empty handler req/s ratio: {upd[0] / base[0]:.3f} (target >= 0.97)")
    print(f"   CPU per request above the empty handler: {upd[1] - base[1]:+.3f} us (target <= 0.2 us)")
    reads = med["the handler's reads, no update"]
    print(f"   of which the handler's reads: {reads[1] - base[1]:+.3f} us; the shmetrics updates: "
          f"{upd[1] - reads[1]:+.3f} us (req/s ratio to the reads alone: {upd[0] / reads[0]:.3f})")
    x11 = med["shmetrics, 11 update pairs"]
    print(f"   marginal CPU of one counter inc + histogram observe: {(x11[1] - upd[1]) / 10 * 1e3:.0f} ns")
    const = med["shmetrics, constant labels, no ngx.*"]
    print(f"   a compilable handler (constant labels, no ngx.*) above the empty handler: "
          f"{const[1] - base[1]:+.3f} us CPU, req/s ratio {const[0] / base[0]:.3f}")
    print(f"   empty handler / no handler req/s ratio: {base[0] / med['no log handler'][0]:.3f}")
    print(f"   store check: {status}")


def get_store_total(store: Path) -> tuple[str, int]:
    out = subprocess.run([BIN, "dump", "--store", str(store)], capture_output=True, text=True, check=True).stdout
    total = sum(float(l.rsplit(" ", 1)[1]) for l in out.splitlines() if l.startswith("nginx_http_requests_total{"))
    return f"{int(total)} requests counted in the store", int(total)


POPULATE = """
package.path = "{lua}/?.lua;" .. package.path
local p = require("shmetrics").init("{store}", {{ library = "{lib}", max_series = 400000, label_bytes = 64 * 1024 * 1024 }})
-- 80k counter series in 8 families, and 2k histogram series with the
-- default 19 buckets (2k x 22 = 44k lines): about 124k sample lines.
for f = 1, 8 do
  local c = p:counter("bench_family_" .. f .. "_total", "A counter family.", {{"tenant", "route"}})
  for i = 1, 10000 do c:inc(i, {{"tenant-" .. (i % 100), "/route/" .. i}}) end
end
local h = p:histogram("bench_latency_seconds", "A histogram family.", {{"route"}})
for i = 1, 2000 do h:observe(i / 1000, {{"/route/" .. i}}) end
"""


def long_tail(seconds: int, interval: float) -> None:
    print(f"== Long tail: 100k series, 2 nginx workers, wrk -t2 -c50 -d{seconds}s --latency on a static location")
    with tempfile.TemporaryDirectory() as d:
        store = Path(d) / "tail.metrics"
        subprocess.run(["luajit", "-e", POPULATE.format(lua=LUA_DIR, store=store, lib=LIB)], check=True)
        eport = free_port()
        exporter = subprocess.Popen([BIN, "serve", "--store", str(store), "--listen", f"127.0.0.1:{eport}"],
                                    stderr=subprocess.DEVNULL)
        wait_for(lambda: get(eport, "/healthz", 2)[0] == 200, "exporter")
        tmp = Path(d) / "nginx"
        tmp.mkdir()
        n = Nginx(tmp, 2, INIT.format(store=store, lib=LIB) + UPDATE)
        try:
            lines = sum(1 for l in get(eport, "/metrics")[1].split(b"\n") if l and not l.startswith(b"#"))
            print(f"   exporter page: {lines} sample lines")
            rows = {}
            every = f"every {interval:g} s"
            phases = (("no scrapes", None), (f"exporter scraped {every}", eport),
                      (f"nginx /metrics (collect) {every}", n.port))
            for phase, target in phases:
                stop = threading.Event()
                times: list[float] = []
                sizes: list[int] = []

                def scraper() -> None:
                    while not stop.wait(interval):
                        t0 = time.perf_counter()
                        status, body = get(target, "/metrics")
                        times.append(time.perf_counter() - t0)
                        sizes.append(len(body))
                        assert status == 200

                th = threading.Thread(target=scraper)
                if target:
                    th.start()
                res = wrk(n.port, seconds, 2, 50, "/static")
                stop.set()
                if target:
                    th.join()
                rows[phase] = res
                extra = ""
                if times:
                    extra = (f"  scrape GET median {statistics.median(times) * 1e3:.1f} ms"
                             f" max {max(times) * 1e3:.1f} ms ({len(times)} scrapes, {sizes[-1] / 1e6:.1f} MB)")
                print(f"   {phase:38s} {res['rps']:9.0f} req/s  p99 {res['p99'] * 1e3:7.2f} ms"
                      f"  max {res['max'] * 1e3:8.2f} ms{extra}")
            _, body = get(eport, "/metrics")
            secs = re.search(rb"^shmetrics_exporter_render_seconds_total ([\d.e+-]+)$", body, re.M)
            renders = re.search(rb"^shmetrics_exporter_renders_total ([\d.e+-]+)$", body, re.M)
            assert secs and renders, "the exporter's render metrics are missing"
            print(f"   exporter render time, mean over {int(float(renders.group(1)))} renders: "
                  f"{float(secs.group(1)) / float(renders.group(1)) * 1e3:.1f} ms")
            base = rows["no scrapes"]["max"]
            print(f"   max latency ratio, exporter scraped / no scrapes: {rows[phases[1][0]]['max'] / base:.2f} (target <= 1.2)")
            print(f"   max latency ratio, in-nginx collect / no scrapes: {rows[phases[2][0]]['max'] / base:.2f}")
        finally:
            n.stop()
            exporter.terminate()
            exporter.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=8, help="wrk duration per hot-path run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tail-seconds", type=int, default=30)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between scrapes")
    ap.add_argument("--only", choices=["tax", "tail"])
    a = ap.parse_args()
    print(f"nginx {subprocess.run(['/usr/sbin/nginx', '-v'], capture_output=True, text=True).stderr.strip()}, "
          f"{os.cpu_count()} CPUs, library {LIB}")
    if a.only in (None, "tax"):
        hot_path_tax(a.seconds, a.rounds)
    if a.only in (None, "tail"):
        long_tail(a.tail_seconds, a.interval)


if __name__ == "__main__":
    main()

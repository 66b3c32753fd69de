#!/usr/bin/env python3
"""Benchmarks of the Lua binding in a real nginx (Debian's nginx with
libnginx-mod-http-lua), driven by wrk or, for instruction counts, by a
client that sends an exact number of requests. Prints figures and ratios;
no pass/fail. Run through benches/lua/bench.sh, which builds and installs
what is needed.

1. Hot-path tax (--only tax): req/s and the worker's CPU per request with 1
   nginx worker in interleaved rounds: no log handler, an empty log_by_lua
   handler, the handler's reads alone, a counter plus a histogram update
   through shmetrics (the handler of docs/lua.md), the same with 11 update
   pairs (for the marginal cost of one), the two updates with constant
   labels and no ngx.* call, and the handler's three lines inline in the
   log_by_lua block (docs/lua.md's handler before it moved into a function).
2. Hot-path tax in instructions (--only instr): the same setups, plus
   log_by_lua calling an empty function and the reads through ngx.var
   (ngx.var.status, ngx.var.request_time), in one nginx process under
   valgrind's callgrind, which counts the instructions the process
   executes; per request from the difference of two runs of W and W + N
   requests; with --instr-window, from one run per setup, counting only
   the N requests after the W warm-up ones (callgrind_control --zero, then
   --dump). Repeatable where CPU time on a shared machine is not, but not
   time: see the text it prints.
3. Long tail (--only tail): 100k series in the store, `wrk --latency`
   against a static location with 2 workers, (a) with no scrapes, (b) with
   the exporter scraped every 5 s, (c) with nginx's own /metrics
   (prometheus:collect(), rendered by the core inside a worker) scraped
   every 5 s; then interleaved pairs of shorter runs without and with the
   exporter's scrapes, and the median of their max latency ratios; then
   (unless --no-tail-peer) nginx-lua-prometheus with the same series and
   handler, without scrapes and with its collect() scraped as often, and
   the p99 and max ratios of shmetrics' runs to its scraped run.
4. In-app render (--only inapp, for benches/inapp_render.sh): the time of
   a GET /metrics (prometheus:collect() in a worker) with 10k series
   written by 16 workers, shmetrics against nginx-lua-prometheus on its
   shared dict; see inapp().
   $EXPORTER_ARGS (split on spaces) go to `shmetrics serve`, e.g.
   EXPORTER_ARGS="--sched-slice-us 0" for the kernel's default slice.

    benches/lua/bench.sh [--seconds S] [--rounds R] [--tail-seconds T]
        [--interval S] [--tail-pairs P] [--tail-pair-seconds S] [--no-tail-peer]
        [--instr-requests N] [--instr-warmup W] [--instr-reps R] [--instr-window]
        [--instr-keep DIR] [--lua-dir DIR] [--only tax|instr|tail|inapp]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
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


# The definitions of docs/lua.md, with the bench's store and capacities,
# and the functions the log handlers below call. They are defined once per
# worker: defining a function that is never called costs a request nothing.
INIT = """
    init_worker_by_lua_block {{
        prometheus = require("shmetrics").init("{store}", {{ library = "{lib}", max_series = 400000, label_bytes = 64 * 1024 * 1024 }})
        metric_requests = prometheus:counter("nginx_http_requests_total", "Number of HTTP requests", {{"route", "status"}})
        metric_latency = prometheus:histogram("nginx_http_request_duration_seconds", "HTTP request latency", {{"route"}})

        -- The log handler of docs/lua.md.
        function log_metrics()
            local route = ngx.var.uri
            metric_requests:inc(1, {{route, ngx.status}})
            metric_latency:observe(ngx.now() - ngx.req.start_time(), {{route}})
        end

        -- The same reads, no update: to tell the handler's reads from
        -- shmetrics. It returns what it read, so that LuaJIT cannot drop
        -- a read whose result is unused (the string of ngx.var.uri).
        function log_reads()
            local route, status = ngx.var.uri, ngx.status
            return route, status, ngx.now() - ngx.req.start_time()
        end

        -- The reads of the status and the latency through ngx.var instead.
        function log_reads_var()
            local route, status = ngx.var.uri, ngx.var.status
            return route, status, tonumber(ngx.var.request_time)
        end

        -- The handler with 11 update pairs: (this - log_metrics) / 10 is
        -- the marginal cost of one counter inc plus one histogram observe.
        function log_metrics_x11()
            local route = ngx.var.uri
            local status, t = ngx.status, ngx.now() - ngx.req.start_time()
            for _ = 1, 11 do
                metric_requests:inc(1, {{route, status}})
                metric_latency:observe(t, {{route}})
            end
        end

        -- The two updates with constant labels and no ngx.* call.
        function log_constant()
            metric_requests:inc(1, {{"/", "200"}})
            metric_latency:observe(0.001, {{"/"}})
        end

        -- Nothing: the cost of calling a function from log_by_lua.
        function log_nothing() end
    }}
"""

# The log handler of docs/lua.md: log_metrics() above. Its work is in a
# function, not in the log_by_lua block: LuaJIT compiles a function that is
# called often, but runs the block, which nginx calls from C, in its
# interpreter. lua-resty-core's ngx.var, ngx.now() and ngx.req.start_time()
# end in a tail call (`return ffi.string(...)`, `return tonumber(...)`)
# that a trace starting in one of them cannot get past ("NYI: return to
# lower frame", "leaving loop in root trace"), so called from the block they
# run interpreted, their C calls made by the FFI's generic path. Called
# from log_metrics(), they are compiled into its trace.
UPDATE = "    log_by_lua_block { log_metrics() }\n"

# The same three lines in the log_by_lua block itself (docs/lua.md's
# handler before): the reads run interpreted.
UPDATE_INLINE = """
    log_by_lua_block {
        local route = ngx.var.uri
        metric_requests:inc(1, {route, ngx.status})
        metric_latency:observe(ngx.now() - ngx.req.start_time(), {route})
    }
"""

# nginx-lua-prometheus (its pinned copy, $NLP_PEER_DIR) with the same
# metrics and handlers: INIT with its require/init line (and its shared
# dict) in place of shmetrics', as docs/lua.md's migration changes it.
NLP_PEER = Path(os.environ.get("NLP_PEER_DIR") or Path(__file__).resolve().parents[2].parent / "shared/peers/nginx-lua-prometheus-0.20240525")


def nlp_init(dict_size: str = "64m", extra: str = "") -> str:
    """INIT for nginx-lua-prometheus, its shared dict `dict_size`, and the
    Lua `extra` run at the end of init_worker_by_lua."""
    shm_line = next(line for line in INIT.splitlines() if 'require("shmetrics")' in line)
    nlp_line = (f'        package.path = "{NLP_PEER}/?.lua;" .. package.path; '
                'prometheus = require("prometheus").init("prometheus_metrics")')
    last = "        function log_nothing() end\n"
    return (f"    lua_shared_dict prometheus_metrics {dict_size};\n"
            + INIT.replace(shm_line, nlp_line).replace(last, last + extra))


EMPTY = "    log_by_lua_block { }\n"
READS_ONLY = "    log_by_lua_block { log_reads() }\n"
READS_VAR = "    log_by_lua_block { log_reads_var() }\n"
UPDATE_X11 = "    log_by_lua_block { log_metrics_x11() }\n"
CONSTANT = "    log_by_lua_block { log_constant() }\n"
CALL_ONLY = "    log_by_lua_block { log_nothing() }\n"


class Nginx:
    """nginx with `workers` workers, or with `single` one process that is
    master and worker at once (master_process off), started through
    `wrapper` (valgrind) when given."""

    def __init__(self, tmp: Path, workers: int, http_extra: str, pin: bool = False,
                 single: bool = False, wrapper: list[str] | None = None) -> None:
        self.tmp = tmp
        self.single = single
        self.port = free_port()
        user = "user root root;\n" if os.geteuid() == 0 and not single else ""
        # Pinned runs: the worker on CPU 0, wrk on CPU 1 (see wrk()), so the
        # two do not trade places on this 2-CPU machine.
        affinity = "worker_cpu_affinity 01;\n" if pin else ""
        process = "master_process off;\n" if single else ""
        temps = "".join(f"    {k}_temp_path {tmp}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = f"""{user}daemon off;
{process}pid {tmp}/nginx.pid;
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
        self.stderr = open(tmp / "stderr.log", "w")
        self.proc = subprocess.Popen((wrapper or []) + ["/usr/sbin/nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf")],
                                     stderr=self.stderr)
        if wrapper:
            # Up when it accepts a connection: one connection without a
            # request, so the instruction counts see no extra request.
            def up() -> bool:
                if self.proc.poll() is not None:
                    raise SystemExit(f"nginx exited: {(tmp / 'stderr.log').read_text()[-2000:]}")
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            wait_for(up, "nginx under " + wrapper[0], 120)
        else:
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
        # SIGQUIT again every second: under valgrind a single process
        # sometimes misses it (it arrives between nginx's check of the
        # quit flag and its next epoll_wait, which then sleeps for good).
        deadline = time.monotonic() + 30
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(1 if self.single else 10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
        log = (self.tmp / "error.log").read_text() if (self.tmp / "error.log").exists() else ""
        errors = [l for l in log.splitlines() if "[error]" in l or "shmetrics:" in l]
        if errors:
            raise SystemExit("nginx logged errors:\n" + "\n".join(errors[:10]))


def wrk(port: int, seconds: int, threads: int, conns: int, path: str = "/", pin: bool = False) -> dict:
    out = subprocess.run((["taskset", "-c", "1"] if pin else []) + ["wrk", f"-t{threads}", f"-c{conns}", f"-d{seconds}s", "--latency",
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    return wrk_figures(out)


def wrk_duration(s: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s|m)$", s)
    assert m, s
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]


def wrk_figures(out: str) -> dict:
    """wrk's figures from its output `out`: rps, requests, non2xx, errors,
    timeouts, max and p99 (seconds), and `outcome`, empty when wrk printed
    latencies, else why there are none (max and p99 are then nan, or for
    timeouts max is 2 s, a lower bound). A server whose workers stall
    (nginx-lua-prometheus' collect() at 100k series every second) can make
    every request time out, and wrk then prints no latencies, or nothing at
    all after its header: a figure of the run, not a failure of the bench."""
    def num(pattern: str, conv=float, default=0):
        m = re.search(pattern, out, re.M)
        return conv(m.group(1)) if m else default
    res = {"rps": num(r"Requests/sec:\s+([\d.]+)"), "requests": num(r"(\d+) requests in", int),
           "non2xx": num(r"Non-2xx or 3xx responses: (\d+)", int), "errors": num(r"Socket errors: (.*)", str, ""),
           "timeouts": num(r"timeout (\d+)", int), "raw": out, "outcome": ""}
    lat = re.search(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)", out)
    p99 = re.search(r"^\s+99%\s+(\S+)$", out, re.M)  # the Latency Distribution line
    if "requests in" not in out:
        return res | {"max": float("nan"), "p99": float("nan"),
                      "outcome": "no latencies: wrk printed nothing after its header (all requests stalled)"}
    if res["requests"] == 0:
        return res | {"max": float("nan"), "p99": float("nan"), "outcome": "no latencies: no request completed"}
    if lat and p99:
        return res | {"max": wrk_duration(lat.group(3)), "p99": wrk_duration(p99.group(1))}
    # wrk prints no latencies when requests time out (2 s, its default):
    # the max is then at least the timeout, and the p99 unknown (nan).
    why = f"{res['timeouts']} requests timed out" if res["timeouts"] else "wrk printed none"
    return res | {"max": 2.0 if res["timeouts"] else float("nan"), "p99": float("nan"),
                  "outcome": f"no latencies: {why}"}


def hot_path_tax(seconds: int, rounds: int) -> None:
    print(f"== Hot-path tax: 1 nginx worker on CPU 0, wrk -t1 -c32 -d{seconds}s on CPU 1, {rounds} interleaved rounds")
    print("   (the log handlers call the functions of INIT in bench_nginx.py: log_metrics() is docs/lua.md's)")
    setups = {
        "no log handler": "",
        "empty log_by_lua": EMPTY,
        "the handler's reads, no update": READS_ONLY,
        "shmetrics counter+histogram": UPDATE,
        "shmetrics, 11 update pairs": UPDATE_X11,
        "shmetrics, constant labels, no ngx.*": CONSTANT,
        "shmetrics, handler inline": UPDATE_INLINE,
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
                print(f"   round {r + 1}: {name:36s} {res['rps']:10.0f} req/s  {cpu_us:6.2f} us CPU/req")
        # The updates really happened: the store has every request.
        status, body = get_store_total(store)
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in results.items()}
    print(f"   {'setup':36s} {'req/s (median)':>15s} {'worker CPU us/req':>18s}")
    for k, (rps, cpu) in med.items():
        print(f"   {k:36s} {rps:15.0f} {cpu:18.2f}")
    base, upd = med["empty log_by_lua"], med["shmetrics counter+histogram"]
    print(f"   shmetrics / empty handler req/s ratio: {upd[0] / base[0]:.3f} (target >= 0.97)")
    print(f"   CPU per request above the empty handler: {upd[1] - base[1]:+.3f} us (target <= 0.2 us)")
    reads = med["the handler's reads, no update"]
    print(f"   of which the handler's reads: {reads[1] - base[1]:+.3f} us; the shmetrics updates: "
          f"{upd[1] - reads[1]:+.3f} us (req/s ratio to the reads alone: {upd[0] / reads[0]:.3f})")
    # Paired by round: each round runs every setup back to back, so a
    # difference within a round leaves out the machine's drift between
    # rounds (its noise is still in).
    paired = [h[1] - e[1] for e, h in zip(results["empty log_by_lua"], results["shmetrics counter+histogram"])]
    print(f"   per round, handler - empty handler CPU: {', '.join(f'{d:+.2f}' for d in paired)} us"
          f" (median {statistics.median(paired):+.3f})")
    x11 = med["shmetrics, 11 update pairs"]
    print(f"   marginal CPU of one counter inc + histogram observe: {(x11[1] - upd[1]) / 10 * 1e3:.0f} ns")
    marginal = [(x[1] - h[1]) / 10 * 1e3 for h, x in zip(results["shmetrics counter+histogram"],
                                                         results["shmetrics, 11 update pairs"])]
    print(f"   the same per round, (11 pairs - 1 pair) / 10: {', '.join(f'{m:.0f}' for m in marginal)} ns")
    const = med["shmetrics, constant labels, no ngx.*"]
    print(f"   the two updates with constant labels and no ngx.* above the empty handler: "
          f"{const[1] - base[1]:+.3f} us CPU, req/s ratio {const[0] / base[0]:.3f}")
    inline = med["shmetrics, handler inline"]
    print(f"   the same handler inline in log_by_lua_block (interpreted reads) above the empty handler: "
          f"{inline[1] - base[1]:+.3f} us CPU, req/s ratio {inline[0] / base[0]:.3f}")
    print(f"   empty handler / no handler req/s ratio: {base[0] / med['no log handler'][0]:.3f}")
    print(f"   store check: {status}")


REQUEST = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n"


def send_requests(port: int, n: int, per_connection: int = 100) -> None:
    """Exactly n requests for /, one at a time, over keep-alive connections
    of per_connection requests each; every response must be a 200."""
    done = 0
    while done < n:
        k = min(per_connection, n - done)
        with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
            buf = b""
            for _ in range(k):
                s.sendall(REQUEST)
                while True:
                    h = buf.find(b"\r\n\r\n")
                    if h >= 0:
                        m = re.search(rb"\r\ncontent-length: *(\d+)", buf[:h], re.I)
                        assert m, buf[:h]
                        end = h + 4 + int(m.group(1))
                        if len(buf) >= end:
                            assert buf.startswith(b"HTTP/1.1 200 "), buf[:h]
                            buf = buf[end:]
                            break
                    data = s.recv(65536)
                    assert data, "nginx closed the connection"
                    buf += data
        done += k


# Where callgrind's instructions are, by the object that holds the code.
# LuaJIT's compiled traces live in anonymous memory: callgrind names no
# object for them ("???").
OBJECT_GROUPS = (
    ("nginx", ("nginx", "ngx_http_lua_module.so", "ndk_http_module.so")),
    ("LuaJIT VM", ("libluajit-5.1.so",)),
    ("JIT code", ("???",)),
    ("libshmetrics", ("libshmetrics.so",)),
    ("libc", ("libc.so", "ld-linux", "libm.so", "libgcc_s.so")),
)


def callgrind_costs(out: Path) -> dict[str, int]:
    """The run's instruction total, its self cost per object group, and the
    inclusive cost of the Lua log phase (ngx_http_lua_log_handler), from
    callgrind_annotate."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", str(out)],
                          capture_output=True, text=True, check=True).stdout
    costs = {"total": 0, "log phase": 0, "other": 0} | {g: 0 for g, _ in OBJECT_GROUPS}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) +(?:\([ \d.]+%\) +)?PROGRAM TOTALS", line)
        if m:
            costs["total"] = int(m.group(1).replace(",", ""))
        m = re.match(r"\s*([\d,]+) +\([ \d.]+%\) +.* \[(.*)\]$", line)
        if m:
            obj = m.group(2).rsplit("/", 1)[-1]
            group = next((g for g, names in OBJECT_GROUPS if any(obj.startswith(n) for n in names)), "other")
            costs[group] += int(m.group(1).replace(",", ""))
    incl = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True, check=True).stdout
    m = re.search(r"^\s*([\d,]+) +\([ \d.]+%\) +\S*:ngx_http_lua_log_handler \[", incl, re.M)
    costs["log phase"] = int(m.group(1).replace(",", "")) if m else 0
    return costs


def window_costs(dump: Path) -> dict[str, int]:
    """callgrind_costs() of a dump made while nginx ran (callgrind_control
    --dump), read from the file itself: callgrind_annotate counts the
    calls still on the stack at the dump (main, the event loop) as their
    callers' own cost. Self cost is every cost line but the one after a
    `calls=` line (a call's inclusive cost), by the object (`ob=`) of its
    function."""
    names: dict[str, str] = {}
    costs = {"total": 0, "log phase": 0, "other": 0} | {g: 0 for g, _ in OBJECT_GROUPS}
    group = "other"
    after_call = False
    for line in dump.read_text().splitlines():
        if line.startswith(("ob=", "cob=")):
            # An object's name comes with its first id, in either.
            m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line)
            if m.group(2):
                names[m.group(1)] = m.group(2)
            if line.startswith("cob="):
                continue
            obj = names.get(m.group(1), "").rsplit("/", 1)[-1]
            group = next((g for g, n in OBJECT_GROUPS if any(obj.startswith(x) for x in n)), "other")
        elif line.startswith("summary:"):
            costs["total"] = int(line.split()[1])
        elif line.startswith("calls="):
            after_call = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            fields = line.split()
            if not after_call and len(fields) > 1:
                costs[group] += int(fields[1])
            after_call = False
    incl = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)],
                          capture_output=True, text=True, check=True).stdout
    m = re.search(r"^\s*([\d,]+) +\([ \d.]+%\) +\S*:ngx_http_lua_log_handler \[", incl, re.M)
    costs["log phase"] = int(m.group(1).replace(",", "")) if m else 0
    return costs


def callgrind_nginx(d: Path, name: str, handler: str, requests: int, keep: Path | None,
                    counts: int, init: str = INIT, window: int = 0) -> dict[str, int]:
    """One nginx process (master_process off) under callgrind, its metrics
    defined by `init` (INIT, or nlp_init()): start, exactly `requests`
    requests, stop. Returns callgrind_costs(). With `window`, the counts
    start from zero after those requests (callgrind_control --zero) and
    cover `window` more (callgrind_control --dump), so start-up, warm-up
    and shutdown are left out: window_costs() of that dump. With `counts`
    (the handler adds that much to nginx_http_requests_total per request),
    checks the store's total."""
    tmp = Path(tempfile.mkdtemp(dir=d))
    store = tmp / "instr.metrics"
    out = tmp / "callgrind.out"
    # --smc-check=all-non-file: LuaJIT writes (and patches) machine code in
    # anonymous memory, which valgrind must translate again when it changes.
    wrapper = ["valgrind", "--tool=callgrind", "--smc-check=all-non-file", f"--callgrind-out-file={out}"]
    n = Nginx(tmp, 1, init.format(store=store, lib=LIB) + handler, single=True, wrapper=wrapper)
    try:
        send_requests(n.port, requests)
        if window:
            subprocess.run(["callgrind_control", "--zero", str(n.proc.pid)], check=True, capture_output=True)
            send_requests(n.port, window)
            subprocess.run(["callgrind_control", "--dump", str(n.proc.pid)], check=True, capture_output=True)
    finally:
        n.stop()
    if counts:
        counted = get_store_total(store)[1]
        sent = requests + window
        assert counted == counts * sent, f"{name}: the store counted {counted} for {sent} requests"
    if window:
        out = Path(f"{out}.1")  # the first dump; `out` is the rest, to the exit
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        shutil.copy(out, keep / f"callgrind.{slug}.{requests}.{len(list(keep.glob(f'callgrind.{slug}.{requests}.*')))}")
    return window_costs(out) if window else callgrind_costs(out)


INSTR_INTRO = """\
   Without --instr-window, each setup runs twice per repetition: W = warm-up requests only, and W + N. Per request is
   (I(W+N) - I(W)) / N, I the instructions callgrind counted in the nginx process from start to
   exit, so start-up, warm-up (JIT compilation of the first traces) and shutdown cancel out.
   Requests: one at a time, over keep-alive connections of 100 requests (a Python client outside
   valgrind), to `location / { return 200 }`; the shmetrics setups' store must count all W+N.
   An instruction count is not time. It is repeatable (to within about 160 instructions per request
   in the runs so far; see the ranges) where CPU time on a shared machine is not, but instructions differ
   in cost (cache misses, atomic read-modify-writes, branch mispredictions), and the kernel's
   work (a syscall is one instruction) is not counted. Ratios of instruction counts are not
   ratios of req/s; no figure below is converted to time."""

INSTR_WINDOW = """\
   --instr-window: each setup runs once per repetition; callgrind's counts are zeroed after the
   W warm-up requests (callgrind_control --zero) and dumped after N more (--dump): per request is
   the dump's total / N, with nothing of start-up, warm-up or shutdown in it. What runs between
   requests in that window (the timers: shmetrics' follow check, nginx-lua-prometheus' sync)
   is in it, as in the runs without --instr-window."""


def instr_setups() -> dict[str, tuple[str, int, str]]:
    """The callgrind setups, by name: (the log handler, what
    nginx_http_requests_total counts per request in the store, the
    metrics' definitions)."""
    nlp = nlp_init()
    return {
        "no log handler": ("", 0, INIT),
        "empty log_by_lua": (EMPTY, 0, INIT),
        "log_by_lua calling an empty function": (CALL_ONLY, 0, INIT),
        "the handler's reads, no update": (READS_ONLY, 0, INIT),
        "the reads through ngx.var, no update": (READS_VAR, 0, INIT),
        "shmetrics counter+histogram": (UPDATE, 1, INIT),
        "shmetrics, 11 update pairs": (UPDATE_X11, 11, INIT),
        "shmetrics, constant labels, no ngx.*": (CONSTANT, 1, INIT),
        "shmetrics, handler inline": (UPDATE_INLINE, 1, INIT),
        "nginx-lua-prometheus counter+histogram": (UPDATE, 0, nlp),
        "nginx-lua-prometheus, 11 update pairs": (UPDATE_X11, 0, nlp),
        "nginx-lua-prometheus, constant labels, no ngx.*": (CONSTANT, 0, nlp),
    }


def instr_runs(requests: int, warmup: int, reps: int, keep: Path | None,
               window: bool) -> dict[str, list[dict[str, float]]]:
    """Each setup's instructions per request, by object group, one dict
    per repetition."""
    setups = instr_setups()
    per_req: dict[str, list[dict[str, float]]] = {k: [] for k in setups}
    with tempfile.TemporaryDirectory() as d:
        for r in range(reps):
            for name, (handler, counts, init) in setups.items():
                if window:
                    got = callgrind_nginx(Path(d), name, handler, warmup, keep, counts, init, requests)
                    per_req[name].append({k: v / requests for k, v in got.items()})
                    print(f"   rep {r + 1}: {name:47s} I(window of N) {got['total']:>13,}"
                          f"  -> {per_req[name][-1]['total']:8.0f} instructions/request", flush=True)
                    continue
                runs = [callgrind_nginx(Path(d), name, handler, k, keep, counts, init)
                        for k in (warmup, warmup + requests)]
                per_req[name].append({k: (runs[1][k] - runs[0][k]) / requests for k in runs[0]})
                print(f"   rep {r + 1}: {name:47s} I(W) {runs[0]['total']:>13,}  I(W+N) {runs[1]['total']:>13,}"
                      f"  -> {per_req[name][-1]['total']:8.0f} instructions/request", flush=True)
    return per_req


def instr_tables(per_req: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Prints the setups' medians, ranges and split by object group;
    returns the medians."""
    med = {k: {c: statistics.median(x[c] for x in v) for c in v[0]} for k, v in per_req.items()}
    groups = [g for g, _ in OBJECT_GROUPS] + ["other"]
    base = med["empty log_by_lua"]["total"]
    print(f"   {'setup':47s} {'instr/req':>9s} {'(range)':>15s} {'vs empty':>9s} {'ratio':>6s} {'log phase':>9s}")
    for name, m in med.items():
        totals = [x["total"] for x in per_req[name]]
        print(f"   {name:47s} {m['total']:9.0f} {f'({min(totals):.0f}..{max(totals):.0f})':>15s}"
              f" {m['total'] - base:+9.0f} {m['total'] / base:6.3f} {m['log phase']:9.0f}")
    print("   (median and range over the repetitions; ratio: the setup's instructions per request / the empty\n"
          "   handler's; log phase: instructions in ngx_http_lua_log_handler and what it calls, per request)")
    print("   instructions per request above the empty handler, by where the code is:")
    print(f"   {'setup':47s}" + "".join(f" {g:>12s}" for g in groups))
    for name, m in med.items():
        print(f"   {name:47s}" + "".join(f" {m[g] - med['empty log_by_lua'][g]:+12.0f}" for g in groups))
    print("   (LuaJIT VM: its interpreter, garbage collector, FFI call machinery and trace recorder;\n"
          "   JIT code: LuaJIT's compiled traces; libshmetrics: the Rust core behind the C ABI)")
    return med


def instr_summary(med: dict[str, dict[str, float]]) -> None:
    """The taxes above the empty handler, their parts, and the ratios of
    shmetrics' to nginx-lua-prometheus', for both shapes."""
    total = {k: m["total"] for k, m in med.items()}
    base = total["empty log_by_lua"]
    upd, reads, call = (total[k] for k in ("shmetrics counter+histogram", "the handler's reads, no update",
                                           "log_by_lua calling an empty function"))
    print(f"   the handler of docs/lua.md vs the empty handler: {upd - base:+.0f} instructions/request; "
          f"instruction ratio empty/handler {base / upd:.3f}")
    print(f"     = calling a function from log_by_lua {call - base:+.0f}"
          f" + the ngx.* reads {reads - call:+.0f}"
          f" + the counter+histogram update pair {upd - reads:+.0f}"
          f" (of which {med['shmetrics counter+histogram']['libshmetrics'] - med['empty log_by_lua']['libshmetrics']:.0f}"
          " in libshmetrics)")
    print(f"   the reads with ngx.var.status and tonumber(ngx.var.request_time) instead of ngx.status and "
          f"ngx.now() - ngx.req.start_time(): {total['the reads through ngx.var, no update'] - call:+.0f} "
          f"instead of {reads - call:+.0f}")
    print(f"   marginal update pair, (11 pairs - 1 pair) / 10: {(total['shmetrics, 11 update pairs'] - upd) / 10:+.0f}")
    const = total["shmetrics, constant labels, no ngx.*"]
    print(f"   the update pair with constant labels, no ngx.* (constant - calling an empty function): "
          f"{const - call:+.0f}")
    inline = total["shmetrics, handler inline"]
    print(f"   the same handler inline in the log_by_lua block vs the empty handler: {inline - base:+.0f}; "
          f"instruction ratio empty/inline {base / inline:.3f}")
    print(f"   the empty handler vs no handler: {base - total['no log handler']:+.0f}")
    nlp_upd, nlp_x11 = total["nginx-lua-prometheus counter+histogram"], total["nginx-lua-prometheus, 11 update pairs"]
    nlp_const = total["nginx-lua-prometheus, constant labels, no ngx.*"]
    print(f"   nginx-lua-prometheus, marginal update pair: {(nlp_x11 - nlp_upd) / 10:+.0f}; shmetrics' / "
          f"nginx-lua-prometheus': {(total['shmetrics, 11 update pairs'] - upd) / (nlp_x11 - nlp_upd):.3f}")
    print("   The taxes, above the empty log_by_lua handler (target: <= 1,000 and <= 0.3x nginx-lua-prometheus'):")
    for shape, ours, theirs in (("docs/lua.md's handler (ngx.* reads + counter+histogram)", upd, nlp_upd),
                                ("counter inc + histogram observe alone (constant labels)", const, nlp_const)):
        print(f"   {shape}: shmetrics {ours - base:+.0f}, nginx-lua-prometheus {theirs - base:+.0f}; "
              f"ratio {(ours - base) / (theirs - base):.3f}")


def instructions(requests: int, warmup: int, reps: int, keep: Path | None, window: bool = False) -> None:
    print(f"== Hot-path tax in instructions: valgrind --tool=callgrind, one nginx process (master_process off), "
          f"{warmup} warm-up requests, then {requests} more; {reps} repetitions")
    if window:
        print(INSTR_WINDOW)
    print(INSTR_INTRO)
    instr_summary(instr_tables(instr_runs(requests, warmup, reps, keep, window)))


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


# POPULATE's series in nginx-lua-prometheus, for the long tail: its
# families registered in every worker (any worker may serve /metrics), the
# series written by worker 0 from a timer (its counters reach the shared
# dict at the next sync, within a second).
NLP_POPULATE = """
        bench_families = {{}}
        for f = 1, 8 do
          bench_families[f] = prometheus:counter("bench_family_" .. f .. "_total", "A counter family.", {{"tenant", "route"}})
        end
        bench_latency = prometheus:histogram("bench_latency_seconds", "A histogram family.", {{"route"}})
        if ngx.worker.id() == 0 then
          ngx.timer.at(0, function()
            for f = 1, 8 do
              local c = bench_families[f]
              for i = 1, 10000 do c:inc(i, {{"tenant-" .. (i % 100), "/route/" .. i}}) end
            end
            for i = 1, 2000 do bench_latency:observe(i / 1000, {{"/route/" .. i}}) end
          end)
        end
"""


def sample_lines(body: bytes) -> int:
    return sum(1 for l in body.split(b"\n") if l and not l.startswith(b"#"))


def nlp_tail(d: Path, seconds: int, interval: float, want_lines: int) -> dict[str, dict]:
    """nginx-lua-prometheus with POPULATE's series (a 512 MB dict, as the
    issue's users size it), 2 workers running the same handler: wrk with
    no scrapes, then with its collect() scraped every `interval` s."""
    tmp = d / "nlp"
    tmp.mkdir()
    n = Nginx(tmp, 2, nlp_init("512m", NLP_POPULATE).format(store="", lib="") + UPDATE)
    try:
        # Written when the page has at least `want_lines` and no more come.
        # (It has fewer lines than the exporter's page: nginx-lua-prometheus
        # shows a histogram's bucket only once an observation reached it.)
        deadline = time.monotonic() + 300
        lines, before = 0, -1
        while lines < want_lines or lines != before:
            if time.monotonic() > deadline:
                raise SystemExit(f"nginx-lua-prometheus shows {lines} sample lines, not {want_lines}")
            time.sleep(2)
            before, lines = lines, sample_lines(get(n.port, "/metrics", 120)[1])
        print(f"   nginx-lua-prometheus page: {lines} sample lines (512 MB shared dict)")
        every = f"every {interval:g} s"
        rows = tail_phases(n.port, seconds, interval, (("nginx-lua-prometheus, no scrapes", None),
                                                       (f"nginx-lua-prometheus collect {every}", n.port)))
    finally:
        n.stop()
    return rows


def tail_run(port: int, seconds: int, target: int | None, interval: float) -> tuple[dict, list[float], list[int]]:
    """wrk on the static location for `seconds`, while a thread scrapes
    `target`'s /metrics every `interval` seconds (none if target is None).
    Returns wrk's figures, the scrapes' durations and their sizes."""
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
    try:
        res = wrk(port, seconds, 2, 50, "/static")
    finally:
        stop.set()
        if target:
            th.join()
    return res, times, sizes


def tail_phases(port: int, seconds: int, interval: float,
                phases: tuple[tuple[str, int | None], ...]) -> dict[str, dict]:
    """tail_run() on nginx's `port` for each (name, port to scrape or None)
    of `phases`, printing each; wrk's figures by phase name."""
    rows = {}
    for phase, target in phases:
        res, times, sizes = tail_run(port, seconds, target, interval)
        rows[phase] = res
        extra = ""
        if times:
            extra = (f"  scrape GET median {statistics.median(times) * 1e3:.1f} ms"
                     f" max {max(times) * 1e3:.1f} ms ({len(times)} scrapes, {sizes[-1] / 1e6:.1f} MB)")
        if res["timeouts"]:
            extra += f"  ({res['timeouts']} requests timed out at 2 s: max at least that)"
        if res["outcome"]:
            extra += f"  [{res['outcome']}]"
        print(f"   {phase:38s} {res['rps']:9.0f} req/s  p99 {res['p99'] * 1e3:7.2f} ms"
              f"  max {res['max'] * 1e3:8.2f} ms{extra}")
    return rows


def long_tail(seconds: int, interval: float, pairs: int, pair_seconds: int, peer: bool = True) -> None:
    print(f"== Long tail: 100k series, 2 nginx workers, wrk -t2 -c50 -d{seconds}s --latency on a static location")
    with tempfile.TemporaryDirectory() as d:
        store = Path(d) / "tail.metrics"
        subprocess.run(["luajit", "-e", POPULATE.format(lua=LUA_DIR, store=store, lib=LIB)], check=True)
        eport = free_port()
        exporter = subprocess.Popen([BIN, "serve", "--store", str(store), "--listen", f"127.0.0.1:{eport}",
                                     *os.environ.get("EXPORTER_ARGS", "").split()],
                                    stderr=subprocess.DEVNULL)
        wait_for(lambda: get(eport, "/healthz", 2)[0] == 200, "exporter")
        tmp = Path(d) / "nginx"
        tmp.mkdir()
        n = Nginx(tmp, 2, INIT.format(store=store, lib=LIB) + UPDATE)
        try:
            lines = sample_lines(get(eport, "/metrics")[1])
            print(f"   exporter page: {lines} sample lines")
            every = f"every {interval:g} s"
            phases = (("no scrapes", None), (f"exporter scraped {every}", eport),
                      (f"nginx /metrics (collect) {every}", n.port))
            rows = tail_phases(n.port, seconds, interval, phases)
            base, base99 = rows["no scrapes"]["max"], rows["no scrapes"]["p99"]
            print(f"   max latency ratio, exporter scraped / no scrapes: {rows[phases[1][0]]['max'] / base:.2f};"
                  f" p99 ratio {rows[phases[1][0]]['p99'] / base99:.2f} (target <= 1.2 for both)")
            print(f"   max latency ratio, in-nginx collect / no scrapes: {rows[phases[2][0]]['max'] / base:.2f};"
                  f" p99 ratio {rows[phases[2][0]]['p99'] / base99:.2f}")
            if pairs:
                # The max of one run is one sample, and the two runs above
                # are minutes apart: pairs of shorter runs back to back, in
                # alternating order (ABBA), and the median of their ratios.
                print(f"   {pairs} interleaved pairs of {pair_seconds} s runs, no scrapes and exporter scraped {every}"
                      f" (alternating which runs first):")
                max_ratios, p99_ratios = [], []
                for i in range(pairs):
                    order = (None, eport) if i % 2 == 0 else (eport, None)
                    got = {}
                    for target in order:
                        res, times, _ = tail_run(n.port, pair_seconds, target, interval)
                        got[target] = (res, len(times))
                    quiet, (scraped, scrapes) = got[None][0], got[eport]
                    max_ratios.append(scraped["max"] / quiet["max"])
                    p99_ratios.append(scraped["p99"] / quiet["p99"])
                    print(f"   pair {i + 1} ({'quiet first' if order[0] is None else 'scraped first'}):"
                          f" no scrapes p99 {quiet['p99'] * 1e3:6.2f} ms max {quiet['max'] * 1e3:7.2f} ms |"
                          f" scraped ({scrapes}) p99 {scraped['p99'] * 1e3:6.2f} ms max {scraped['max'] * 1e3:7.2f} ms |"
                          f" max ratio {max_ratios[-1]:.2f}, p99 ratio {p99_ratios[-1]:.2f}")
                print(f"   median over {pairs} pairs of the max latency ratio, exporter scraped / no scrapes: "
                      f"{statistics.median(max_ratios):.2f} (range {min(max_ratios):.2f}..{max(max_ratios):.2f};"
                      f" target <= 1.2)")
                print(f"   median of the p99 ratio: {statistics.median(p99_ratios):.2f}"
                      f" (range {min(p99_ratios):.2f}..{max(p99_ratios):.2f})")
            _, body = get(eport, "/exporter-metrics")
            secs = re.search(rb"^shmetrics_exporter_render_seconds_total ([\d.e+-]+)$", body, re.M)
            renders = re.search(rb"^shmetrics_exporter_renders_total ([\d.e+-]+)$", body, re.M)
            assert secs and renders, "the exporter's render metrics are missing"
            print(f"   exporter render time, mean over {int(float(renders.group(1)))} renders: "
                  f"{float(secs.group(1)) / float(renders.group(1)) * 1e3:.1f} ms")
        finally:
            n.stop()
            exporter.terminate()
            exporter.wait(10)
        if not peer:
            return
        # The same load on nginx-lua-prometheus (its pinned copy), whose
        # collect() renders the page inside a worker from its shared dict.
        peer_rows = nlp_tail(Path(d), seconds, interval, 80000 + 2000)
        quiet, scraped = peer_rows.values()
        print(f"   nginx-lua-prometheus, collect every {interval:g} s / no scrapes: p99 ratio "
              f"{scraped['p99'] / quiet['p99']:.2f}, max ratio {scraped['max'] / quiet['max']:.2f}")
        for phase, _ in phases[1:]:
            print(f"   shmetrics' {phase} / nginx-lua-prometheus' collect every {interval:g} s: p99 ratio "
                  f"{rows[phase]['p99'] / scraped['p99']:.3f}, max ratio {rows[phase]['max'] / scraped['max']:.3f}")


# The shape of benches/inapp_render.sh, defined in every worker: {series} / 8
# families of 8 label sets (route, code), one in ten a histogram with the
# library's default buckets, the others counters; each worker writes every
# series once, from a timer (nginx-lua-prometheus' values reach its shared
# dict at its next sync, within a second).
INAPP_SHAPE = """
        local fams = {{}}
        for f = 0, {series} / 8 - 1 do
          if f % 10 == 9 then
            fams[#fams + 1] = {{ prometheus:histogram("app_f" .. f .. "_seconds", "Latency.", {{"route", "code"}}), true }}
          else
            fams[#fams + 1] = {{ prometheus:counter("app_f" .. f .. "_total", "Requests.", {{"route", "code"}}), false }}
          end
        end
        ngx.timer.at(0, function()
          for _, m in ipairs(fams) do
            for j = 0, 7 do
              local labels = {{"/r/" .. math.floor(j / 2), j % 2 == 0 and "200" or "500"}}
              if m[2] then m[1]:observe(0.3, labels) else m[1]:inc(1, labels) end
            end
          end
        end)
"""


def inapp(series: int = 10_000, workers: int = 16, k: int = 7) -> None:
    """The in-app render: nginx with `workers` workers writing `series`
    series of INAPP_SHAPE, each once; once the page shows every series at
    `workers` (a counter's value, a histogram's `_count`), the median time
    of `k` GET /metrics (each rendered by prometheus:collect() inside a
    worker), through shmetrics (rendered by the core) and through
    nginx-lua-prometheus on its shared dict. Prints the medians and
    `inapp lua MS_SHMETRICS MS_NGINX_LUA_PROMETHEUS`."""
    want = re.compile(rb"^app_f\d+_(?:total|seconds_count)\{[^}]*\} " + str(workers).encode() + rb"$", re.M)
    ms = {}
    with tempfile.TemporaryDirectory(prefix="shmetrics-inapp-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        for name in ("shmetrics", "nginx-lua-prometheus"):
            tmp = Path(d) / name
            tmp.mkdir()
            shape = INAPP_SHAPE.format(series=series)
            if name == "shmetrics":
                http = ("    init_worker_by_lua_block {\n"
                        f'        prometheus = require("shmetrics").init("{tmp}/store.shm", {{ library = "{LIB}", '
                        f"max_series = {2 * series + 1024}, max_families = {series // 8 + 64} }})\n"
                        + shape + "    }\n")
            else:
                http = ("    lua_shared_dict prometheus_metrics 256m;\n    init_worker_by_lua_block {\n"
                        f'        package.path = "{NLP_PEER}/?.lua;" .. package.path\n'
                        '        prometheus = require("prometheus").init("prometheus_metrics")\n'
                        + shape + "    }\n")
            n = Nginx(tmp, workers, http)
            try:
                deadline = time.monotonic() + 120
                while True:
                    good = len(want.findall(get(n.port, "/metrics", 120)[1]))
                    if good == series:
                        break
                    if time.monotonic() > deadline:
                        raise SystemExit(f"{name}: {good} of {series} series reached {workers}")
                    time.sleep(0.5)
                times = []
                for _ in range(k):
                    t = time.perf_counter()
                    status, _body = get(n.port, "/metrics", 120)
                    times.append(1e3 * (time.perf_counter() - t))
                    assert status == 200
                ms[name] = statistics.median(times)
            finally:
                n.stop()
    mine, theirs = ms["shmetrics"], ms["nginx-lua-prometheus"]
    print(f"in-app render, median of {k} GET /metrics (ms), {series} series x {workers} workers: "
          f"shmetrics {mine:.2f}, nginx-lua-prometheus {theirs:.2f} ({theirs / mine:.2f}x)")
    print(f"inapp lua {mine:.3f} {theirs:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=8, help="wrk duration per hot-path run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tail-seconds", type=int, default=30)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between scrapes")
    ap.add_argument("--tail-pairs", type=int, default=4, help="interleaved pairs of runs without and with scrapes")
    ap.add_argument("--tail-pair-seconds", type=int, default=20, help="wrk duration of each run of a pair")
    ap.add_argument("--no-tail-peer", action="store_true",
                    help="leave out nginx-lua-prometheus's runs in the long tail")
    ap.add_argument("--instr-requests", type=int, default=20000, help="measured requests per callgrind run")
    ap.add_argument("--instr-warmup", type=int, default=2000, help="warm-up requests per callgrind run")
    ap.add_argument("--instr-reps", type=int, default=2, help="repetitions of each callgrind measurement")
    ap.add_argument("--instr-window", action="store_true",
                    help="count each setup's N requests in one run, between callgrind_control --zero and --dump")
    ap.add_argument("--instr-keep", type=Path, help="copy callgrind's output files into this directory")
    ap.add_argument("--lua-dir", type=Path, help="load shmetrics.lua from this directory instead of bindings/lua "
                    "(to compare versions; put shmetrics.cdef.h next to it)")
    ap.add_argument("--only", choices=["tax", "tail", "instr", "inapp"])
    a = ap.parse_args()
    if a.lua_dir:
        global LUA_DIR
        LUA_DIR = a.lua_dir.resolve()
    print(f"nginx {subprocess.run(['/usr/sbin/nginx', '-v'], capture_output=True, text=True).stderr.strip()}, "
          f"{os.cpu_count()} CPUs, library {LIB}, {LUA_DIR / 'shmetrics.lua'}")
    if a.only in (None, "tax"):
        hot_path_tax(a.seconds, a.rounds)
    if a.only in (None, "instr"):
        instructions(a.instr_requests, a.instr_warmup, a.instr_reps, a.instr_keep, a.instr_window)
    if a.only in (None, "tail"):
        long_tail(a.tail_seconds, a.interval, a.tail_pairs, a.tail_pair_seconds, not a.no_tail_peer)
    if a.only == "inapp":
        inapp()


if __name__ == "__main__":
    main()

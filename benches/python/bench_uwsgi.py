#!/usr/bin/env python3
"""uWSGI requests per second with one counter and one histogram per
request: shmetrics, prometheus_client in multiprocess mode, and no metrics,
in the same run.

    target/python-venv/bin/python benches/python/bench_uwsgi.py [--rounds R] [--seconds S]

Run it with the Python whose environment has uWSGI (PyPI's `uwsgi`, next
to the interpreter), `shmetrics` and `prometheus_client`: the test
virtualenv (`source scripts/setup.sh; ensure_python_env`). Needs `wrk`.

One uWSGI per variant (docs/python.md's ini: a master, 4 workers; no
request logging), all started at once; wrk (2 threads, 16 connections,
HTTP/1.1 keep-alive) loads one at a time, in turn, for R rounds. Two
figures per variant:
- requests per second (wrk), best of the rounds;
- CPU time of the uWSGI processes (master and workers, from /proc) per
  request: the least of the rounds and the median. On a shared machine
  other processes take cores away and req/s moves with them; the CPU a
  request costs moves less.
Each app's counter is read back at the end and must have counted at least
every request wrk saw answered. It prints figures; nothing is checked
against a threshold.
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
import sys
import tempfile
import time
from pathlib import Path

VARIANTS = ("none", "shmetrics", "prometheus_client")
TICKS = os.sysconf("SC_CLK_TCK")

APPS = {
    "none": '''
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
''',
    "shmetrics": '''
import time

import shmetrics

REQUESTS = shmetrics.Counter("bench_requests", "Requests served.", ["route"])
LATENCY = shmetrics.Histogram("bench_request_seconds", "Request latency.")


def app(environ, start_response):
    t = time.perf_counter()
    route = environ.get("PATH_INFO", "/")
    REQUESTS.labels(route).inc()
    LATENCY.observe(time.perf_counter() - t)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
''',
    "prometheus_client": '''
import time

from prometheus_client import Counter, Histogram

REQUESTS = Counter("bench_requests", "Requests served.", ["route"])
LATENCY = Histogram("bench_request_seconds", "Request latency.")


def app(environ, start_response):
    t = time.perf_counter()
    route = environ.get("PATH_INFO", "/")
    REQUESTS.labels(route).inc()
    LATENCY.observe(time.perf_counter() - t)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
''',
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def uwsgi_bin() -> str:
    path = Path(sys.executable).parent / "uwsgi"
    if not os.access(path, os.X_OK):
        sys.exit(f"{path} is missing: run with the test virtualenv's python (ensure_python_env installs uWSGI)")
    return str(path)


class Server:
    """One uWSGI serving one variant's app."""

    def __init__(self, variant: str, root: Path) -> None:
        self.variant = variant
        self.dir = root / variant
        self.dir.mkdir()
        (self.dir / f"bench_{variant}.py").write_text(APPS[variant])
        self.port = free_port()
        env = {k: v for k, v in os.environ.items()
               if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")}
        lines = ["[uwsgi]", "master = true", "processes = 4", f"http11-socket = 127.0.0.1:{self.port}",
                 f"module = bench_{variant}:app", "die-on-term = true", "need-app = true",
                 f"pythonpath = {self.dir}", "disable-logging = true", f"logto = {self.dir / 'uwsgi.log'}"]
        if variant == "shmetrics":
            lines.append(f"env = SHMETRICS_STORE={self.dir / 'app.shm'}")
        elif variant == "prometheus_client":
            (self.dir / "multiproc").mkdir()
            lines.append(f"env = PROMETHEUS_MULTIPROC_DIR={self.dir / 'multiproc'}")
        (self.dir / "app.ini").write_text("\n".join(lines) + "\n")
        self.proc = subprocess.Popen([uwsgi_bin(), "--ini", str(self.dir / "app.ini")], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/ready")
                conn.getresponse().read()
                conn.close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"{variant}: uWSGI did not start:\n{(self.dir / 'uwsgi.log').read_text()[-2000:]}")
                time.sleep(0.1)

    def pids(self) -> list[int]:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)], capture_output=True, text=True)
        return [self.proc.pid] + [int(p) for p in out.stdout.split()]

    def cpu(self) -> float:
        """CPU seconds (user + system) of the master and its workers."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / TICKS

    def counted(self) -> float | None:
        """The app's request counter, read the way each library exposes it."""
        code = {
            "shmetrics": "import shmetrics, sys; sys.stdout.write(shmetrics.Store(sys.argv[1]).render('text').decode())",
            "prometheus_client": ("import sys; from prometheus_client import CollectorRegistry, generate_latest, "
                                  "multiprocess; r = CollectorRegistry(); multiprocess.MultiProcessCollector(r, "
                                  "path=sys.argv[1]); sys.stdout.write(generate_latest(r).decode())"),
        }.get(self.variant)
        if code is None:
            return None
        where = self.dir / ("app.shm" if self.variant == "shmetrics" else "multiproc")
        env = {k: v for k, v in os.environ.items() if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR")}
        text = subprocess.run([sys.executable, "-c", code, str(where)], capture_output=True, text=True,
                              check=True, env=env, timeout=120).stdout
        m = re.search(r'^bench_requests_total\{route="/api/users"\} (\S+)$', text, re.M)
        return float(m[1]) if m else 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def load(server: Server, seconds: int, connections: int) -> tuple[int, float, float]:
    """wrk against `server`: (requests, req/s, CPU seconds). The app's
    counter must have gone up by the requests wrk saw answered, plus at
    most one per connection (those in flight when wrk stopped)."""
    before = server.counted()
    cpu0 = server.cpu()
    out = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds}s",
                          f"http://127.0.0.1:{server.port}/api/users"], capture_output=True, text=True,
                         timeout=seconds + 60).stdout
    cpu = server.cpu() - cpu0
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        sys.exit(f"{server.variant}: {errors[1]} failed requests\n{out}")
    requests = int(re.search(r"(\d+) requests in", out)[1])
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])
    if before is not None:
        time.sleep(0.2)  # the last requests wrk dropped finish
        counted = server.counted() - before
        if not requests <= counted <= requests + connections:
            sys.exit(f"{server.variant}: wrk saw {requests} answered, the app counted {counted:.0f}\n{out}")
    return requests, rps, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=16)
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing (apt-get install wrk)")
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    root = Path(tempfile.mkdtemp(prefix="bench-uwsgi-", dir=base))
    servers: list[Server] = []
    try:
        servers = [Server(v, root) for v in VARIANTS]
        for s in servers:  # warm-up: every worker imports, maps, creates its files
            load(s, 1, args.connections)
        results: dict[str, list[tuple[int, float, float]]] = {s.variant: [] for s in servers}
        sent = {s.variant: 0 for s in servers}
        for _round in range(args.rounds):
            for s in servers:
                r = load(s, args.seconds, args.connections)
                results[s.variant].append(r)
        for s in servers:
            sent[s.variant] = sum(r[0] for r in results[s.variant])
        print(f"uWSGI (4 workers, http11-socket), wrk -t 2 -c {args.connections}, {args.rounds} rounds of "
              f"{args.seconds} s, interleaved; load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
        print(f"{'variant':<20}{'best req/s':>12}{'median req/s':>14}{'CPU us/req min':>16}{'median':>10}"
              f"{'counted':>12}")
        best_none = max(r[1] for r in results["none"])
        for s in servers:
            rs = results[s.variant]
            per = [r[2] / r[0] * 1e6 for r in rs if r[0]]
            counted = s.counted()
            shown = "-" if counted is None else f"{counted:.0f}"
            print(f"{s.variant:<20}{max(r[1] for r in rs):>12.0f}{statistics.median(r[1] for r in rs):>14.0f}"
                  f"{min(per):>16.1f}{statistics.median(per):>10.1f}{shown:>12}")
            if counted is not None and counted < sent[s.variant]:
                sys.exit(f"{s.variant} counted {counted}, fewer than the {sent[s.variant]} answered requests")
        ours = {s.variant: min(r[2] / r[0] for r in results[s.variant]) for s in servers}
        extra = {v: (ours[v] - ours["none"]) * 1e6 for v in ("shmetrics", "prometheus_client")}
        print(f"metrics' CPU per request over none (min): shmetrics {extra['shmetrics']:.1f} us, "
              f"prometheus_client {extra['prometheus_client']:.1f} us; best req/s relative to none: "
              + ", ".join(f"{v} {max(r[1] for r in results[v]) / best_none:.2f}" for v in extra))
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

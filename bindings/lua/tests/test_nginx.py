"""The Lua binding in a real nginx (Debian's nginx with libnginx-mod-http-lua).

nginx runs 2 workers on a loopback port with the nginx.conf of docs/lua.md
(metrics defined in init_worker_by_lua, updated in log_by_lua), next to a
real exporter (`shmetrics serve`). Clients drive it while nginx is reloaded
and while workers are killed with SIGKILL; totals are read from the
exporter and parsed with prometheus_client's parser.

Run by scripts/lua-tests.sh, which builds the library and the command and
sets SHMETRICS_LIBRARY and SHMETRICS_BIN.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

LUA_DIR = Path(__file__).resolve().parent.parent
REPO = LUA_DIR.parent.parent
NGINX = "/usr/sbin/nginx"
MODULES = Path("/usr/lib/nginx/modules")
DOCS_CONF = REPO / "docs" / "lua.md"

ROUTES = {"/a": 200, "/b": 201, "/missing": 404}


def env(name: str) -> str:
    value = os.environ.get(name)
    assert value, f"${name} must be set (scripts/lua-tests.sh sets it)"
    return value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str, headers: dict | None = None, timeout: float = 10) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def wait_for(what: str, check, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError as e:
            last = e
        time.sleep(0.05)
    raise AssertionError(f"{what} not ready after {timeout}s (last error: {last})")


def docs_nginx_conf() -> str:
    """The nginx.conf example of docs/lua.md (the first ```nginx block)."""
    text = DOCS_CONF.read_text()
    m = re.search(r"```nginx\n(.*?)```", text, re.S)
    assert m, "docs/lua.md has no ```nginx block"
    return m.group(1)


def render_conf(tmp: Path, port: int, store: Path, extra_worker_lua: str = "") -> str:
    """docs/lua.md's nginx.conf, with this test's paths and port."""
    conf = docs_nginx_conf()
    user = ""
    if os.geteuid() == 0:
        # nginx started by root runs its workers as `nobody`, who could not
        # create a store under the test's private directory.
        user = "user root root;\n"
    head = (
        f"{user}daemon off;\npid {tmp}/nginx.pid;\nerror_log {tmp}/error.log warn;\n"
        f"load_module {MODULES}/ndk_http_module.so;\n"
        f"load_module {MODULES}/ngx_http_lua_module.so;\n"
    )
    temps = "".join(
        f"    {k}_temp_path {tmp}/{k};\n"
        for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = conf.replace("include /etc/nginx/modules-enabled/*.conf;\n", "")
    conf = conf.replace("/usr/local/share/lua/5.1/?.lua", f"{LUA_DIR}/?.lua")
    conf = conf.replace("/usr/local/lib/libshmetrics.so", env("SHMETRICS_LIBRARY"))
    conf = conf.replace("/run/shmetrics/nginx.metrics", str(store))
    conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    conf = conf.replace(
        "http {\n",
        "http {\n" + temps + "    log_format pids '$pid $uri';\n" + f"    access_log {tmp}/access.log pids;\n",
        1,
    )
    conf = conf.replace(
        "init_worker_by_lua_block {\n",
        "init_worker_by_lua_block {\n" + extra_worker_lua,
        1,
    )
    conf = conf.replace(
        "        location / {\n",
        "".join(
            f"        location = {route} {{ return {status} \"{route}\\n\"; }}\n"
            for route, status in ROUTES.items()
        )
        + "        location / {\n",
        1,
    )
    return head + conf


class Nginx:
    def __init__(self, tmp: Path, store: Path, extra_worker_lua: str = "") -> None:
        self.tmp = tmp
        self.port = free_port()
        self.conf = tmp / "nginx.conf"
        self.conf.write_text(render_conf(tmp, self.port, store, extra_worker_lua))
        e = dict(os.environ)
        self.proc = subprocess.Popen(
            [NGINX, "-p", str(tmp), "-c", str(self.conf)], env=e,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        wait_for("nginx", lambda: self.proc.poll() is None and get(self.port, "/ready", timeout=2)[0] == 200)
        wait_for("2 nginx workers", lambda: len(self.workers()) == 2)

    def workers(self) -> set[int]:
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        pids = set()
        for p in out.split():
            try:
                if "worker process" in Path(f"/proc/{p}/cmdline").read_text():
                    pids.add(int(p))
            except OSError:
                pass
        return pids

    def error_log(self) -> str:
        p = self.tmp / "error.log"
        return p.read_text() if p.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def mapped_inodes(pid: int, path: Path) -> set[int]:
    """The inodes of the files in `path`'s directory (removed ones too)
    that process `pid` maps, from /proc/PID/maps. Not by name: maps shows
    the name a file had when it was mapped, and a store is created under
    a temporary name and renamed."""
    out = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and Path(fields[5]).parent == path.parent:
            out.add(int(fields[4]))
    return out


@pytest.fixture
def stack(tmp_path):
    """A store path, a running exporter and a function that starts nginx."""
    store = tmp_path / "nginx.metrics"
    eport = free_port()
    exporter = subprocess.Popen(
        [env("SHMETRICS_BIN"), "serve", "--store", str(store), "--listen", f"127.0.0.1:{eport}"],
        stderr=subprocess.PIPE,
    )
    started: list[Nginx] = []

    def start(extra_worker_lua: str = "") -> Nginx:
        n = Nginx(tmp_path, store, extra_worker_lua)
        started.append(n)
        return n

    wait_for("exporter", lambda: get(eport, "/healthz", timeout=2)[0] in (200, 503))
    try:
        yield store, eport, start
    finally:
        for n in started:
            n.stop()
        exporter.terminate()
        exporter.wait(10)
        for n in started:
            log = n.error_log()
            # Anything the binding logs (metric errors, load failures) or
            # any Lua error is a failure.
            bad = [l for l in log.splitlines() if "shmetrics:" in l or ("[error]" in l and "lua" in l.lower())]
            assert not bad, "nginx error.log:\n" + "\n".join(bad)


def scrape(eport: int, path: str = "/metrics") -> dict[tuple[str, tuple], float]:
    status, body = get(eport, path)
    assert status == 200, body
    out = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def route_totals(samples) -> dict[str, float]:
    """Requests per route of ROUTES (not /metrics, which is logged too)."""
    totals = {}
    for (name, labels), v in samples.items():
        if name == "nginx_http_requests_total" and dict(labels)["route"] in ROUTES:
            d = dict(labels)
            totals[d["route"]] = totals.get(d["route"], 0) + v
    return totals


class Load:
    """Clients sending requests over keep-alive connections, counting the
    responses they received per route. A request whose connection failed
    (a reload closing idle connections, a killed worker) is retried on a new
    connection and counted once, when a response arrives."""

    def __init__(self, port: int, clients: int = 4) -> None:
        self.port = port
        self.clients = clients
        self.done = {r: 0 for r in ROUTES}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors = 0
        self.threads = []

    def _client(self, idx: int, count: int | None) -> None:
        routes = list(ROUTES)
        conn = None
        i = 0
        while (count is None and not self.stop.is_set()) or (count is not None and i < count):
            route = routes[(i + idx) % len(routes)]
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("GET", route)
                r = conn.getresponse()
                r.read()
                assert r.status == ROUTES[route], (route, r.status)
                with self.lock:
                    self.done[route] += 1
                i += 1
            except (OSError, http.client.HTTPException):
                with self.lock:
                    self.errors += 1
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def run(self, per_client: int) -> None:
        threads = [threading.Thread(target=self._client, args=(i, per_client)) for i in range(self.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def start(self) -> None:
        self.threads = [threading.Thread(target=self._client, args=(i, None)) for i in range(self.clients)]
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def total(self) -> int:
        with self.lock:
            return sum(self.done.values())


def check_exact(eport: int, done: dict[str, int]) -> dict:
    s = scrape(eport)
    assert route_totals(s) == {r: float(n) for r, n in done.items() if n}, (route_totals(s), done)
    for route, n in done.items():
        labels = (("route", route),)
        assert s[("nginx_http_request_duration_seconds_count", labels)] == n
        assert s[("nginx_http_request_duration_seconds_bucket", tuple(sorted(labels + (("le", "+Inf"),))))] == n
    assert s[("nginx_metric_errors_total", ())] == 0
    return s


def test_reload_and_crashes_keep_exact_totals(stack):
    store, eport, start = stack
    nginx = start()
    load = Load(nginx.port)

    # 1. Load with a reload in the middle: old workers finish gracefully,
    #    new ones claim writer slots; no increment is lost or doubled.
    first = nginx.workers()
    reloader = threading.Timer(0.5, lambda: nginx.proc.send_signal(signal.SIGHUP))
    reloader.start()
    load.run(600)
    reloader.join()
    wait_for("workers replaced by the reload", lambda: nginx.workers().isdisjoint(first) and len(nginx.workers()) == 2)
    # The old workers may still be draining keep-alive connections; wait
    # until only the new generation is left before the exact comparison.
    check_exact(eport, load.done)

    # 2. SIGKILL an idle worker: the master starts a new one; the dead
    #    worker's counts stay, and new requests add to them.
    victim = sorted(nginx.workers())[0]
    os.kill(victim, signal.SIGKILL)
    wait_for("a replacement worker", lambda: victim not in nginx.workers() and len(nginx.workers()) == 2)
    load.run(300)
    check_exact(eport, load.done)

    # 3. SIGKILL workers under load: totals never go down while scraped, and
    #    end within the requests in flight of the responses received.
    before = sum(route_totals(scrape(eport)).values())
    load.stop.clear()
    load.start()
    seen = [before]
    for _ in range(3):
        time.sleep(0.4)
        os.kill(sorted(nginx.workers())[-1], signal.SIGKILL)
        for _ in range(5):
            time.sleep(0.05)
            seen.append(sum(route_totals(scrape(eport)).values()))
    load.finish()
    seen.append(sum(route_totals(scrape(eport)).values()))
    assert seen == sorted(seen), f"a total went down: {seen}"
    final = seen[-1]
    received = load.total()
    # A killed worker may have logged a request whose response the client
    # never got (and retried), or sent a response before logging it.
    assert abs(final - received) <= 3 * load.clients, (final, received)

    # 4. One more quiet round is exact relative to what is now stored.
    base = route_totals(scrape(eport))
    extra = Load(nginx.port)
    extra.run(150)
    after = route_totals(scrape(eport))
    assert {r: after[r] - base.get(r, 0) for r in after} == {r: float(n) for r, n in extra.done.items()}

    # The exporter's own metrics are on their own page.
    s = scrape(eport, "/exporter-metrics")
    claims = s[("shmetrics_store_writer_claims_total", ())]
    # Every worker claimed a slot of its own, once (not once per request),
    # when init_worker_by_lua made its handles (docs/ARCHITECTURE.md,
    # "Writer cells"); those that served are among them. A killed worker
    # may have made its update but not written its access log line.
    pids = {line.split()[0] for line in (nginx.tmp / "access.log").read_text().splitlines()}
    # Workers of before the reload served, and so did later ones.
    assert pids & {str(p) for p in first} and pids - {str(p) for p in first}, (pids, first)
    assert len(pids) <= claims <= len(pids) + 4, (claims, pids)
    # The live slots are exactly the running workers, served or not.
    running = nginx.workers()
    assert s[("shmetrics_store_writers", (("state", "live"),))] == len(running), (s, running)


def test_collect_from_nginx_matches_the_exporter(stack):
    store, eport, start = stack
    nginx = start()
    Load(nginx.port).run(50)
    status, body = get(nginx.port, "/metrics")
    assert status == 200
    ours = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            ours[(s.name, tuple(sorted(s.labels.items())))] = s.value
    exported = scrape(eport)
    assert route_totals(ours) == route_totals(exported)
    assert sum(route_totals(ours).values()) == 4 * 50
    # OpenMetrics when asked for it, as Prometheus does.
    om_status, om = get(nginx.port, "/metrics", {"Accept": "application/openmetrics-text;version=1.0.0"})
    assert om_status == 200 and om.endswith("# EOF\n")


def test_promtool_accepts_collect(stack):
    store, eport, start = stack
    nginx = start()
    Load(nginx.port).run(10)
    _, body = get(nginx.port, "/metrics")
    r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
    # promtool exits 1 for lint warnings too; only parse errors matter here.
    assert "error while linting" not in r.stderr and "text format parsing error" not in r.stderr, r.stderr


def test_workers_follow_a_replaced_store(stack, tmp_path):
    """Another store file moved over the path under running workers: within
    the follow interval (1 s by default) each worker's timer opens the new
    file, and every later update lands there, where the exporter serves it."""
    store, eport, start = stack
    nginx = start()
    Load(nginx.port).run(20)
    old_inode = store.stat().st_ino
    workers = nginx.workers()
    for pid in workers:
        assert old_inode in mapped_inodes(pid, store), Path(f"/proc/{pid}/maps").read_text()
    # The replacement: a store made by another process, with a series of
    # its own, moved over the path.
    new = tmp_path / "replacement.metrics"
    code = (f'package.path = "{LUA_DIR}/?.lua;" .. package.path\n'
            f'require("shmetrics").init("{new}"):counter("replacement_total", "h"):inc(5)\n')
    subprocess.run(["luajit", "-e", code], check=True, env=dict(os.environ))
    os.rename(new, store)
    time.sleep(2.5)  # the follow interval, twice, and some
    load = Load(nginx.port)
    load.run(50)
    body = subprocess.run([env("SHMETRICS_BIN"), "dump", "--store", str(store)],
                          capture_output=True, text=True, check=True).stdout
    samples = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    assert samples[("replacement_total", ())] == 5
    # Exactly the requests since the switch, none of those before it.
    assert route_totals(samples) == {r: float(n) for r, n in load.done.items() if n}, body
    assert samples[("nginx_metric_errors_total", ())] == 0
    # Each worker unmapped the old file (removed by the rename, so its
    # memory goes with the last mapping) and maps the new one.
    assert nginx.workers() == workers
    for pid in workers:
        assert mapped_inodes(pid, store) == {store.stat().st_ino}, Path(f"/proc/{pid}/maps").read_text()
    # The exporter follows the new file too.
    wait_for("the exporter on the new file", lambda: route_totals(scrape(eport)) == route_totals(samples))


def test_the_hot_path_compiles_in_nginx(stack, tmp_path):
    """jit.v inside the nginx workers: the log phase's function (docs/lua.md
    defines log_metrics() in init_worker_by_lua and calls it from
    log_by_lua) is traced, and no trace of shmetrics.lua aborts on an NYI
    operation."""
    store, eport, start = stack
    # One log per worker: two workers appending to one file interleave
    # their lines.
    nginx = start(f'    require("jit.v").start("{tmp_path}/jit-v." .. ngx.worker.pid() .. ".log")\n')
    Load(nginx.port, clients=2).run(3000)
    nginx.stop()
    logs = sorted(tmp_path.glob("jit-v.*.log"))
    assert logs, "no jit.v log"
    text = "".join(log.read_text() for log in logs)
    print(text)
    traces = [l for l in text.splitlines() if re.match(r"\[TRACE +\d+ ", l)]
    # A trace that starts in init_worker_by_lua's code: log_metrics(), with
    # lua-resty-core's getters and shmetrics.lua's updates inlined.
    assert any(re.match(r"\[TRACE +\d+ init_worker_by_lua\(nginx\.conf:\d+\):\d+ return\]", l) for l in traces), text
    nyi = [l for l in text.splitlines() if "NYI" in l and "shmetrics.lua" in l]
    assert not nyi, "\n".join(nyi)

"""PromPHP on APCng against shmetrics, under php-fpm (Debian's, a static
pool of 2 workers) behind a real nginx: the same workload (php/app.php)
through PromPHP's CollectorRegistry on APCng (the peer, its page rendered by
PromPHP's RenderTextFormat as an APCng application serves it), on
`ShmetricsAdapter` (the one-line switch) and on the package's own
`Shmetrics\\CollectorRegistry` (the native API), each shmetrics store served
by its own exporter.

Compared as in test_nginx_lua.py (harness.py): the exporter's pages in text
0.0.4 and OpenMetrics, and what Prometheus 2.42 stores by default, asking
for text 0.0.4 only, and with native histograms (protobuf first), series by
series and through the targets' metadata. A difference fails unless
docs/migrating.md lists it as chosen.

The shmetrics side runs twice: on the FFI binding, and on the extension
(php-fpm loading MIGRATION_PHP_EXTENSION, the module built by
bindings/php/ext/build.sh), what `pecl install` or the php-shmetrics
package gives. The pairs and their chosen differences are the same.

Run by scripts/migration-tests.sh (SHMETRICS_LIBRARY, SHMETRICS_BIN,
PROMPHP_DIR, MIGRATION_PHP_EXTENSION).
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import harness as h

HERE = Path(__file__).resolve().parent
PHP_BINDING = h.REPO / "bindings" / "php"
REQUESTS = 600
BACKENDS = ("adapter", "native")
PAIRS = {"adapter": "promphp-apcng/adapter", "native": "promphp-apcng/native"}


def fpm_conf(tmp: Path, port: int, stores: dict[str, Path]) -> str:
    env = {
        "PROMPHP_DIR": h.env("PROMPHP_DIR"),
        "SHMETRICS_PHP_DIR": str(PHP_BINDING),
        "SHMETRICS_LIBRARY": h.env("SHMETRICS_LIBRARY"),
        "MIGRATION_ADAPTER_STORE": str(stores["adapter"]),
        "MIGRATION_NATIVE_STORE": str(stores["native"]),
    }
    lines = "".join(f"env[{k}] = {v}\n" for k, v in env.items())
    user = "user = root\n" if os.geteuid() == 0 else ""
    return (
        f"[global]\nerror_log = {tmp}/fpm.log\ndaemonize = no\n"
        f"[app]\nlisten = 127.0.0.1:{port}\npm = static\npm.max_children = 2\n"
        f"catch_workers_output = yes\nphp_admin_value[error_log] = {tmp}/php-errors.log\n"
        f"php_admin_flag[log_errors] = on\n{lines}{user}"
    )


def nginx_conf(tmp: Path, port: int, fpm_port: int) -> str:
    user = "user root;\n" if os.geteuid() == 0 else ""
    temps = "".join(f"    {k}_temp_path {tmp}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""{user}daemon off;
worker_processes 2;
error_log {tmp}/nginx-error.log;
pid {tmp}/nginx.pid;
events {{ worker_connections 512; }}
http {{
    access_log off;
{temps}    server {{
        listen 127.0.0.1:{port};
        location / {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME {HERE}/php/app.php;
            fastcgi_pass 127.0.0.1:{fpm_port};
        }}
    }}
}}
"""


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# Requests that make every label set of app.php once (its label values
# cycle with i modulo 2, 3, 4 and 6).
FIRST_OF_EACH = 12


def drive(base: str, backend: str, n: int, threads: int = 6) -> set[str]:
    """Requests i = 0..n-1 to `backend`: the first FIRST_OF_EACH one at a
    time, the rest from `threads` clients; the php-fpm worker pids that
    served.

    APCng keeps the list of a metric's label sets in one APCu entry that
    it reads, extends and stores without a lock: two workers adding label
    sets at the same moment lose one of them (a run saw a histogram's
    route="/r0" series missing from APCng's page altogether). The peer's
    race is not a difference of ours, so every label set is made before
    the concurrent requests, which only update existing series."""
    pids: set[str] = set()
    lock = threading.Lock()
    failures: list[str] = []

    def one(i: int) -> None:
        status, _, body = h.http_get(f"{base}/work?backend={backend}&i={i}")
        with lock:
            if status != 200 or not body.strip().isdigit():
                failures.append(f"{backend} i={i}: {status} {body[:300]}")
            pids.add(body.strip())

    first = min(n, FIRST_OF_EACH)
    for i in range(first):
        one(i)

    def client(k: int) -> None:
        for i in range(first + k, n, threads):
            one(i)

    ts = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not failures, failures[:5]
    return pids


def requests_total(page: h.Page) -> float:
    return sum(s.value for s in page.samples if s.name in ("myapp_requests_total", "myapp_requests_total_total"))


@pytest.fixture(scope="module", params=["ffi", "extension"])
def run(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"promphp-{request.param}")
    os.chmod(tmp, 0o755)
    stores = {b: tmp / f"{b}.metrics" for b in BACKENDS}
    procs: list[subprocess.Popen] = []
    others: list = []
    try:
        fpm_port, port = h.free_port(), h.free_port()
        (tmp / "fpm.conf").write_text(fpm_conf(tmp, fpm_port, stores))
        ini = "ffi.enable = true\n"
        if request.param == "extension":
            ini += f"extension = {h.env('MIGRATION_PHP_EXTENSION')}\n"
        (tmp / "php.ini").write_text(ini)
        fpm = glob.glob("/usr/sbin/php-fpm*")[0]
        args = [fpm, "--nodaemonize", "-c", str(tmp / "php.ini"), "-y", str(tmp / "fpm.conf")]
        if os.geteuid() == 0:
            args.append("--allow-to-run-as-root")
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        (tmp / "nginx.conf").write_text(nginx_conf(tmp, port, fpm_port))
        procs.append(subprocess.Popen(["/usr/sbin/nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        base = f"http://127.0.0.1:{port}"
        peer_addr = f"127.0.0.1:{port}?backend=apcng"
        h.wait_for("php-fpm behind nginx", lambda: h.http_get(f"{base}/metrics?backend=apcng")[0] == 200)
        engine = h.http_get(f"{base}/engine")[2].strip()
        assert engine == request.param, f"php-fpm runs the binding on {engine}, not {request.param}"
        exporters = {}
        for b in BACKENDS:
            addr = f"127.0.0.1:{h.free_port()}"
            procs.append(subprocess.Popen(
                [h.env("SHMETRICS_BIN"), "serve", "--store", str(stores[b]), "--listen", addr],
                stdout=subprocess.DEVNULL, stderr=open(tmp / f"exporter-{b}.log", "w"),
            ))
            exporters[b] = addr
        for addr in exporters.values():
            h.wait_for("exporter", lambda a=addr: h.http_get(f"http://{a}/healthz")[0] in (200, 503))
        proxies = {b: h.AcceptProxy(f"http://{a}") for b, a in exporters.items()}
        others += proxies.values()
        jobs = {"peer": peer_addr}
        for b in BACKENDS:
            jobs[b] = exporters[b]
            jobs[f"{b}-text"] = proxies[b].address
        default = h.Prometheus(tmp / "prom-default", jobs)
        others.append(default)
        native = h.Prometheus(tmp / "prom-native", {"peer": peer_addr, **exporters}, "native-histograms")
        others.append(native)
        p3 = h.Prometheus(tmp / "prom3", {"peer": peer_addr, **exporters}, binary=h.prometheus3())
        others.append(p3)

        for b in ("apcng", *BACKENDS):
            pids = drive(base, b, REQUESTS)
            assert len(pids) == 2, f"{b}: requests served by {pids}, not by both workers"
        for addr in exporters.values():
            h.wait_for("the exporter's counts", lambda a=addr: requests_total(h.exporter_page(a, False)) == REQUESTS)
        settled = time.time()
        at = max(p.wait_scraped_after(settled + 0.5) for p in (default, native, p3))
        yield {"base": base, "exporters": exporters, "default": default, "native": native, "p3": p3, "at": at,
               "tmp": tmp}
        errors = tmp / "php-errors.log"
        assert not errors.exists() or not errors.read_text().strip(), errors.read_text()[-2000:]
    finally:
        for o in reversed(others):
            o.close() if isinstance(o, h.AcceptProxy) else o.stop()
        for p in reversed(procs):
            stop(p, signal.SIGQUIT)


def peer_page(run) -> h.Page:
    status, _, body = h.http_get(f"{run['base']}/metrics?backend=apcng")
    assert status == 200, body[:500]
    h.promtool_check(body)
    page = h.parse_page(body, openmetrics=False)
    assert requests_total(page) == REQUESTS
    return page


@pytest.mark.parametrize("backend", BACKENDS)
def test_page_text(run, backend):
    ours = h.exporter_page(run["exporters"][backend], openmetrics=False)
    h.assert_no_unchosen(PAIRS[backend], h.diff_pages("page-text", peer_page(run), ours))


@pytest.mark.parametrize("backend", BACKENDS)
def test_page_openmetrics(run, backend):
    ours = h.exporter_page(run["exporters"][backend], openmetrics=True)
    h.assert_no_unchosen(PAIRS[backend], h.diff_pages("page-openmetrics", peer_page(run), ours))


def test_page_adapter_rendered_by_promphp(run):
    """PromPHP's RenderTextFormat over ShmetricsAdapter (a PHP /metrics
    route after the switch) against the same over APCng."""
    status, _, body = h.http_get(f"{run['base']}/metrics?backend=adapter")
    assert status == 200, body[:500]
    h.promtool_check(body)
    diffs = h.diff_pages("page-promphp-render", peer_page(run), h.parse_page(body, False))
    h.assert_no_unchosen(PAIRS["adapter"], diffs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_prometheus_default(run, backend):
    diffs = h.diff_prometheus("prometheus-default", run["default"], "peer", backend, run["at"])
    h.assert_no_unchosen(PAIRS[backend], diffs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_prometheus_text(run, backend):
    diffs = h.diff_prometheus("prometheus-text", run["default"], "peer", f"{backend}-text", run["at"])
    h.assert_no_unchosen(PAIRS[backend], diffs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_prometheus_protobuf(run, backend):
    h.assert_serves_protobuf(run["exporters"][backend])
    diffs = h.diff_prometheus("prometheus-protobuf", run["native"], "peer", backend, run["at"])
    h.assert_no_unchosen(PAIRS[backend], diffs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_prometheus3_default(run, backend):
    """Prometheus 3 with its default scrape settings."""
    diffs = h.diff_prometheus("prometheus3-default", run["p3"], "peer", backend, run["at"])
    h.assert_no_unchosen(PAIRS[backend], diffs)

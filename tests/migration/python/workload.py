"""The workload of the prometheus_client pairs (tests/migration/test_prometheus_client.py):

    python workload.py LIB MODE PORTFILE

LIB is `prometheus_client` (the peer) or `shmetrics` (the same code after
`shmetrics.install_as_prometheus_client()`); MODE is `single` (the default
registry) or `multiprocess` (PROMETHEUS_MULTIPROC_DIR set by the caller,
and a /metrics endpoint on a fresh registry with a MultiProcessCollector,
as prometheus_client's multiprocess guide writes it). Request i makes the
same updates with either library. prometheus_client in single-process mode
cannot add up processes, so in that mode the two writers are threads of
one process with either library (the app being migrated is one process);
in multiprocess mode two forked processes write. The parent then serves its registry
with the library's own start_http_server, writes its port and the pids
(its own first, then the writers') to PORTFILE, and runs until killed.
"""

import os
import sys
import threading
import time

lib, mode, portfile = sys.argv[1:]
if lib == "shmetrics":
    import shmetrics

    shmetrics.install_as_prometheus_client()
import prometheus_client as pc  # noqa: E402 (after the switch)

# Label values with quotes, a backslash, a newline, UTF-8 and the empty string.
LABELS = ["plain", 'say "hi"', "back\\slash", "new\nline", "ütf-8 ✓ 日本", ""]
REQS = pc.Counter("myapp_http_requests_total", "Number of HTTP requests", ["route", "status"])
JOBS = pc.Counter("jobs", "Jobs per code and service", ["code", "service"], namespace="myapp")
BYTES = pc.Counter("bandwidth_bytes", "Total bandwidth in bytes", namespace="myapp")
CONNS = pc.Gauge("connections", "Connections by state", ["state"], namespace="myapp")
INFLIGHT = pc.Gauge("inflight_units", "A gauge that only rises", namespace="myapp", multiprocess_mode="sum")
LATENCY = pc.Histogram("request_duration_seconds", "HTTP request latency", ["route"],
                       namespace="myapp", buckets=[0.005, 0.25, 1, 2.5, 10])
SIZE = pc.Histogram("myapp_response_size_bytes", "Response sizes", buckets=[1, 10, 100, 1000])
UPSTREAM = pc.Histogram("myapp_upstream_seconds", "Upstream latency, default buckets", ["service"])
PAYLOAD = pc.Summary("myapp_payload_bytes", "Payload sizes")
if mode == "single":
    # Not in multiprocess mode, which prometheus_client does not support them in.
    BUILD = pc.Info("myapp_build", "Build information")
    STATE = pc.Enum("myapp_state", "Service state", states=["starting", "running", "stopped"])


def run(i: int) -> None:
    v = LABELS[i % len(LABELS)]
    route = f"/r{i % 3}"
    REQS.labels(route, str(200 + (i % 2) * 300)).inc()
    JOBS.labels(str(200 + i % 4), v).inc()
    BYTES.inc((i % 7) + 0.25)
    # Constant per label value: the same whichever writer sets it last.
    CONNS.labels(v).set(len(v.encode()) + 0.5)
    INFLIGHT.inc(0.5)
    LATENCY.labels(route).observe((i % 13) * 0.25)
    SIZE.observe(i % 1500)
    UPSTREAM.labels(v).observe((i % 11) / 10)
    PAYLOAD.observe(i % 17)


REQUESTS = int(os.environ["MIGRATION_REQUESTS"])
WRITERS = 2
pids = []
if mode == "single":
    threads = [threading.Thread(target=lambda k=k: [run(i) for i in range(k, REQUESTS, WRITERS)])
               for k in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
else:
    for k in range(WRITERS):
        pid = os.fork()
        if pid == 0:
            for i in range(k, REQUESTS, WRITERS):
                run(i)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert status == 0, f"writer {pid}: {status}"
if mode == "single":
    BUILD.info({"version": "1.2.3", "commit": 'ab"c'})
    STATE.state("running")

if mode == "multiprocess":
    from prometheus_client import multiprocess

    registry = pc.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
else:
    registry = pc.REGISTRY
server, _ = pc.start_http_server(0, addr="127.0.0.1", registry=registry)
with open(portfile + ".tmp", "w") as f:
    f.write(f"{server.server_port}\n" + "".join(f"{p}\n" for p in [os.getpid(), *pids]))
os.rename(portfile + ".tmp", portfile)
while True:
    time.sleep(60)

"""Runs the same multiprocess-mode app code on `sys.argv[1]`
(prometheus_client or shmetrics) with PROMETHEUS_MULTIPROC_DIR set: forked
workers update metrics and exit, then the parent reads them as a
multiprocess-mode /metrics endpoint does, and prints the samples as JSON
(the `pid` label replaced by the worker's index)."""

import importlib
import json
import os
import sys

lib = importlib.import_module(sys.argv[1])
multiprocess = importlib.import_module(sys.argv[1] + ".multiprocess")

REQUESTS = lib.Counter("app_requests", "Requests.", ["route"])
LATENCY = lib.Histogram("app_latency_seconds", "Latency.", ["route"])
SIZE = lib.Summary("app_size_bytes", "Sizes.")
PEAK = lib.Gauge("app_peak", "Peak.", multiprocess_mode="max")
TOTAL = lib.Gauge("app_total", "Total.", multiprocess_mode="sum")
EACH = lib.Gauge("app_each", "Each.")
IDLE = lib.Counter("app_idle", "Never incremented.")

# Every worker writes before any exits: a worker that starts after another
# died may take over its writer slot, and then a gauge of mode "all" no
# longer shows the dead one (docs/python.md); this comparison is of the
# values, so it keeps all three alive until all have written.
done_r, done_w = os.pipe()
go_r, go_w = os.pipe()
pids = []
for worker in range(3):
    pid = os.fork()
    if pid == 0:
        for i in range(50 + worker):
            route = "/a" if i % 3 else "/b"
            REQUESTS.labels(route).inc()
            LATENCY.labels(route).observe((i % 11) * 0.7)
            SIZE.observe(i * 10)
        PEAK.set(worker * 2.5)
        TOTAL.inc(worker + 1)
        EACH.set(100 + worker)
        os.write(done_w, b"x")
        os.read(go_r, 1)
        os._exit(0)
    pids.append(pid)
for _ in pids:
    os.read(done_r, 1)
os.write(go_w, b"x" * len(pids))
for pid in pids:
    os.waitpid(pid, 0)

registry = lib.CollectorRegistry()
multiprocess.MultiProcessCollector(registry)
index = {str(p): str(i) for i, p in enumerate(pids)}
index[str(os.getpid())] = "parent"
out = []
for metric in registry.collect():
    for s in metric.samples:
        labels = dict(s.labels)
        if "pid" in labels:
            labels["pid"] = index[labels["pid"]]
        out.append([metric.name, metric.type, s.name, sorted(labels.items()), s.value])
print(json.dumps(sorted(out)))

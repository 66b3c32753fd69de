"""Worker functions for the multiprocessing tests (importable, so the spawn
start method can find them)."""

from __future__ import annotations

import os

import shmetrics


def count(n: int, ready, release) -> None:
    """Counts `n` requests, marks itself busy, and waits to be released."""
    requests = shmetrics.Counter("mp_requests", "x", ["worker_kind"])
    busy = shmetrics.Gauge("mp_busy", "x", multiprocess_mode="livesum")
    pids = shmetrics.Gauge("mp_pid", "x", multiprocess_mode="liveall")
    lat = shmetrics.Histogram("mp_seconds", "x", buckets=[0.5])
    child = requests.labels("child")
    for i in range(n):
        child.inc()
        lat.observe(i % 2)
    busy.inc()
    pids.set(os.getpid())
    ready.put(os.getpid())
    release.wait(60)

"""Worker functions for the multiprocessing tests (importable, so the spawn
start method can find them)."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, Callable, List

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


def fork_ready(target: Callable[[Any], None], n: int) -> List[Any]:
    """Forks `n` processes running `target(ready)` and waits until each has
    put its pid in `ready`."""
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Queue()
    procs = [ctx.Process(target=target, args=(ready,)) for _ in range(n)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=60)
    return procs

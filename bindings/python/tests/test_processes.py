"""Processes: multiprocessing with the fork and spawn start methods. Each
process writes through its own writer slot; counts add up exactly, and the
live gauge modes follow which processes are alive."""

from __future__ import annotations

import multiprocessing
import os

import pytest

import shmetrics
from _workers import count

N = 20_000
WORKERS = 4


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_processes_add_up_and_live_modes_follow_them(store, scrape, method):
    ctx = multiprocessing.get_context(method)
    requests = shmetrics.Counter("mp_requests", "x", ["worker_kind"])
    busy = shmetrics.Gauge("mp_busy", "x", multiprocess_mode="livesum")
    pids = shmetrics.Gauge("mp_pid", "x", multiprocess_mode="liveall")
    requests.labels("parent").inc(7)
    pids.set(os.getpid())
    ready, release = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=count, args=(N, ready, release)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    child_pids = sorted(ready.get(timeout=60) for _ in procs)
    assert child_pids == sorted(p.pid for p in procs)

    live = scrape()
    assert live.get("mp_requests_total", worker_kind="child") == N * WORKERS
    assert live.get("mp_requests_total", worker_kind="parent") == 7
    assert live.get("mp_busy") == WORKERS
    shown = {int(dict(l)["pid"]): v for (n, l), v in live.samples.items() if n == "mp_pid"}
    assert shown == {p: p for p in child_pids + [os.getpid()]}
    assert live.get("mp_seconds_count") == N * WORKERS
    assert live.get("mp_seconds_bucket", le="0.5") == N * WORKERS // 2

    release.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    after = scrape()
    assert after.get("mp_requests_total", worker_kind="child") == N * WORKERS, "dead workers' counts stay"
    assert after.get("mp_busy") == 0, "livesum counts live processes only"
    shown = {int(dict(l)["pid"]) for (n, l) in after.samples if n == "mp_pid"}
    assert shown == {os.getpid()}, "liveall shows live processes only"


def test_forked_child_gets_its_own_slot(store, scrape):
    g = shmetrics.Gauge("slot_owner", "x", multiprocess_mode="all")
    g.set(1)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: same objects, inherited from the parent
        try:
            g.set(2)
            os.write(w, b"k")
        finally:
            os._exit(0)
    os.read(r, 1)
    os.waitpid(pid, 0)
    values = {dict(l)["pid"]: v for (n, l), v in scrape().samples.items() if n == "slot_owner"}
    assert values == {str(os.getpid()): 1, str(pid): 2}

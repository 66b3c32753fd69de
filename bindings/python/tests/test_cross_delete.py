"""Deletion is seen by every process: `remove()` and `clear()` in one
process while another keeps incrementing through children it cached
before. The cached children's next updates find the series deleted, look
it up again and land in a new series from zero: every round's totals are
exact, parsed back by prometheus_client's parsers from the exporter's
output."""

from __future__ import annotations

import multiprocessing

import shmetrics

ROUNDS = 6
PER_ROUND = 3_000


def _worker(done, go) -> None:
    """Caches one child per queue, then increments each `PER_ROUND` times
    a round, waiting for the parent's deletion between rounds."""
    jobs = shmetrics.Counter("jobs", "Jobs run.", ["queue"])
    wait = shmetrics.Histogram("wait_seconds", "Queue wait.", ["queue"], buckets=[0.1, 1.0])
    children = [(jobs.labels(q), wait.labels(q)) for q in ("fast", "slow")]
    for _ in range(ROUNDS):
        for _ in range(PER_ROUND):
            for counter, histogram in children:
                counter.inc()
                histogram.observe(0.5)
        done.put("round")
        assert go.get(timeout=60) == "deleted"


def test_cached_children_survive_remove_and_clear_in_another_process(store, scrape):
    ctx = multiprocessing.get_context("fork")
    done, go = ctx.Queue(), ctx.Queue()
    jobs = shmetrics.Counter("jobs", "Jobs run.", ["queue"])
    wait = shmetrics.Histogram("wait_seconds", "Queue wait.", ["queue"], buckets=[0.1, 1.0])
    worker = ctx.Process(target=_worker, args=(done, go))
    worker.start()
    try:
        for round_ in range(ROUNDS):
            assert done.get(timeout=60) == "round"
            got = scrape()
            for q in ("fast", "slow"):
                assert got.get("jobs_total", queue=q) == PER_ROUND, (round_, q, got.text)
                assert got.get("wait_seconds_count", queue=q) == PER_ROUND, (round_, q)
                assert got.get("wait_seconds_bucket", queue=q, le="1.0") == PER_ROUND
                assert got.om[("jobs_total", frozenset({("queue", q)}))] == PER_ROUND
            if round_ % 2 == 0:
                jobs.remove("fast")
                jobs.remove("slow")
                wait.clear()
            else:
                jobs.clear()
                wait.remove("fast")
                wait.remove("slow")
            gone = scrape()
            assert gone.get("jobs_total", queue="fast") is None
            assert gone.get("wait_seconds_count", queue="slow") is None
            go.put("deleted")
    finally:
        worker.join(60)
    assert worker.exitcode == 0
    # After the last deletion the worker made no update: nothing is shown.
    assert scrape().get("jobs_total", queue="fast") is None


def test_a_child_kept_across_its_own_remove_starts_from_zero(store, scrape):
    c = shmetrics.Counter("kept", "x", ["k"])
    child = c.labels("a")
    child.inc(5)
    c.remove("a")
    child.inc()
    child.inc()
    assert scrape().get("kept_total", k="a") == 2

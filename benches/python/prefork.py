"""The cost of an update through a metric made before a fork, in the child.

A prefork server that loads the app in its master (gunicorn's --preload,
uWSGI without lazy-apps) gives every worker metrics made in the master.
This times inc() on a counter without labels and on a child made by
labels(), both made before the fork, in the master and then in a forked
worker: the best of 5 rounds of 1,000,000 calls each.

    python3 benches/python/prefork.py      (with the binding installed)
"""

import os
import tempfile
import time


def best_ns(f, n=1_000_000, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - start) / n * 1e9)
    return best


def report(where, calls):
    figures = ", ".join(f"{name} {best_ns(f):.1f} ns" for name, f in calls)
    print(f"{where}: {figures}", flush=True)


def main():
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        os.environ["SHMETRICS_STORE"] = os.path.join(d, "store")
        from shmetrics import Counter

        plain = Counter("prefork_plain", "A counter without labels.")
        child = Counter("prefork_labelled", "A counter with a label.", ["route"]).labels("/")
        calls = [("inc()", plain.inc), ("labels('/').inc() kept", child.inc)]
        report("master", calls)
        pid = os.fork()
        if pid == 0:
            try:
                report("forked worker", calls)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()

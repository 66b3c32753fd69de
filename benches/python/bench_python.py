#!/usr/bin/env python3
"""shmetrics vs prometheus_client (multiprocess mode), from Python.

    python3 benches/python/bench_python.py [--quick]
    python3 benches/python/bench_python.py --only inapp   # for benches/inapp_render.sh

Run it with a Python that has both `shmetrics` (pip install ./bindings/python)
and `prometheus_client` installed. It prints three tables, with absolute
figures and ratios (theirs / ours):

1. the cost of one update (ns/op, timeit loop overhead subtracted);
2. the time to render a whole multi-process store (series x processes);
3. the time to render after worker restarts.

(`--only inapp`: the render inside the app alone, for
benches/inapp_render.sh; see section_inapp.)

Each library is measured in processes of its own, started fresh for each
measurement: prometheus_client's always with PROMETHEUS_MULTIPROC_DIR set
before it is imported, shmetrics' without it, and no process ever imports
both. Store files and multiprocess directories go to a temporary directory
(under /dev/shm when it exists), removed at the end. No figure is checked
against a threshold; see benches/python/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from types import ModuleType
from typing import Any

THIS = os.path.abspath(__file__)
OURS = "shmetrics"
THEIRS = "prometheus_client"
LIBS = (OURS, THEIRS)

FAMILIES = 10  # counter families the series of sections 2 and 3 are spread over
CODES = ("200", "201", "404", "500", "503")
OBSERVED = 0.3  # the value Histogram.observe() records (8th of the 15 default buckets)


def label_values(n_series: int) -> list[list[tuple[str, str]]]:
    """The label values of `n_series` series, spread over FAMILIES families:
    route and status code, as an HTTP request counter has."""
    per = -(-n_series // FAMILIES)
    out: list[list[tuple[str, str]]] = []
    left = n_series
    for _f in range(FAMILIES):
        k = min(per, left)
        out.append([(f"/api/v1/items/{j // 5}", CODES[j % 5]) for j in range(k)])
        left -= k
    return out


# ---------------------------------------------------------------------------
# Child processes: each imports exactly one of the two libraries.
# ---------------------------------------------------------------------------


def child_env(lib: str, multiproc_dir: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir", "SHMETRICS_STORE"):
        env.pop(k, None)
    if lib == THEIRS and multiproc_dir is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = multiproc_dir
    return env


def run_child(spec: dict, timeout: float = 3600) -> dict:
    """Runs `spec` in a fresh interpreter and returns the JSON it prints."""
    env = child_env(spec["lib"], spec.get("dir"))
    p = subprocess.run([sys.executable, THIS, "--child", json.dumps(spec)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"child {spec['task']} ({spec['lib']}) failed with {p.returncode}:\n"
                           f"{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


class Lib:
    """The few calls the benchmark needs, for one library, imported here."""

    mod: ModuleType

    def __init__(self, spec: dict) -> None:
        self.name = spec["lib"]
        if self.name == OURS:
            assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
            import shmetrics
            self.mod = shmetrics
            if spec.get("store") and spec["task"] != "render":
                n = spec.get("max_series", 1024)
                shmetrics.configure(spec["store"], max_series=2 * n + FAMILIES + 1024, max_families=n // 8 + 1024,
                                    label_bytes=max(16 << 20, n * 128), max_writers=64)
        else:
            assert os.environ.get("PROMETHEUS_MULTIPROC_DIR") == spec.get("dir")
            import prometheus_client
            from prometheus_client import values
            # Multiprocess mode is chosen at import, from the environment;
            # the "single" variant is prometheus_client's default mode.
            single = spec.get("variant") == "single"
            assert (values.ValueClass is values.MutexValue) == single, "not in the mode asked for"
            self.mod = prometheus_client

    def families(self, n: int) -> list:
        return [self.mod.Counter(f"bench_requests_{f}_total", f"Requests served by handler {f}.",
                                 ["route", "code"]) for f in range(n)]

    def mixed(self, n_series: int) -> list:
        """The families of benches/inapp_render.sh's shape: n_series / 8
        families of 8 label sets, one in ten a histogram with the default
        buckets, the others counters; (metric, is_histogram) pairs."""
        out = []
        for f in range(n_series // 8):
            if f % 10 == 9:
                out.append((self.mod.Histogram(f"app_f{f}_seconds", "Latency.", ["route", "code"]), True))
            else:
                out.append((self.mod.Counter(f"app_f{f}", "Requests.", ["route", "code"]), False))
        return out

    def check_alone(self) -> None:
        other = THEIRS if self.name == OURS else OURS
        assert other not in sys.modules, f"{other} was imported next to {self.name}"


def child_ops(spec: dict) -> dict:
    """Section 1: ns per update, timeit-style."""
    import timeit
    lib = Lib(spec)
    m = lib.mod
    c = m.Counter("bench_ops_total", "Plain counter.")
    cl = m.Counter("bench_labelled_total", "Labelled counter.", ["a", "b"])
    child = cl.labels("a", "b")
    h = m.Histogram("bench_latency_seconds", "Histogram with the default buckets.")
    g = m.Gauge("bench_gauge", "Gauge (default multiprocess_mode).")
    ns = {"c": c, "cl": cl, "child": child, "h": h, "g": g}
    publisher = None
    if spec.get("variant") == "publisher":
        # A custom collector and a set_function gauge, published into the
        # store every millisecond by the process's publisher thread while
        # the updates are timed.
        class Pool:
            def collect(self):
                f = m.GaugeMetricFamily("bench_pool_size", "Pool.", labels=["db"])
                f.add_metric(["main"], 4)
                yield f
                k = m.CounterMetricFamily("bench_pool_checkouts", "Checkouts.")
                k.add_metric([], time.perf_counter())
                yield k
        # Only this collector: the default process, platform and GC
        # collectors, which REGISTRY also carries, would be published too.
        for d in (m.PROCESS_COLLECTOR, m.PLATFORM_COLLECTOR, m.GC_COLLECTOR):
            m.REGISTRY.unregister(d)
        m.REGISTRY.register(Pool())
        m.Gauge("bench_fn", "Function gauge.", multiprocess_mode="livesum").set_function(time.perf_counter)
        publisher = m.start_publisher(interval=0.001)
    setup = "c = M['c']; cl = M['cl']; child = M['child']; h = M['h']; g = M['g']"
    ops = [
        ("Counter.inc()", "c.inc()"),
        ("child.inc() (cached child)", "child.inc()"),
        ("labels('a','b').inc()", "cl.labels('a', 'b').inc()"),
        (f"Histogram.observe({OBSERVED})", f"h.observe({OBSERVED})"),
        ("Gauge.set(2.0)", "g.set(2.0)"),
    ]
    # Names in `setup` are locals of timeit's inner function, as in a hot loop.
    timers = [(name, timeit.Timer(stmt, setup, globals={"M": ns})) for name, stmt in ops]
    empty = timeit.Timer("pass", setup, globals={"M": ns})
    target = spec["seconds_per_run"]
    numbers = {}
    for name, t in timers:
        t.timeit(2000)  # warm up: first updates create files, slots, children
        n = 1000
        while True:
            dt = t.timeit(n)
            if dt >= target / 10:
                break
            n *= 4
        numbers[name] = max(1000, int(n * target / dt))
    raw: dict[str, list[float]] = {name: [] for name, _ in timers}
    base: dict[str, list[float]] = {name: [] for name, _ in timers}
    for _r in range(spec["repeats"]):
        # Round-robin, so a noisy moment spreads over all operations.
        for name, t in timers:
            n = numbers[name]
            base[name].append(empty.timeit(n) / n)
            raw[name].append(t.timeit(n) / n)
    out = {}
    for name, _ in timers:
        overhead = min(base[name])
        per_op = [(x - overhead) * 1e9 for x in raw[name]]
        out[name] = {"number": numbers[name], "overhead_ns": overhead * 1e9, "ns": per_op}
    ticks = 0
    if publisher is not None:
        publisher.stop()
        # Read from the store (REGISTRY's own page takes the name from the
        # collector itself).
        store_view = m.CollectorRegistry()
        m.multiprocess.MultiProcessCollector(store_view)
        ticks = int(store_view.get_sample_value("bench_pool_checkouts_total") is not None)
    lib.check_alone()
    return {"ops": out, "version": getattr(m, "__version__", "?"), "published": ticks}


def _writer(lib: Lib, fams: list, values: list, barrier) -> None:
    """A worker: takes its slot (or file) first, waits until every worker has,
    so that all of them are alive at once, touches every series once, and
    stays alive until every worker is done."""
    fams[0].labels(*values[0][0]).inc()
    barrier.wait()
    for f, fam in enumerate(fams):
        for i, v in enumerate(values[f]):
            if f == 0 and i == 0:
                continue
            fam.labels(*v).inc()
    barrier.wait()


MIXED_LABELS = [(f"/r/{j // 2}", ("200", "500")[j % 2]) for j in range(8)]  # route, code


def _mixed_writer(metrics: list, barrier) -> None:
    """A worker of the inapp shape: every series once, all workers alive."""
    barrier.wait()
    for m, hist in metrics:
        for v in MIXED_LABELS:
            if hist:
                m.labels(*v).observe(OBSERVED)
            else:
                m.labels(*v).inc()
    barrier.wait()


def child_populate(spec: dict) -> dict:
    """Section 2: N forked writer processes, all alive at once, each touching
    every series once."""
    import multiprocessing
    lib = Lib(spec)
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(spec["procs"])
    if spec.get("mixed"):
        target, args = _mixed_writer, (lib.mixed(spec["series"]), barrier)
    else:
        target, args = _writer, (lib, lib.families(FAMILIES), label_values(spec["series"]), barrier)
    t0 = time.perf_counter()
    procs = [ctx.Process(target=target, args=args) for i in range(spec["procs"])]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    dt = time.perf_counter() - t0
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    assert not bad, f"writers failed: {bad}"
    lib.check_alone()
    return {"populate_s": dt}


def _timed(render: Any, warm_repeats: int, budget: float) -> dict:
    """The first call of `render` and up to `warm_repeats` more, within
    `budget` seconds (at least one)."""
    t1 = time.perf_counter()
    page = render()
    first = time.perf_counter() - t1
    warm: list[float] = []
    spent = 0.0
    while len(warm) < warm_repeats and (len(warm) < 1 or spent < budget):
        t = time.perf_counter()
        render()
        dt = time.perf_counter() - t
        warm.append(dt)
        spent += dt
    return {"first_s": first, "warm_s": warm, "page": page}


def _check(page: bytes, expect: float, mixed: bool = False) -> tuple[int, int]:
    """(series with the expected total, series) of the bench's counters
    (mixed: and of its histograms, by their `_count`)."""
    import re
    mine = re.compile(r"app_f\d+_(total|seconds_count)\{" if mixed else r"bench_requests_\d+_total\{")
    good = total = 0
    for line in page.decode().splitlines():
        if mine.match(line) and "shmetrics_overflow" not in line:
            total += 1
            if float(line.rsplit(" ", 1)[1]) == expect:
                good += 1
    return good, total


def _serve(cli: str, store: str) -> tuple[subprocess.Popen, str]:
    """`shmetrics serve` on a free loopback port, once it answers."""
    import socket
    import urllib.request
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    proc = subprocess.Popen([cli, "serve", "--store", store, "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1).close()
            return proc, url + "/metrics"
        except OSError:
            time.sleep(0.025)
    proc.kill()
    raise RuntimeError("the exporter did not start")


def child_render(spec: dict) -> dict:
    """A fresh reader. Ours: the exporter (`shmetrics serve`, scraped over
    HTTP), the migrated in-process code (CollectorRegistry +
    MultiProcessCollector(path) + generate_latest), and the native render
    (Store.render). Theirs: CollectorRegistry + MultiProcessCollector +
    generate_latest. Each: the first render and warm repeats."""
    lib = Lib(spec)
    expect = float(spec["expect"])
    reps, budget = spec["warm_repeats"], spec["warm_budget_s"]
    out: dict[str, Any] = {}
    if lib.name == OURS and spec.get("mixed"):
        # The app's own page: its registry, showing the store.
        from shmetrics import CollectorRegistry, generate_latest, multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=spec["store"])
        out["generate_latest"] = _timed(lambda: generate_latest(registry), reps, budget)
    elif lib.name == OURS and spec.get("only_native"):
        store = lib.mod.Store(spec["store"], create=False, read_only=True)
        out["native"] = _timed(lambda: store.render("text"), reps, budget)
    elif lib.name == OURS:
        import urllib.request
        from shmetrics import CollectorRegistry, generate_latest, multiprocess
        cli = find_cli()
        assert cli is not None, "the exporter is needed: cargo build -p shmetrics, or set SHMETRICS_BIN"
        proc, url = _serve(cli, spec["store"])
        try:
            def scrape() -> bytes:
                with urllib.request.urlopen(url, timeout=600) as r:
                    return r.read()
            out["exporter"] = _timed(scrape, reps, budget)
        finally:
            proc.terminate()
            proc.wait(30)
        store = lib.mod.Store(spec["store"], create=False, read_only=True)
        out["native"] = _timed(lambda: store.render("text"), reps, budget)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=spec["store"])
        out["generate_latest"] = _timed(lambda: generate_latest(registry), reps, budget)
    else:
        from prometheus_client import CollectorRegistry, generate_latest, multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=spec["dir"])
        out["mpc"] = _timed(lambda: generate_latest(registry), reps, budget)
    for r in out.values():
        page = r.pop("page")
        r["good"], r["series"] = _check(page, expect, bool(spec.get("mixed")))
        r["bytes"] = len(page)
    lib.check_alone()
    return out


def child_page(spec: dict) -> dict:
    """Section 4: one process, the same metrics in both libraries (the
    counter families of section 2 plus one histogram family with the
    default buckets, a tenth as many series), rendered in process by
    generate_latest(registry). Ours: a registry over a store, the page
    written by the Rust renderer; theirs: prometheus_client's default
    single-process mode; both through REGISTRY. Times with `_created` on
    (the default); the page
    with `_created` off is hashed to show that both write the same bytes."""
    import hashlib
    lib = Lib(spec)
    m = lib.mod
    # REGISTRY (ours: the configured store), without the default process,
    # platform and GC collectors, whose values differ between the two
    # processes.
    registry = m.REGISTRY
    for c in (m.PROCESS_COLLECTOR, m.PLATFORM_COLLECTOR, m.GC_COLLECTOR):
        registry.unregister(c)
    values = label_values(spec["series"])
    for f, vals in enumerate(values):
        c = m.Counter(f"bench_requests_{f}_total", f"Requests served by handler {f}.", ["route", "code"])
        for v in vals:
            c.labels(*v).inc()
    h = m.Histogram("bench_request_seconds", "Request time.", ["route", "code"])
    for v in values[0][: max(1, spec["series"] // 10)]:
        h.labels(*v).observe(OBSERVED)
    out = _timed(lambda: m.generate_latest(registry), spec["warm_repeats"], spec["warm_budget_s"])
    out["bytes"] = len(out.pop("page"))
    m.disable_created_metrics()
    out["sha256"] = hashlib.sha256(m.generate_latest(registry)).hexdigest()
    lib.check_alone()
    return out


def _restart_worker(lib: Lib, fams: list, values: list, ready, leave) -> None:
    for f, fam in enumerate(fams):
        for v in values[f]:
            fam.labels(*v).inc()
    ready.set()
    if leave is not None:
        leave.wait()


def child_restarts(spec: dict) -> dict:
    """Section 3: `live` workers stay up; one by one, short-lived workers
    write the same series and exit, as gunicorn replaces workers; a fresh
    reader renders after each checkpoint's number of restarts."""
    import multiprocessing
    lib = Lib(spec)
    fams = lib.families(FAMILIES)
    values = label_values(spec["series"])
    ctx = multiprocessing.get_context("fork")
    live = []
    for _ in range(spec["live"]):
        ready, leave = ctx.Event(), ctx.Event()
        p = ctx.Process(target=_restart_worker, args=(lib, fams, values, ready, leave))
        p.start()
        ready.wait()
        live.append((p, leave))
    points = []
    done = 0
    restart_s = 0.0
    for k in spec["checkpoints"]:
        t0 = time.perf_counter()
        while done < k:
            ready = ctx.Event()
            p = ctx.Process(target=_restart_worker, args=(lib, fams, values, ready, None))
            p.start()
            p.join()  # exited and reaped: its slot (or file) belongs to a dead process
            assert p.exitcode == 0
            done += 1
        restart_s += time.perf_counter() - t0
        both = run_child({**spec, "task": "render", "expect": spec["live"] + done, "only_native": True})
        r = both["native"] if lib.name == OURS else both["mpc"]
        r["restarts"] = done
        r["files"] = len(os.listdir(spec["dir"])) if lib.name == THEIRS else None
        r["slots"] = slots_used(spec.get("cli"), spec["store"]) if lib.name == OURS else None
        points.append(r)
    for p, leave in live:
        leave.set()
        p.join()
    lib.check_alone()
    return {"points": points, "restart_ms": 1e3 * restart_s / max(1, done)}


def find_cli() -> str | None:
    """The `shmetrics` command, if built, to show the store's writer slots
    (optional): $SHMETRICS_BIN, PATH, or the repository's target directory."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(THIS)))
    targets = [os.environ.get("CARGO_TARGET_DIR") or "", os.path.join(repo, "target")]
    cands = [os.environ.get("SHMETRICS_BIN") or "", shutil.which("shmetrics") or ""]
    cands += [os.path.join(t, prof, "shmetrics") for t in targets if t for prof in ("release", "debug")]
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


def slots_used(cli: str | None, store: str) -> str | None:
    """'slots used (claims)' from `shmetrics inspect`, or None."""
    if cli is None:
        return None
    try:
        out = subprocess.run([cli, "inspect", "--store", store], capture_output=True, text=True,
                             timeout=60).stdout.splitlines()
        head = next(i for i, l in enumerate(out) if l.split()[:3] == ["slot", "pid", "state"])
        used = sum(1 for l in out[head + 1:] if l.split() and l.split()[0].isdigit())
        claims = next(l for l in out if l.startswith("writers")).split(";")[1].split()[0]
        return f"{used} ({claims} claims)"
    except (OSError, StopIteration, IndexError, subprocess.SubprocessError):
        return None


def child_main(spec: dict) -> None:
    task = {"ops": child_ops, "populate": child_populate, "render": child_render,
            "restarts": child_restarts, "page": child_page}[spec["task"]]
    print(json.dumps(task(spec)))


# ---------------------------------------------------------------------------
# The parent: runs the children and prints the tables.
# ---------------------------------------------------------------------------


def fmt_ns(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def fmt_s(x: float) -> str:
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.2f} ms"
    return f"{x * 1e6:.0f} us"


def fmt_ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.1f}x"


def table(head: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    right = set(range(1, len(head))) if right is None else right
    w = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    def line(r: list[str]) -> str:
        return "  ".join(c.rjust(w[i]) if i in right else c.ljust(w[i]) for i, c in enumerate(r)).rstrip()
    return "\n".join([line(head), "  ".join("-" * x for x in w)] + [line(r) for r in rows])


# Targets from the issue, and the issue author's prometheus_client
# multiprocess figures on this machine.
OPS_VARIANTS = [
    ("ours", OURS, ""),
    ("ours+publisher", OURS, "publisher"),
    ("theirs multiprocess", THEIRS, ""),
    ("theirs single", THEIRS, "single"),
]


def section_ops(tmp: str, quick: bool) -> None:
    repeats = 5 if quick else 9
    per_run = 0.05 if quick else 0.2
    print(f"\n== 1. Update cost, ns/op ==\n"
          f"timeit: {repeats} repeats per operation, each a loop sized to take ~{per_run} s, "
          f"operations interleaved round-robin;\nthe empty-loop cost (timeit of 'pass' with the same "
          f"loop size, min of {repeats}) is subtracted from every repeat.\n"
          f"Each variant in a fresh process: ours (shmetrics); ours+publisher (the same, with a custom\n"
          f"collector and a set_function gauge published into the store every 1 ms by a thread of the\n"
          f"process while the updates run); prometheus_client in multiprocess mode\n"
          f"(PROMETHEUS_MULTIPROC_DIR set) and in its default single-process mode.")
    res = {}
    for label, lib, variant in OPS_VARIANTS:
        spec: dict[str, Any] = {"lib": lib, "task": "ops", "repeats": repeats, "seconds_per_run": per_run,
                                "variant": variant}
        if lib == OURS:
            spec["store"] = os.path.join(tmp, f"ops{variant}.shm")
        elif variant != "single":
            spec["dir"] = os.path.join(tmp, "ops-multiproc")
            os.mkdir(spec["dir"])
        res[label] = run_child(spec)["ops"]
    rows = []
    for name in res["ours"]:
        med = {label: statistics.median(res[label][name]["ns"]) for label, _, _ in OPS_VARIANTS}
        ours = med["ours"]
        rows.append([name] + [fmt_ns(med[label]) for label, _, _ in OPS_VARIANTS]
                    + [fmt_ratio(med["ours+publisher"] / ours), fmt_ratio(med["theirs multiprocess"] / ours),
                       fmt_ratio(med["theirs single"] / ours)])
    print()
    print(table(["operation (median ns/op)"] + [label for label, _, _ in OPS_VARIANTS]
                + ["publisher / ours", "multiprocess / ours", "single / ours"], rows,
                right=set(range(1, 8))))
    print("\nns/op, medians of the repeats; ratio = that variant / ours (publisher / ours near 1.0 means\n"
          "publishing costs the updates nothing).")
    for label, _, _ in OPS_VARIANTS:
        r = res[label]
        oh = [x["overhead_ns"] for x in r.values()]
        spreads = [(max(x['ns']) - min(x['ns'])) / statistics.median(x['ns']) for x in r.values()]
        print(f"{label}: loop overhead subtracted {min(oh):.1f}-{max(oh):.1f} ns/iteration; spread "
              "(max-min)/median per operation: " + ", ".join(f"{100 * x:.0f}%" for x in spreads))


def render_case(tmp: str, lib: str, series: int, procs: int, quick: bool) -> dict:
    case = f"{series}x{procs}"
    spec: dict[str, Any] = {"lib": lib, "series": series, "procs": procs, "max_series": series}
    if lib == OURS:
        spec["store"] = os.path.join(tmp, f"render-{case}.shm")
        spec["dir"] = None
    else:
        spec["dir"] = os.path.join(tmp, f"render-{case}-multiproc")
        os.mkdir(spec["dir"])
    pop = run_child({**spec, "task": "populate"})
    r = run_child({**spec, "task": "render", "expect": procs,
                   "warm_repeats": 5 if quick else 7,
                   "warm_budget_s": 3 if quick else 20})
    r["populate_s"] = pop["populate_s"]
    if lib == OURS:
        os.unlink(spec["store"])
    else:
        shutil.rmtree(spec["dir"])
    return r


def section_render(tmp: str, quick: bool, skip_largest_theirs: bool) -> None:
    sizes = [1_000, 10_000] if quick else [10_000, 100_000]
    procs = [1, 8]
    warm_n = 5 if quick else 7
    print(f"\n== 2. Scraping the whole store, text format ==\n"
          f"{FAMILIES} labelled counter families; N writer processes (multiprocessing, fork), all alive at once,\n"
          f"each increment every series once and exit; then a fresh reader process scrapes.\n"
          f"exporter: `shmetrics serve` on the store, GET /metrics over loopback HTTP (body read).\n"
          f"generate_latest: ours in process, the migrated multiprocess code: CollectorRegistry +\n"
          f"  MultiProcessCollector(registry, path=store) + generate_latest(registry), written in Python.\n"
          f"native: Store.render('text') in process.\n"
          f"theirs: prometheus_client CollectorRegistry + MultiProcessCollector(path) + generate_latest().\n"
          f"Times: warm median (first scrape in brackets); up to {warm_n} warm repeats within a time budget.")
    rows, info = [], []
    for n in sizes:
        for p in procs:
            res: dict = {}
            for lib in LIBS:
                if lib == THEIRS and skip_largest_theirs and n == sizes[-1] and p == procs[-1]:
                    res[lib] = None
                    continue
                res[lib] = render_case(tmp, lib, n, p, quick)
                print(f"  [{lib} {n:,} series x {p} processes done]", file=sys.stderr, flush=True)
            a, b = res[OURS], res[THEIRS]

            def cell(r: dict | None) -> str:
                if r is None:
                    return "skipped"
                return f"{fmt_s(statistics.median(r['warm_s']))} ({fmt_s(r['first_s'])})"

            def check(r: dict | None) -> str:
                if r is None:
                    return "-"
                return "ok" if r["good"] == r["series"] == n else f"FAILED {r['good']}/{r['series']}"
            mpc = None if b is None else b["mpc"]
            ratio, verdict = "", ""
            if mpc is not None:
                rw = statistics.median(mpc["warm_s"]) / statistics.median(a["exporter"]["warm_s"])
                ratio = fmt_ratio(rw)
                verdict = "met" if rw >= 50 else "NOT met"
            rows.append([f"{n:,} x {p}", cell(a["exporter"]), cell(a["generate_latest"]), cell(a["native"]),
                         cell(mpc), ratio, verdict])
            info.append([f"{n:,} x {p}", f"{a['exporter']['bytes'] / 1e6:.2f} MB",
                         "-" if mpc is None else f"{mpc['bytes'] / 1e6:.2f} MB",
                         " / ".join(check(a[k]) for k in ("exporter", "generate_latest", "native"))
                         + " / " + check(mpc),
                         fmt_s(a["populate_s"]), "-" if b is None else fmt_s(b["populate_s"])])
    print()
    print(table(["series x procs", "exporter", "generate_latest (ours)", "native render",
                 "MultiProcessCollector (theirs)", "theirs / exporter", "target >= 50x"], rows,
                right={1, 2, 3, 4, 5}))
    print("\nratio = theirs warm median / exporter warm median.\n")
    print(table(["series x procs", "page exporter", "page theirs",
                 "values checked: exporter / generate_latest / native / theirs", "populate ours",
                 "populate theirs"], info, right={1, 2, 4, 5}))
    print("values checked: the page has every series, each with value = number of processes.\n"
          "populate: wall time for the N writers to start, touch every series and exit (for information).")
    if skip_largest_theirs:
        print(f"prometheus_client's largest case ({sizes[-1]:,} x {procs[-1]}) was skipped (--skip-largest).")


def section_inapp(tmp: str, series: int = 10_000, procs: int = 16, k: int = 5) -> None:
    """The render inside the app, for benches/inapp_render.sh: `series`
    series in the inapp shape (Lib.mixed), written by `procs` forked
    processes, each every series once; then a fresh process of the app
    renders generate_latest(registry) `k` times (after one untimed
    render), its registry showing the store through
    MultiProcessCollector(registry, path) (ours: the store file; theirs:
    the multiprocess directory). Prints the medians and
    `inapp python MS_SHMETRICS MS_PROMETHEUS_CLIENT`."""
    ms = {}
    for lib in LIBS:
        spec: dict[str, Any] = {"lib": lib, "series": series, "procs": procs, "max_series": series, "mixed": True}
        if lib == OURS:
            spec["store"], spec["dir"] = os.path.join(tmp, "inapp.shm"), None
        else:
            spec["dir"] = os.path.join(tmp, "inapp-multiproc")
            os.mkdir(spec["dir"])
        run_child({**spec, "task": "populate"})
        r = run_child({**spec, "task": "render", "expect": procs, "warm_repeats": k, "warm_budget_s": 600})
        r = r["generate_latest"] if lib == OURS else r["mpc"]
        if not r["good"] == r["series"] == series:
            raise SystemExit(f"{lib}: {r['good']} of {r['series']} series at {procs}, not {series}")
        ms[lib] = 1e3 * statistics.median(r["warm_s"])
    print(f"in-app render, median of {k} (ms), {series} series x {procs} processes: generate_latest on "
          f"shmetrics {ms[OURS]:.2f}, on prometheus_client's multiprocess mode {ms[THEIRS]:.2f} "
          f"({ms[THEIRS] / ms[OURS]:.2f}x)")
    print(f"inapp python {ms[OURS]:.3f} {ms[THEIRS]:.3f}")


def section_restarts(tmp: str, quick: bool) -> None:
    series, live = 1_000, 4
    checkpoints = [0, 50, 100, 200]
    print(f"\n== 3. Rendering after worker restarts ==\n"
          f"{live} long-lived workers write {series:,} series (counters, {FAMILIES} families) and stay up; then one at a time\n"
          f"a short-lived worker (fork) writes the same {series:,} series and exits, as gunicorn replaces workers.\n"
          f"After 0, 50, 100 and 200 restarts a fresh reader process renders the store (first render, as in\n"
          f"section 2 without opening the store, and the warm median).")
    cli = find_cli()
    res = {}
    for lib in LIBS:
        spec: dict[str, Any] = {"lib": lib, "task": "restarts", "series": series, "max_series": series, "cli": cli,
                "live": live, "checkpoints": checkpoints, "warm_repeats": 5, "warm_budget_s": 3}
        if lib == OURS:
            spec["store"] = os.path.join(tmp, "restarts.shm")
            spec["dir"] = None
        else:
            spec["dir"] = os.path.join(tmp, "restarts-multiproc")
            os.mkdir(spec["dir"])
        res[lib] = run_child(spec)
    rows = []
    for a, b in zip(res[OURS]["points"], res[THEIRS]["points"]):
        def ok(r: dict) -> str:
            return "" if r["good"] == r["series"] == series else f" CHECK FAILED {r['good']}/{r['series']}"
        rows.append([str(a["restarts"]),
                     fmt_s(a["first_s"]), fmt_s(statistics.median(a["warm_s"])) + ok(a), a["slots"] or "-",
                     fmt_s(b["first_s"]), fmt_s(statistics.median(b["warm_s"])) + ok(b), str(b["files"]),
                     fmt_ratio(b["first_s"] / a["first_s"]),
                     fmt_ratio(statistics.median(b["warm_s"]) / statistics.median(a["warm_s"]))])
    print()
    print(table(["restarts", "ours first", "ours warm", "our writer slots", "theirs first", "theirs warm", "their files",
                 "ratio first", "ratio warm"], rows))
    f0, fl = res[OURS]["points"][0], res[OURS]["points"][-1]
    t0, tl = res[THEIRS]["points"][0], res[THEIRS]["points"][-1]
    print(f"\nfrom 0 to {checkpoints[-1]} restarts, first render: ours x{fl['first_s'] / f0['first_s']:.2f}, "
          f"theirs x{tl['first_s'] / t0['first_s']:.2f}; warm: ours "
          f"x{statistics.median(fl['warm_s']) / statistics.median(f0['warm_s']):.2f}, theirs "
          f"x{statistics.median(tl['warm_s']) / statistics.median(t0['warm_s']):.2f}\n"
          f"warm = median of up to 5 repeats in the same reader. Every point checks that each series "
          f"totals {live} + restarts.\n"
          f"one restart (fork, write {series:,} series, exit, reap): ours {res[OURS]['restart_ms']:.1f} ms, "
          f"theirs {res[THEIRS]['restart_ms']:.1f} ms")
    print("our writer slots: slots ever used (claims so far), from `shmetrics inspect` "
          + (f"({cli})" if cli else "(not shown: no shmetrics binary found; set SHMETRICS_BIN)")
          + "; their files: *.db files in PROMETHEUS_MULTIPROC_DIR.")


def section_page(tmp: str, quick: bool) -> None:
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    warm_n = 5 if quick else 9
    print(f"\n== 4. The in-process page: generate_latest(registry), one process ==\n"
          f"The same metrics in both: {FAMILIES} labelled counter families holding N series, and a\n"
          f"histogram family (15 default buckets) with N/10 series, through REGISTRY. Ours: the store,\n"
          f"the page written in Rust (shmetrics_expo::client_python); theirs: prometheus_client's default\n"
          f"single-process mode, pure Python. Both with _created (the default).\n"
          f"Times: warm median (first in brackets), up to {warm_n} warm repeats within a time budget.\n"
          f"same bytes: sha256 of both pages with _created off (whose values are times) compared.")
    rows = []
    for n in sizes:
        res = {}
        for lib in LIBS:
            spec: dict[str, Any] = {"lib": lib, "task": "page", "series": n, "max_series": n * 2,
                                    "variant": "single", "dir": None,
                                    "warm_repeats": warm_n, "warm_budget_s": 3 if quick else 15}
            if lib == OURS:
                spec["store"] = os.path.join(tmp, f"page-{n}.shm")
            res[lib] = run_child(spec)
            if lib == OURS:
                os.unlink(spec["store"])
            print(f"  [{lib} page of {n:,} series done]", file=sys.stderr, flush=True)
        a, b = res[OURS], res[THEIRS]
        wa, wb = statistics.median(a["warm_s"]), statistics.median(b["warm_s"])
        rows.append([f"{n:,}", f"{fmt_s(wa)} ({fmt_s(a['first_s'])})", f"{fmt_s(wb)} ({fmt_s(b['first_s'])})",
                     fmt_ratio(wb / wa), f"{a['bytes'] / 1e6:.2f} MB",
                     "yes" if a["sha256"] == b["sha256"] else "NO"])
    print()
    print(table(["counter series", "ours (Rust page)", "theirs (single-process)", "theirs / ours",
                 "page", "same bytes"], rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smaller sizes and fewer repeats (about 30 s)")
    ap.add_argument("--skip-largest", action="store_true",
                    help="skip prometheus_client's largest render case (100k series x 16 processes)")
    ap.add_argument("--only", choices=["ops", "render", "restarts", "page", "inapp"], action="append",
                    help="run only this section (repeatable)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(json.loads(args.child))
        return
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sections = args.only or ["ops", "render", "restarts", "page"]
    versions = {}
    for lib in LIBS:
        p = subprocess.run([sys.executable, "-c", f"import {lib}, importlib.metadata as m; print(m.version('{lib}'))"],
                           env=child_env(lib, tempfile.gettempdir()), capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{lib} is not importable by {sys.executable}:\n{p.stderr}")
        versions[lib] = p.stdout.strip()
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = tempfile.mkdtemp(prefix="shmetrics-bench-", dir=base)
    start = time.perf_counter()
    print(f"shmetrics Python benchmark ({'quick' if args.quick else 'full'} mode)")
    print(f"python {platform.python_version()} ({sys.executable}); shmetrics {versions[OURS]}; "
          f"prometheus_client {versions[THEIRS]} (multiprocess mode)")
    print(f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; files under {tmp}")
    try:
        if "ops" in sections:
            section_ops(tmp, args.quick)
        if "render" in sections:
            section_render(tmp, args.quick, args.skip_largest)
        if "restarts" in sections:
            section_restarts(tmp, args.quick)
        if "page" in sections:
            section_page(tmp, args.quick)
        if "inapp" in sections:
            section_inapp(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - start:.0f} s; load average at end "
          f"{os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()

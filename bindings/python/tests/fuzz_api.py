"""API fuzzing of the Python binding: random sequences of public calls with
random arguments (wrong types, None, huge and negative numbers, NaN and
±Inf, surrogates and NUL bytes, objects whose __str__ raises), interleaved
with what other processes do to the store (wipe it, replace the file,
remove it) and with forks. The only outcomes allowed are a result or an
exception that the binding documents (its own error classes, and
ValueError, TypeError, KeyError and OverflowError as prometheus_client
raises them); any other exception (PyO3's PanicException included), a
crash or a hang fails.

    python fuzz_api.py [--runs N] [--calls N] [--seed S] [--timeout S]

runs N children, each a process of its own (seeds S, S+1, ...), after the
seeds that ever failed (fuzz_seeds.txt beside this file). `--child SEED
CALLS DIR` is one child's run. tests/test_fuzz_api.py runs it in
./run-tests; to fuzz longer:

    python bindings/python/tests/fuzz_api.py --runs 2000 --calls 20000 --seed $RANDOM
"""

import math
import os
import random
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "fuzz_seeds.txt")


class UserError(Exception):
    """What BadStr.__str__ raises: the binding must let it through as is,
    as prometheus_client does (str() of a label value is the user's code)."""


class BadStr:
    """A label value whose str() raises."""

    def __str__(self):
        raise UserError("BadStr.__str__")


NAMES = ["jobs", "jobs_total", "req_seconds", "in_flight", "q", "a:b", "utf8.é", "", "1bad",
         "__x", "le", "n" * 300, "x_info", "state"]
LABELS = ["route", "status", "le", "quantile", "__name__", "", "é", "a b", "job"]
# Capacities a store refuses (or takes, small): never one that is valid
# and large, which would make a real file of that size.
BAD_CAPACITIES = [None, -1, 0, 1, 2**64, -2**63, 10**400, float("nan"), math.inf, 1.5, "512", True, 512]
NUMBERS = [0, -0.0, 1, -1, 0.5, 1e-300, 1e308, -1e308, 2**31, 2**32, 2**53, 2**64, -2**63,
           10**400, float("nan"), math.inf, -math.inf, 4294967295, True, 1.5]


def odd_string(r):
    return r.choice([
        lambda: "",
        lambda: "x\0y",
        lambda: "\ud800",
        lambda: 'a"b\\c\nd',
        lambda: "é✓",
        lambda: "v" * r.randint(1, 5000),
        lambda: bytes(r.randrange(256) for _ in range(r.randint(1, 16))).decode("latin-1"),
    ])()


def value(r, depth=0):
    k = r.randrange(12 if depth < 2 else 8)
    if k == 0:
        return None
    if k == 1:
        return r.choice(NUMBERS)
    if k == 2:
        return r.randint(-1000, 1000)
    if k == 3:
        return odd_string(r)
    if k == 4:
        return r.choice(NAMES)
    if k == 5:
        return r.choice(LABELS)
    if k == 6:
        return b"bytes\xff"
    if k == 7:
        return BadStr()
    if k == 8:
        return [value(r, depth + 1) for _ in range(r.randrange(4))]
    if k == 9:
        return {value(r, depth + 1) if r.random() < 0.2 else r.choice(LABELS): value(r, depth + 1)
                for _ in range(r.randrange(3))}
    if k == 10:
        return object()
    return (lambda: None)


def child(seed, calls, folder):
    import shmetrics
    from shmetrics import openmetrics  # noqa: F401
    from shmetrics.openmetrics import exposition as om

    r = random.Random(seed)
    path = os.path.join(folder, "store")
    allowed = (UserError, ValueError, TypeError, KeyError, OverflowError, shmetrics.StaleHandleError,
               shmetrics.StoreFileError, shmetrics.NotConfiguredError, shmetrics.WrongTypeError)
    shmetrics.configure(path, max_series=512, max_families=64, label_bytes=1 << 16, max_writers=8)
    metrics, registries = [], [shmetrics.REGISTRY, shmetrics.CollectorRegistry()]
    replaced = [0]

    def options():
        o = {}
        for k in ("namespace", "subsystem", "unit", "labelnames", "registry", "buckets",
                  "multiprocess_mode", "states", "foo"):
            if r.random() < 0.15:
                o[k] = value(r)
        if r.random() < 0.5:
            o["registry"] = r.choice(registries + [None])
        if "labelnames" not in o and r.random() < 0.7:
            o["labelnames"] = r.sample(["route", "status", "job"], r.randrange(3))
        return o

    def make():
        kind = r.choice([shmetrics.Counter, shmetrics.Gauge, shmetrics.Histogram,
                         shmetrics.Summary, shmetrics.Info, shmetrics.Enum])
        name = value(r) if r.random() < 0.2 else r.choice(NAMES)
        doc = value(r) if r.random() < 0.1 else "help"
        o = options()
        if kind is shmetrics.Enum and "states" not in o:
            o["states"] = ["a", "b"]
        metrics.append(kind(name, doc, **o))

    def label_args(m):
        n = len(getattr(m, "_labelnames", ()) or ())
        k = r.randrange(6)
        if k == 0:
            return [value(r) for _ in range(r.randrange(4))], {}
        if k == 1:
            return [], {str(x): value(r) for x in getattr(m, "_labelnames", ())}
        return [r.choice(["GET", "/", "200", "", "é", 7, 2.5, None]) for _ in range(n)], {}

    def update():
        if not metrics:
            return
        m = r.choice(metrics)
        target = m
        if r.random() < 0.7:
            a, kw = label_args(m)
            target = m.labels(*a, **kw)
        op = r.choice(["inc", "dec", "set", "observe", "info", "state", "set_to_current_time",
                       "remove", "clear", "time", "track_inprogress", "count_exceptions",
                       "set_function", "describe", "collect"])
        fn = getattr(target, op, None)
        if fn is None:
            return
        if op in ("clear", "describe", "collect", "set_to_current_time"):
            fn()
        elif op == "remove":
            a, _ = label_args(m)
            fn(*a)
        elif op in ("time", "track_inprogress", "count_exceptions"):
            with fn():
                pass
        elif op == "set_function":
            fn(lambda: 1.0)
        elif op == "info":
            fn(value(r) if r.random() < 0.5 else {"version": odd_string(r)})
        elif op == "state":
            fn(value(r) if r.random() < 0.5 else "a")
        else:
            fn(value(r) if r.random() < 0.3 else r.random() * 10)

    def read():
        reg = r.choice(registries)
        k = r.randrange(6)
        if k == 0:
            shmetrics.generate_latest(reg)
        elif k == 1:
            om.generate_latest(reg)
        elif k == 2:
            reg.get_sample_value(value(r), value(r) if r.random() < 0.5 else None)
        elif k == 3 and metrics:
            reg.unregister(r.choice(metrics))
        elif k == 4 and metrics:
            reg.register(r.choice(metrics))
        else:
            store = shmetrics.default_store()
            store.render(r.choice(["text", "openmetrics", "protobuf", value(r)]))
            store.check()

    def fault():
        k = r.randrange(40)
        if k == 0:
            shmetrics.Store(path).wipe()
        elif k == 1:
            replaced[0] += 1
            other = os.path.join(folder, "next%d" % replaced[0])
            shmetrics.Store(other, max_series=128, label_bytes=1 << 15, max_writers=8)
            os.rename(other, path)
        elif k == 2:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
        elif k == 3:
            # Only under `folder` (a name is a relative path: the child runs
            # there), and no capacity that is valid but large: a store of
            # 2^31 series is a real 17 GB file.
            where = path if r.random() < 0.8 else value(r)
            if isinstance(where, str) and where and not where.startswith("\0"):
                where = os.path.join(folder, where.lstrip("/"))
            shmetrics.configure(where, max_series=r.choice(BAD_CAPACITIES) if r.random() < 0.3 else 512)
        elif k == 4 and r.random() < 0.2:
            pid = os.fork()
            if pid == 0:
                status = 0
                for _ in range(30):
                    try:
                        update()
                    except allowed:
                        pass
                    except BaseException:
                        traceback.print_exc()
                        status = 3
                        break
                os._exit(status)
            _, st = os.waitpid(pid, 0)
            if st != 0:
                raise AssertionError("FUZZ: a forked child ended with status %d" % st)

    ops = [make] * 2 + [update] * 12 + [read] * 3 + [fault] * 2
    for i in range(calls):
        op = r.choice(ops)
        try:
            op()
        except allowed:
            pass
        except BaseException as e:  # noqa: B902 (PanicException is a BaseException)
            sys.stderr.write("seed %d, call %d (%s): %s: %s\n" % (seed, i, op.__name__,
                                                                type(e).__name__, e))
            traceback.print_exc()
            os._exit(2)
    print("seed %d: %d calls, %d metrics" % (seed, calls, len(metrics)))


def kept_seeds():
    if not os.path.exists(SEEDS):
        return []
    with open(SEEDS) as f:
        return [int(line.split()[0]) for line in f if line.strip() and line[0].isdigit()]


def run(seeds, calls, timeout):
    """Runs each seed in a process of its own; returns the failures."""
    failures = []
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="shmetrics-py-fuzz.") as folder:
            env = dict(os.environ)
            env.pop("SHMETRICS_STORE", None)
            env.pop("PROMETHEUS_MULTIPROC_DIR", None)
            try:
                p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(seed),
                                    str(calls), folder],
                                   capture_output=True, text=True, timeout=timeout, env=env, cwd=folder)
            except subprocess.TimeoutExpired:
                failures.append((seed, "hung (killed after %d s)" % timeout, ""))
                continue
            if p.returncode != 0:
                why = ("crashed (signal %d)" % -p.returncode if p.returncode < 0
                       else "exit %d" % p.returncode)
                failures.append((seed, why, p.stderr[-3000:]))
    return failures


def main(argv):
    if argv[:1] == ["--child"]:
        child(int(argv[1]), int(argv[2]), argv[3])
        return 0
    opts = dict(zip(argv[::2], argv[1::2]))
    runs = int(opts.get("--runs", 20))
    calls = int(opts.get("--calls", 5000))
    first = int(opts.get("--seed", 1))
    timeout = int(opts.get("--timeout", 120))
    seeds = kept_seeds() + list(range(first, first + runs))
    failures = run(seeds, calls, timeout)
    for seed, why, err in failures:
        print("FAIL seed %d: %s\n%s" % (seed, why, err))
    print("fuzz: %d seeds, %d calls; %d passed, %d failed"
          % (len(seeds), len(seeds) * calls, len(seeds) - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

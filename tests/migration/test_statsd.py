"""statsd-instrument's datagrams against the exporter's StatsD stream, for
the same events (ruby/statsd_workload.rb, two forked writers each): the
peer, statsd-instrument 3.11.0 (DogStatsD, a datagram per event), sends to
one UDP socket of this test; after the switch (`require
"shmetrics/statsd/compat"`), the events land in the store and
`shmetrics serve --statsd.flavor dogstatsd` sends them to another.

Both streams are parsed (DogStatsD lines, `name:v[:v...]|type[|@rate][|#tags]`)
and added up per series (name, type and tags), as an agent would over the
run: a counter's total, a gauge's last value, a timer's, histogram's or
distribution's count (each value counts 1/rate) and sum. The totals are
compared (check `statsd-stream`). A distribution's sum may differ as the
exporter documents it (each value is its bucket's upper bound, at most
9.05 % above): within that, the difference is of kind `bucketed-sum`;
beyond it, `value`. Other differences are as in harness.py, and the
verdict reads docs/migrating.md.

Run by scripts/migration-tests.sh (SHMETRICS_BIN, STATSD_INSTRUMENT_DIR,
the gem installed).
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import harness as h

HERE = Path(__file__).resolve().parent
PAIR = "statsd-instrument"
EVENTS = 300
PREFIX = "myapp"
BUCKET_ERROR = 0.0905  # docs/ruby.md: a value is at most 9.05 % above the observed one


class Receiver:
    """A UDP socket on loopback that keeps every line it receives."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            # Linux's SO_RCVBUFFORCE (33; Python does not name it): root
            # may pass net.core.rmem_max, so no datagram is dropped.
            self.sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 32 << 20)
        except PermissionError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.lines: list[str] = []
        self.lock = threading.Lock()
        self.sock.settimeout(0.2)
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while self.running:
            try:
                data = self.sock.recv(65536)
            except (TimeoutError, socket.timeout):
                continue
            with self.lock:
                self.lines += [line for line in data.decode("utf-8").split("\n") if line]

    def snapshot(self) -> list[str]:
        with self.lock:
            return list(self.lines)

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.sock.close()


def parse_line(line: str) -> tuple[str, list[float], str, float, tuple[str, ...]]:
    """A DogStatsD metric line: name, values, type, sample rate, tags."""
    head, *fields = line.split("|")
    name, _, values = head.partition(":")
    assert values and fields, f"not a DogStatsD metric line: {line!r}"
    kind, rate, tags = fields[0], 1.0, ()
    for f in fields[1:]:
        if f.startswith("@"):
            rate = float(f[1:])
        elif f.startswith("#"):
            tags = tuple(sorted(f[1:].split(",")))
        else:
            raise AssertionError(f"unknown field {f!r} in {line!r}")
    return name, [float(v) for v in values.split(":")], kind, rate, tags


def totals(lines: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """Per series (`name{tags}`), what an agent adds up over the run (a
    timer's, histogram's or distribution's count is `...:count` and its sum
    `...:sum`), and per series its type."""
    out: dict[str, float] = defaultdict(float)
    types: dict[str, str] = {}
    for line in lines:
        name, values, kind, rate, tags = parse_line(line)
        key = f"{name}{{{','.join(tags)}}}"
        assert types.setdefault(key, kind) == kind, f"{key} sent as {types[key]} and {kind}"
        if kind == "c":
            out[key] += sum(values) / rate
        elif kind == "g":
            out[key] = values[-1]
        elif kind in ("ms", "h", "d"):
            # The agent counts a value sent at rate r as 1/r values, truncated.
            n = int(1 / rate + 1e-9)
            out[key + ":count"] += n * len(values)
            out[key + ":sum"] += n * sum(values)
        else:
            raise AssertionError(f"unexpected type {kind!r} in {line!r}")
    return dict(out), types


def diff_streams(peer, ours) -> list[h.Difference]:
    """`peer` and `ours` as totals() gives them."""
    (pv, pt), (ov, ot) = peer, ours
    diffs = []
    for d in h.diff_series("statsd-stream", pv, ov):
        if d.kind == "value" and d.series.endswith(":sum"):
            p, o = pv[d.series], ov[d.series]
            if p <= o <= p * (1 + BUCKET_ERROR) + 1e-9:
                d = h.Difference(d.check, "bucketed-sum", d.series, d.detail)
        diffs.append(d)
    # A type difference names both types: `name{tags} ms -> d`.
    for key in sorted(pt.keys() & ot.keys()):
        if pt[key] != ot[key]:
            diffs.append(h.Difference("statsd-stream", "type", f"{key} {pt[key]} -> {ot[key]}"))
    return diffs


def workload(kind: str, env: dict[str, str]) -> None:
    lib = h.env("STATSD_INSTRUMENT_DIR") + "/lib"
    script = HERE / "ruby" / "statsd_workload.rb"
    args = ["ruby", *(["-I", lib] if kind == "peer" else []), str(script), kind, str(EVENTS)]
    env = {**os.environ, "STATSD_PREFIX": PREFIX, **env}
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]


def requests_total(t) -> float:
    values, types = t
    return sum(v for k, v in values.items() if k.startswith(f"{PREFIX}.requests{{") and types[k] == "c")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("statsd")
    store = tmp / "app.shm"
    peer_rx, our_rx = Receiver(), Receiver()
    exporter = None
    try:
        workload("peer", {"STATSD_ENV": "production", "STATSD_ADDR": peer_rx.address,
                          "STATSD_IMPLEMENTATION": "datadog", "STATSD_BUFFER_CAPACITY": "0"})
        exporter = subprocess.Popen(
            [h.env("SHMETRICS_BIN"), "serve", "--store", str(store), "--listen", f"127.0.0.1:{h.free_port()}",
             "--statsd.address", our_rx.address, "--statsd.flavor", "dogstatsd", "--statsd.interval", "0.5",
             "--statsd.colons-as-dots"],
            stdout=subprocess.DEVNULL, stderr=open(tmp / "exporter.log", "w"),
        )
        time.sleep(0.3)
        workload("shmetrics", {"SHMETRICS_STATSD_STORE": str(store)})
        h.wait_for("the peer's datagrams", lambda: requests_total(totals(peer_rx.snapshot())) == EVENTS)
        h.wait_for("the exporter's stream", lambda: requests_total(totals(our_rx.snapshot())) == EVENTS)
        time.sleep(1.5)  # three more flushes: every delta is in
        yield {"peer": peer_rx.snapshot(), "ours": our_rx.snapshot()}
    finally:
        if exporter is not None:
            exporter.terminate()
            exporter.wait(10)
        peer_rx.close()
        our_rx.close()


def test_stream(run):
    """The totals of the exporter's stream against statsd-instrument's datagrams."""
    h.assert_no_unchosen(PAIR, diff_streams(totals(run["peer"]), totals(run["ours"])))


def without_empty_tags(key: str) -> str:
    """`name{a:1,b:}:count` -> `name{a:1}:count`: the series as the
    exporter sends it (docs/migrating.md, chosen differences)."""
    name, rest = key.split("{", 1)
    tags, tail = rest.split("}", 1)
    kept = [t for t in tags.split(",") if t and not t.endswith(":")]
    return f"{name}{{{','.join(kept)}}}{tail}"


def test_series_with_an_empty_tag_keep_their_values(run):
    """The chosen difference of an empty tag value is a rename only: the
    exporter's series without the tag has the peer's count and total (a
    sum within the bucket error)."""
    (pv, _), (ov, _) = totals(run["peer"]), totals(run["ours"])
    renamed = {k: without_empty_tags(k) for k in pv if without_empty_tags(k) != k}
    assert renamed, "the workload sends tags with an empty value"
    for peer_key, our_key in renamed.items():
        assert our_key in ov, f"{peer_key}: no {our_key} in the exporter's stream"
        p, o = pv[peer_key], ov[our_key]
        if peer_key.endswith(":sum"):
            assert p <= o <= p * (1 + BUCKET_ERROR) + 1e-9, (peer_key, p, o)
        else:
            assert o == p, (peer_key, p, o)


def test_both_streams_carry_every_event(run):
    for side in ("peer", "ours"):
        t = totals(run[side])
        assert requests_total(t) == EVENTS, side


def test_totals_of_a_stream():
    """The reading of DogStatsD lines (value packing, rates, tags)."""
    values, types = totals(["a.b:1|c|#x:1,k:v", "a.b:2|c|#k:v,x:1", "g:3|g", "g:4|g", "d:0.5:2|d|@0.25|#t:1", "m:3|ms"])
    assert values == {
        "a.b{k:v,x:1}": 3.0, "g{}": 4.0, "d{t:1}:count": 8.0, "d{t:1}:sum": 10.0, "m{}:count": 1.0, "m{}:sum": 3.0,
    }
    assert types == {"a.b{k:v,x:1}": "c", "g{}": "g", "d{t:1}": "d", "m{}": "ms"}
    peer = ({"x{}:sum": 100.0, "y{}:sum": 100.0}, {"x{}": "d", "y{}": "ms"})
    ours = ({"x{}:sum": 109.0, "y{}:sum": 110.0}, {"x{}": "d", "y{}": "d"})
    got = [(x.kind, x.series) for x in diff_streams(peer, ours)]
    assert got == [("bucketed-sum", "x{}:sum"), ("value", "y{}:sum"), ("type", "y{} ms -> d")]
    assert without_empty_tags("a{k:v,s:}:count") == "a{k:v}:count"
    assert without_empty_tags("g{s:}") == "g{}"

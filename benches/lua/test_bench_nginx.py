"""bench_nginx.py's reading of wrk's output: a run in which no latency was
printed is a figure (its `outcome`), not a crash of the bench. The
outputs in testdata/ are wrk's own: the header alone (what wrk printed
for nginx-lua-prometheus' workers stalled by collect() at 100k series),
and a run against a server that accepts and never answers. Run by
scripts/lua-tests.sh."""

import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_nginx import wrk_figures  # noqa: E402

OK = """Running 30s test @ http://127.0.0.1:8080/static
  2 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.20ms    2.00ms  48.01ms   95.00%
    Req/Sec    20.00k     1.00k   25.00k    70.00%
  Latency Distribution
     50%    1.00ms
     75%    1.50ms
     90%    2.00ms
     99%   14.01ms
  1200000 requests in 30.00s, 100.00MB read
Requests/sec:  40000.00
Transfer/sec:      3.33MB
"""


def test_latencies():
    r = wrk_figures(OK)
    assert r["outcome"] == ""
    assert r["p99"] == 14.01e-3 and r["max"] == 48.01e-3
    assert r["requests"] == 1200000 and r["rps"] == 40000.0


def test_header_only():
    r = wrk_figures((HERE / "testdata/wrk-header-only.txt").read_text())
    assert r["outcome"].startswith("no latencies: wrk printed nothing")
    assert math.isnan(r["p99"]) and math.isnan(r["max"]) and r["requests"] == 0


def test_no_request_completed():
    r = wrk_figures((HERE / "testdata/wrk-no-request-completed.txt").read_text())
    assert r["outcome"] == "no latencies: no request completed"
    assert math.isnan(r["p99"]) and math.isnan(r["max"])


def test_timeouts_without_latencies():
    out = "\n".join(l for l in OK.splitlines() if "Latency" not in l and "%" not in l)
    r = wrk_figures(out + "\n  Socket errors: connect 0, read 0, write 0, timeout 43\n")
    assert r["outcome"] == "no latencies: 43 requests timed out"
    assert r["timeouts"] == 43 and r["max"] == 2.0 and math.isnan(r["p99"])

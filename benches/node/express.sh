#!/usr/bin/env bash
# Requests per second of a 4-worker Express cluster (express-app.js) with
# one counter and one histogram per request: none, the same middleware with
# metrics that do nothing (noop), prom-client and shmetrics, in the same
# run. Called by run.sh with NODE_PATH set.
#
# The apps run side by side (idle ones cost nothing), and wrk (2
# threads, 32 connections) loads one at a time for DURATION seconds, the
# apps taking turns in a rotating order, ROUNDS times. On a shared 2-core
# machine the speed of the whole machine drifts by tens of percent within
# a minute, so each round's req/s is divided by the round's own "none":
# the medians of those per-round ratios are the figures to read, and
# noop tells the middleware's own share from the library's. Also
# printed: the app's CPU time per request (its processes' user and system
# time from /proc, over the requests wrk counted), and the in-process cost
# of the middleware's metric calls alone (middleware-cost.js).
set -euo pipefail
cd "$(dirname "$0")"
DURATION="${DURATION:-3}"
ROUNDS="${ROUNDS:-15}"
libs=(none noop prom-client shmetrics)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The CPU ticks (user + system) of a process and its children.
ticks() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

declare -A port app
cleanup() { for lib in "${libs[@]}"; do [ -n "${app[$lib]:-}" ] && kill "${app[$lib]}" 2>/dev/null; done; wait 2>/dev/null || true; }
trap cleanup EXIT
for lib in "${libs[@]}"; do
  port[$lib]=$(free_port)
  BENCH_LIB=$lib PORT=${port[$lib]} node express-app.js &
  app[$lib]=$!
done
for lib in "${libs[@]}"; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:${port[$lib]}/" >/dev/null 2>&1 && break; sleep 0.1; done
  # Warm up (JIT) before measuring.
  wrk -t2 -c32 -d2s "http://127.0.0.1:${port[$lib]}/" >/dev/null
done

hz=$(getconf CLK_TCK)
results=$(mktemp)
for round in $(seq "$ROUNDS"); do
  # Rotate the order so that no library always runs first or last.
  order=("${libs[@]:$((round % ${#libs[@]}))}" "${libs[@]:0:$((round % ${#libs[@]}))}")
  for lib in "${order[@]}"; do
    before=$(ticks "${app[$lib]}")
    out=$(wrk -t2 -c32 -d"${DURATION}s" "http://127.0.0.1:${port[$lib]}/")
    after=$(ticks "${app[$lib]}")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
    [ -z "$errors" ] || { echo "express.sh: $lib: $errors" >&2; exit 1; }
    echo "$round $lib $rps $requests $((after - before))" >>"$results"
  done
done
python3 - "$results" "$hz" <<'PY'
import statistics, sys
from collections import defaultdict
runs = defaultdict(dict)
for line in open(sys.argv[1]):
    rnd, lib, rps, requests, ticks = line.split()
    runs[int(rnd)][lib] = (float(rps), int(requests), int(ticks))
hz = int(sys.argv[2])
med = statistics.median
def col(lib, i): return [r[lib][i] for r in runs.values()]
libs = ("none", "noop", "prom-client", "shmetrics")
cpu = {lib: [t / hz / n * 1e6 for _, n, t in (r[lib] for r in runs.values())] for lib in libs}
print(f"{len(runs)} rounds of wrk -t2 -c32, the apps taking turns")
print(f"{'':12} {'req/s median (min..max)':>28} {'CPU us/request':>15}")
for lib in libs:
    rps = col(lib, 0)
    print(f"{lib:12} {med(rps):>12.0f} ({min(rps):.0f}..{max(rps):.0f}) {med(cpu[lib]):>15.1f}")
def ratios(a, b):
    return sorted(r[a][0] / r[b][0] for r in runs.values())
for a, b in (("shmetrics", "prom-client"), ("shmetrics", "none"), ("prom-client", "none"),
             ("noop", "none"), ("shmetrics", "noop"), ("prom-client", "noop")):
    rs = ratios(a, b)
    q1, q3 = rs[len(rs) // 4], rs[(3 * len(rs)) // 4]
    print(f"{a} / {b}: median of per-round ratios {med(rs):.3f} (quartiles {q1:.3f}..{q3:.3f})")
PY
rm -f "$results"
for lib in prom-client shmetrics; do node middleware-cost.js "$lib"; done

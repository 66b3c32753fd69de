#!/usr/bin/env bash
# Requests per second of a 4-worker Express cluster (express-app.js) with
# one counter and one histogram per request, in two shapes of app (SHAPES,
# both by default): the metric calls in a middleware with a 'finish'
# listener, and the same calls in the route handler itself. For each
# shape: none, the same code with metrics that do nothing (noop),
# prom-client and shmetrics, all in the same run. Called by run.sh with
# NODE_PATH set; with SHMETRICS_STORE set, each shape's shmetrics app has a
# store of its own ($SHMETRICS_STORE.<shape>, removed at the end).
#
# The apps run side by side (idle ones cost nothing), and wrk (2
# threads, 32 connections) loads one at a time for DURATION seconds, the
# apps taking turns in a rotating order, ROUNDS times. On a shared 2-core
# machine the speed of the whole machine drifts by tens of percent within
# a minute, so each round's req/s is divided by the round's own "none" of
# the same shape (each shape has its own "none" app, though the two are
# the same code: their ratio shows the noise): the medians of those
# per-round ratios are the figures to read, and noop tells the shape's own
# share from the library's. Also printed: the app's CPU time per request
# (its processes' user and system time from /proc, over the requests wrk
# counted), and the in-process cost of the metric calls alone
# (middleware-cost.js; the calls are the same in both shapes).
set -euo pipefail
cd "$(dirname "$0")"
DURATION="${DURATION:-3}"
ROUNDS="${ROUNDS:-15}"
read -ra shapes <<<"${SHAPES:-middleware handler}"
for shape in "${shapes[@]}"; do
  case $shape in middleware|handler) ;; *) echo "express.sh: SHAPES: $shape: not middleware or handler" >&2; exit 2 ;; esac
done
libs=(none noop prom-client shmetrics)
apps=()
for shape in "${shapes[@]}"; do for lib in "${libs[@]}"; do apps+=("$shape/$lib"); done; done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The CPU ticks (user + system) of a process and its children.
ticks() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

declare -A port pid
tmpfiles=()
cleanup() {
  for a in "${apps[@]}"; do [ -n "${pid[$a]:-}" ] && kill "${pid[$a]}" 2>/dev/null; done
  wait 2>/dev/null || true
  [ ${#tmpfiles[@]} -eq 0 ] || rm -f "${tmpfiles[@]}"
}
trap cleanup EXIT
for a in "${apps[@]}"; do
  shape=${a%%/*} lib=${a#*/}
  port[$a]=$(free_port)
  if [ "$lib" = shmetrics ] && [ -n "${SHMETRICS_STORE:-}" ]; then
    tmpfiles+=("$SHMETRICS_STORE.$shape")
    SHMETRICS_STORE="$SHMETRICS_STORE.$shape" BENCH_SHAPE=$shape BENCH_LIB=$lib PORT=${port[$a]} node express-app.js &
  else
    BENCH_SHAPE=$shape BENCH_LIB=$lib PORT=${port[$a]} node express-app.js &
  fi
  pid[$a]=$!
done
for a in "${apps[@]}"; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:${port[$a]}/" >/dev/null 2>&1 && break; sleep 0.1; done
  # Warm up (JIT) before measuring.
  wrk -t2 -c32 -d2s "http://127.0.0.1:${port[$a]}/" >/dev/null
done

hz=$(getconf CLK_TCK)
results=$(mktemp)
tmpfiles+=("$results")
n=${#apps[@]}
for round in $(seq "$ROUNDS"); do
  # Rotate the order so that no app always runs first or last.
  order=("${apps[@]:$((round % n))}" "${apps[@]:0:$((round % n))}")
  for a in "${order[@]}"; do
    before=$(ticks "${pid[$a]}")
    out=$(wrk -t2 -c32 -d"${DURATION}s" "http://127.0.0.1:${port[$a]}/")
    after=$(ticks "${pid[$a]}")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
    [ -z "$errors" ] || { echo "express.sh: $a: $errors" >&2; exit 1; }
    echo "$round $a $rps $requests $((after - before))" >>"$results"
  done
done
python3 - "$results" "$hz" "${shapes[@]}" <<'PY'
import statistics, sys
from collections import defaultdict
runs = defaultdict(dict)
for line in open(sys.argv[1]):
    rnd, app, rps, requests, ticks = line.split()
    runs[int(rnd)][app] = (float(rps), int(requests), int(ticks))
hz = int(sys.argv[2])
shapes = sys.argv[3:]
med = statistics.median
libs = ("none", "noop", "prom-client", "shmetrics")
def ratios(a, b):
    return sorted(r[a][0] / r[b][0] for r in runs.values())
def line(label, rs):
    q1, q3 = rs[len(rs) // 4], rs[(3 * len(rs)) // 4]
    print(f"  {label}: median of per-round ratios {med(rs):.3f} (quartiles {q1:.3f}..{q3:.3f})")
print(f"{len(runs)} rounds of wrk -t2 -c32, the apps taking turns")
for shape in shapes:
    print(f"shape {shape}:")
    print(f"  {'':12} {'req/s median (min..max)':>28} {'CPU us/request':>15}")
    for lib in libs:
        a = f"{shape}/{lib}"
        rps = [r[a][0] for r in runs.values()]
        cpu = [t / hz / n * 1e6 for _, n, t in (r[a] for r in runs.values())]
        print(f"  {lib:12} {med(rps):>12.0f} ({min(rps):.0f}..{max(rps):.0f}) {med(cpu):>15.1f}")
    for a, b in (("shmetrics", "prom-client"), ("shmetrics", "none"), ("prom-client", "none"),
                 ("noop", "none"), ("shmetrics", "noop"), ("prom-client", "noop")):
        line(f"{a} / {b}", ratios(f"{shape}/{a}", f"{shape}/{b}"))
if len(shapes) == 2:
    print("across shapes (same round):")
    a, b = shapes
    for lib in libs:
        line(f"{lib}: {a} / {b}", ratios(f"{a}/{lib}", f"{b}/{lib}"))
PY
for lib in prom-client shmetrics; do node middleware-cost.js "$lib"; done

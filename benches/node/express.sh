#!/usr/bin/env bash
# Requests per second of a 4-worker Express cluster (express-app.js) with
# one counter and one histogram per request, in two shapes of app (SHAPES,
# both by default): the metric calls in a middleware with a 'finish'
# listener, and the same calls in the route handler itself. For each
# shape: none, the same code with metrics that do nothing (noop),
# prom-client and shmetrics, all in the same run. Called by run.sh with
# NODE_PATH set; with SHMETRICS_STORE set, each shape's app of a package
# named shmetrics* has a store of its own ($SHMETRICS_STORE.<shape>.<lib>,
# removed at the end). OTHERS lists the apps besides none (default "noop
# prom-client shmetrics"): any package NODE_PATH finds with prom-client's
# API, such as an earlier build of this one linked there as
# shmetrics-old, to compare two builds in one run.
#
# The apps run side by side (idle ones cost nothing), and wrk (2
# threads, 32 connections) loads one at a time for DURATION seconds. On a
# shared 2-core machine the speed of the whole machine drifts by tens of
# percent within a minute, so every app runs between two runs of its
# shape's "none", and its ratio is its req/s over the mean of those two:
# the medians of those ratios over ROUNDS rounds are the figures to read,
# and noop tells the shape's own share from the library's. The same method
# applied to none itself (a none run against the nones two runs away)
# shows what it reads for two identical apps: the noise. Also printed:
# the app's CPU time per request (its processes' user and system time
# from /proc, over the requests wrk counted), and the in-process cost of
# the metric calls alone (middleware-cost.js; the calls are the same in
# both shapes), warm in a loop and with the caches evicted before each
# request, as the app's own work between requests evicts them.
set -euo pipefail
cd "$(dirname "$0")"
DURATION="${DURATION:-3}"
ROUNDS="${ROUNDS:-15}"
read -ra shapes <<<"${SHAPES:-middleware handler}"
for shape in "${shapes[@]}"; do
  case $shape in middleware|handler) ;; *) echo "express.sh: SHAPES: $shape: not middleware or handler" >&2; exit 2 ;; esac
done
read -ra others <<<"${OTHERS:-noop prom-client shmetrics}"
libs=(none "${others[@]}")
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
  if [[ $lib == shmetrics* ]] && [ -n "${SHMETRICS_STORE:-}" ]; then
    tmpfiles+=("$SHMETRICS_STORE.$shape.$lib")
    SHMETRICS_STORE="$SHMETRICS_STORE.$shape.$lib" BENCH_SHAPE=$shape BENCH_LIB=$lib PORT=${port[$a]} node express-app.js &
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
# One wrk run of app $2 in round $1, appended to the results.
measure() {
  local before after out rps requests errors
  before=$(ticks "${pid[$2]}")
  out=$(wrk -t2 -c32 -d"${DURATION}s" "http://127.0.0.1:${port[$2]}/")
  after=$(ticks "${pid[$2]}")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  requests=$(awk '/requests in/ {print $1}' <<<"$out")
  errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
  [ -z "$errors" ] || { echo "express.sh: $2: $errors" >&2; exit 1; }
  echo "$1 $2 $rps $requests $((after - before))" >>"$results"
}
for round in $(seq "$ROUNDS"); do
  for shape in "${shapes[@]}"; do
    # Each app runs between two runs of its shape's none, so that its
    # ratio compares it with the none measured just before and after
    # it: the machine's drift over a round cancels out. The order of the
    # others rotates, so that none of them always comes first.
    k=$((round % ${#others[@]}))
    measure "$round" "$shape/none"
    for lib in "${others[@]:$k}" "${others[@]:0:$k}"; do
      measure "$round" "$shape/$lib"
      measure "$round" "$shape/none"
    done
  done
done
python3 - "$results" "$hz" "${libs[*]}" "${shapes[@]}" <<'PY'
import statistics, sys
from collections import defaultdict
# The runs in the order they ran: (round, app, req/s, requests, ticks).
runs = []
for line in open(sys.argv[1]):
    rnd, app, rps, requests, ticks = line.split()
    runs.append((int(rnd), app, float(rps), int(requests), int(ticks)))
hz = int(sys.argv[2])
libs = sys.argv[3].split()
shapes = sys.argv[4:]
med = statistics.median
def neighbours(i):
    """The req/s of the none runs just before and after run i (the loop
    above puts its shape's none on both sides of every other run)."""
    return runs[i - 1][2], runs[i + 1][2]
def ratios(app):
    """Each run of app divided by the mean of the none runs around it."""
    out = []
    for i, r in enumerate(runs):
        if r[1] == app:
            before, after = neighbours(i)
            out.append(r[2] / ((before + after) / 2))
    return sorted(out)
def noise(shape):
    """Each none run that has none runs two places before and after,
    divided by their mean: what the method reads for two identical apps."""
    none = f"{shape}/none"
    out = []
    for i in range(2, len(runs) - 2):
        if runs[i][1] == runs[i - 2][1] == runs[i + 2][1] == none and runs[i - 1][0] == runs[i + 1][0] == runs[i][0]:
            out.append(runs[i][2] / ((runs[i - 2][2] + runs[i + 2][2]) / 2))
    return sorted(out)
def line(label, rs):
    q1, q3 = rs[len(rs) // 4], rs[(3 * len(rs)) // 4]
    print(f"  {label}: median {med(rs):.3f} (quartiles {q1:.3f}..{q3:.3f}, {len(rs)} runs)")
print(f"{max(r[0] for r in runs)} rounds of wrk -t2 -c32; each app runs between two runs of its shape's none")
for shape in shapes:
    print(f"shape {shape}:")
    print(f"  {'':12} {'req/s median (min..max)':>28} {'CPU us/request':>15}")
    for lib in libs:
        mine = [r for r in runs if r[1] == f"{shape}/{lib}"]
        rps = [r[2] for r in mine]
        cpu = [t / hz / n * 1e6 for *_, n, t in mine]
        print(f"  {lib:12} {med(rps):>12.0f} ({min(rps):.0f}..{max(rps):.0f}) {med(cpu):>15.1f}")
    ratio = {lib: med(ratios(f"{shape}/{lib}")) for lib in libs[1:]}
    for lib in libs[1:]:
        line(f"{lib} / none", ratios(f"{shape}/{lib}"))
    if "shmetrics" in ratio:
        for other in (lib for lib in libs[1:] if lib != "shmetrics"):
            print(f"  shmetrics / {other} (of the medians above): {ratio['shmetrics'] / ratio[other]:.3f}")
    line("noise: none / the nones two runs away", noise(shape))
PY
for lib in "${others[@]}"; do node middleware-cost.js "$lib"; done

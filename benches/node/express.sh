#!/usr/bin/env bash
# Requests per second of a 4-worker Express cluster (express-app.js) with
# one counter and one histogram per request: none, prom-client and
# shmetrics, in the same run, each ROUNDS times in turn (wrk, 2 threads, 32
# connections, DURATION seconds). Prints each run and the medians, and the
# app's CPU time per request (its processes' user and system time from
# /proc, over the requests wrk counted), which the other load on a shared
# machine disturbs less than req/s. Called by run.sh with NODE_PATH set.
set -euo pipefail
cd "$(dirname "$0")"
DURATION="${DURATION:-10}"
ROUNDS="${ROUNDS:-3}"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# The CPU ticks (user + system) of a process and its children.
ticks() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

hz=$(getconf CLK_TCK)
declare -A rps_runs cpu_runs
for round in $(seq "$ROUNDS"); do
  for lib in none prom-client shmetrics; do
    BENCH_LIB=$lib PORT=$port node express-app.js &
    app=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
    # Warm up (JIT) before measuring.
    wrk -t2 -c32 -d2s "http://127.0.0.1:$port/" >/dev/null
    before=$(ticks $app)
    out=$(wrk -t2 -c32 -d"${DURATION}s" "http://127.0.0.1:$port/")
    after=$(ticks $app)
    kill $app; wait $app 2>/dev/null || true
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    us=$(python3 -c "print(f'{($after - $before) / $hz / $requests * 1e6:.1f}')")
    echo "round $round  $lib: $rps req/s, $us us CPU per request"
    rps_runs[$lib]="${rps_runs[$lib]:-} $rps"
    cpu_runs[$lib]="${cpu_runs[$lib]:-} $us"
  done
done
python3 - "${rps_runs[none]}" "${rps_runs[prom-client]}" "${rps_runs[shmetrics]}" \
  "${cpu_runs[none]}" "${cpu_runs[prom-client]}" "${cpu_runs[shmetrics]}" <<'PY'
import statistics, sys
none, prom, shm, cnone, cprom, cshm = (statistics.median(map(float, a.split())) for a in sys.argv[1:])
print(f"median req/s: none {none:.0f}, prom-client {prom:.0f}, shmetrics {shm:.0f}")
print(f"shmetrics vs prom-client {shm/prom:.2f}x, vs no metrics {shm/none:.2f}x")
print(f"median CPU per request: none {cnone:.1f} us, prom-client {cprom:.1f} us, shmetrics {cshm:.1f} us")
print(f"metrics' CPU per request: prom-client +{cprom - cnone:.1f} us, shmetrics +{cshm - cnone:.1f} us")
PY

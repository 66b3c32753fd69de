#!/usr/bin/env bash
# Requests per second of a 4-worker Express cluster (express-app.js) with
# one counter and one histogram per request: none, prom-client and
# shmetrics, in the same run, each ROUNDS times in turn (wrk, 2 threads, 32
# connections, DURATION seconds); prints each run and the medians. Called by run.sh with NODE_PATH set.
set -euo pipefail
cd "$(dirname "$0")"
DURATION="${DURATION:-10}"
ROUNDS="${ROUNDS:-3}"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
declare -A runs
for round in $(seq "$ROUNDS"); do
  for lib in none prom-client shmetrics; do
    BENCH_LIB=$lib PORT=$port node express-app.js &
    app=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
    rps=$(wrk -t2 -c32 -d"${DURATION}s" "http://127.0.0.1:$port/" | awk '/Requests\/sec/ {print $2}')
    kill $app; wait $app 2>/dev/null || true
    echo "round $round  $lib: $rps req/s"
    runs[$lib]="${runs[$lib]:-} $rps"
  done
done
python3 - "${runs[none]}" "${runs[prom-client]}" "${runs[shmetrics]}" <<'PY'
import statistics, sys
none, prom, shm = (statistics.median(map(float, a.split())) for a in sys.argv[1:])
print(f"median req/s: none {none:.0f}, prom-client {prom:.0f}, shmetrics {shm:.0f}")
print(f"shmetrics vs prom-client {shm/prom:.2f}x, vs no metrics {shm/none:.2f}x")
PY

#!/usr/bin/env bash
# Requests per second of a 4-worker Express cluster (express-app.js) with
# one counter and one histogram per request: none, prom-client and
# shmetrics, in the same run, each twice in turn (wrk, 2 threads, 32
# connections, DURATION seconds). Called by run.sh with NODE_PATH set.
set -euo pipefail
cd "$(dirname "$0")"
DURATION="${DURATION:-10}"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
declare -A total
for round in 1 2; do
  for lib in none prom-client shmetrics; do
    BENCH_LIB=$lib PORT=$port node express-app.js &
    app=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
    rps=$(wrk -t2 -c32 -d"${DURATION}s" "http://127.0.0.1:$port/" | awk '/Requests\/sec/ {print $2}')
    kill $app; wait $app 2>/dev/null || true
    echo "round $round  $lib: $rps req/s"
    total[$lib]=$(python3 -c "print(${total[$lib]:-0} + $rps)")
  done
done
python3 - "${total[none]}" "${total[prom-client]}" "${total[shmetrics]}" <<'PY'
import sys
none, prom, shm = map(float, sys.argv[1:])
print(f"mean req/s: none {none/2:.0f}, prom-client {prom/2:.0f}, shmetrics {shm/2:.0f}")
print(f"shmetrics vs prom-client {shm/prom:.2f}x, vs no metrics {shm/none:.2f}x")
PY

#!/usr/bin/env bash
# StatsD push benchmark: shmetrics' exporter flushing DogStatsD from shared
# memory, against a client that sends one datagram per event, in one run.
# Prints its figures; nothing passes or fails. See benches/push/README.md.
#   BENCH_SECS=10 benches/push/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo bench -j "${CARGO_BUILD_JOBS:-2}" -p shmetrics-push --bench statsd

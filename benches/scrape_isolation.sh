#!/usr/bin/env bash
# Scrape isolation: do writers slow down while the exporter renders and
# serves a 100k-series page? Two phases of N writer processes updating a
# 100k-series store in a tight loop: (A) no scraping, (B) `shmetrics serve`
# scraped every second. Prints updates/s, worst and p99.9 update latency,
# the exporter's render time and page size, and the ratios B/A.
# No pass/fail thresholds. See benches/scrape_isolation/README.md.
#
#   benches/scrape_isolation.sh [--writers N] [--seconds S] [--series K] [--interval-ms I]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p shmetrics --bin shmetrics
cargo build --release --quiet -p shmetrics-testkit --bin shmetrics-isolation
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
exec "$target_dir/release/shmetrics-isolation" run --shmetrics "$target_dir/release/shmetrics" "$@"

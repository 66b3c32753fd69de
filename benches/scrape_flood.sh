#!/usr/bin/env bash
# Scrape latency with and without a connection flood (issue 23): the
# release `shmetrics serve` over a store of 4,000 series, scraped 200
# times alone, then 200 times while 1,000 idle and 100 reconnecting
# half-sent connections are held against it. Prints p50/p99 of each
# phase and the ratios (the goal: p99 during the flood at most 2x),
# failed scrapes and the exporter's memory. No pass/fail threshold.
#
#   benches/scrape_flood.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p shmetrics --bin shmetrics
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
SHMETRICS_BIN="$target_dir/release/shmetrics" exec cargo bench --quiet -p shmetrics-exporter --bench scrape_flood

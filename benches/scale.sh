#!/usr/bin/env bash
# Scale (issue 36): store bytes, dump and HTTP scrape time and the
# exporter's memory for 1k, 10k and 100k series (1M with SCALE_1M=1) x 1,
# 16 and 64 writers (SCALE_WRITERS), each touching all series or a random
# tenth (crates/exporter/benches/scale.rs). Builds the release `shmetrics`
# first. Figures only, no pass/fail threshold.
#
#   benches/scale.sh                  # 1k..100k
#   SCALE_1M=1 benches/scale.sh       # and 1M (about 1.3 GiB in /dev/shm at 64 writers)
#   SCALE_SIZES=100000 SCALE_WRITERS=1 benches/scale.sh   # one size, one writer count
#   SCALE_SIZES=1000000 SCALE_WRITERS=64 SCALE_TOUCH=10 benches/scale.sh   # writers touching a tenth only
#   SCALE_SIZES=1000000 SCALE_WRITERS=1,64 SCALE_TOTALS_OF=64 benches/scale.sh   # the same totals, written by 1 or by 64
#   SCALE_SIZES=1000000 SCALE_WRITERS=1 SCALE_TOUCH=100 SCALE_SCRAPES=1000 SCALE_MEMORY_EVERY=100 SCALE_IDLE=75 benches/scale.sh   # the exporter's memory over 1,000 scrapes, then idle
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p shmetrics --bin shmetrics
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
SHMETRICS_BIN="$target_dir/release/shmetrics" exec cargo bench --quiet -p shmetrics-exporter --bench scale

#!/usr/bin/env bash
# The Lua binding's benchmarks in a real nginx (see bench_nginx.py): the
# hot-path tax of log_by_lua updates in req/s and CPU time, the same in
# instructions counted by valgrind's callgrind, and the long tail of request
# latency with 100k series while scrapes run. Installs nginx, its lua
# module, luajit2, wrk and valgrind when missing, builds the release library
# and command, then prints the figures. Arguments go to bench_nginx.py
# (--seconds, --rounds, --tail-seconds, --tail-pairs, --tail-pair-seconds,
# --instr-requests, --instr-warmup, --instr-reps, --instr-keep, --lua-dir,
# --only tax|instr|tail|inapp).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/setup.sh
ensure_rust
ensure_lua
ensure_apt valgrind  # callgrind, for --only instr
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --quiet --release -p shmetrics-ffi -p shmetrics
target=${CARGO_TARGET_DIR:-$PWD/target}
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so" SHMETRICS_BIN="$target/release/shmetrics"
exec python3 benches/lua/bench_nginx.py "$@"

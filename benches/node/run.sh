#!/usr/bin/env bash
# The Node.js benchmarks: a release build of the addon, prom-client and
# Express from npm (under target/node-suite, bindings/node/suite/run.js), and
# each benchmark with a store of its own in /dev/shm: per-operation cost
# (ops.js), a scrape of 16 cluster workers (scrape.js), and the req/s of
# an Express cluster, its metric calls in a middleware and in the route
# handler (express.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
T="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --quiet --release -p shmetrics-node
cp "$T/release/libshmetrics_node.so" bindings/node/shmetrics.linux-x64-gnu.node
mods="$T/node-suite/node_modules"
node bindings/node/suite/run.js --install
ln -sfn "$PWD/bindings/node" "$mods/shmetrics"
store="/dev/shm/shmetrics-bench-node-$$"
trap 'rm -f "$store"' EXIT
SHMETRICS_STORE="$store" NODE_PATH="$mods" node benches/node/ops.js
rm -f "$store"
cargo build --quiet --release -p shmetrics
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SHMETRICS_STORE="$store" NODE_PATH="$mods" SHMETRICS_BIN="$T/release/shmetrics" EXPORTER_PORT="$port" \
  node benches/node/scrape.js
rm -f "$store"
command -v wrk >/dev/null || (source scripts/setup.sh && ensure_apt wrk)
SHMETRICS_STORE="$store" NODE_PATH="$mods" benches/node/express.sh

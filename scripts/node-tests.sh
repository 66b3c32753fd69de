#!/usr/bin/env bash
# The Node.js binding (bindings/node): builds the addon, runs prom-client's
# own Jest suite against it (bindings/node/suite/run.js, which npm-installs
# Jest, nock, Express and prom-client under target/node-suite), then the
# server tests (bindings/node/tests: a real cluster of Express workers and
# the exporter).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_node
T="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --quiet -p shmetrics-node -p shmetrics
# napi-rs's layout: the addon beside index.js, named for its platform.
cp "$T/debug/libshmetrics_node.so" bindings/node/shmetrics.linux-x64-gnu.node
node bindings/node/suite/run.js
mods="$T/node-suite/node_modules"
ln -sfn "$PWD/bindings/node" "$mods/shmetrics"
NODE_PATH="$mods" SHMETRICS_BIN="$T/debug/shmetrics" node --test --test-reporter=spec bindings/node/tests/

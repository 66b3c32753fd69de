#!/usr/bin/env bash
# The Node.js binding (bindings/node): builds the addon, runs prom-client's
# own Jest suite against it (bindings/node/suite/run.js, which npm-installs
# Jest, nock, Express and prom-client under target/node-suite), then the
# tests (bindings/node/tests: a real cluster of Express workers and PM2
# with the exporter, errors, the store's faults, API fuzzing), and
# type-checks a TypeScript program against index.d.ts and prom-client's,
# and runs the API fuzzer under valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
T="${CARGO_TARGET_DIR:-$PWD/target}"
ensure_node_packages
cargo build --quiet -p shmetrics
node bindings/node/suite/run.js
SHMETRICS_BIN="$T/debug/shmetrics" node --test --test-reporter=spec bindings/node/tests/
TSC="$NODE_PATH/.bin/tsc" PROM_CLIENT_TYPES="$NODE_PATH/prom-client/index.d.ts" bindings/node/tests/types/check.sh
# The addon's own code under valgrind: a shorter fuzzing run (V8 runs
# slowly there), any invalid read or write of the native half failing it.
ensure_apt valgrind
SHMETRICS_FUZZ_CALLS=3000 valgrind --error-exitcode=9 -q node bindings/node/tests/fuzz.test.js

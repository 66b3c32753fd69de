#!/usr/bin/env bash
# The differential migration tests (tests/migration, issue 32): the same
# workload through each peer library's own storage and through shmetrics,
# the pages compared by a strict parser that normalises nothing and what a
# real Prometheus (Debian's 2.42) stores from each compared through its
# HTTP API. A difference fails unless docs/migrating.md's table of chosen
# differences lists it. Called by ./run-tests; safe to run again.
#   scripts/migration-tests.sh [PYTEST ARGS...]     e.g. -k text
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
ensure_rust
ensure_lua
ensure_php
ensure_ruby
ensure_apt prometheus
ensure_python_env
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}

say "migration: build libshmetrics (release) and shmetrics"
cargo build --quiet --release -p shmetrics-ffi
cargo build --quiet -p shmetrics
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so"
export SHMETRICS_BIN="${SHMETRICS_BIN:-$target/debug/shmetrics}"
say "migration: the PHP extension (bindings/php/ext/build.sh), for the PromPHP pair's second run"
MIGRATION_PHP_EXTENSION=$(bindings/php/ext/build.sh "$target/php-ext")
export MIGRATION_PHP_EXTENSION
say "migration: the Node.js binding and prom-client (npm)"
ensure_node_packages
say "migration: gem build and gem install (the Ruby binding)"
install_ruby_gem
# Every check's differences that docs/migrating.md does not list, in full.
export MIGRATION_DIFFS_DIR="$target/migration-diffs"
rm -rf "$MIGRATION_DIFFS_DIR"

say "migration: the differential tests"
rc=0
"$VENV/bin/python" -m pytest -q tests/migration "$@" || rc=$?
say "migration: the differences docs/migrating.md does not list (in full: $MIGRATION_DIFFS_DIR)"
"$VENV/bin/python" tests/migration/summary.py "$MIGRATION_DIFFS_DIR"
exit "$rc"

#!/usr/bin/env bash
# Runs the PHP binding's tests (bindings/php): installs what is missing
# (Debian's php-cli, php-fpm, phpunit, php-apcu, nginx, promtool, and
# python3's prometheus_client, whose OpenMetrics parser reads exemplars
# back), builds libshmetrics and the shmetrics command, lints every PHP
# file with `php -l`, then runs PHPUnit, which starts its own php-fpm,
# nginx and exporter. Called by ./run-tests; safe to run again.
#   scripts/php-tests.sh [PHPUNIT ARGS...]     e.g. --filter FpmTest
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_rust
ensure_php
ensure_apt prometheus
ensure_pip prometheus_client prometheus_client
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}

say "php binding: build libshmetrics (release) and shmetrics"
cargo build --quiet --release -p shmetrics-ffi
cargo build --quiet -p shmetrics
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so"
export SHMETRICS_BIN="${SHMETRICS_BIN:-$target/debug/shmetrics}"

say "php binding: php -l"
while IFS= read -r -d '' f; do
  out=$(php -l "$f" 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
done < <(find bindings/php benches/php -name '*.php' -print0; printf '%s\0' bindings/php/bin/shmetrics-ffi-header)

say "php binding: phpunit"
cd bindings/php
phpunit "$@"

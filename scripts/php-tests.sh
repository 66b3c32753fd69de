#!/usr/bin/env bash
# Runs the PHP binding's tests (bindings/php): installs what is missing
# (Debian's php-cli, php-fpm, phpunit, php-apcu, nginx, apache2 with
# libapache2-mod-php8.2, promtool, and
# python3's prometheus_client, whose OpenMetrics parser reads exemplars
# back), builds libshmetrics and the shmetrics command, lints every PHP
# file with `php -l`, checks that the extension's committed arginfo is what
# its stub makes (bindings/php/ext/gen-arginfo.sh --check, with PHP's
# gen_stub.php), builds the binding's extension (bindings/php/ext,
# phpize), then runs PHPUnit, which starts its own php-fpm, nginx, Apache
# (mod_php, prefork) and exporter. Then PromPHP's own adapter-generic tests run on
# Shmetrics\PromPHP\ShmetricsAdapter, from a copy of PromPHP with its tests
# ($PROMPHP_DIR, else the peers' copies that scripts/setup.sh's
# find_peers finds): the tests that fail must be exactly those of
# bindings/php/tests/promphp/expected-failures.txt. Every suite runs
# twice: on PHP FFI (the extension not loaded), and with the extension
# loaded in every PHP process the tests start (CLI, php-fpm and mod_php alike,
# through an ini file in $PHP_INI_SCAN_DIR); then scripts/php-sanitizers.sh
# runs the extension's suites under ASan, LSan and UBSan. Called by ./run-tests; safe to
# run again.
#   scripts/php-tests.sh [PHPUNIT ARGS...]     e.g. --filter FpmTest
# (the arguments go to the binding's own PHPUnit runs only)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
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
# A real library of the next major version, which the binding must refuse.
say "php binding: build libshmetrics of the next major (scripts/build-other-major.sh)"
SHMETRICS_OTHER_MAJOR_LIBRARY=$(scripts/build-other-major.sh)
export SHMETRICS_OTHER_MAJOR_LIBRARY

say "php binding: php -l"
while IFS= read -r -d '' f; do
  out=$(php -l "$f" 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
done < <(find bindings/php benches/php -name '*.php' -print0; printf '%s\0' bindings/php/bin/shmetrics-ffi-header)

say "php binding: the extension's arginfo is what its stub makes (bindings/php/ext/gen-arginfo.sh --check)"
bindings/php/ext/gen-arginfo.sh --check

if [ ! -f "$PROMPHP_DIR/src/Prometheus/Storage/Adapter.php" ] || [ ! -d "$PROMPHP_DIR/tests/Test/Prometheus" ]; then
  echo "php-tests.sh: $PROMPHP_DIR is not a copy of PromPHP with its tests; set PROMPHP_DIR to one" \
    "(promphp/prometheus_client_php v2.15.1, src/ and tests/)" >&2
  exit 1
fi
PROMPHP_DIR=$(cd "$PROMPHP_DIR" && pwd)

say "php binding: build the extension (bindings/php/ext/build.sh)"
ext=$(bindings/php/ext/build.sh "$target/php-ext")
# FpmLibraryTest loads it into its php-fpm in the FFI run too.
export SHMETRICS_EXTENSION=$ext
# An ini folder that loads it, added to PHP's own scan folder (the leading
# ':' keeps conf.d): every php and php-fpm started with it loads the extension.
mkdir -p "$target/php-ext/ini"
printf 'extension=%s\n' "$ext" >"$target/php-ext/ini/shmetrics.ini"
with_ext=":$target/php-ext/ini"
PHP_INI_SCAN_DIR=$with_ext php -r 'exit(extension_loaded("shmetrics") ? 0 : 1);' \
  || { echo "php-tests.sh: $ext does not load" >&2; exit 1; }
php -r 'exit(extension_loaded("shmetrics") ? 1 : 0);' \
  || { echo "php-tests.sh: the shmetrics extension is loaded by PHP's own ini: the FFI runs would not test FFI" >&2; exit 1; }

cd bindings/php
junit=$(mktemp)
trap 'rm -f "$junit"' EXIT
# suites LABEL [PHPUNIT ARGS...]: the binding's, PromPHP's and the adapter's
# tests, with PHP_INI_SCAN_DIR as the caller set it.
suites() {
  local label=$1
  shift
  say "php binding ($label): phpunit"
  phpunit "$@"
  say "php binding ($label): PromPHP's own tests on ShmetricsAdapter ($PROMPHP_DIR)"
  phpunit -c tests/promphp/phpunit.xml --testsuite promphp --log-junit "$junit" || true
  php tests/promphp/check-results.php "$junit" tests/promphp/expected-failures.txt
  say "php binding ($label): ShmetricsAdapter's own tests"
  phpunit -c tests/promphp/phpunit.xml --testsuite adapter
}
suites "PHP FFI" "$@"
PHP_INI_SCAN_DIR=$with_ext suites "the extension" "$@"
# API fuzzing, on the extension and on FFI: 100,000 calls in at most 60 s
# (bindings/php/tests/fuzz/fuzz.php; docs/php.md says how to run it longer).
say "php binding: API fuzzing (tests/fuzz/fuzz.php)"
php tests/fuzz/fuzz.php --seconds 60
# The extension again, built with AddressSanitizer and UBSan, its leaks
# checked (scripts/php-sanitizers.sh; 1.6 minutes of CPU).
cd ../..
scripts/php-sanitizers.sh

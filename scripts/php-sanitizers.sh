#!/usr/bin/env bash
# The PHP extension under AddressSanitizer, LeakSanitizer and
# UndefinedBehaviorSanitizer (and its library loading under
# ThreadSanitizer, tests/ext/loader-threads.c): builds bindings/php/ext with
# -fsanitize=address,undefined (in $target/php-ext-asan), then runs, in a
# php-cli with libasan preloaded and USE_ZEND_ALLOC=0 (PHP's allocator off,
# so that every zval, string and array is a malloc ASan sees), the
# binding's PHPUnit suite and PromPHP's suite on ShmetricsAdapter, both
# with the extension loaded, and the API fuzzer on the extension
# (bindings/php/tests/fuzz). A leak (LeakSanitizer, at the exit of the
# PHPUnit process), an invalid access or undefined behaviour (in that
# process or any PHP process the tests start: php-fpm's workers, the
# scripts) fails the run. Leak reports of the processes the tests start are
# off (SHMETRICS_CHILD_ASAN_OPTIONS, set by the tests' bootstraps): they
# include bash, python3 and nginx, whose own exits are not ours to check.
#
# PHP loads extensions with dlopen(RTLD_DEEPBIND), which ASan refuses:
# bindings/php/tests/ext/no-deepbind.c, preloaded before libasan, drops
# the flag. Valgrind memcheck was tried first: it cannot map the store's
# sparse reservation (EINVAL) and grew to 23 GB of shared memory before the
# kernel killed it, on this 24 GB machine.
#
# Called by scripts/php-tests.sh with its environment (SHMETRICS_LIBRARY,
# SHMETRICS_BIN, PROMPHP_DIR...); 1.6 minutes of CPU (4 minutes on a loaded 2-core machine).
#   scripts/php-sanitizers.sh [SOURCE_DIR]   (a copy of bindings/php to build the
#   extension from, default bindings/php; $SHMETRICS_ASAN_BUILD: the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$PWD/target}
src=${1:-bindings/php}
build=${SHMETRICS_ASAN_BUILD:-$target/php-ext-asan}
leak_rc=86
# Run alone: the library and the CLI of this checkout, PromPHP next to it.
export SHMETRICS_LIBRARY=${SHMETRICS_LIBRARY:-$target/release/libshmetrics.so}
export SHMETRICS_BIN=${SHMETRICS_BIN:-$target/debug/shmetrics}
export PROMPHP_DIR=${PROMPHP_DIR:-$root/../shared/peers/promphp-v2.15.1}

say() { printf '==> %s\n' "$*"; }

say "php sanitizers: build the extension with -fsanitize=address,undefined ($build)"
mkdir -p "$build"
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
ext=$(CFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" "$src/ext/build.sh" "$build")
gcc -shared -fPIC -O2 -o "$build/no-deepbind.so" bindings/php/tests/ext/no-deepbind.c -ldl
asan=$(gcc -print-file-name=libasan.so)
[ -f "$asan" ] || { echo "php-sanitizers.sh: no libasan.so (Debian: libasan8, with gcc)" >&2; exit 1; }
mkdir -p "$build/ini"
printf 'extension=%s\n' "$ext" >"$build/ini/shmetrics.ini"

reports=$(mktemp -d)
junit=$(mktemp)
trap 'rm -rf "$reports" "$junit"' EXIT
# Every report goes to a file of $reports (log_path), which check_reports reads.
common="verify_asan_link_order=0:exitcode=$leak_rc:detect_odr_violation=0:log_path=$reports/asan"
# san COMMAND...: runs it under the sanitizers, the extension loaded.
san() {
  env PHP_INI_SCAN_DIR=":$build/ini" LD_PRELOAD="$build/no-deepbind.so $asan" \
    ASAN_OPTIONS="$common:detect_leaks=1" SHMETRICS_CHILD_ASAN_OPTIONS="$common:detect_leaks=0" \
    LSAN_OPTIONS="suppressions=$root/bindings/php/tests/ext/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=$leak_rc:log_path=$reports/ubsan" \
    USE_ZEND_ALLOC=0 ZEND_DONT_UNLOAD_MODULES=1 "$@"
}
# suite LABEL PHPUNIT_ARGS...: every test must pass, whatever the exit code
# a leak report gives the process (its JUnit log says).
suite() {
  local label=$1
  shift
  say "php sanitizers: $label"
  rm -f "$junit"
  san phpunit "$@" --log-junit "$junit" || true
  php -r '$x = @simplexml_load_file($argv[1]);
    exit($x !== false && $x->xpath("//testcase") && !$x->xpath("//testcase[failure or error or skipped]") ? 0 : 1);' \
    "$junit" || { echo "php-sanitizers.sh: $label: a test failed or PHPUnit did not finish (above)" >&2; exit 1; }
}
# check_reports: fails on any ASan error (an invalid access, in any PHP
# process), any UBSan report, and any leak whose allocation stack passes
# through the extension (its sources, ext/shmetrics_*.c). Leaks with no frame of the
# extension are PHP's own at exit (with USE_ZEND_ALLOC=0, objects left in
# reference cycles, PHPUnit's, are never freed): counted, not failed.
check_reports() {
  local f bad=0 other=0
  for f in "$reports"/*; do
    [ -e "$f" ] || continue
    if grep -q 'ERROR: AddressSanitizer\|runtime error:' "$f"; then
      cat "$f" >&2
      bad=1
    fi
    # LeakSanitizer's records are separated by blank lines.
    if awk -v RS= '/(Direct|Indirect) leak/ && /ext\/shmetrics_[a-z]+\.c:/ { found = 1; print; print "" } END { exit !found }' "$f" >&2; then
      bad=1
    fi
    other=$((other + $(grep -c '^\(Direct\|Indirect\) leak' "$f" || true)))
  done
  say "php sanitizers: $other leak records in all (PHP's own at exit, unless shown above)"
  if [ "$bad" = 1 ]; then
    echo "php-sanitizers.sh: the sanitizers reported the errors above" >&2
    return 1
  fi
}
san env ASAN_OPTIONS="$common:detect_leaks=0" php -r 'exit(extension_loaded("shmetrics") ? 0 : 1);' \
  || { echo "php-sanitizers.sh: $ext does not load under ASan" >&2; exit 1; }

say "php sanitizers: the library's loading from 8 threads at once, under ThreadSanitizer (tests/ext/loader-threads.c)"
gcc -std=gnu11 -g -O1 -fsanitize=thread -Wall -Wextra -Werror -Wno-unused-function -o "$build/loader-threads" \
  -I "$src/include" "$src/tests/ext/loader-threads.c" -ldl -lpthread
TSAN_OPTIONS="halt_on_error=1" "$build/loader-threads" "$SHMETRICS_LIBRARY"

cd bindings/php
suite "the binding's PHPUnit suite"
say "php sanitizers: PromPHP's own tests on ShmetricsAdapter ($PROMPHP_DIR)"
rm -f "$junit"
san phpunit -c tests/promphp/phpunit.xml --testsuite promphp --log-junit "$junit" || true
php tests/promphp/check-results.php "$junit" tests/promphp/expected-failures.txt
suite "ShmetricsAdapter's own tests" -c tests/promphp/phpunit.xml --testsuite adapter
say "php sanitizers: API fuzzing on the extension (tests/fuzz/fuzz.php, 20,000 calls)"
# The runs' exit code stays theirs (exitcode=0): their leaks go to the
# reports, which check_reports reads; an invalid access ends a run before
# it says it is done, which the fuzzer reports.
SHMETRICS_EXTENSION=$ext san env ASAN_OPTIONS="${common/exitcode=$leak_rc/exitcode=0}:detect_leaks=1" \
  php tests/fuzz/fuzz.php --engines ext --calls 20000 --per-run 5000 --seconds 240
check_reports

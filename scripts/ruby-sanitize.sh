#!/usr/bin/env bash
# The Ruby extension under AddressSanitizer and UndefinedBehaviorSanitizer
# (issue 33): builds bindings/ruby/ext/shmetrics with
# -fsanitize=address,undefined into target/ruby/asan, preloads gcc's
# libasan into Debian's ruby (which is not instrumented: only the
# extension's own memory accesses are checked), and runs on that build
#   - the gem's minitest tests,
#   - test/fuzz.rb (its leak probe, kept seeds and new seeds),
#   - the Shmetrics::DataStore specs and prometheus-client's own specs
#     on DataStore, as scripts/ruby-tests.sh runs them.
# Any sanitizer report aborts the process and fails the run.
# ASAN_OPTIONS has detect_leaks=0: Ruby 3.1 does not free its heap at
# exit, so LeakSanitizer would report Ruby itself (the fuzzer's leak probe
# checks the extension's leaks instead).
#
# Called by scripts/ruby-tests.sh after the plain build's tests, which
# set up what this needs (SHMETRICS_LIBRARY, the gem's environment;
# CLIENT_RUBY_DIR, else scripts/setup.sh's find_peers); to run it alone:
# scripts/ruby-tests.sh once, then
#   SHMETRICS_LIBRARY=target/release/libshmetrics.so scripts/ruby-sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
ensure_ruby # gcc, with libasan8 and libubsan1
target=${CARGO_TARGET_DIR:-$PWD/target}
root=$PWD
: "${SHMETRICS_LIBRARY:=$target/release/libshmetrics.so}"
export SHMETRICS_LIBRARY

build=$target/ruby/asan
say "ruby sanitizers: build the extension with -fsanitize=address,undefined ($build)"
rm -rf "$build"
mkdir -p "$build/lib/shmetrics"
# --param asan-stack=0: Ruby raises with a longjmp that ASan does not
# see, past the extension's frames, whose stack redzones stay poisoned;
# the next C call that touches that stack reports a false error (seen:
# CHECK failed in __asan_handle_no_return). Heap, globals and every
# other check stay on.
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined --param asan-stack=0"
flags+=" -fno-omit-frame-pointer -g -O1"
(
  cd "$build"
  SHMETRICS_INCLUDE_DIR=$root/crates/ffi/include ruby "$root/bindings/ruby/ext/shmetrics/extconf.rb" \
    --with-cflags="$flags" --with-ldflags="-fsanitize=address,undefined" >/dev/null
  make --quiet >/dev/null
  cp shmetrics_ext.so lib/shmetrics/
)
if ! nm -D "$build/lib/shmetrics/shmetrics_ext.so" | grep -c __asan_ >/dev/null; then
  echo "ruby-sanitize.sh: the extension was not built with AddressSanitizer" >&2
  exit 1
fi

asan=$(gcc -print-file-name=libasan.so)
export SHMETRICS_RUBY_EXT_DIR=$build/lib
# use_sigaltstack=0: Ruby installs its own alternate signal stack in its
# threads, which ASan would otherwise try to unmap as its own when they
# end ("unable to unmap").
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:use_sigaltstack=0:allow_user_segv_handler=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Preloaded into the ruby processes only (not into the shell's tools).
sanitized() { LD_PRELOAD=$asan "$@"; }

if ! sanitized ruby -I "$SHMETRICS_RUBY_EXT_DIR" -I bindings/ruby/lib -e 'require "shmetrics"'; then
  echo "ruby-sanitize.sh: ruby does not load the sanitized extension with $asan preloaded" >&2
  exit 1
fi

say "ruby sanitizers: minitest"
cd bindings/ruby
for t in test/*_test.rb; do
  sanitized ruby "$t"
done

say "ruby sanitizers: API fuzzing (test/fuzz.rb)"
# ASan's quarantine keeps freed memory: resident memory is no leak
# measure here (the plain build's run checks it), hence the high bound.
SHMETRICS_FUZZ_LEAK_KB=1000000 sanitized ruby test/fuzz.rb --calls "${SHMETRICS_FUZZ_CALLS:-100000}" --time "${SHMETRICS_FUZZ_TIME:-120}"
cd "$root"

say "ruby sanitizers: Shmetrics::DataStore specs and prometheus-client's own specs on it ($CLIENT_RUBY_DIR)"
mapfile -t peer_specs < <(client_ruby_specs)
report=$target/ruby/client-ruby-specs-asan.json
rm -f "$report"
rspec_rc=0
# client_ruby_helper.rb loads the gem from $SHMETRICS_RUBY_EXT_DIR.
sanitized rspec --require "$root/bindings/ruby/spec/client_ruby_helper.rb" --format progress \
  --format json --out "$report" bindings/ruby/spec/*_spec.rb "${peer_specs[@]}" || rspec_rc=$?
# The same expected failures as the plain build's run; a crash leaves
# no report and fails here.
ruby bindings/ruby/spec/check_failures.rb "$report" bindings/ruby/spec/expected-failures.txt
say "ruby sanitizers: no sanitizer report"

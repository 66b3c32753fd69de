#!/usr/bin/env bash
# Runs the tests of the Ruby StatsD facade (bindings/ruby/lib/shmetrics/statsd):
# statsd-instrument 3.11.0's own tests of its public API against the facade
# (STATSD_INSTRUMENT_DIR, else scripts/setup.sh's find_peers), the facade's tests
# against a real store, and the real-server tests: Puma (cluster, 4
# workers) and Unicorn (4 workers) with SIGKILLs and a phased restart,
# checked at the exporter and in its StatsD stream. Called by ./run-tests;
# safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
ensure_rust
# ruby-mocha: statsd-instrument's tests stub Process.clock_gettime with it.
ensure_ruby
ensure_apt ruby-mocha
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}

say "ruby statsd facade: build libshmetrics (release) and shmetrics"
cargo build --quiet --release -p shmetrics-ffi
cargo build --quiet -p shmetrics
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so"
export SHMETRICS_BIN="${SHMETRICS_BIN:-$target/debug/shmetrics}"

say "ruby statsd facade: gem build and gem install (compiles the native part)"
install_ruby_gem

say "ruby statsd facade: statsd-instrument 3.11.0's tests"
ruby bindings/ruby/tests/statsd/run_statsd_instrument.rb
say "ruby statsd facade: against a real store"
ruby bindings/ruby/tests/statsd/facade_test.rb
say "ruby statsd facade: Puma and Unicorn"
ruby tests/servers/ruby/servers_test.rb

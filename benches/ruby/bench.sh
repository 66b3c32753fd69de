#!/usr/bin/env bash
# The Ruby binding's benchmarks: per operation (ops.rb, wall clock then
# instructions), scrapes (scrape.rb), the StatsD facade against
# statsd-instrument (statsd_throughput.rb, then instructions with
# statsd_instructions.rb), a Puma cluster's req/s with a metric line
# (puma_rps.rb) and updates through series a master made, in a forked
# worker (prefork.rb). Builds the release library and command, installs the gem
# into target/ruby/gems, then prints the figures.
#   benches/ruby/bench.sh [ops|instr|scrape|statsd|puma|prefork]...   (default: all)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/setup.sh
ensure_rust
ensure_ruby
ensure_apt valgrind ruby-ffi wrk
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --quiet --release -p shmetrics-ffi -p shmetrics
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so" SHMETRICS_BIN="$target/release/shmetrics"
install_ruby_gem
for d in "${CLIENT_RUBY_DIR:-}" ../shared/peers/client_ruby-v4.2.5 ../../shared/peers/client_ruby-v4.2.5; do
  if [ -n "$d" ] && [ -d "$d/lib/prometheus" ]; then CLIENT_RUBY_DIR=$(cd "$d" && pwd); break; fi
done
export CLIENT_RUBY_DIR=${CLIENT_RUBY_DIR:?set CLIENT_RUBY_DIR to a copy of prometheus-client 4.2.5}
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(ops instr scrape statsd puma prefork)
for p in "${parts[@]}"; do
  case $p in
    ops) say "per operation, wall clock"; ruby benches/ruby/ops.rb ;;
    instr) say "per operation, instructions (callgrind)"; ruby benches/ruby/ops.rb --instr ;;
    scrape) say "scrapes"; ruby benches/ruby/scrape.rb ;;
    statsd)
      say "StatsD facade against statsd-instrument"; ruby benches/ruby/statsd_throughput.rb
      say "StatsD, instructions per event (callgrind)"; N=500 ruby benches/ruby/statsd_instructions.rb ;;
    puma) say "Puma cluster req/s with a metric line"; ruby benches/ruby/puma_rps.rb ;;
    prefork) say "updates through series made before a fork, in the worker"; ruby benches/ruby/prefork.rb ;;
    *) echo "bench.sh: unknown part $p (ops, instr, scrape, statsd, puma, prefork)" >&2; exit 2 ;;
  esac
done

#!/usr/bin/env bash
# The Ruby binding's benchmarks (prometheus-client side; the StatsD ones
# are statsd.sh): per operation (ops.rb, wall clock then instructions) and
# scrapes (scrape.rb). Builds the release library and command, installs
# the gem into target/ruby/gems, then prints the figures.
#   benches/ruby/bench.sh [ops|instr|scrape]...   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/setup.sh
ensure_rust
ensure_ruby
ensure_apt valgrind ruby-ffi
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
[ ${#parts[@]} -eq 0 ] && parts=(ops instr scrape)
for p in "${parts[@]}"; do
  case $p in
    ops) say "per operation, wall clock"; ruby benches/ruby/ops.rb ;;
    instr) say "per operation, instructions (callgrind)"; ruby benches/ruby/ops.rb --instr ;;
    scrape) say "scrapes"; ruby benches/ruby/scrape.rb ;;
    *) echo "bench.sh: unknown part $p (ops, instr, scrape)" >&2; exit 2 ;;
  esac
done

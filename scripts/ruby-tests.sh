#!/usr/bin/env bash
# Runs the Ruby binding's tests (bindings/ruby): installs what is missing
# (Debian's ruby, ruby-dev, minitest, rspec, rack, puma, promtool), builds
# libshmetrics and the shmetrics command, builds the gem and installs it
# from source with `gem install` into target/ruby/gems (which compiles its
# native part), then runs the gem's own tests (minitest), and
# prometheus-client's own specs against Shmetrics::DataStore, from a copy
# of prometheus-client with its specs ($CLIENT_RUBY_DIR, else the
# peers' copies that scripts/setup.sh's find_peers finds), then the API
# fuzzer (test/fuzz.rb), and all of it again on a build under
# AddressSanitizer and UndefinedBehaviorSanitizer (scripts/ruby-sanitize.sh). Besides, a Rack app under Apache with
# Debian's Passenger (tests/servers/ruby/passenger_test.rb), on the
# regular build only. Called by ./run-tests; safe to run again.
#   scripts/ruby-tests.sh [MINITEST ARGS...]     e.g. -n /fork/
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
ensure_rust
ensure_ruby
ensure_passenger
ensure_apt prometheus
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}
root=$PWD

say "ruby binding: build libshmetrics (release) and shmetrics"
cargo build --quiet --release -p shmetrics-ffi
cargo build --quiet -p shmetrics
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so"
export SHMETRICS_BIN="${SHMETRICS_BIN:-$target/debug/shmetrics}"
# A real library of the next major version, which the gem must refuse.
say "ruby binding: build libshmetrics of the next major (scripts/build-other-major.sh)"
SHMETRICS_OTHER_MAJOR_LIBRARY=$(scripts/build-other-major.sh)
export SHMETRICS_OTHER_MAJOR_LIBRARY

say "ruby binding: gem build and gem install (compiles the native part)"
install_ruby_gem

say "ruby binding: minitest"
cd bindings/ruby
for t in test/*_test.rb; do
  ruby -w "$t" "$@"
done
say "ruby binding: a Rack app under Apache with Passenger (tests/servers/ruby/passenger_test.rb)"
ruby -w "$root/tests/servers/ruby/passenger_test.rb"
say "ruby binding: API fuzzing (test/fuzz.rb: leak probe, kept seeds, 100,000 random calls)"
ruby test/fuzz.rb --calls 100000 --time 60
cd "$root"

# prometheus-client's own specs, from its pinned copy, on Shmetrics::DataStore.
if [ ! -f "$CLIENT_RUBY_DIR/spec/examples/data_store_example.rb" ]; then
  echo "ruby-tests.sh: $CLIENT_RUBY_DIR is not a copy of prometheus-client with its specs; set CLIENT_RUBY_DIR to one" >&2
  exit 1
fi
CLIENT_RUBY_DIR=$(cd "$CLIENT_RUBY_DIR" && pwd)
say "ruby binding: Shmetrics::DataStore specs, and prometheus-client's own specs on it ($CLIENT_RUBY_DIR)"
mapfile -t peer_specs < <(client_ruby_specs)
report=$target/ruby/client-ruby-specs.json
rspec_rc=0
rspec --require "$root/bindings/ruby/spec/client_ruby_helper.rb" --format progress \
  --format json --out "$report" bindings/ruby/spec/*_spec.rb "${peer_specs[@]}" || rspec_rc=$?
ruby bindings/ruby/spec/check_failures.rb "$report" bindings/ruby/spec/expected-failures.txt

# The extension built with AddressSanitizer and UndefinedBehaviorSanitizer:
# the minitest tests, the fuzzer and the specs above again on that build.
scripts/ruby-sanitize.sh

#!/usr/bin/env bash
# Runs the Lua binding's tests (bindings/lua): installs what is missing
# (Debian's luajit2, nginx with libnginx-mod-http-lua, promtool, luacheck), builds
# libshmetrics and the shmetrics command, then runs luacheck, the unit tests and the
# JIT checks under plain LuaJIT, the nginx tests with pytest (which start
# their own nginx and exporter), and nginx-lua-prometheus's own
# integration test (tests/peer_integration.sh, Go). Called by ./run-tests;
# safe to run again.
#   scripts/lua-tests.sh [PYTEST ARGS...]     e.g. -k reload
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
ensure_rust
ensure_lua
ensure_apt prometheus lua-check
ensure_python_env
ensure_go
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}

say "lua binding: build libshmetrics (release) and shmetrics"
cargo build --quiet --release -p shmetrics-ffi
cargo build --quiet -p shmetrics
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so"
export SHMETRICS_BIN="${SHMETRICS_BIN:-$target/debug/shmetrics}"
# A real library of the next major version, which the binding must refuse.
say "lua binding: build libshmetrics of the next major (scripts/build-other-major.sh)"
SHMETRICS_OTHER_MAJOR_LIBRARY=$(scripts/build-other-major.sh)
export SHMETRICS_OTHER_MAJOR_LIBRARY
# prometheus_client's OpenMetrics parser reads the unit tests' exemplars back.
export SHMETRICS_PYTHON="$VENV/bin/python"

cd bindings/lua
# The unit tests' store files (tests/helper.lua), removed however this ends.
SHMETRICS_TEST_TMPDIR=$(mktemp -d /tmp/shmetrics-lua-tests.XXXXXX)
export SHMETRICS_TEST_TMPDIR
trap 'rm -rf "$SHMETRICS_TEST_TMPDIR"' EXIT
# The module as shipped (its settings in .luacheckrc): unused variables,
# tables written and never read, undefined globals.
say "lua binding: luacheck"
luacheck shmetrics.lua shmetrics
say "lua binding: unit tests (luajit)"
luajit tests/unit.lua
luajit tests/cross_delete.lua
say "lua binding: shared test vectors"
luajit tests/vectors.lua
say "lua binding: two Lua VMs of one process sharing the store (valgrind)"
# nginx runs one VM per subsystem (http, stream) in each worker; the host
# runs the binding in two of them and a third made after a replacement.
gcc -O1 -g -Wall -Wextra -Werror -o "$target/two_vms" tests/two_vms.c $(pkg-config --cflags --libs luajit)
two_vms_dir=$(mktemp -d /tmp/shmetrics-two-vms.XXXXXX)
TWO_VMS_STORE=$two_vms_dir/store valgrind -q --error-exitcode=99 --leak-check=no "$target/two_vms" tests/two_vms.lua
rm -rf "$two_vms_dir"
say "lua binding: API fuzzing (the kept seeds, 25 × 5,000 calls; one seed under valgrind)"
luajit tests/fuzz_api.lua --runs 25 --calls 5000 --seed 1
fuzz_dir=$(mktemp -d /tmp/shmetrics-lua-fuzz.XXXXXX)
FUZZ_DIR=$fuzz_dir FUZZ_SMALL=1 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
  --show-leak-kinds=definite --log-file="$fuzz_dir/valgrind.log" luajit tests/fuzz_api.lua --child 7 500 2>/dev/null \
  || { cat "$fuzz_dir/valgrind.log"; exit 1; }
rm -rf "$fuzz_dir"
say "lua binding: JIT checks (jit.v, jit.p)"
luajit tests/jit.lua | grep -v '^\[TRACE'
say "lua binding: nginx"
"$VENV/bin/python" -m pytest -q tests "$@"
say "lua binding: the nginx bench's reading of wrk's output"
"$VENV/bin/python" -m pytest -q ../../benches/lua/test_bench_nginx.py
# Both parts: basic (test_basic.go) and reset (test_reset.go, a reset() in
# one worker seen by the others).
say "lua binding: nginx-lua-prometheus's integration test (basic and reset)"
tests/peer_integration.sh all

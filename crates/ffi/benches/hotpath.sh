#!/usr/bin/env bash
# Instructions per call of the C ABI's hot path (hotpath.c): a counter
# add and a 19-bucket histogram observe through series handles, and the
# same two through shmetrics_update (the cached path), each loop run under
# callgrind with N and 10N calls; per call is the difference of a loop's
# inclusive count divided by 9N, so the set-up cancels out. The loop's own
# instructions (about 5 per call) are in the figure. Then the thread CPU
# time per call of a run outside valgrind (noisy on a loaded machine).
#
#     crates/ffi/benches/hotpath.sh [LIBDIR]
#
# LIBDIR holds libshmetrics.so (default: target/release, built first).
# SHMETRICS_HOTPATH_N sets N (default 100000); --dump-instr output stays
# in $SHMETRICS_HOTPATH_KEEP when set, for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ $# -ge 1 ]; then
  lib=$(cd "$1" && pwd)
else
  cargo build --quiet --release -p shmetrics-ffi
  lib=${CARGO_TARGET_DIR:-$PWD/target}/release
fi
n=${SHMETRICS_HOTPATH_N:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The library's soname is libshmetrics.so.1: link and run against a copy.
cp "$lib/libshmetrics.so" "$tmp/libshmetrics.so"
ln -s libshmetrics.so "$tmp/libshmetrics.so.1"
cc -O2 -Wall -Wextra -I crates/ffi/include crates/ffi/benches/hotpath.c -o "$tmp/hotpath" \
  -L"$tmp" -lshmetrics -Wl,-rpath,"$tmp"
for k in "$n" "$((10 * n))"; do
  valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$tmp/cg.$k" \
    --toggle-collect='*_loop*' "$tmp/hotpath" "$tmp/store.$k" "$k" >/dev/null 2>&1
  callgrind_annotate --inclusive=yes "$tmp/cg.$k" | grep -E ':[a-z_]+_loop' >"$tmp/loops.$k"
done
echo "libshmetrics: $lib/libshmetrics.so; instructions per call ((10N - N) / 9N, N = $n):"
for loop in counter_add_loop observe_loop cached_add_loop cached_observe_loop foreign_add_loop; do
  a=$(grep ":$loop[ .]" "$tmp/loops.$n" | awk '{gsub(",", "", $1); print $1}')
  b=$(grep ":$loop[ .]" "$tmp/loops.$((10 * n))" | awk '{gsub(",", "", $1); print $1}')
  printf '  %-22s %8.1f\n' "$loop" "$(echo "($b - $a) / (9 * $n)" | bc -l)"
done
if [ -n "${SHMETRICS_HOTPATH_KEEP:-}" ]; then
  mkdir -p "$SHMETRICS_HOTPATH_KEEP"
  cp "$tmp/cg.$((10 * n))" "$SHMETRICS_HOTPATH_KEEP/"
fi
"$tmp/hotpath" "$tmp/store.cpu" $((100 * n))

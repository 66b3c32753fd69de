#!/usr/bin/env bash
# What reserving the store's pages on the file system costs (issue 23):
# this tree against a base version (default: main's HEAD; e54f741 is the
# last commit before any reservation), in the same run.
#
# - The update hot path: callgrind instruction counts of `counter_inc`,
#   a 12-bucket `observe` and a summary `observe` (two quantiles)
#   (crates/core/benches/hotpath.rs), per update, from runs of N and 10N
#   updates (so the set-up cancels out).
# - Series creation: thread CPU time per new series and per first update
#   (crates/core/benches/creation.rs, user + system time, so the file
#   system's allocation counts), counters and summaries, each version run
#   ROUNDS times in turn; medians and ratios. And the bytes the file
#   system allocated per summary series, after its first observation and
#   after 1,024 more.
#
# The base is exported with `git archive` into $SPACE_BASE_DIR (default
# /tmp/shmetrics-space-base-REV), given this tree's two benches (they use
# only the public API), and built there in release. Prints figures and
# ratios; no pass/fail threshold.
#
#   benches/space.sh [REV]
set -euo pipefail
cd "$(dirname "$0")/.."
rev="$(git rev-parse --short "${1:-main}")"
rounds="${ROUNDS:-5}"
base="${SPACE_BASE_DIR:-/tmp/shmetrics-space-base-$rev}"

if [ ! -d "$base" ]; then
    mkdir -p "$base"
    git archive "$rev" | tar -x -C "$base"
fi
mkdir -p "$base/crates/core/benches/common"
for f in creation.rs hotpath.rs common/mod.rs; do
    cp "crates/core/benches/$f" "$base/crates/core/benches/$f"
done
grep -q 'name = "creation"' "$base/crates/core/Cargo.toml" ||
    printf '\n[[bench]]\nname = "creation"\nharness = false\n' >>"$base/crates/core/Cargo.toml"

# Builds the two benches of the tree at $1; prints their paths.
build() {
    (cd "$1" && cargo bench --quiet -p shmetrics-core --bench hotpath --bench creation --no-run \
        --message-format=json 2>/dev/null |
        python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("hotpath", "creation"):
        print(m["target"]["name"], m["executable"])')
}
declare -A bin
while read -r name exe; do bin[new_$name]="$exe"; done < <(build .)
while read -r name exe; do bin[base_$name]="$exe"; done < <(CARGO_TARGET_DIR="$base/target" build "$base")

echo "space reservation: this tree ($(git rev-parse --short HEAD)) against $rev"
echo
echo "update hot path, callgrind instructions per update (N=100000 and 1000000):"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Inclusive instructions of the loop function named $2 in callgrind file $1.
loop_ir() {
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null | grep "$2" | head -1 | awk '{gsub(",", "", $1); print $1}'
}
for v in base new; do
    for n in 100000 1000000; do
        SHMETRICS_HOTPATH_N=$n valgrind --tool=callgrind --callgrind-out-file="$tmp/$v.$n" \
            --toggle-collect='*inc_loop*' --toggle-collect='*observe_loop*' \
            --toggle-collect='*summary_loop*' \
            "${bin[${v}_hotpath]}" >/dev/null 2>&1
    done
    for loop in inc_loop observe_loop summary_loop; do
        a="$(loop_ir "$tmp/$v.100000" $loop)"
        b="$(loop_ir "$tmp/$v.1000000" $loop)"
        echo "$v $loop $(python3 -c "print(f'{($b - $a) / 900000:.2f}')")" >>"$tmp/ir"
    done
done
python3 - "$tmp/ir" <<'EOF'
import sys
ir = {}
for line in open(sys.argv[1]):
    v, loop, x = line.split()
    ir[(v, loop)] = float(x)
for loop, label in (
    ("inc_loop", "counter_inc"),
    ("observe_loop", "observe (12 buckets)"),
    ("summary_loop", "observe (summary)"),
):
    b, n = ir[("base", loop)], ir[("new", loop)]
    print(f"  {label:22} base {b:7.2f}  new {n:7.2f}  ratio {n / b:.3f}")
EOF

echo
echo "series creation, thread CPU time, and bytes allocated per summary series (median of $rounds runs each, alternating):"
for i in $(seq "$rounds"); do
    for v in base new; do
        "${bin[${v}_creation]}" | sed "s/^/$v /" >>"$tmp/create"
    done
done
python3 - "$tmp/create" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    v, name, x = line.split()
    runs.setdefault((v, name), []).append(float(x))
names = []
for (v, name) in runs:
    if name not in names:
        names.append(name)
for name in names:
    b = statistics.median(runs[("base", name)])
    n = statistics.median(runs[("new", name)])
    unit = "B " if name.endswith("_bytes") else "ns"
    print(f"  {name:28} base {b:10.1f} {unit}  new {n:10.1f} {unit}  ratio {n / b:.3f}")
EOF

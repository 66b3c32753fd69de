#!/usr/bin/env bash
# Builds the npm packages into target/npm, as napi-rs lays them out:
# shmetrics-<version>.tgz (the JavaScript, no binary) and
# shmetrics-linux-x64-gnu-<version>.tgz (the release addon), which the
# first names as an optional dependency. Install both:
#   npm install target/npm/shmetrics-linux-x64-gnu-1.0.0.tgz target/npm/shmetrics-1.0.0.tgz
set -euo pipefail
cd "$(dirname "$0")/.."
T="${CARGO_TARGET_DIR:-$PWD/target}"
out="$T/npm"
mkdir -p "$out"
cargo build --quiet --release -p shmetrics-node
platform=bindings/node/npm/linux-x64-gnu
cp "$T/release/libshmetrics_node.so" "$platform/shmetrics.linux-x64-gnu.node"
strip --strip-debug "$platform/shmetrics.linux-x64-gnu.node"
# The main package must not carry a binary built in place.
stash=$(mktemp -d)
[ -f bindings/node/shmetrics.linux-x64-gnu.node ] && mv bindings/node/shmetrics.linux-x64-gnu.node "$stash/"
restore() { [ -f "$stash/shmetrics.linux-x64-gnu.node" ] && mv "$stash/shmetrics.linux-x64-gnu.node" bindings/node/; rmdir "$stash"; }
trap restore EXIT
(cd "$platform" && npm pack --silent --pack-destination "$out" >/dev/null)
(cd bindings/node && npm pack --silent --pack-destination "$out" >/dev/null)
ls "$out"/*.tgz

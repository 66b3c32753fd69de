#!/usr/bin/env bash
# Builds a real libshmetrics of the next major version, for the tests that
# check a binding refuses a library of another major (PHP's NativeTest,
# Lua's tests/unit.lua): a copy of this checkout whose workspace version is
# bumped to <major+1>.0.0, built with cargo like the real one, so that its
# shmetrics_version_major(), shmetrics_version() and SONAME all say the new
# major. Prints the library's path on stdout.
#
# The build lives under $target/other-major and is kept, so that a second
# run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
work=$target/other-major

pkgid=$(cargo pkgid --offline -p shmetrics-ffi)  # path+file:///...#shmetrics-ffi@1.0.0
major=${pkgid##*[#@]}
major=${major%%.*}
next=$((major + 1))

# A fresh copy each time; tar keeps the files' times, so cargo rebuilds
# only what changed since the last run. --sparse: a store file left in the
# checkout (17 GB of address space, a few KB on disk) stays sparse; copied
# dense, three of them once filled the disk.
rm -rf "$work/src"
mkdir -p "$work/src"
tar -c --sparse --exclude=./target --exclude=./.git --exclude=./.venv --exclude=./.ci . | tar -x -C "$work/src"
# The workspace's version is the first `version =` of the root Cargo.toml
# ([workspace.package]); every crate inherits it, and the crates name each
# other by the same version in [workspace.dependencies].
current=${pkgid##*[#@]}
sed -i "s/version = \"$current\"/version = \"$next.0.0\"/g" "$work/src/Cargo.toml"
grep -q "^version = \"$next.0.0\"" "$work/src/Cargo.toml" || {
  echo "build-other-major.sh: cannot bump the version in $work/src/Cargo.toml" >&2
  exit 1
}

CARGO_TARGET_DIR=$work/target cargo build --quiet --offline \
  --manifest-path "$work/src/Cargo.toml" -p shmetrics-ffi >&2
lib=$work/target/debug/libshmetrics.so
readelf -d "$lib" | grep -q "Library soname: \[libshmetrics.so.$next\]" || {
  echo "build-other-major.sh: $lib does not have the SONAME libshmetrics.so.$next" >&2
  exit 1
}
echo "$lib"

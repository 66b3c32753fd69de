#!/usr/bin/env bash
# Generates the C declarations of the shmetrics C ABI from crates/ffi:
#
#   include/shmetrics.h       the C header, with doc comments (cbindgen.toml)
#   include/shmetrics.cdef.h  the same declarations with no preprocessor
#                             lines, includes or doc comments, for PHP's
#                             FFI::cdef and LuaJIT's ffi.cdef
#
# Usage: gen-header.sh          write both files
#        gen-header.sh --check  exit 1 if the committed files differ from
#                               freshly generated ones
#
# Needs cbindgen at exactly $CBINDGEN_VERSION (other versions format
# differently):  cargo install cbindgen --version 0.29.2 --locked
set -euo pipefail

# Keep in step with CBINDGEN_VERSION in scripts/setup.sh (which CI installs).
CBINDGEN_VERSION=0.29.2

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

cbindgen=${CBINDGEN:-cbindgen}
if ! have=$("$cbindgen" --version 2>/dev/null); then
  echo "gen-header.sh: cbindgen not found; install it with:" >&2
  echo "  cargo install cbindgen --version $CBINDGEN_VERSION --locked" >&2
  exit 1
fi
if [ "$have" != "cbindgen $CBINDGEN_VERSION" ]; then
  echo "gen-header.sh: found '$have', need cbindgen $CBINDGEN_VERSION; install it with:" >&2
  echo "  cargo install cbindgen --version $CBINDGEN_VERSION --locked --force" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The header, with the crate's version as SHMETRICS_VERSION_MAJOR, _MINOR
# and _PATCH (Cargo.toml is the one place the version is written; --check
# fails when a new version has not been regenerated into the header).
pkgid=$(cargo pkgid --offline --manifest-path Cargo.toml)  # path+file:///...#shmetrics-ffi@0.1.0
IFS=. read -r major minor patch <<< "${pkgid##*[#@]}"
patch=${patch%%[-+]*}
{
  printf 'after_includes = "\\n/* The version of the library this header declares; the library\\n'
  printf ' * itself returns its own from shmetrics_version_major() and friends. */\\n'
  printf '#define SHMETRICS_VERSION_MAJOR %s\\n#define SHMETRICS_VERSION_MINOR %s\\n' "$major" "$minor"
  printf '#define SHMETRICS_VERSION_PATCH %s"\n' "$patch"
  cat cbindgen.toml
} > "$tmp/header.toml"
"$cbindgen" --quiet --config "$tmp/header.toml" --crate shmetrics-ffi --output "$tmp/shmetrics.h"

# The cdef: cbindgen.toml without its header-only lines, no documentation.
{
  echo 'documentation = false'
  grep -v '# header-only$' cbindgen.toml
} > "$tmp/cdef.toml"
"$cbindgen" --quiet --config "$tmp/cdef.toml" --crate shmetrics-ffi --output "$tmp/raw.h"

# From 0.29.4 on, cbindgen gives each fixed-size enum a C23 underlying type
# behind `#if __STDC_VERSION__ >= 202311L`. Keep the pre-C23 branch
# (`typedef uint32_t name;`), which both FFI parsers understand and which
# makes LuaJIT return plain numbers; refuse any other preprocessor line.
awk '
  /^#if __STDC_VERSION__ >= 202311L$/ { if (inif) bad = 1; inif = 1; skip = 1; next }
  /^#else$/ && inif { skip = 0; next }
  /^#endif \/\/ __STDC_VERSION__ >= 202311L$/ && inif { inif = 0; skip = 0; next }
  /^[ \t]*#/ { print "gen-header.sh: unexpected preprocessor line for the cdef: " $0 > "/dev/stderr"; bad = 1; next }
  !skip { print }
  END { if (inif) bad = 1; exit bad }
' "$tmp/raw.h" | cat -s > "$tmp/shmetrics.cdef.h"

if [ "$check" = 1 ]; then
  status=0
  for f in shmetrics.h shmetrics.cdef.h; do
    if ! diff -u --label "include/$f (committed)" --label "include/$f (generated)" "include/$f" "$tmp/$f"; then
      status=1
    fi
  done
  if [ "$status" != 0 ]; then
    echo "gen-header.sh --check: crates/ffi/include is out of date; run crates/ffi/gen-header.sh and commit the result" >&2
  fi
  exit "$status"
fi

mkdir -p include
cp "$tmp/shmetrics.h" "$tmp/shmetrics.cdef.h" include/
echo "wrote $here/include/shmetrics.h and shmetrics.cdef.h"

#!/usr/bin/env bash
# Builds the shmetrics PHP extension out of the source tree, as PECL does
# (phpize && ./configure && make), in BUILD_DIR (default: a new directory
# under /tmp), and prints the path of the built shmetrics.so. Needs PHP's
# headers (Debian: php-dev) and a C compiler; not libshmetrics, which the
# extension loads at run time.
#   bindings/php/ext/build.sh [BUILD_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$(mktemp -d /tmp/shmetrics-php-ext.XXXXXX)}
mkdir -p "$build/ext" "$build/include"
# -p keeps the sources' times, so that a second build in BUILD_DIR
# configures and compiles again only what changed.
cp -p "$src/ext/config.m4" "$src/ext/"*.c "$src/ext/"*.h "$build/ext/"
cp -p "$src/include/shmetrics.cdef.h" "$build/include/"
cd "$build/ext"
if [ ! -f Makefile ] || [ config.m4 -nt Makefile ]; then
  # phpize's autoconf warns about PHP's own macros: shown only on failure.
  phpize >phpize.log 2>&1 || { cat phpize.log >&2; exit 1; }
  ./configure --quiet >/dev/null
fi
# PHP's Makefile does not track the headers: a newer one rebuilds every source.
if [ -f modules/shmetrics.so ]; then
  for h in $(cd "$src/ext" && echo *.h) ../include/shmetrics.cdef.h; do
    if [ "$h" -nt modules/shmetrics.so ]; then
      touch ./*.c
      break
    fi
  done
fi
make --quiet >/dev/null
echo "$build/ext/modules/shmetrics.so"

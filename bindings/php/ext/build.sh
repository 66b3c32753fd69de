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
cp "$src/ext/config.m4" "$src/ext/shmetrics.c" "$build/ext/"
cp "$src/include/shmetrics.cdef.h" "$build/include/"
cd "$build/ext"
if [ ! -f Makefile ] || [ config.m4 -nt Makefile ]; then
  phpize >/dev/null
  ./configure --quiet >/dev/null
fi
make --quiet >/dev/null
echo "$build/ext/modules/shmetrics.so"

#!/usr/bin/env bash
# Makes shmetrics_arginfo.h from shmetrics.stub.php with PHP's own
# generator, build/gen_stub.php (Debian's php-dev ships it under
# /usr/lib/php/<api>/build), as PECL extensions do. gen_stub.php needs
# nikic/php-parser, which it would download: here it gets Debian's
# php-parser (/usr/share/php/PhpParser) instead, in a copy of the
# generator's folder. The header is committed; PHP 8.2's gen_stub.php
# (Debian 12's) made it.
#   bindings/php/ext/gen-arginfo.sh           regenerates the header
#   bindings/php/ext/gen-arginfo.sh --check   fails if the committed header is not what the stub makes
# $GEN_STUB: another gen_stub.php (a php-src checkout's, with its parser).
set -euo pipefail
ext=$(cd "$(dirname "$0")" && pwd)
source "$ext/../../../scripts/setup.sh"
ensure_gen_stub
check=0
[ "${1:-}" = --check ] && check=1

gen=${GEN_STUB:-/usr/lib/php/$(php-config --phpapi)/build/gen_stub.php}
[ -f "$gen" ] || { echo "gen-arginfo.sh: no $gen (Debian: php-dev)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$gen" "$work/gen_stub.php"
parser_version=$(sed -n 's/^ *\$version = "\([0-9.]*\)";$/\1/p' "$gen" | head -n1)
parser=$(dirname "$gen")/PHP-Parser-$parser_version
if [ -d "$parser" ]; then
  ln -s "$parser" "$work/PHP-Parser-$parser_version"
else
  # Debian's php-parser, of the same major version as the one gen_stub.php names.
  [ -f /usr/share/php/PhpParser/Parser.php ] || { echo "gen-arginfo.sh: no PhpParser (Debian: php-parser)" >&2; exit 1; }
  mkdir -p "$work/PHP-Parser-$parser_version/lib"
  ln -s /usr/share/php/PhpParser "$work/PHP-Parser-$parser_version/lib/PhpParser"
fi
mkdir "$work/out"
cp "$ext/shmetrics.stub.php" "$work/out/"
php "$work/gen_stub.php" --force-regeneration "$work/out/shmetrics.stub.php" >"$work/gen.log" 2>&1 \
  || { cat "$work/gen.log" >&2; exit 1; }
[ -f "$work/out/shmetrics_arginfo.h" ] || { cat "$work/gen.log" >&2; exit 1; }
if [ "$check" = 1 ]; then
  diff -u "$ext/shmetrics_arginfo.h" "$work/out/shmetrics_arginfo.h" >&2 || {
    echo "gen-arginfo.sh: shmetrics_arginfo.h is not what shmetrics.stub.php makes: run bindings/php/ext/gen-arginfo.sh" >&2
    exit 1
  }
  echo "gen-arginfo.sh: shmetrics_arginfo.h is up to date"
else
  cp "$work/out/shmetrics_arginfo.h" "$ext/shmetrics_arginfo.h"
  echo "gen-arginfo.sh: wrote $ext/shmetrics_arginfo.h"
fi

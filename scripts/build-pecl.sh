#!/usr/bin/env bash
# Builds the PHP extension's PECL package, shmetrics-<version>.tgz, from
# this checkout: the extension's sources (bindings/php/ext), the C ABI's
# declarations beside it, and a package.xml that `pecl package` checks.
# `pecl install shmetrics-<version>.tgz` then builds and installs it as
# every PECL extension (phpize, configure, make, make install: Debian's
# php-dev and a C compiler; the library is loaded at run time, not
# linked). Prints the .tgz's path on stdout.
#
#   scripts/build-pecl.sh [OUTDIR]      (default: $target/pecl)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
outdir=${1:-$target/pecl}
pkgid=$(cargo pkgid --offline -p shmetrics-ffi)
version=${pkgid##*[#@]}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The extension's sources (config.m4, *.c, *.h, the arginfo's stub), as
# build.sh builds them.
sources=$(cd bindings/php/ext && echo config.m4 *.c *.h *.stub.php)
(cd bindings/php/ext && cp $sources "$stage/")
cp bindings/php/include/shmetrics.cdef.h LICENSE "$stage/"

# One <file> per file, with its md5sum as PEAR records it.
files=""
for f in $sources shmetrics.cdef.h LICENSE; do
  role=src
  [ "$f" = LICENSE ] && role=doc
  files+="      <file name=\"$f\" role=\"$role\" md5sum=\"$(md5sum "$stage/$f" | cut -d' ' -f1)\"/>"$'\n'
done
cat >"$stage/package.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<package packagerversion="1.10.13" version="2.0" xmlns="http://pear.php.net/dtd/package-2.0"
  xmlns:tasks="http://pear.php.net/dtd/tasks-1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://pear.php.net/dtd/tasks-1.0 http://pear.php.net/dtd/tasks-1.0.xsd http://pear.php.net/dtd/package-2.0 http://pear.php.net/dtd/package-2.0.xsd">
  <name>shmetrics</name>
  <channel>pecl.php.net</channel>
  <summary>PromPHP's API over one shared-memory metrics store, in C</summary>
  <description>The shmetrics extension provides the shmetrics/shmetrics package's hot
classes (CollectorRegistry, Counter, Gauge, Histogram, Summary and the
store) in C over libshmetrics' C ABI, which it loads at run time. The
package's PHP files (Composer, or Debian's /usr/share/php/Shmetrics) are
still needed; without the extension they run on PHP FFI.</description>
  <lead>
    <name>The shmetrics developers</name>
    <user>shmetrics</user>
    <email>shmetrics@example.invalid</email>
    <active>yes</active>
  </lead>
  <date>$(date -u +%Y-%m-%d)</date>
  <version>
    <release>$version</release>
    <api>$version</api>
  </version>
  <stability>
    <release>stable</release>
    <api>stable</api>
  </stability>
  <license uri="https://www.apache.org/licenses/LICENSE-2.0">Apache-2.0</license>
  <notes>See CHANGELOG.md of the shmetrics repository.</notes>
  <contents>
    <dir name="/">
$files    </dir>
  </contents>
  <dependencies>
    <required>
      <php>
        <min>8.1.0</min>
      </php>
      <pearinstaller>
        <min>1.10.0</min>
      </pearinstaller>
    </required>
  </dependencies>
  <providesextension>shmetrics</providesextension>
  <extsrcrelease/>
</package>
XML
mkdir -p "$outdir"
(cd "$stage" && pecl package package.xml >&2)
mv "$stage/shmetrics-$version.tgz" "$outdir/"
echo "$(cd "$outdir" && pwd)/shmetrics-$version.tgz"

#!/usr/bin/env bash
# Builds php-shmetrics, the Debian package of the PHP extension
# (bindings/php/ext) for this machine's PHP, with dpkg-deb: the extension
# built as PECL builds it (bindings/php/ext/build.sh: phpize, configure,
# make), its ini in mods-available, enabled for every SAPI on install as
# Debian's PHP extension packages are (php-maintscript-helper: phpenmod).
# It depends on the shmetrics package of the same version, which has the
# library the extension loads and the package's PHP files. Prints the
# .deb's path on stdout.
#
#   scripts/build-deb-php.sh [OUTDIR]      (default: $target/debian)
#
#   /usr/lib/php/<phpapi>/shmetrics.so          the extension
#   /etc/php/<version>/mods-available/shmetrics.ini
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
outdir=${1:-$target/debian}

pkgid=$(cargo pkgid --offline -p shmetrics-ffi)
version=${pkgid##*[#@]}
arch=$(dpkg --print-architecture)
repository=$(sed -n 's/^repository = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
php_version=$(php-config --version | cut -d. -f1,2)
phpapi=$(php-config --phpapi)
ext_dir=$(php-config --extension-dir)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
echo "build-deb-php.sh: bindings/php/ext/build.sh (PHP $php_version, API $phpapi)" >&2
so=$(bindings/php/ext/build.sh "$stage/build")
pkg=$stage/root
install -d "$pkg/DEBIAN" "$pkg$ext_dir" "$pkg/etc/php/$php_version/mods-available" \
  "$pkg/usr/share/doc/php-shmetrics"
install -m 0644 "$so" "$pkg$ext_dir/shmetrics.so"
strip --strip-unneeded "$pkg$ext_dir/shmetrics.so"
install -m 0644 deploy/debian/php/shmetrics.ini "$pkg/etc/php/$php_version/mods-available/shmetrics.ini"
install -m 0644 LICENSE "$pkg/usr/share/doc/php-shmetrics/copyright"
for script in postinst postrm; do
  sed "s/@PHP_VERSION@/$php_version/" "deploy/debian/php/$script" >"$pkg/DEBIAN/$script"
  chmod 0755 "$pkg/DEBIAN/$script"
done
echo "/etc/php/$php_version/mods-available/shmetrics.ini" >"$pkg/DEBIAN/conffiles"

mkdir -p "$stage/debian"
printf 'Source: shmetrics\n\nPackage: php-shmetrics\nArchitecture: any\n' >"$stage/debian/control"
shlibs=$(cd "$stage" && dpkg-shlibdeps -O -e"root$ext_dir/shmetrics.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
installed_size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<CONTROL
Package: php-shmetrics
Version: $version-1
Architecture: $arch
Maintainer: The shmetrics developers <shmetrics@example.invalid>
Installed-Size: $installed_size
Depends: ${shlibs:+$shlibs, }phpapi-$phpapi, php-common, shmetrics (= $version-1)
Section: php
Priority: optional
Homepage: $repository
Description: shmetrics PHP extension: PromPHP's API over shared memory, in C
 The shmetrics extension provides the hot classes of the shmetrics PHP
 package (CollectorRegistry, Counter, Gauge, Histogram, Summary and the
 store) in C over libshmetrics, so that a request updates its metrics
 without PHP FFI. It is enabled for every SAPI (php-fpm, the CLI,
 Apache's mod_php) on install. The package's PHP files come with the
 shmetrics package, under /usr/share/php/Shmetrics.
CONTROL

mkdir -p "$outdir"
deb=$outdir/php-shmetrics_${version}-1_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >&2
echo "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"

#!/usr/bin/env bash
# Builds the Debian package of shmetrics with dpkg-deb, from a release build
# of this checkout (cargo build --release, of shmetrics and shmetrics-ffi)
# and the files under deploy/debian. Prints the .deb's path on stdout.
#
#   scripts/build-deb.sh [OUTDIR]      (default: $target/debian)
#
# One package, `shmetrics`, holds everything (docs/install.md lists it):
#   /usr/bin/shmetrics                        the command and exporter
#   /usr/lib/<multiarch>/libshmetrics.so.<version>, its SONAME link
#     libshmetrics.so.<major> and the unversioned libshmetrics.so
#   /usr/include/shmetrics.h                  the C header
#   /usr/lib/<multiarch>/pkgconfig/shmetrics.pc
#   /usr/share/shmetrics/shmetrics.cdef.h     the declarations for FFI
#   /usr/share/lua/5.1/shmetrics.lua and shmetrics/cdef.lua
#                                             on LuaJIT's (and so Debian's
#                                             nginx lua module's) path
#   /usr/share/php/Shmetrics/                 the PHP package (autoload.php,
#     preload.php, src/, include/, bin/), on Debian's PHP include_path;
#     /usr/bin/shmetrics-ffi-header links to its bin/
#   /usr/lib/systemd/system/shmetrics.service and /etc/default/shmetrics
#
# Debian splits a library's development files (the unversioned link, the
# header, the .pc) into a -dev package; one package keeps installing and
# testing simple, and the library is small. The library's file name and
# SONAME carry the major version (libshmetrics.so.1 for 1.x), so a later
# major can be installed beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$PWD
target=${CARGO_TARGET_DIR:-$PWD/target}
outdir=${1:-$target/debian}

pkgid=$(cargo pkgid --offline -p shmetrics-ffi)  # path+file:///...#shmetrics-ffi@1.0.0
version=${pkgid##*[#@]}
major=${version%%.*}
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
repository=$(sed -n 's/^repository = "\(.*\)"$/\1/p' Cargo.toml | head -n1)

# One package per build: each then resolves the same features as the
# other builds of it (maturin's of the command for the wheel, the PHP and
# Lua tests' of the library), and cargo reuses their artifacts.
echo "build-deb.sh: cargo build --release -p shmetrics; -p shmetrics-ffi" >&2
cargo build --quiet --release -p shmetrics >&2
cargo build --quiet --release -p shmetrics-ffi >&2
rel=$target/release

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/root
libdir=$pkg/usr/lib/$multiarch

install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$libdir/pkgconfig" "$pkg/usr/include" \
  "$pkg/usr/share/shmetrics" "$pkg/usr/share/lua/5.1/shmetrics" "$pkg/usr/share/php/Shmetrics" \
  "$pkg/usr/lib/systemd/system" "$pkg/etc/default" "$pkg/usr/share/doc/shmetrics"

# The command and the library, without their debug sections.
install -m 0755 "$rel/shmetrics" "$pkg/usr/bin/shmetrics"
install -m 0644 "$rel/libshmetrics.so" "$libdir/libshmetrics.so.$version"
strip --strip-unneeded "$pkg/usr/bin/shmetrics" "$libdir/libshmetrics.so.$version"
soname=$(readelf -d "$libdir/libshmetrics.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" != "libshmetrics.so.$major" ]; then
  echo "build-deb.sh: the library's SONAME is '$soname', expected libshmetrics.so.$major" >&2
  exit 1
fi
ln -s "libshmetrics.so.$version" "$libdir/$soname"
ln -s "$soname" "$libdir/libshmetrics.so"
install -m 0644 crates/ffi/include/shmetrics.h "$pkg/usr/include/shmetrics.h"
install -m 0644 crates/ffi/include/shmetrics.cdef.h "$pkg/usr/share/shmetrics/shmetrics.cdef.h"
sed -e "s|@MULTIARCH@|$multiarch|" -e "s|@VERSION@|$version|" -e "s|@URL@|$repository|" \
  deploy/debian/shmetrics.pc.in > "$libdir/pkgconfig/shmetrics.pc"

# Lua: the module and its declarations, on LuaJIT's default package.path.
install -m 0644 bindings/lua/shmetrics.lua "$pkg/usr/share/lua/5.1/shmetrics.lua"
install -m 0644 bindings/lua/shmetrics/cdef.lua "$pkg/usr/share/lua/5.1/shmetrics/cdef.lua"

# PHP: the package as composer would install it, tests left out.
php_dst=$pkg/usr/share/php/Shmetrics
(cd bindings/php && tar -c autoload.php preload.php composer.json README.md src include bin) | tar -x -C "$php_dst"
chmod 0755 "$php_dst/bin/shmetrics-ffi-header"
ln -s ../share/php/Shmetrics/bin/shmetrics-ffi-header "$pkg/usr/bin/shmetrics-ffi-header"

# The exporter's unit and its flags.
install -m 0644 deploy/debian/shmetrics.service "$pkg/usr/lib/systemd/system/shmetrics.service"
install -m 0644 deploy/debian/shmetrics.default "$pkg/etc/default/shmetrics"

install -m 0644 LICENSE "$pkg/usr/share/doc/shmetrics/copyright"
install -m 0644 README.md CHANGELOG.md docs/install.md "$pkg/usr/share/doc/shmetrics/"

install -m 0755 deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm "$pkg/DEBIAN/"
echo /etc/default/shmetrics > "$pkg/DEBIAN/conffiles"
# The library is new on the loader's path: refresh ld.so.cache.
echo "activate-noawait ldconfig" > "$pkg/DEBIAN/triggers"

# Depends: what the two ELF files link, as dpkg-shlibdeps finds it from
# the installed packages' shlibs (it wants a debian/control to read).
mkdir -p "$stage/debian"
printf 'Source: shmetrics\n\nPackage: shmetrics\nArchitecture: any\n' > "$stage/debian/control"
shlibs=$(cd "$stage" && dpkg-shlibdeps -O -e"root/usr/bin/shmetrics" -e"root/usr/lib/$multiarch/libshmetrics.so.$version" \
  -l"root/usr/lib/$multiarch" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')

installed_size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat > "$pkg/DEBIAN/control" <<EOF
Package: shmetrics
Version: $version-1
Architecture: $arch
Maintainer: The shmetrics developers <shmetrics@example.invalid>
Installed-Size: $installed_size
Depends: ${shlibs:+$shlibs, }adduser
Suggests: php-cli, luajit2 | luajit, libnginx-mod-http-lua
Section: net
Priority: optional
Homepage: $repository
Description: shared-memory metric store for pre-fork servers, and its exporter
 shmetrics keeps the metrics of every process of a host (PHP-FPM, nginx and
 OpenResty workers, gunicorn, uWSGI) in one shared-memory store, updated
 without locks, system calls or allocation. This package has the exporter
 (shmetrics serve, with a hardened systemd unit reading
 /etc/default/shmetrics), the C library libshmetrics.so.$major with its header
 and pkg-config file, the Lua module for LuaJIT and nginx's lua module, and
 the PHP package under /usr/share/php/Shmetrics.
EOF

mkdir -p "$outdir"
deb=$outdir/shmetrics_${version}-1_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >&2
echo "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"

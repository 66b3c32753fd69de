#!/usr/bin/env bash
# The packaging test: builds what a user installs, installs each outside
# the checkout, and runs the docs' examples there (docs/install.md, "Tested
# examples"):
#   - the Python wheels (abi3 + manylinux, and the exporter's), into a fresh
#     virtualenv: `shmetrics --version`, `import shmetrics`, the docs' blocks;
#   - the .deb (scripts/build-deb.sh), with `dpkg -i` into this machine (it
#     must run as root), purged on exit whatever happens: the SONAME and
#     links, the unit's `systemd-analyze security` exposure (at most 2.5,
#     printed), a C program through pkg-config, Lua and PHP from the system
#     paths;
#   - the PHP extension: its PECL package (scripts/build-pecl.sh) through
#     `pecl install`, then its .deb (scripts/build-deb-php.sh, php-shmetrics),
#     enabled for every SAPI by the package: the docs' PHP blocks again, and
#     Debian's php-fpm with its own ini behind nginx (tests/packaging/php-fpm.sh);
#   - the PHP package through Composer (a path repository, copied) and the
#     Lua rock (luarocks make into a throwaway tree), with the .deb's library;
#   - the npm packages (scripts/build-npm.sh: shmetrics and its addon
#     shmetrics-linux-x64-gnu) through `npm install` of their tarballs;
#   - composer validate --strict, luarocks lint, cargo package and cargo
#     publish --dry-run of every published crate.
# Every block of README.md and docs/*.md marked `<!-- packaging-test: ENV -->`
# runs, from a directory outside the checkout, in each ENV it names.
#
# Run last in ./run-tests: while the .deb is installed, the system's
# library path has a libshmetrics.so.1 (the other tests point
# $SHMETRICS_LIBRARY at the checkout's build anyway).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source scripts/setup.sh
ensure_rust
ensure_apt dpkg-dev pkg-config gcc php-cli composer luarocks luajit2 systemd binutils curl procps \
  php-dev php-pear php-fpm nginx make
ensure_python_env
ensure_node
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}

if [ "$(id -u)" != 0 ]; then
  echo "tests/packaging/run.sh: installs the .deb with dpkg, so it must run as root" >&2
  exit 1
fi
if dpkg-query -W -f='${Status}' shmetrics 2>/dev/null | grep -q 'installed'; then
  echo "tests/packaging/run.sh: a shmetrics package is installed on this machine already; remove it first" >&2
  exit 1
fi

version=$(cargo pkgid --offline -p shmetrics-ffi)
version=${version##*[#@]}
major=${version%%.*}
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$(mktemp -d)
SHM_DIR=$(mktemp -d -p /dev/shm shmetrics-packaging.XXXXXX)
export SHM_DIR
had_user=0
getent passwd shmetrics >/dev/null && had_user=1
deb_installed=0
php_deb_installed=0
pecl_so=

unit_pid=
cleanup() {
  local status=$?
  if [ -n "$unit_pid" ]; then
    kill "$unit_pid" 2>/dev/null || true
    wait "$unit_pid" 2>/dev/null || true
  fi
  [ -z "$pecl_so" ] || rm -f "$pecl_so"
  if [ "$php_deb_installed" = 1 ]; then
    say "packaging: dpkg --purge php-shmetrics"
    dpkg --purge php-shmetrics >/dev/null || status=1
  fi
  if [ "$deb_installed" = 1 ]; then
    say "packaging: dpkg --purge shmetrics"
    dpkg --purge shmetrics >/dev/null || status=1
  fi
  if [ "$had_user" = 0 ] && getent passwd shmetrics >/dev/null; then
    userdel shmetrics 2>/dev/null || true
    groupdel shmetrics 2>/dev/null || true
  fi
  rm -rf "$work" "$SHM_DIR"
  exit "$status"
}
trap cleanup EXIT

fail() { echo "packaging: FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }

# run_blocks ENV: runs the docs' blocks marked for ENV, in a fresh directory
# under $work, with the commands in $PY, $PHP_AUTOLOAD and $LUA_PATH as the
# caller set them. The environment must not point at the checkout.
run_blocks() {
  local env=$1 dir=$work/run-$1 name lang file src count=0
  mkdir -p "$dir/.blocks"
  python3 "$root/tests/packaging/docblocks.py" "$env" "$dir/.blocks" README.md docs/*.md > "$dir/.blocks/list"
  while IFS=$'\t' read -r name lang file src; do
    count=$((count + 1))
    if [ "$file" != - ]; then
      cp "$dir/.blocks/$name" "$dir/$file"
      continue
    fi
    echo "packaging: $env: $src ($lang)"
    case $lang in
      sh) (cd "$dir" && bash -euo pipefail ".blocks/$name") ;;
      python) (cd "$dir" && "$PY" ".blocks/$name") ;;
      php) (cd "$dir" && php -d auto_prepend_file="$PHP_AUTOLOAD" ".blocks/$name") ;;
      lua) (cd "$dir" && luajit ".blocks/$name") ;;
      js) (cd "$dir" && node ".blocks/$name") ;;
      rust) (cd "$dir" && run_rust ".blocks/$name") ;;
      *) fail "$src: no way to run a $lang block" ;;
    esac > "$dir/.blocks/$name.out" 2>&1 || {
      cat "$dir/.blocks/$name.out" >&2
      fail "$env: the block at $src failed"
    }
    ok "$env: $src"
  done < "$dir/.blocks/list"
  [ "$count" -gt 0 ] || fail "no block of the docs is marked <!-- packaging-test: $env -->"
}

# run_rust FILE: the statements of FILE as the body of a main() returning
# Result, in a program of its own that depends on the packaged
# shmetrics-core ($RUST_CORE, unpacked from cargo package's .crate).
run_rust() {
  local proj
  proj=$(mktemp -d "$PWD/rust.XXXXXX")
  mkdir "$proj/src"
  printf '%s\n' '[package]' 'name = "quickstart"' 'version = "0.0.0"' 'edition = "2021"' 'publish = false' '' \
    '[dependencies]' "shmetrics-core = { path = \"$RUST_CORE\" }" '' '[workspace]' > "$proj/Cargo.toml"
  { echo 'fn main() -> Result<(), Box<dyn std::error::Error>> {'; cat "$1"; echo '    Ok(())'; echo '}'; } > "$proj/src/main.rs"
  # The build cache is kept between runs; the program stays outside.
  CARGO_TARGET_DIR="$target/packaging-quickstart" cargo run --quiet --manifest-path "$proj/Cargo.toml"
}

# The blocks must use what is installed, never this checkout's build.
unset SHMETRICS_LIBRARY SHMETRICS_CDEF SHMETRICS_BIN SHMETRICS_STORE SHMETRICS_OTHER_MAJOR_LIBRARY

say "packaging: manifests"
(cd bindings/php && composer validate --strict --no-check-publish --quiet) || fail "composer validate --strict"
ok "composer validate --strict (bindings/php)"
(cd bindings/lua && luarocks lint "shmetrics-$version-1.rockspec") || fail "luarocks lint"
ok "luarocks lint shmetrics-$version-1.rockspec"
grep -q "^main_module = shmetrics.lua$" bindings/lua/dist.ini || fail "bindings/lua/dist.ini names no main_module"

# --no-verify: verifying builds every crate once more from its .crate, in a
# target of its own (the exporter's TLS stack included: many minutes on a
# busy machine) although the packaged sources are the checkout's, which the
# workspace build compiles. The check that counts, that a .crate holds what
# it needs to build, is made on shmetrics-core: the README's Rust quickstart
# below is built against its unpacked .crate. (`cargo publish --dry-run`
# with verification passes too; docs/install.md.)
say "packaging: cargo package and cargo publish --dry-run (published crates)"
published=(-p shmetrics-core -p shmetrics-expo -p shmetrics-push -p shmetrics-exporter -p shmetrics-ffi -p shmetrics)
cargo package --quiet --allow-dirty --no-verify "${published[@]}" || fail "cargo package"
ok "cargo package"
cargo publish --quiet --allow-dirty --dry-run --no-verify "${published[@]}" || fail "cargo publish --dry-run"
ok "cargo publish --dry-run"
mkdir -p "$work/crates"
tar -xzf "$target/package/shmetrics-core-$version.crate" -C "$work/crates"
RUST_CORE=$work/crates/shmetrics-core-$version run_blocks rust

say "packaging: Python wheels (maturin)"
(cd bindings/python && "$VENV/bin/maturin" build --quiet --release --out "$work/wheels") >&2
(cd bindings/python/exporter && "$VENV/bin/maturin" build --quiet --release --out "$work/wheels") >&2
ls "$work/wheels"
main_wheel=$(ls "$work/wheels"/shmetrics-"$version"-cp39-abi3-manylinux_2_34_*.whl 2>/dev/null) ||
  fail "no cp39-abi3 manylinux_2_34 wheel of shmetrics $version in $(ls "$work/wheels")"
ls "$work/wheels"/shmetrics_exporter-"$version"-py3-none-manylinux_2_34_*.whl >/dev/null 2>&1 ||
  fail "no py3-none manylinux_2_34 wheel of shmetrics-exporter $version"
ok "wheels are tagged cp39-abi3 and py3-none, manylinux_2_34"
python3 - "$main_wheel" "$version" <<'EOF' || fail "the shmetrics wheel does not require shmetrics-exporter==$version"
import sys, zipfile
whl, version = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    requires = [l for l in z.read(meta).decode().splitlines() if l.startswith("Requires-Dist:")]
print(requires)
sys.exit(0 if requires == [f"Requires-Dist: shmetrics-exporter=={version}"] else 1)
EOF
ok "the shmetrics wheel requires shmetrics-exporter==$version"

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index --find-links "$work/wheels" shmetrics
out=$(cd "$work" && PATH="$work/venv/bin:$PATH" shmetrics --version)
[[ $out == *"$version"* ]] || fail "shmetrics --version printed '$out'"
ok "shmetrics --version from the wheel: $out"
where=$(cd "$work" && "$work/venv/bin/python" -c 'import shmetrics, shmetrics._native as n; print(n.__file__)')
[[ $where == "$work/venv/"* ]] || fail "import shmetrics found $where, not the virtualenv's"
ok "import shmetrics from the virtualenv ($where)"
PY="$work/venv/bin/python" PATH="$work/venv/bin:$PATH" run_blocks wheel

say "packaging: the .deb"
deb=$(scripts/build-deb.sh "$work/deb")
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'
deb_installed=1
dpkg -i "$deb" >/dev/null
ok "dpkg -i $(basename "$deb")"
getent passwd shmetrics >/dev/null || fail "the package made no user shmetrics"
lib=/usr/lib/$multiarch/libshmetrics.so
[ "$(readlink "$lib")" = "libshmetrics.so.$major" ] || fail "$lib does not link to libshmetrics.so.$major"
[ "$(readlink "$lib.$major")" = "libshmetrics.so.$version" ] || fail "$lib.$major does not link to libshmetrics.so.$version"
readelf -d "$lib.$version" | grep "Library soname: \[libshmetrics.so.$major\]" >/dev/null || fail "the SONAME is not libshmetrics.so.$major"
# grep reads it all (with -q it would stop early, and ldconfig's SIGPIPE fails the
# pipeline under pipefail).
ldconfig -p | grep "libshmetrics.so.$major " >/dev/null || fail "ldconfig does not know libshmetrics.so.$major"
ok "libshmetrics.so.$version, SONAME libshmetrics.so.$major, links, ld.so.cache"
[ "$(cd "$work" && /usr/bin/shmetrics --version)" = "$(cd "$work" && PATH="$work/venv/bin:$PATH" shmetrics --version)" ] ||
  fail "the .deb's and the wheel's shmetrics --version differ"
ok "/usr/bin/shmetrics --version"
unit=/usr/lib/systemd/system/shmetrics.service
grep -qx 'EnvironmentFile=-/etc/default/shmetrics' "$unit" && grep -qx 'ExecStart=/usr/bin/shmetrics serve $SHMETRICS_ARGS' "$unit" ||
  fail "$unit does not read its flags from /etc/default/shmetrics"
grep -q '^SHMETRICS_ARGS=' /etc/default/shmetrics || fail "/etc/default/shmetrics sets no SHMETRICS_ARGS"
exposure=$(systemd-analyze security --offline=true "$unit" 2>&1 | sed -n 's/.*Overall exposure level for shmetrics.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "systemd-analyze security printed no exposure level"
echo "systemd-analyze security --offline=true shmetrics.service: exposure $exposure"
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.5) }' || fail "the unit's exposure $exposure is above 2.5"
ok "the unit's exposure $exposure <= 2.5"
# The exporter as the unit runs it, as the user shmetrics, reading a store
# another user made with mode 0660 and a group shmetrics is in
# (docs/install.md).
store=$SHM_DIR/unit.metrics
(cd "$work" && "$work/venv/bin/python" -c "import shmetrics; shmetrics.configure('$store', mode=0o660); shmetrics.Counter('unit_hits', 'Hits.').inc()")
chgrp shmetrics "$store"
chmod 755 "$SHM_DIR"
out=$(cd / && setpriv --reuid=shmetrics --regid=shmetrics --clear-groups /usr/bin/shmetrics dump --store "$store" 2>&1) ||
  fail "the user shmetrics cannot read a 0660 store of its group: $out"
grep -qx 'unit_hits_total 1' <<< "$out" || fail "the user shmetrics read: $out"
ok "the user shmetrics reads a store made by root (mode 0660, group shmetrics)"

# The unit as systemd would load and start it. There is no systemd as PID
# 1 here: `systemd-analyze verify` loads the unit offline, and
# tests/packaging/unit_exec.py starts its ExecStart= with the variables of
# /etc/default/shmetrics, as the unit's User=, with systemd's environment,
# UMask=, NoNewPrivileges= and empty capability sets (the sandboxing
# directives only systemd can apply; `systemd-analyze security` rates them
# above).
verify=$(cd / && systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $verify"
if grep -i shmetrics <<< "$verify"; then fail "systemd-analyze verify warns about the unit: $verify"; fi
ok "systemd-analyze verify shmetrics.service"
shown=$(python3 tests/packaging/unit_exec.py show "$unit" | tr '\n' ' ')
[ "$shown" = "/usr/bin/shmetrics serve --store /dev/shm/shmetrics.metrics " ] ||
  fail "the packaged unit and /etc/default/shmetrics start: $shown"
ok "the packaged unit with the packaged /etc/default/shmetrics runs: $shown"
# The flags changed as docs/install.md says (editor /etc/default/shmetrics).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i "s|^SHMETRICS_ARGS=.*|SHMETRICS_ARGS=\"--store $store --web.listen-address 127.0.0.1:$port --store.group shmetrics --log.format json\"|" /etc/default/shmetrics
python3 tests/packaging/unit_exec.py exec "$unit" > "$work/unit.log" 2>&1 &
unit_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break
  kill -0 "$unit_pid" 2>/dev/null || { cat "$work/unit.log" >&2; fail "the unit's ExecStart exited"; }
  sleep 0.2
done
scraped=$(curl -sf "http://127.0.0.1:$port/metrics") || { cat "$work/unit.log" >&2; fail "cannot scrape the unit's exporter"; }
grep -qx 'unit_hits_total 1' <<< "$scraped" || fail "the unit's exporter served: $scraped"
grep -q '^shmetrics_' <<< "$scraped" && fail "the unit's exporter puts its own metrics on /metrics: $scraped"
own=$(curl -sf "http://127.0.0.1:$port/exporter-metrics") || fail "cannot read the unit's /exporter-metrics"
grep -q '^shmetrics_build_info{' <<< "$own" || fail "the unit's exporter serves no shmetrics_build_info"
status=$(cat "/proc/$unit_pid/status")
[ "$(ps -o user= -p "$unit_pid")" = shmetrics ] || fail "the unit's exporter runs as $(ps -o user= -p "$unit_pid")"
grep -qx $'NoNewPrivs:\t1' <<< "$status" && grep -qx $'CapBnd:\t0000000000000000' <<< "$status" &&
  grep -qx $'CapEff:\t0000000000000000' <<< "$status" && grep -qx $'Umask:\t0077' <<< "$status" ||
  fail "the unit's exporter: $(grep -E 'NoNewPrivs|Cap|Umask' <<< "$status")"
grep -q '"level":"INFO"\|"level":"info"' "$work/unit.log" || fail "the unit's exporter did not log JSON: $(cat "$work/unit.log")"
kill "$unit_pid"
wait "$unit_pid" || true
unit_pid=
ok "the unit's ExecStart, as systemd expands it, as the user shmetrics: serves the store on 127.0.0.1:$port"
PHP_AUTOLOAD=Shmetrics/autoload.php run_blocks deb

say "packaging: the PHP extension through PECL (scripts/build-pecl.sh, pecl install)"
php_version=$(php-config --version | cut -d. -f1,2)
ext_dir=$(php-config --extension-dir)
[ ! -e "$ext_dir/shmetrics.so" ] || fail "$ext_dir/shmetrics.so is there before any install"
tgz=$(scripts/build-pecl.sh "$work/pecl")
mkdir -p "$work/pear"
# PEAR's registry and build folders in $work, not in the system's.
pear=(-d php_dir="$work/pear/php" -d temp_dir="$work/pear/tmp" -d download_dir="$work/pear/tmp"
  -d cache_dir="$work/pear/cache" -d bin_dir="$work/pear/bin")
pecl_so=$ext_dir/shmetrics.so
(cd "$work" && pecl "${pear[@]}" install "$tgz") >"$work/pecl.log" 2>&1 ||
  { cat "$work/pecl.log" >&2; fail "pecl install $(basename "$tgz")"; }
[ -f "$pecl_so" ] || fail "pecl install put no shmetrics.so in $ext_dir"
ok "pecl install $(basename "$tgz"): $pecl_so"
out=$(cd "$work" && php -d extension=shmetrics.so -r '
  require "Shmetrics/autoload.php";
  $r = new Shmetrics\CollectorRegistry(new Shmetrics\Storage\Shmetrics($argv[1]));
  $r->getOrRegisterCounter("pecl", "hits", "Hits.")->inc();
  echo Shmetrics\Native::extension() ? "ext" : "ffi";' "$SHM_DIR/pecl.metrics") || fail "php with the PECL extension: $out"
[ "$out" = ext ] || fail "php -d extension=shmetrics.so ran on $out, not the extension"
shmetrics dump --store "$SHM_DIR/pecl.metrics" | grep -Eqx 'pecl_hits(_total)? 1' || fail "the PECL extension's count is not in the store"
ok "the PECL-built extension loads and counts"
(cd "$work" && pecl "${pear[@]}" uninstall shmetrics) >>"$work/pecl.log" 2>&1 ||
  { cat "$work/pecl.log" >&2; fail "pecl uninstall shmetrics"; }
[ ! -e "$pecl_so" ] || fail "pecl uninstall left $pecl_so"
pecl_so=
ok "pecl uninstall shmetrics"

say "packaging: php-shmetrics, the extension's .deb (scripts/build-deb-php.sh)"
php_deb=$(scripts/build-deb-php.sh "$work/deb")
dpkg-deb --info "$php_deb" | sed -n '/Package:/,/Description:/p'
php_deb_installed=1
dpkg -i "$php_deb" >/dev/null
ok "dpkg -i $(basename "$php_deb")"
php -m | grep -x shmetrics >/dev/null || fail "php -m does not list shmetrics: the package did not enable it for the CLI"
for sapi in cli fpm; do
  [ -L "/etc/php/$php_version/$sapi/conf.d/20-shmetrics.ini" ] ||
    fail "no /etc/php/$php_version/$sapi/conf.d/20-shmetrics.ini: phpenmod did not enable it for $sapi"
done
ok "php-shmetrics is enabled for the CLI and php-fpm (phpenmod)"
PHP_AUTOLOAD=Shmetrics/autoload.php run_blocks deb-ext
out=$(tests/packaging/php-fpm.sh "$work/fpm" 200) || fail "php-fpm with php-shmetrics"
ok "$out"

say "packaging: the PHP package through Composer, with the .deb's library"
mkdir -p "$work/composer"
cat > "$work/composer/composer.json" <<EOF
{
    "repositories": [
        {"type": "path", "url": "$root/bindings/php", "options": {"symlink": false}},
        {"packagist.org": false}
    ],
    "require": {"shmetrics/shmetrics": "*@dev"}
}
EOF
(cd "$work/composer" && COMPOSER_HOME="$work/composer-home" composer install --quiet --no-interaction --no-progress) ||
  fail "composer install"
[ -f "$work/composer/vendor/shmetrics/shmetrics/include/shmetrics.cdef.h" ] || fail "the composer package has no include/shmetrics.cdef.h"
ok "composer install (path repository)"
PHP_AUTOLOAD=$work/composer/vendor/autoload.php run_blocks composer

say "packaging: the Lua rock (luarocks make), with the .deb's library"
luarocks --lua-version 5.1 make --tree "$work/rocks" "bindings/lua/shmetrics-$version-1.rockspec" >/dev/null || fail "luarocks make"
export LUA_PATH="$work/rocks/share/lua/5.1/?.lua;;"
found=$(cd "$work" && luajit -e 'print(package.searchpath("shmetrics.cdef", package.path))')
[ "$found" = "$work/rocks/share/lua/5.1/shmetrics/cdef.lua" ] || fail "luajit finds shmetrics.cdef at $found, not in the rock's tree"
ok "luarocks make: $found"
run_blocks luarocks
unset LUA_PATH

say "packaging: the npm packages (scripts/build-npm.sh), installed outside the checkout"
scripts/build-npm.sh >/dev/null || fail "scripts/build-npm.sh"
(cd "$work" && npm install --no-audit --no-fund --silent \
  "$target/npm/shmetrics-linux-x64-gnu-$version.tgz" "$target/npm/shmetrics-$version.tgz") || fail "npm install"
addon=$(cd "$work" && node -e 'console.log(require.resolve("shmetrics-linux-x64-gnu"))')
[ "$addon" = "$work/node_modules/shmetrics-linux-x64-gnu/shmetrics.linux-x64-gnu.node" ] ||
  fail "node loads the addon from $addon, not from the installed package"
ok "npm install: $addon"
SHMETRICS_STORE=$SHM_DIR/node run_blocks npm

say "packaging: dpkg --purge php-shmetrics shmetrics"
dpkg --purge php-shmetrics >/dev/null
php_deb_installed=0
dpkg --purge shmetrics >/dev/null
deb_installed=0
if php -m | grep -x shmetrics >/dev/null; then fail "php -m lists shmetrics after dpkg --purge php-shmetrics"; fi
for f in "$ext_dir/shmetrics.so" "/etc/php/$php_version/mods-available/shmetrics.ini" \
  "/etc/php/$php_version/cli/conf.d/20-shmetrics.ini" /usr/bin/shmetrics "$lib.$major" "$unit" /usr/share/lua/5.1/shmetrics.lua /usr/share/php/Shmetrics /etc/default/shmetrics; do
  [ ! -e "$f" ] || fail "$f is still there after dpkg --purge"
done
ok "dpkg --purge removed every file"

echo "packaging: $passed passed, 0 failed"

#!/usr/bin/env bash
# Installs what the demo or the tests need and is missing on this machine:
# Debian packages, Python packages and cargo tools. Sourced by ./run-demo and
# ./run-tests; safe to run again (it only installs what is absent).
set -euo pipefail

say() { printf '==> %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# report_disk GIB: says how much space the file system of the build
# directory has left, and warns when it is under GIB: a build that runs out
# of it dies of odd signals (the linker's SIGBUS) rather than saying so.
report_disk() {
  local dir="${CARGO_TARGET_DIR:-$PWD/target}" free
  mkdir -p "$dir"
  free=$(df --output=avail -BG "$dir" | tail -n1 | tr -dc 0-9)
  say "disk: ${free} GiB free for $dir"
  if [ "$free" -lt "$1" ]; then
    say "warning: under $1 GiB free; the build may run out of space"
  fi
}

# The pinned copies of the peers whose own suites the tests run
# (../shared/peers, see its README): one list, so that every suite script
# and test finds them the same way.
PEER_DIRS=(promphp-v2.15.1 nginx-lua-prometheus-0.20240525 client_ruby-v4.2.5
  statsd-instrument-v3.11.0 prom-client-v15.1.3 prometheus-flask-exporter-0.23.2
  prometheus-fastapi-instrumentator-8.0.2 django-prometheus-2.5.0)

# find_peers: sets SHMETRICS_PEERS_DIR to the folder holding the peers'
# copies ($SHMETRICS_PEERS_DIR when set, else shared/peers beside the
# checkout, or beside the folder of a git worktree; run from the
# checkout), and exports each suite's own variable from it unless it is
# set already. Stops with a message naming what is missing, before
# anything is built.
find_peers() {
  local d found="" candidates=(../shared/peers ../../shared/peers)
  [ -z "${SHMETRICS_PEERS_DIR:-}" ] || candidates=("$SHMETRICS_PEERS_DIR")
  for d in "${candidates[@]}"; do
    if [ -d "$d/${PEER_DIRS[0]}" ]; then found=$(cd "$d" && pwd); break; fi
  done
  if [ -z "$found" ]; then
    say "error: the peers' pinned copies (${PEER_DIRS[0]}, ...) are not in ${candidates[*]} (from $PWD)"
    say "clone the repository beside shared/, or set SHMETRICS_PEERS_DIR to the folder that holds them"
    return 1
  fi
  for d in "${PEER_DIRS[@]}"; do
    if [ ! -d "$found/$d" ]; then
      say "error: $found has no $d (the pinned copies are listed in scripts/setup.sh's PEER_DIRS)"
      return 1
    fi
  done
  export SHMETRICS_PEERS_DIR=$found
  export PROMPHP_DIR=${PROMPHP_DIR:-$found/promphp-v2.15.1}
  export NLP_PEER_DIR=${NLP_PEER_DIR:-$found/nginx-lua-prometheus-0.20240525}
  export CLIENT_RUBY_DIR=${CLIENT_RUBY_DIR:-$found/client_ruby-v4.2.5}
  export STATSD_INSTRUMENT_DIR=${STATSD_INSTRUMENT_DIR:-$found/statsd-instrument-v3.11.0}
  export PROM_CLIENT_DIR=${PROM_CLIENT_DIR:-$found/prom-client-v15.1.3}
  export PYTHON_LIBS_PEERS=${PYTHON_LIBS_PEERS:-$found}
  say "peers' copies: $found"
}

# client_ruby_specs: the files of prometheus-client's own specs (from
# $CLIENT_RUBY_DIR) that run on Shmetrics::DataStore, one per line; the
# plain build's run (scripts/ruby-tests.sh) and the sanitizers'
# (scripts/ruby-sanitize.sh) take the same.
client_ruby_specs() {
  local s f
  for s in client/counter client/gauge client/histogram client/summary client/metric client/registry \
           client/label_set_validator client/formats/text client_spec middleware/exporter middleware/collector; do
    f=$CLIENT_RUBY_DIR/spec/prometheus/$s
    [ "${s%_spec}" = "$s" ] && f=${f}_spec
    printf '%s\n' "$f.rb"
  done
}

APT_UPDATED=0
# ensure_apt PKG... : install the Debian packages that are not installed yet.
ensure_apt() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$APT_UPDATED" = 0 ]; then
    say "apt-get update"
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
  say "apt-get install ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The oldest Rust the workspace builds with (Cargo.toml's rust-version).
RUST_MIN_VERSION=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml")

# rust_recent_enough: rustc on PATH is at least RUST_MIN_VERSION.
rust_recent_enough() {
  local v
  v=$(rustc --version 2>/dev/null | cut -d' ' -f2) || return 1
  v=${v%%-*}
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$RUST_MIN_VERSION" "$v" | sort -V | head -n1)" = "$RUST_MIN_VERSION" ]
}

# The toolchain a machine without a recent enough Rust gets: the Rust the
# project's machines carry, which the code is checked with. rustup's moving
# "stable" would bring new lints and deprecations that `clippy -D warnings`
# fails on (1.99 deprecates the atomics' fetch_update, which crates/core
# calls).
RUST_TOOLCHAIN=1.95.0

# ensure_rustup: rustup under ~/.cargo, with RUST_TOOLCHAIN. Debian 12 has
# no rustup package, so a machine without it gets rustup-init from
# static.rust-lang.org (curl needs the CA bundle).
ensure_rustup() {
  if [ -x "$HOME/.cargo/bin/rustup" ] && [[ ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
  command -v rustup >/dev/null 2>&1 && return 0
  ensure_apt curl ca-certificates
  local dir
  dir=$(mktemp -d)
  say "rustup-init: Rust $RUST_TOOLCHAIN under $HOME/.cargo"
  curl --proto '=https' --tlsv1.2 -sSfL -o "$dir/rustup-init" \
    "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
  chmod +x "$dir/rustup-init"
  "$dir/rustup-init" -y --quiet --no-modify-path --profile minimal \
    --default-toolchain "$RUST_TOOLCHAIN" --component rustfmt --component clippy
  rm -rf "$dir"
  export PATH="$HOME/.cargo/bin:$PATH"
}

# ensure_rust: cargo and rustc at least RUST_MIN_VERSION (Debian 12's
# cargo is too old for the workspace: rustup's RUST_TOOLCHAIN then), with rustfmt
# and clippy, and the C compiler and libc headers rustc links with.
ensure_rust() {
  if [ -x "$HOME/.cargo/bin/cargo" ] && [[ ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1 || ! rust_recent_enough; then
    ensure_rustup
    if ! rust_recent_enough; then
      say "rustup default $RUST_TOOLCHAIN"
      rustup toolchain install "$RUST_TOOLCHAIN" --profile minimal --component rustfmt --component clippy
      rustup default "$RUST_TOOLCHAIN"
    fi
  fi
  if command -v rustup >/dev/null 2>&1 && ! { cargo fmt --version && cargo clippy --version; } >/dev/null 2>&1; then
    rustup component add rustfmt clippy
  fi
  ensure_apt gcc libc6-dev
}

# ensure_pip MODULE PACKAGE : pip-install PACKAGE unless MODULE imports.
# Debian's python3 (a machine with no other) comes without pip, and is
# marked externally managed (PEP 668): pip then installs into it only with
# --break-system-packages.
ensure_pip() {
  python3 -c "import $1" 2>/dev/null && return 0
  command -v python3 >/dev/null 2>&1 || ensure_apt python3
  python3 -m pip --version >/dev/null 2>&1 || ensure_apt python3-pip ca-certificates
  local flags=()
  if python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    flags+=(--break-system-packages)
  fi
  say "pip install $2"
  python3 -m pip install --quiet --disable-pip-version-check "${flags[@]}" "$2"
}

# ensure_php: what the PHP binding's tests and benchmark need: php-cli
# (with FFI and pcntl), php-fpm and nginx for the FastCGI test, Apache
# with mod_php (prefork) for the mod_php test, phpunit,
# php-apcu for the APCng-shaped benchmark, and php-dev (phpize and PHP's
# headers) and make to build the binding's extension (bindings/php/ext;
# php-dev does not bring make).
ensure_php() {
  ensure_apt php-cli php-fpm phpunit php-apcu nginx php-dev make apache2 libapache2-mod-php8.2
}

# ensure_gen_stub: what bindings/php/ext/gen-arginfo.sh needs to make the
# extension's arginfo from its stub: PHP's build/gen_stub.php (php-dev) and
# the nikic/php-parser it runs on (Debian's php-parser), with php-cli.
ensure_gen_stub() {
  ensure_apt php-cli php-dev php-parser
}

# ensure_lua: what the Lua binding's tests and benchmark need: OpenResty's
# LuaJIT (luajit2, the one Debian's nginx lua module links; it replaces the
# `luajit` package), nginx with the lua module, wrk, and lua-cjson to read
# the shared test vectors; libluajit2-5.1-dev and pkg-config build the
# test host that runs the binding in two Lua VMs of one process.
ensure_lua() {
  ensure_apt luajit2 nginx libnginx-mod-http-lua wrk lua-cjson libluajit2-5.1-dev pkg-config
}

# ensure_go: Go, for nginx-lua-prometheus's integration checkers (the Lua
# binding's tests), whose modules come from the Go module proxy: the
# machine's Go (/usr/local/go included), else Debian's.
ensure_go() {
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="$PATH:/usr/local/go/bin"
  fi
  command -v go >/dev/null 2>&1 || ensure_apt golang-go
}

# ensure_node: Node.js with npm, for the Etsy StatsD server the push tests
# start. A machine may already have a Node.js that bundles npm (NodeSource's
# nodejs conflicts with Debian's npm package), so only a missing command is
# installed.
ensure_node() {
  if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    return 0
  fi
  ensure_apt nodejs npm
}

# ensure_node_packages: the Node.js binding built in place (its debug addon
# beside bindings/node/index.js, as napi-rs names it), and what its tests
# use from npm (Jest, nock, Express, PM2, prom-client) under
# target/node-suite, where NODE_PATH (exported) also finds `shmetrics`.
ensure_node_packages() {
  ensure_node
  local t="${CARGO_TARGET_DIR:-$PWD/target}"
  cargo build --quiet -p shmetrics-node
  cp "$t/debug/libshmetrics_node.so" bindings/node/shmetrics.linux-x64-gnu.node
  node bindings/node/suite/run.js --install
  ln -sfn "$PWD/bindings/node" "$t/node-suite/node_modules/shmetrics"
  export NODE_PATH="$t/node-suite/node_modules"
}

# The cbindgen version the committed C header was generated with.
CBINDGEN_VERSION=0.29.2
ensure_cbindgen() {
  if ! cbindgen --version 2>/dev/null | grep -qx "cbindgen $CBINDGEN_VERSION"; then
    say "cargo install cbindgen $CBINDGEN_VERSION"
    cargo install --quiet --locked cbindgen --version "$CBINDGEN_VERSION"
  fi
}

# The cargo-fuzz version the fuzz targets (crates/core/fuzz) are run with,
# and the nightly toolchain it needs (libFuzzer's sanitizer flags).
CARGO_FUZZ_VERSION=0.13.2
ensure_cargo_fuzz() {
  ensure_rustup
  if ! cargo +nightly --version >/dev/null 2>&1; then
    say "rustup toolchain install nightly"
    rustup toolchain install nightly --profile minimal
  fi
  if ! cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
    say "cargo install cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install --quiet --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
  fi
}

# ensure_miri: the nightly toolchain's Miri (and the standard library's
# source it builds its sysroot from), for the C ABI's pointer-reading tests.
ensure_miri() {
  ensure_rustup
  if ! cargo +nightly --version >/dev/null 2>&1; then
    say "rustup toolchain install nightly"
    rustup toolchain install nightly --profile minimal
  fi
  if ! cargo +nightly miri --version >/dev/null 2>&1; then
    say "rustup component add miri rust-src (nightly)"
    rustup +nightly component add miri rust-src
  fi
}

# ensure_python_env: a virtualenv under target/ with the test tools (and
# the servers the tests start: gunicorn, uvicorn, uWSGI; Passenger, whose
# app runs in a virtualenv of its own: ensure_passenger_python_env) and the
# Python binding installed from bindings/python by pip (maturin from PyPI,
# Rust from this machine), exactly as a user would install it. Sets VENV.
ensure_python_env() {
  VENV="$PWD/target/python-venv"
  if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
    ensure_apt python3-venv
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    say "python3 -m venv $VENV"
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    pytest prometheus_client gunicorn maturin mypy \
    asgiref aiohttp django twisted python-snappy flask starlette uvicorn
  # uWSGI 2.0 from PyPI (tests/test_uwsgi.py), built against the venv's Python
  # (Debian's uwsgi-plugin-python3 embeds the system Python, which need not
  # be the venv's); it compiles C: a C compiler and Python's headers.
  if ! "$VENV/bin/python" -c "import sys, os; sys.exit(not os.access(os.path.join(os.path.dirname(sys.executable), 'uwsgi'), os.X_OK))"; then
    if ! "$VENV/bin/python" -c "import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; then
      ensure_apt python3-dev
    fi
    ensure_apt gcc
    say "pip install uwsgi (compiles it)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check uwsgi==2.0.31
  fi
  # The libraries built on prometheus_client whose own suites
  # scripts/python-libs-tests.sh runs (their PyPI packages; their tests
  # come from ../shared/peers), with what those suites import.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    prometheus-flask-exporter==0.23.2 prometheus-fastapi-instrumentator==8.0.2 django-prometheus==2.5.0 \
    fastapi httpx httpx2 requests devtools flask-restful pytest-asyncio pytest-django 'psycopg[binary]'
  # The binding, built into a wheel by pip (maturin from PyPI, Rust from
  # this machine) and installed from it, as `pip install ./bindings/python`
  # does; the wheel is kept for the Passenger virtualenv below.
  local wheels=$PWD/target/python-wheel
  rm -rf "$wheels"
  say "pip wheel ./bindings/python; pip install it"
  "$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$wheels" ./bindings/python
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/shmetrics-*.whl
  ensure_passenger_python_env "$wheels"
}

# ensure_passenger: Debian's Phusion Passenger and its Apache module, for
# the Passenger tests (bindings/python/tests/test_passenger.py,
# tests/servers/ruby/passenger_test.rb), which start Apache on a config of
# their own. The module's package enables it in the system's Apache
# (a2enmod passenger); that Apache is not started by any test, and the PHP
# tests' Apache loads only the modules its own config names.
ensure_passenger() {
  ensure_apt apache2 passenger libapache2-mod-passenger
}

# ensure_passenger_python_env WHEELS: Passenger and a virtualenv of
# Debian's python3 under target/passenger-venv with the binding's wheel
# from WHEELS. Started as root, Passenger runs the app as its startup
# file's owner (www-data in the test), which must be able to run the
# interpreter: the test virtualenv's may be one it cannot (a pyenv Python
# under /root), Debian's always is.
ensure_passenger_python_env() {
  ensure_passenger
  [ -x /usr/bin/python3 ] || ensure_apt python3
  /usr/bin/python3 -c "import venv, ensurepip" 2>/dev/null || ensure_apt python3-venv
  local venv=$PWD/target/passenger-venv
  if [ ! -x "$venv/bin/python" ]; then
    say "/usr/bin/python3 -m venv $venv"
    /usr/bin/python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$1"/shmetrics-*.whl
}

# ensure_ruby: what the Ruby binding's tests and benchmarks need: Ruby with
# its headers and a C compiler (the gem's native part is built by `gem
# install`), minitest and rspec, rack and puma for the middleware tests,
# benchmark-ips, prometheus-client-mmap to compare against, and bundler
# (the gem's bundle tests run `bundle install`).
ensure_ruby() {
  ensure_apt ruby ruby-dev gcc make ruby-minitest ruby-rspec ruby-rack ruby-rack-test ruby-timecop puma unicorn \
    ruby-benchmark-ips ruby-prometheus-client-mmap bundler libasan8 libubsan1 binutils
}

# install_ruby_gem: builds the gem from bindings/ruby (`gem build`) and
# installs it from source with `gem install` into target/ruby/gems, which
# compiles its native part as a user's install does; exports GEM_HOME and
# GEM_PATH so that `ruby` (and Puma, Unicorn, rspec) load it from there.
# Needs ensure_ruby first.
install_ruby_gem() {
  local target=${CARGO_TARGET_DIR:-$PWD/target}
  local gems=$target/ruby/gems
  rm -rf "$target/ruby/pkg"
  mkdir -p "$target/ruby/pkg" "$gems"
  (cd bindings/ruby && gem build --quiet shmetrics.gemspec -o "$target/ruby/pkg/shmetrics.gem" >/dev/null)
  gem install --quiet --local --no-document --install-dir "$gems" "$target/ruby/pkg/shmetrics.gem" >/dev/null
  export GEM_HOME=$gems
  GEM_PATH="$gems:$(ruby -e 'print Gem.path.join(":")')"
  export GEM_PATH
}

#!/usr/bin/env bash
# Pages rendered inside an app (issue 36): the time of the in-process
# render of each binding against its peer's own multi-process store, in
# one run. 10,000 series in families of 8 label sets (route, code), one
# family in ten a histogram with the library's default buckets, the others
# counters, written by 16 separate processes through each binding's drop-in
# API (every process every series once); then an app process renders the
# page, median of several:
#
#   ruby    Prometheus::Client::Formats::Text.marshal(registry) on
#           Shmetrics::DataStore, against DirectFileStore (and, for
#           information, prometheus-client-mmap 0.16.2's
#           marshal_multiprocess)          benches/ruby/scrape.rb --inapp
#   php     Prometheus\RenderTextFormat on getMetricFamilySamples() with
#           ShmetricsAdapter (PHP FFI, then the extension), against APCng
#                                          benches/php/bench.php --inapp
#   python  generate_latest(registry) with MultiProcessCollector, against
#           prometheus_client's multiprocess mode
#                                          benches/python/bench_python.py --only inapp
#   lua     GET /metrics, prometheus:collect() inside an nginx worker (16
#           workers write), against nginx-lua-prometheus on a lua_shared_dict
#                                          benches/lua/bench_nginx.py --only inapp
#
# Prints a table: binding, shmetrics ms, peer ms, ratio (peer / shmetrics;
# issue 36's target: at least 2). Figures only: nothing is asserted. Builds
# the release library, the Ruby gem, the PHP extension and the Python
# binding (a wheel into target/python-venv) first; needs the peers' copies
# in ../shared/peers (or CLIENT_RUBY_DIR, PROMPHP_DIR, NLP_PEER_DIR).
#
#   benches/inapp_render.sh [ruby|php|python|lua]...   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_rust
export PATH="$HOME/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --quiet --release -p shmetrics-ffi -p shmetrics
export SHMETRICS_LIBRARY="$target/release/libshmetrics.so" SHMETRICS_BIN="$target/release/shmetrics"
peer() { # peer VAR DIRNAME: $VAR, else ../shared/peers/DIRNAME (from a checkout or a worktree)
  local d
  for d in "${!1:-}" "../shared/peers/$2" "../../shared/peers/$2"; do
    if [ -n "$d" ] && [ -d "$d" ]; then (cd "$d" && pwd); return; fi
  done
  echo "inapp_render.sh: set $1 to a copy of $2" >&2
  exit 2
}
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(ruby php python lua)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for p in "${parts[@]}"; do
  case $p in
    ruby)
      ensure_ruby
      install_ruby_gem
      CLIENT_RUBY_DIR=$(peer CLIENT_RUBY_DIR client_ruby-v4.2.5) ruby benches/ruby/scrape.rb --inapp --k 5 | tee -a "$results" ;;
    php)
      ensure_php
      bindings/php/ext/build.sh "$target/php-ext" >/dev/null
      PROMPHP_DIR=$(peer PROMPHP_DIR promphp-v2.15.1) SHMETRICS_EXTENSION="$target/php-ext/ext/modules/shmetrics.so" \
        php benches/php/bench.php --inapp | tee -a "$results" ;;
    python)
      venv=$target/python-venv
      [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check prometheus_client maturin
      # The binding as built from this checkout (incremental, in $target).
      rm -rf "$target/inapp-wheel"
      (cd bindings/python && "$venv/bin/maturin" build --quiet --release --out "$target/inapp-wheel")
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$target"/inapp-wheel/shmetrics-*.whl
      "$venv/bin/python" benches/python/bench_python.py --only inapp | tee -a "$results" ;;
    lua)
      ensure_lua
      NLP_PEER_DIR=$(peer NLP_PEER_DIR nginx-lua-prometheus-0.20240525) python3 benches/lua/bench_nginx.py --only inapp | tee -a "$results" ;;
    *) echo "inapp_render.sh: unknown part $p (ruby, php, python, lua)" >&2; exit 2 ;;
  esac
done
echo
echo "in-app render, 10,000 series x 16 writers, $(date -u +%Y-%m-%d), $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
awk '$1 == "inapp" {
  peers["ruby"] = "DirectFileStore|prometheus-client-mmap"; peers["php-ffi"] = "APCng"; peers["php-ext"] = "APCng"
  peers["python"] = "prometheus_client multiprocess"; peers["lua"] = "nginx-lua-prometheus"
  n = split(peers[$2], names, "|")
  for (i = 1; i <= n; i++) rows[++r] = sprintf("%-9s %-31s %12.2f %10.2f %7.2fx", $2, names[i], $3, $(3 + i), $(3 + i) / $3)
}
END {
  printf "%-9s %-31s %12s %10s %8s\n", "binding", "peer", "shmetrics ms", "peer ms", "ratio"
  for (i = 1; i <= r; i++) print rows[i]
}' "$results"

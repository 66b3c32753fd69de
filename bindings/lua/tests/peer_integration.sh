#!/usr/bin/env bash
# Runs nginx-lua-prometheus's own integration test (its integration/
# directory: nginx.conf and the Go checkers test.go, test_basic.go and
# test_reset.go) against shmetrics, in Debian's nginx with its lua module.
#
#   tests/peer_integration.sh basic|reset|all
#
# basic: test_basic.go's checks (request counters, latency histograms,
# the connections gauge, no library errors); reset: test_reset.go's
# (gauge:reset() in one worker while the others set it); all: both, as
# their test.go runs them. Their files are used as they are, but for
# two substitutions made here at run time, into a scratch copy: in
# nginx.conf the `require("prometheus").init("prometheus_metrics", ...)`
# line becomes `require("shmetrics").init(<store path>, ...)` (with where
# shmetrics.lua, libshmetrics.so and the C declarations are), and in
# test.go the part not asked for is not registered. The Go modules come
# from the Go module proxy; Go is the machine's.
#
# Needs root (their nginx.conf runs workers as www-data and writes
# /var/run/nginx.pid) and ports 18000-18002 (one run at a time: a lock).
# Environment: SHMETRICS_LIBRARY (the library to test), NLP_PEER_DIR (the
# pinned nginx-lua-prometheus copy), NLP_DURATION (the Go test's
# -duration, default 10s).
set -euo pipefail

mode=${1:-}
case "$mode" in
  basic | reset | all) ;;
  *) echo "usage: $0 basic|reset|all" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")/.." && pwd) # bindings/lua
repo=$(cd "$here/../.." && pwd)
peer=${NLP_PEER_DIR:-$repo/../shared/peers/nginx-lua-prometheus-0.20240525}
library=${SHMETRICS_LIBRARY:-$repo/target/release/libshmetrics.so}
cdef=$repo/crates/ffi/include/shmetrics.cdef.h
for f in "$peer/integration/nginx.conf" "$peer/integration/test.go" "$library" "$cdef"; do
  [ -r "$f" ] || { echo "peer_integration: $f is missing" >&2; exit 1; }
done
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"

exec 9>/tmp/shmetrics-peer-integration.lock
flock 9

work=$(mktemp -d /tmp/shmetrics-peer.XXXXXX)
store_dir=$(mktemp -d /dev/shm/shmetrics-peer.XXXXXX)
nginx_pid=
cleanup() {
  if [ -n "$nginx_pid" ]; then
    kill "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  rm -rf "$work" "$store_dir"
}
trap cleanup EXIT

# The workers (www-data) create the store in a directory of their own.
chown www-data "$store_dir" 2>/dev/null || chmod 0777 "$store_dir"
store="$store_dir/nginx.metrics"

# Their require/init line, and only it, changed.
init="package.path = \"$here/?.lua;\" .. package.path; prometheus = require(\"shmetrics\").init(\"$store\", {sync_interval=0.1, library = \"$library\", cdef = \"$cdef\"})"
want='prometheus = require("prometheus").init("prometheus_metrics", {sync_interval=0.1})'
grep -qF "$want" "$peer/integration/nginx.conf" || {
  echo "peer_integration: their nginx.conf has no line $want" >&2; exit 1; }
python3 - "$peer/integration/nginx.conf" "$work/nginx.conf" "$want" "$init" <<'EOF'
import sys
src, dst, want, init = sys.argv[1:]
text = open(src).read()
assert text.count(want) == 1, "the require/init line is not there once"
open(dst, "w").write(text.replace(want, init))
EOF

mkdir "$work/go"
cp "$peer/integration/"{go.mod,go.sum,test.go,test_basic.go,test_reset.go} "$work/go/"
drop=
case "$mode" in
  basic) drop='registerResetTest(tr)' ;;
  reset) drop='registerBasicTest(tr)' ;;
esac
if [ -n "$drop" ]; then
  grep -qF "	$drop" "$work/go/test.go" || { echo "peer_integration: test.go has no $drop" >&2; exit 1; }
  sed -i "/^\t${drop//[()]/.}\$/d" "$work/go/test.go"
fi

echo "==> nginx-lua-prometheus integration test ($mode) against $library"
nginx -t -q -c "$work/nginx.conf"
nginx -c "$work/nginx.conf" >"$work/nginx.log" 2>&1 &
nginx_pid=$!

rc=0
(cd "$work/go" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go run . -duration "${NLP_DURATION:-10s}") || rc=$?
if [ "$rc" != 0 ] || grep -qE '\[(error|crit|alert|emerg)\]' "$work/nginx.log"; then
  echo "==> nginx's log (first and last 15 lines):"
  head -15 "$work/nginx.log"
  echo ...
  tail -15 "$work/nginx.log"
  [ "$rc" != 0 ] || { echo "peer_integration: nginx logged errors" >&2; rc=1; }
fi
exit "$rc"

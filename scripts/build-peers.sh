#!/usr/bin/env bash
# Builds the real protocol peers that Debian does not package, at pinned
# versions, from the Go module proxy, once: each goes under the target
# directory and is built again only when its version changes.
#
#   $target/peers/prometheus-v0.316.0/bin/prometheus
#       Prometheus 3 (its Go module's v0.316.0), without the web UI's
#       assets, which the tests do not use;
#   $target/peers/otelcol-0.161.0/otelcol/otelcol-shmetrics
#       an OpenTelemetry Collector made by the Collector's builder from
#       tests/peers/otelcol-builder.yaml.
#
# Usage: scripts/build-peers.sh [prometheus|otelcol]...   (default: both)
# Prints the path of each binary, one per line, in the order asked.
#
# Needs Go 1.24 or later on PATH (the machine's /usr/local/go; Debian
# bookworm's golang-go is too old). The first build takes about ten
# minutes of CPU on two cores and 2 GB of module and build caches.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}

PROMETHEUS_MODULE=github.com/prometheus/prometheus/cmd/prometheus
PROMETHEUS_VERSION=v0.316.0
# Issue 34 names the Collector v0.165 (contrib v0.165.1), but contrib's
# fileexporter v0.165.1 needs otlpencodingextension@v0.165.1 for `go mod
# tidy`, which the Go module proxy here refuses (403); v0.161.0 is the
# newest release whose whole tree it serves (also the newest fileexporter
# the machine's list of served modules gives). The Collector's core and
# contrib modules are pinned there together.
OTELCOL_VERSION=0.161.0

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || { echo "build-peers.sh: no go command (Go 1.24 or later)" >&2; exit 1; }
# go1.26.8 -> 26; Prometheus 3 and the Collector need 1.24 or later.
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "${go_minor:-0}" -lt 24 ]; then
  echo "build-peers.sh: $(go env GOVERSION) is too old; Prometheus 3 and the Collector need Go 1.24 or later (Debian bookworm's golang-go is 1.19: install Go from go.dev, or set GOTOOLCHAIN to a newer approved version)" >&2
  exit 1
fi

say() { printf '==> %s\n' "$*" >&2; }

# Niced, so that other work on the machine goes first (a build takes a
# few GB of memory; GOFLAGS=-p=1 limits it further on a small machine).
gobuild_env() { nice -n 10 "$@"; }

prometheus() {
  local dir=$target/peers/prometheus-$PROMETHEUS_VERSION
  local bin=$dir/bin/prometheus
  if [ ! -x "$bin" ]; then
    say "build-peers: Prometheus 3 ($PROMETHEUS_MODULE@$PROMETHEUS_VERSION)"
    mkdir -p "$dir"
    (cd "$dir" && GOBIN=$dir/bin gobuild_env go install "$PROMETHEUS_MODULE@$PROMETHEUS_VERSION")
  fi
  echo "$bin"
}

otelcol() {
  local dir=$target/peers/otelcol-$OTELCOL_VERSION
  local bin=$dir/otelcol/otelcol-shmetrics
  local manifest=$root/tests/peers/otelcol-builder.yaml
  # Built again when the manifest changes.
  if [ ! -x "$bin" ] || ! cmp -s "$manifest" "$dir/manifest.yaml"; then
    say "build-peers: OpenTelemetry Collector $OTELCOL_VERSION ($manifest)"
    mkdir -p "$dir"
    [ -x "$dir/bin/builder" ] ||
      (cd "$dir" && GOBIN=$dir/bin gobuild_env go install "go.opentelemetry.io/collector/cmd/builder@v$OTELCOL_VERSION")
    cp "$manifest" "$dir/manifest.yaml.new"
    (cd "$dir" && gobuild_env "$dir/bin/builder" --config="$dir/manifest.yaml.new")
    mv "$dir/manifest.yaml.new" "$dir/manifest.yaml"
  fi
  echo "$bin"
}

[ $# -gt 0 ] || set -- prometheus otelcol
for peer in "$@"; do
  case $peer in
    prometheus | otelcol) "$peer" ;;
    *) echo "build-peers.sh: unknown peer $peer (prometheus, otelcol)" >&2; exit 2 ;;
  esac
done

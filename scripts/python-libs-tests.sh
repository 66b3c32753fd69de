#!/usr/bin/env bash
# Runs the own test suites of the Python libraries built on prometheus_client
# (prometheus-flask-exporter, prometheus-fastapi-instrumentator,
# django-prometheus; packages from PyPI, tests from PYTHON_LIBS_PEERS,
# else the peers' copies that scripts/setup.sh's find_peers finds) on
# prometheus_client and on shmetrics through install_as_prometheus_client(),
# and fails if a test that passes on the first does not on the second and
# is not listed in docs/migrating.md.
# Called by ./run-tests after the Python binding's tests (whose venv it
# reuses); safe to run again. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
find_peers
ensure_rust
export PATH="$HOME/.cargo/bin:$PATH"
ensure_python_env
say "python libraries' own tests, on prometheus_client and on shmetrics"
"$VENV/bin/python" bindings/python/suite/libs.py

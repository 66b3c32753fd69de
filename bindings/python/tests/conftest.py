"""Shared fixtures: a fresh store per test, and reading it back the way a
scraper does, through the exporter's own output (`shmetrics dump`) parsed
by prometheus_client's parsers."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, FrozenSet, Tuple

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

import shmetrics
from shmetrics import _native

REPO = Path(__file__).resolve().parents[3]

Samples = Dict[Tuple[str, FrozenSet[Tuple[str, str]]], float]


def shmetrics_bin() -> str:
    """The `shmetrics` CLI: $SHMETRICS_BIN, else the workspace's debug
    build (./run-tests builds it first)."""
    path = os.environ.get("SHMETRICS_BIN") or str(REPO / "target" / "debug" / "shmetrics")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is missing: run `cargo build -p shmetrics-cli` or set SHMETRICS_BIN")
    return path


def samples_of(text: str, openmetrics: bool = False) -> Samples:
    parse = parse_openmetrics if openmetrics else parse_text
    out: Samples = {}
    for fam in parse(text):
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"duplicate sample {key}"
            out[key] = s.value
    return out


def dump(store: shmetrics.Store, fmt: str = "text") -> str:
    """The exposition as the exporter renders it, from another process."""
    args = [shmetrics_bin(), "dump", "--store", str(store.path)]
    if fmt == "openmetrics":
        args += ["--format", "openmetrics"]
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=60).stdout


class Scrape:
    """Values as the exporter shows them, checked by both parsers."""

    def __init__(self, store: shmetrics.Store) -> None:
        self.text = dump(store)
        self.samples = samples_of(self.text)
        self.om = samples_of(dump(store, "openmetrics"), openmetrics=True)

    def get(self, name: str, /, **labels: str) -> float | None:
        return self.samples.get((name, frozenset(labels.items())))

    def names(self) -> set:
        return {n for n, _ in self.samples}


@pytest.fixture
def store(tmp_path: Path):
    """A new store, made the default for the test."""
    s = shmetrics.configure(tmp_path / "test.shm")
    yield s
    _native.set_default_store(None)
    os.environ.pop("SHMETRICS_STORE", None)


@pytest.fixture
def scrape(store):
    return lambda: Scrape(store)


def which(cmd: str) -> str:
    path = shutil.which(cmd)
    if path is None:
        raise RuntimeError(f"{cmd} is not installed; ./run-tests installs it")
    return path

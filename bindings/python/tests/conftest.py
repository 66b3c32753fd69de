"""Shared fixtures: a fresh store per test, and reading it back the way a
scraper does, through the exporter's own output (`shmetrics dump`) parsed
by prometheus_client's parsers."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Tuple, Union

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


def dump_protobuf(store: shmetrics.Store) -> bytes:
    """The exposition in the Prometheus protobuf format (delimited
    `io.prometheus.client.MetricFamily` messages), the one Prometheus asks
    for when it scrapes native histograms."""
    args = [shmetrics_bin(), "dump", "--store", str(store.path), "--format", "protobuf"]
    return subprocess.run(args, check=True, capture_output=True, timeout=60).stdout


# A small reader for the protobuf format, so the tests need no protobuf
# package: only the fields of client_model's metrics.proto the native
# histogram tests look at. Field numbers: MetricFamily name=1, type=3,
# metric=4; Metric label=1, histogram=7; LabelPair name=1, value=2;
# Histogram sample_count=1, sample_sum=2, bucket=3, schema=5 (sint32),
# zero_threshold=6, zero_count=7, negative_span=9, negative_delta=10
# (sint64), positive_span=12, positive_delta=13 (sint64); BucketSpan
# offset=1 (sint32), length=2; Bucket cumulative_count=1, upper_bound=2.

Field = Union[int, float, bytes]


def _varint(buf: bytes, i: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _fields(buf: bytes) -> Iterator[Tuple[int, int, Field]]:
    """(field number, wire type, value) for each field of one message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        value: Field
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            (value,) = struct.unpack_from("<d", buf, i)
            i += 8
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wire} is not used by metrics.proto")
        yield number, wire, value


def _sints(wire: int, value: Field) -> List[int]:
    """A repeated sint64 field's values, packed or not."""
    if wire == 0:
        assert isinstance(value, int)
        return [_zigzag(value)]
    assert isinstance(value, bytes)
    out, i = [], 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(_zigzag(v))
    return out


@dataclass
class ProtoHistogram:
    """One histogram series of a protobuf exposition."""

    labels: Dict[str, str]
    count: int = 0
    sum: float = 0.0
    classic: List[Tuple[float, int]] = field(default_factory=list)  # (upper bound, cumulative count)
    schema: int | None = None
    zero_threshold: float | None = None
    zero_count: int | None = None
    positive_spans: List[Tuple[int, int]] = field(default_factory=list)  # (offset, length)
    positive_deltas: List[int] = field(default_factory=list)
    negative_spans: List[Tuple[int, int]] = field(default_factory=list)
    negative_deltas: List[int] = field(default_factory=list)

    @staticmethod
    def buckets(spans: List[Tuple[int, int]], deltas: List[int]) -> Dict[int, int]:
        """Bucket index -> count, from spans and delta-encoded counts."""
        out: Dict[int, int] = {}
        index, count, k = 0, 0, 0
        for offset, length in spans:
            index += offset
            for _ in range(length):
                count += deltas[k]
                k += 1
                out[index] = count
                index += 1
        assert k == len(deltas), "every delta belongs to a span"
        return out

    def positive(self) -> Dict[int, int]:
        return self.buckets(self.positive_spans, self.positive_deltas)

    def negative(self) -> Dict[int, int]:
        return self.buckets(self.negative_spans, self.negative_deltas)


def _span(buf: bytes) -> Tuple[int, int]:
    offset = length = 0
    for number, _, v in _fields(buf):
        assert isinstance(v, int)
        if number == 1:
            offset = _zigzag(v)
        elif number == 2:
            length = v
    return offset, length


def _histogram(buf: bytes, labels: Dict[str, str]) -> ProtoHistogram:
    h = ProtoHistogram(labels)
    for number, wire, v in _fields(buf):
        if number == 1:
            h.count = int(v)
        elif number == 2:
            h.sum = float(v)
        elif number == 3:
            assert isinstance(v, bytes)
            b = {n: x for n, _, x in _fields(v)}
            h.classic.append((float(b[2]), int(b[1])))
        elif number == 5:
            assert isinstance(v, int)
            h.schema = _zigzag(v)
        elif number == 6:
            h.zero_threshold = float(v)
        elif number == 7:
            h.zero_count = int(v)
        elif number in (9, 12):
            assert isinstance(v, bytes)
            (h.negative_spans if number == 9 else h.positive_spans).append(_span(v))
        elif number in (10, 13):
            (h.negative_deltas if number == 10 else h.positive_deltas).extend(_sints(wire, v))
    return h


def protobuf_histograms(data: bytes) -> Dict[str, List[ProtoHistogram]]:
    """The histogram series of a delimited protobuf exposition, by family
    name."""
    out: Dict[str, List[ProtoHistogram]] = {}
    i = 0
    while i < len(data):
        n, i = _varint(data, i)
        family, i = data[i:i + n], i + n
        name, series = "", []
        for number, _, v in _fields(family):
            if number == 1:
                assert isinstance(v, bytes)
                name = v.decode()
            elif number == 4:
                assert isinstance(v, bytes)
                labels, hist = {}, None
                for mn, _, mv in _fields(v):
                    assert isinstance(mv, bytes)
                    if mn == 1:
                        pair = {pn: pv for pn, _, pv in _fields(mv)}
                        labels[bytes(pair.get(1, b"")).decode()] = bytes(pair.get(2, b"")).decode()
                    elif mn == 7:
                        hist = mv
                if hist is not None:
                    series.append(_histogram(hist, labels))
        if series:
            out[name] = series
    return out


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

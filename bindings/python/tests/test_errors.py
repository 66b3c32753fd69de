"""Every error path: the exception class (and the built-in it subclasses)
and a message that says what to fix. The application keeps running."""

from __future__ import annotations

import os
import stat
import time

import pytest

import shmetrics
from shmetrics import _native


@pytest.mark.parametrize("ctor, cls, builtin, words", [
    (lambda: shmetrics.Counter("", "x"), shmetrics.InvalidNameError, ValueError, "empty"),
    (lambda: shmetrics.Counter("ok", "x", ["__reserved"]), shmetrics.InvalidNameError, ValueError, "__"),
    (lambda: shmetrics.Counter("ok", "x", ["a.b", "a_b"]), shmetrics.InvalidNameError, ValueError, "a_b"),
    (lambda: shmetrics.Histogram("h", "x", ["le"]), shmetrics.InvalidNameError, ValueError, "le"),
    (lambda: shmetrics.Summary("s", "x", ["quantile"]), shmetrics.InvalidNameError, ValueError, "quantile"),
    (lambda: shmetrics.Histogram("h", "x", buckets=[2, 1]), shmetrics.InvalidOptionsError, ValueError, "increasing"),
    (lambda: shmetrics.Histogram("h", "x", buckets=[1, float("nan")]), shmetrics.InvalidOptionsError, ValueError, "NaN"),
    (lambda: shmetrics.Gauge("g", "x", multiprocess_mode="average"), shmetrics.InvalidOptionsError, ValueError, "livesum"),
    (lambda: shmetrics.Counter("c", "x", unit="bad unit"), shmetrics.InvalidNameError, ValueError, "bad unit"),
    (lambda: shmetrics.Enum("e", "x", states=[]), shmetrics.InvalidOptionsError, ValueError, "state"),
    (lambda: shmetrics.Info("i", "x", unit="bytes"), shmetrics.InvalidOptionsError, ValueError, "unit"),
])
def test_bad_definitions(store, ctor, cls, builtin, words):
    with pytest.raises(cls, match=words) as e:
        ctor()
    assert isinstance(e.value, builtin)


def test_conflicting_definitions(store):
    shmetrics.Counter("req", "x", ["a"])
    for other in [lambda: shmetrics.Counter("req", "x", ["b"]),
                  lambda: shmetrics.Gauge("req", "x", ["a"]),
                  lambda: shmetrics.Histogram("lat", "x") and shmetrics.Histogram("lat", "x", buckets=[1])]:
        with pytest.raises(shmetrics.ConflictError, match="already registered") as e:
            other()
        assert isinstance(e.value, ValueError)
    shmetrics.Counter("req", "other help text", ["a"])  # help text may differ


def test_label_mistakes(store):
    c = shmetrics.Counter("c", "x", ["a", "b"])
    cases = [
        (lambda: c.labels("1"), "expected 2 label values"),
        (lambda: c.labels("1", "2", "3"), "expected 2 label values"),
        (lambda: c.labels(a="1"), "expected label names"),
        (lambda: c.labels(a="1", b="2", c="3"), "expected label names"),
        (lambda: c.labels(a="1", x="2"), "expected label names"),
        (lambda: c.labels("1", b="2"), "not both"),
        (lambda: c.inc(), "labels"),
        (lambda: c.remove("1"), "expected 2"),
        (lambda: c.labels("1", "2").labels("3", "4"), "already a child"),
        (lambda: shmetrics.Counter("plain", "x").labels("v"), "without label names"),
    ]
    for f, words in cases:
        with pytest.raises(shmetrics.LabelError, match=words) as e:
            f()
        assert isinstance(e.value, ValueError)
    c.labels("1", "2").inc()  # still works


def test_bad_values(store):
    c = shmetrics.Counter("c", "x")
    g = shmetrics.Gauge("g", "x")
    h = shmetrics.Histogram("h", "x")
    s = shmetrics.Summary("s", "x")
    for f in [lambda: c.inc(-1), lambda: c.inc(float("nan")), lambda: c.inc(float("inf")),
              lambda: g.set(float("nan")),
              lambda: g.inc(float("nan")), lambda: h.observe(float("nan")),
              lambda: s.observe(float("nan"))]:
        with pytest.raises(shmetrics.InvalidValueError) as e:
            f()
        assert isinstance(e.value, ValueError)
    with pytest.raises(TypeError):
        c.inc("one")  # type: ignore[arg-type]


def test_not_configured(monkeypatch):
    _native.set_default_store(None)
    monkeypatch.delenv("SHMETRICS_STORE", raising=False)
    with pytest.raises(shmetrics.NotConfiguredError, match="SHMETRICS_STORE") as e:
        shmetrics.Counter("c", "x")
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(shmetrics.NotConfiguredError):
        shmetrics.generate_latest()


def test_environment_variable_names_the_store(tmp_path, monkeypatch):
    _native.set_default_store(None)
    path = tmp_path / "from-env.shm"
    monkeypatch.setenv("SHMETRICS_STORE", str(path))
    try:
        shmetrics.Counter("c", "x").inc()
        assert path.exists()
        assert shmetrics.default_store().path == path
        assert b"c_total 1" in shmetrics.generate_latest()
    finally:
        _native.set_default_store(None)


@pytest.mark.parametrize("content, words", [
    (b"", "empty"),
    (b"not a store at all, just some text" * 200, "not a shmetrics store"),
])
def test_bad_store_files(tmp_path, content, words):
    path = tmp_path / "bad.shm"
    path.write_bytes(content)
    with pytest.raises(shmetrics.StoreFileError, match=words) as e:
        shmetrics.Store(path)
    assert isinstance(e.value, OSError)
    assert str(path) in str(e.value)
    assert path.read_bytes() == content, "a bad file is never reinitialised"


def test_truncated_corrupt_and_other_version_store(tmp_path):
    path = tmp_path / "s.shm"
    shmetrics.Store(path, max_series=64, max_families=8, label_bytes=4096, max_writers=2)
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(shmetrics.StoreFileError, match="truncated"):
        shmetrics.Store(path)
    version = bytearray(data)
    version[8] ^= 0x7F  # the layout version follows the 8-byte magic
    path.write_bytes(bytes(version))
    with pytest.raises(shmetrics.StoreFileError, match="version|corrupt"):
        shmetrics.Store(path)
    corrupt = bytearray(data)
    corrupt[40] ^= 0xFF  # inside the checksummed fixed part
    path.write_bytes(bytes(corrupt))
    with pytest.raises(shmetrics.StoreFileError, match="corrupt|checksum"):
        shmetrics.Store(path)


def test_missing_file_without_create(tmp_path):
    with pytest.raises(shmetrics.StoreFileError, match="nope.shm"):
        shmetrics.Store(tmp_path / "nope.shm", create=False)


def test_file_modes(tmp_path):
    a = shmetrics.Store(tmp_path / "a.shm")
    b = shmetrics.Store(tmp_path / "b.shm", mode=0o660)
    assert stat.S_IMODE(os.stat(a.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(b.path).st_mode) == 0o660
    with pytest.raises(shmetrics.InvalidOptionsError, match="world"):
        shmetrics.Store(tmp_path / "c.shm", mode=0o666)


def test_read_only_store_cannot_be_written(tmp_path):
    path = tmp_path / "ro.shm"
    shmetrics.Store(path)
    ro = shmetrics.Store(path, read_only=True)
    assert ro.read_only
    with pytest.raises(shmetrics.StoreFileError, match="read-only"):
        shmetrics.Counter("c", "x", registry=ro)
    assert ro.render() == b""


def test_series_capacity_overflows_instead_of_failing(tmp_path, scrape_of=None):
    s = shmetrics.Store(tmp_path / "small.shm", max_series=4)
    c = shmetrics.Counter("c", "x", ["k"], registry=s)
    for k in range(10):
        c.labels(str(k)).inc()  # no exception: the overflow series counts them
    from conftest import Scrape
    scraped = Scrape(s)
    total = sum(v for (n, _), v in scraped.samples.items() if n == "c_total")
    assert total == 10, scraped.text
    assert any(dict(l).get("k") == "" for n, l in scraped.samples if n == "c_total"), scraped.text


def test_store_full_of_families(tmp_path):
    s = shmetrics.Store(tmp_path / "tiny.shm", max_families=2)
    shmetrics.Counter("a", "x", registry=s)
    shmetrics.Counter("b", "x", registry=s)
    with pytest.raises(shmetrics.CapacityError, match="larger capacity") as e:
        shmetrics.Counter("c", "x", registry=s)
    assert isinstance(e.value, ValueError)


def test_unknown_render_format(store):
    with pytest.raises(ValueError, match="openmetrics"):
        store.render("json")


def test_a_flipped_bit_in_the_lock_word_does_not_hang_registration(store, scrape):
    # Byte 512 of the file is the first byte of the store lock's futex
    # word (see src/shm/layout.rs): one flipped bit once made every writer
    # hang at registration. It names a thread that holds no lock, so the
    # store repairs it at once.
    with open(store.path, "r+b") as f:
        f.seek(512)
        byte = f.read(1)[0]
        f.seek(512)
        f.write(bytes([byte ^ 1]))
    start = time.monotonic()
    c = shmetrics.Counter("after_flip", "x")
    c.inc()
    assert time.monotonic() - start < 2
    assert scrape().get("after_flip_total") == 1

"""The shared test vectors (tests/vectors/updates.json) through the Python
API. The C ABI, PHP and Lua run the same file; all must render the same
text, but that Python's families add prometheus_client's `name_created`
gauges (`with_created_gauges`). The expected texts are also checked with
prometheus_client's parser."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

import shmetrics

VECTORS = json.loads((Path(__file__).resolve().parents[3] / "tests/vectors/updates.json").read_text())
ERRORS = {
    "invalid_value": shmetrics.InvalidValueError,
    "label_count": shmetrics.LabelError,
    "invalid_name": shmetrics.InvalidNameError,
    "invalid_options": shmetrics.InvalidOptionsError,
}


def value(v) -> float:
    return {"NaN": math.nan, "+Inf": math.inf, "-Inf": -math.inf}[v] if isinstance(v, str) else float(v)


def make(store: shmetrics.Store, fam: dict):
    common = dict(name=fam["name"], documentation=fam["help"], labelnames=fam["labels"], registry=store)
    if fam["kind"] == "counter":
        return shmetrics.Counter(**common, exemplars=fam.get("exemplars", False))
    if fam["kind"] == "gauge":
        return shmetrics.Gauge(**common, multiprocess_mode=fam["mode"])
    if fam["kind"] == "histogram":
        native = fam.get("native")
        return shmetrics.Histogram(
            **common,
            buckets=[value(b) for b in fam["buckets"]] if "buckets" in fam else None,
            native_histogram_bucket_factor=native["bucket_factor"] if native else None,
            exemplars=fam.get("exemplars", False))
    if fam["kind"] == "summary":
        return shmetrics.Summary(**common, quantiles=[value(q) for q in fam.get("quantiles", [])])
    raise AssertionError(fam["kind"])


def apply(metrics: dict, op: dict) -> None:
    m = metrics[op["family"]]
    child = m.labels(*op["labels"]) if op["labels"] or m._labelnames else m
    v = value(op["value"])
    ex = {"exemplar": op["exemplar"]} if "exemplar" in op else {}
    if op["op"] == "inc":
        child.inc(v, **ex)
    elif op["op"] == "set":
        child.set(v)
    elif op["op"] == "observe":
        child.observe(v, **ex)
    else:
        raise AssertionError(op["op"])


def normalize_openmetrics(text: str) -> str:
    """OpenMetrics as the vectors write it: without `_created` samples,
    each exemplar's timestamp replaced by `T`."""
    out = []
    for line in text.splitlines():
        if re.match(r"[^{ ]*_created[{ ]", line):
            continue
        if " # {" in line:
            line = line.rsplit(" ", 1)[0] + " T"
        out.append(line + "\n")
    return "".join(out)


def with_created_gauges(text: str) -> str:
    """The shared text as Python's families render it: they follow
    prometheus_client in one process (`Created::EveryFormat`, see
    docs/ARCHITECTURE.md, "Exposition hints"), so after each counter,
    histogram and summary comes a gauge family `name_created` with each
    series' creation time, written `T` here (`normalize_created`). The
    other layers render the shared text as it is."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        help_text, kind, name = None, None, ""
        j = i
        while j < len(lines) and lines[j].startswith("# "):
            _, keyword, name, rest = lines[j].split(" ", 3)
            if keyword == "HELP":
                help_text = rest
            elif keyword == "TYPE":
                kind = rest.strip()
            j += 1
        k = j
        while k < len(lines) and not lines[k].startswith("# "):
            k += 1
        out += lines[i:k]
        if kind in ("counter", "histogram", "summary"):
            base = name[: -len("_total")] if kind == "counter" else name
            one = name if kind == "counter" else base + "_count"  # one sample a series
            series = [line[len(one):].rsplit(" ", 1)[0] for line in lines[j:k]
                      if line.startswith(one) and line[len(one)] in "{ "]
            if series:
                if help_text is not None:
                    out.append(f"# HELP {base}_created {help_text}")
                out.append(f"# TYPE {base}_created gauge\n")
                out += [f"{base}_created{labels} T\n" for labels in series]
        i = k
    return "".join(out)


def normalize_created(text: str, since: float) -> str:
    """`text` with each `_created` gauge's value, a creation time no
    earlier than `since` and not in the future, written `T`."""
    def repl(m: re.Match) -> str:
        t = float(m.group(2))
        assert since - 1 <= t <= time.time() + 1, m.group(0)
        return m.group(1) + " T"

    return re.sub(r"^([^#\n]*_created(?:\{.*\})?) (\S+)$", repl, text, flags=re.M)


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_vector_case(tmp_path, case):
    since = time.time()
    store = shmetrics.Store(tmp_path / "v.shm")
    metrics = {f["name"]: make(store, f) for f in case["families"]}
    for op in case["ops"]:
        apply(metrics, op)
    for e in case["errors"]:
        with pytest.raises(ERRORS[e["error"]]):
            apply(metrics, e)
    assert normalize_created(store.render("text").decode(), since) == with_created_gauges(case["text"])
    # The expected text itself is valid for a real parser.
    names = {f.name for f in text_string_to_metric_families(case["text"])}
    assert names == {f["name"] for f in case["families"]}
    if "openmetrics" in case:
        assert normalize_openmetrics(store.render("openmetrics").decode()) == case["openmetrics"]
        # So is the expected OpenMetrics, given timestamps.
        om = case["openmetrics"].replace(" T\n", " 1700000000.5\n")
        names = {f.name for f in openmetrics_families(om)}
        assert names == {f["name"] for f in case["families"]}


@pytest.mark.parametrize("bad", VECTORS["register_errors"], ids=lambda e: e["family"]["name"] + "/" + e["error"])
@pytest.mark.parametrize("legacy", [False, True], ids=["utf8", "legacy"])
def test_vector_register_error(tmp_path, bad, legacy):
    """Refused under both name rules, but ``legacy_only`` cases: those
    register under prometheus_client 0.26's default (any UTF-8 name) and
    are refused under ``enable_legacy_validation()``."""
    store = shmetrics.Store(tmp_path / "v.shm")
    if legacy:
        shmetrics.validation.enable_legacy_validation()
    try:
        if bad.get("legacy_only") and not legacy:
            make(store, bad["family"])
        else:
            with pytest.raises(ERRORS[bad["error"]]):
                make(store, bad["family"])
    finally:
        shmetrics.validation.disable_legacy_validation()

#!/usr/bin/env python3
"""Parses shmetrics expositions with prometheus_client and compares them with
what the Rust conformance test wrote into the store.

    check_parse.py TEXT_FILE OPENMETRICS_FILE EXPECTED_JSON

EXPECTED_JSON lists the families in exposition order:

    [{"name": "http_requests", "type": "counter", "help": "...", "unit": "",
      "samples": [{"name": "http_requests_total", "labels": {...},
                   "value": 3.0, "text": true, "om": true, "approx": false,
                   "exemplar": null}]}]

"text"/"om" say in which format a sample must appear; "approx" marks
`_created` samples, whose value is compared to within a microsecond.
"exemplar" is null or {"labels": {...}, "value": v, "timestamp_ns": t}: the
OpenMetrics sample must carry exactly that exemplar (its timestamp to within
a microsecond), or none. Values
are compared exactly (NaN equal to NaN; both parsers read "-0" as the
integer 0, so the sign of a negative zero is checked by the golden tests
instead).

Exits 0 and prints "N passed, 0 failed" when both parses match; otherwise
prints every mismatch and exits 1. A missing prometheus_client is an error
(exit 2), never a skip.
"""

import json
import math
import sys

try:
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as parse_openmetrics,
    )
    from prometheus_client.parser import text_string_to_metric_families as parse_text
except ImportError as e:  # pragma: no cover - the point is to fail loudly
    print(f"prometheus_client is not installed: {e}", file=sys.stderr)
    sys.exit(2)


def same_value(got, want, approx):
    if math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if approx:
        return abs(got - want) <= 1e-6
    return got == want


def exemplar_problem(got, want):
    """Why a parsed exemplar differs from the expected one, or None."""
    if want is None:
        return None if got is None else f"{got} where none was expected"
    if got is None:
        return f"missing, expected {want}"
    if got.labels != want["labels"]:
        return f"labels {got.labels} != {want['labels']}"
    if not same_value(got.value, want["value"], False):
        return f"value {got.value!r} != {want['value']!r}"
    ts = got.timestamp
    seconds = float(ts) if ts is not None else None
    if seconds is None or abs(seconds - want["timestamp_ns"] / 1e9) > 1e-6:
        return f"timestamp {ts} != {want['timestamp_ns']} ns"
    return None


def key(sample):
    name, labels = sample[0], sample[1]
    return (name, sorted(labels.items()))


def compare(fmt, families, expected, errors):
    """Compares parsed families with the expected ones; returns checks run."""
    checks = 0
    is_om = fmt == "openmetrics"
    got_names = [(f.name, f.type) for f in families]
    want_names = [(f["name"], f["type"]) for f in expected]
    checks += 1
    if got_names != want_names:
        errors.append(f"{fmt}: families {got_names} != expected {want_names}")
        return checks
    for got, want in zip(families, expected):
        where = f"{fmt}: family {want['name']}"
        checks += 1
        if got.documentation != want["help"]:
            errors.append(f"{where}: help {got.documentation!r} != {want['help']!r}")
        if is_om:
            checks += 1
            if got.unit != want["unit"]:
                errors.append(f"{where}: unit {got.unit!r} != {want['unit']!r}")
        want_samples = [
            (s["name"], s["labels"], s["value"], s["approx"], s.get("exemplar"))
            for s in want["samples"]
            if s["om" if is_om else "text"]
        ]
        got_samples = [(s.name, s.labels, s.value, s.exemplar) for s in got.samples]
        checks += 1
        if len(got_samples) != len(want_samples):
            errors.append(
                f"{where}: {len(got_samples)} samples, expected {len(want_samples)}:\n"
                f"  got      {sorted(got_samples, key=key)}\n"
                f"  expected {sorted(want_samples, key=key)}"
            )
            continue
        # Order within a family comes from the store (series creation,
        # writer slots); compare as sorted lists of unique (name, labels).
        got_by_key = {}
        for s in got_samples:
            k = json.dumps(key(s))
            if k in got_by_key:
                errors.append(f"{where}: duplicate sample {s}")
            got_by_key[k] = s
        for name, labels, value, approx, exemplar in want_samples:
            checks += 1
            g = got_by_key.get(json.dumps(key((name, labels))))
            if g is None:
                errors.append(f"{where}: missing sample {name}{labels}")
                continue
            if not same_value(g[2], value, approx):
                errors.append(f"{where}: {name}{labels} = {g[2]!r}, expected {value!r}")
            # The text format has no exemplars: only OpenMetrics is checked.
            if is_om:
                checks += 1
                problem = exemplar_problem(g[3], exemplar)
                if problem:
                    errors.append(f"{where}: {name}{labels}: exemplar {problem}")
    return checks


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    text_path, om_path, expected_path = sys.argv[1:]
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    errors = []
    checks = 0
    for fmt, path, parse in [
        ("text", text_path, parse_text),
        ("openmetrics", om_path, parse_openmetrics),
    ]:
        with open(path, encoding="utf-8") as f:
            body = f.read()
        try:
            families = list(parse(body))
        except Exception as e:  # any parser complaint is a failure
            errors.append(f"{fmt}: the parser rejected {path}: {type(e).__name__}: {e}")
            continue
        checks += compare(fmt, families, expected, errors)
    for e in errors:
        print(e)
    print(f"{checks - len(errors)} passed, {len(errors)} failed")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

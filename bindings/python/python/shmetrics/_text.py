"""Writes custom collectors' ``Metric`` objects in the Prometheus text
format 0.0.4 and in OpenMetrics text, after the store's families (which
the core renders natively)."""

from __future__ import annotations

import math
import re
from typing import Dict, Iterable, List, Optional

from . import _native
from .metrics_core import Metric
from .samples import Sample, Timestamp

# Types the Prometheus text format 0.0.4 lacks, and what it says instead.
_TEXT_TYPES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram",
               "unknown": "untyped"}
# Samples of these suffixes that the text format puts in gauge families of
# their own, after their family.
_SIDE = {"counter": ("_created",), "histogram": ("_created",), "summary": ("_created",),
         "gaugehistogram": ("_gsum", "_gcount")}


def float_text(v: float) -> str:
    """A number as prometheus_client writes sample values and ``le`` and
    ``quantile`` labels: Python's shortest repr (``1.0``, ``0.005``),
    ``+Inf``, ``NaN``, and from a million on an exponent
    (``1.7000000005e+09``, ``1e+10``): at least two exponent digits, as
    prometheus_client 0.26 writes it."""
    f = float(v)
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if math.isnan(f):
        return "NaN"
    text = repr(f)
    if f < 1e6 or "e" in text:
        return text
    whole, _, frac = text.partition(".")
    digits = (whole + frac).rstrip("0")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e+{len(whole) - 1:02d}"


ALLOWUTF8, UNDERSCORES, DOTS, VALUES = "allow-utf-8", "underscores", "dots", "values"
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")


def _escape_name(name: str, escaping: str, colon: bool) -> str:
    """A name as prometheus_client's ``escape_metric_name`` and
    ``escape_label_name`` write it (unquoted), escaped natively (see
    ``shmetrics_core::Escaping``): ``underscores`` turns each character
    outside the legacy set into ``_``; ``dots`` writes ``.`` as ``_dot_``,
    ``_`` as ``__`` and others as ``__`` (always); ``values`` writes ``U__``
    and each other character as ``_<hex>_`` (``_`` as ``__``)."""
    if escaping not in (ALLOWUTF8, UNDERSCORES, DOTS, VALUES):
        return name
    if colon:
        return _native.escape_metric_name(name, escaping)
    return _native.escape_label_name(name, escaping)


def escape_metric_name(name: str, escaping: str = UNDERSCORES) -> str:
    """A metric name as written under ``escaping``."""
    return _escape_name(name, escaping, True)


def escape_label_name(name: str, escaping: str = UNDERSCORES) -> str:
    """A label name as written under ``escaping``."""
    return _escape_name(name, escaping, False)


def _escape(s: str, quote: bool) -> str:
    s = s.replace("\\", r"\\").replace("\n", r"\n")
    return s.replace('"', r"\"") if quote else s


def _metric_name(name: str, escaping: str) -> str:
    """A name in a ``# HELP``/``# TYPE`` line: quoted if it is UTF-8 and
    the exposition takes it, else escaped."""
    if escaping == ALLOWUTF8 and not _METRIC_NAME.match(name):
        return '"' + _escape(name, True) + '"'
    return escape_metric_name(name, escaping)


def _label_name(name: str, escaping: str) -> str:
    if escaping == ALLOWUTF8 and not _LABEL_NAME.match(name):
        return '"' + _escape(name, True) + '"'
    return escape_label_name(name, escaping)


def _labels(labels: Dict[str, str], escaping: str = UNDERSCORES) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{_label_name(k, escaping)}="{_escape(v, True)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _line(s: Sample, openmetrics: bool, escaping: str = UNDERSCORES) -> str:
    if escaping == ALLOWUTF8 and not _METRIC_NAME.match(s.name):
        inner = _labels(s.labels, escaping)[1:-1]
        head = "{" + _metric_name(s.name, escaping) + ("," + inner if inner else "") + "}"
    else:
        head = escape_metric_name(s.name, escaping) + _labels(s.labels, escaping)
    out = f"{head} {float_text(s.value)}"
    if s.timestamp is not None:
        ts = s.timestamp
        if openmetrics:
            out += f" {ts}"
        elif isinstance(ts, Timestamp):
            out += f" {ts.sec * 1000 + ts.nsec // 1000000}"
        else:
            out += f" {int(float(ts) * 1000)}"
    if openmetrics and s.exemplar is not None:
        e = s.exemplar
        out += f" # {_labels(e.labels) or '{}'} {float_text(e.value)}"
        if e.timestamp is not None:
            out += f" {float(e.timestamp)}"
    return out + "\n"


def _text_family(m: Metric, escaping: str) -> List[str]:
    name = _metric_name(m.name + {"counter": "_total", "info": "_info"}.get(m.type, ""), escaping)
    suffixes = tuple(m.name + s for s in _SIDE.get(m.type, ()))
    side = list(dict.fromkeys(s.name for s in m.samples if s.name in suffixes))
    out = [f"# HELP {name} {_escape(m.documentation, False)}\n",
           f"# TYPE {name} {_TEXT_TYPES.get(m.type, m.type)}\n"]
    out += [_line(s, False, escaping) for s in m.samples if s.name not in side]
    for extra in side:
        lines = [_line(s, False, escaping) for s in m.samples if s.name == extra]
        if lines:
            shown = _metric_name(extra, escaping)
            out += [f"# HELP {shown} {_escape(m.documentation, False)}\n",
                    f"# TYPE {shown} gauge\n"] + lines
    return out


def _openmetrics_family(m: Metric, escaping: str) -> List[str]:
    name = _metric_name(m.name, escaping)
    out = [f"# HELP {name} {_escape(m.documentation, True)}\n", f"# TYPE {name} {m.type}\n"]
    if m.unit:
        out.append(f"# UNIT {name} {m.unit}\n")
    return out + [_line(s, True, escaping) for s in m.samples]


def write(metrics: Iterable[Metric], openmetrics: bool, page: Optional[bytes] = None,
          escaping: str = "underscores") -> bytes:
    """``page`` (the store's families, rendered natively in the same
    format), then ``metrics``; an OpenMetrics page keeps one ``# EOF``,
    at the end."""
    head = page or b""
    if openmetrics and head.endswith(b"# EOF\n"):
        head = head[: -len(b"# EOF\n")]
    lines: List[str] = []
    for m in metrics:
        try:
            lines += _openmetrics_family(m, escaping) if openmetrics else _text_family(m, escaping)
        except Exception as e:
            # The family that could not be written goes with the error, as
            # prometheus_client's writers add it.
            e.args = (e.args or ("",)) + (m,)
            raise
    tail = "".join(lines).encode("utf-8")
    return head + tail + (b"# EOF\n" if openmetrics else b"")

"""Writes custom collectors' ``Metric`` objects in the Prometheus text
format 0.0.4 and in OpenMetrics text, after the store's families (which
the core renders natively)."""

from __future__ import annotations

import math
from typing import Dict, Iterable, List, Optional

from .metrics_core import Metric
from .samples import Sample

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
    (``1.7000000005e+09``), written ``e+0`` and the exponent's digits, as
    prometheus_client writes it."""
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
    return f"{mantissa}e+0{len(whole) - 1}"


def _escape(s: str, quote: bool) -> str:
    s = s.replace("\\", r"\\").replace("\n", r"\n")
    return s.replace('"', r"\"") if quote else s


def _labels(labels: Dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(str(v), True)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _line(s: Sample, openmetrics: bool) -> str:
    out = f"{s.name}{_labels(s.labels)} {float_text(s.value)}"
    if s.timestamp is not None:
        ts = float(s.timestamp)
        out += f" {ts}" if openmetrics else f" {int(ts * 1000)}"
    if openmetrics and s.exemplar is not None:
        e = s.exemplar
        out += f" # {_labels(e.labels) or '{}'} {float_text(e.value)}"
        if e.timestamp is not None:
            out += f" {float(e.timestamp)}"
    return out + "\n"


def _text_family(m: Metric) -> List[str]:
    name = m.name + {"counter": "_total", "info": "_info"}.get(m.type, "")
    suffixes = tuple(m.name + s for s in _SIDE.get(m.type, ()))
    side = list(dict.fromkeys(s.name for s in m.samples if s.name in suffixes))
    out = [f"# HELP {name} {_escape(m.documentation, False)}\n",
           f"# TYPE {name} {_TEXT_TYPES.get(m.type, m.type)}\n"]
    out += [_line(s, False) for s in m.samples if s.name not in side]
    for extra in side:
        lines = [_line(s, False) for s in m.samples if s.name == extra]
        if lines:
            out += [f"# HELP {extra} {_escape(m.documentation, False)}\n",
                    f"# TYPE {extra} gauge\n"] + lines
    return out


def _openmetrics_family(m: Metric) -> List[str]:
    out = [f"# HELP {m.name} {_escape(m.documentation, True)}\n", f"# TYPE {m.name} {m.type}\n"]
    if m.unit:
        out.append(f"# UNIT {m.name} {m.unit}\n")
    return out + [_line(s, True) for s in m.samples]


def write(metrics: Iterable[Metric], openmetrics: bool, page: Optional[bytes] = None) -> bytes:
    """``page`` (the store's families, rendered natively in the same
    format), then ``metrics``; an OpenMetrics page keeps one ``# EOF``,
    at the end."""
    head = page or b""
    if openmetrics and head.endswith(b"# EOF\n"):
        head = head[: -len(b"# EOF\n")]
    lines: List[str] = []
    for m in metrics:
        lines += _openmetrics_family(m) if openmetrics else _text_family(m)
    tail = "".join(lines).encode("utf-8")
    return head + tail + (b"# EOF\n" if openmetrics else b"")

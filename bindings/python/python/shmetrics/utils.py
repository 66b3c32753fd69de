"""prometheus_client's ``utils``: how numbers are written."""

import math

from ._native import float_text

INF = float("inf")
MINUS_INF = float("-inf")
NaN = float("NaN")


def floatToGoString(d: float) -> str:
    """A number as the text formats write it (``1.0``, ``+Inf``, ``NaN``,
    ``1.7e+09``)."""
    return float_text(d)


__all__ = ["INF", "MINUS_INF", "NaN", "floatToGoString", "math"]

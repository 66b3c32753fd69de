"""The sample types of prometheus_client's ``samples`` module, with the
same names and fields, so that custom collectors written for it work
unchanged."""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional


class Exemplar(NamedTuple):
    """An exemplar of a counter or histogram bucket: its labels (a trace
    id, say), the value observed and, optionally, when (Unix seconds)."""

    labels: Dict[str, str]
    value: float
    timestamp: Optional[float] = None


class Sample(NamedTuple):
    """One line of an exposition: the sample's full name (with its suffix,
    such as ``_total`` or ``_bucket``), its labels and its value."""

    name: str
    labels: Dict[str, str]
    value: float
    timestamp: Optional[float] = None
    exemplar: Optional[Exemplar] = None


__all__ = ["Exemplar", "Sample"]

"""The sample types of prometheus_client's ``samples`` module, with the
same names and fields, so that custom collectors written for it work
unchanged."""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Union


class Exemplar(NamedTuple):
    """An exemplar of a counter or histogram bucket: its labels (a trace
    id, say), the value observed and, optionally, when (Unix seconds)."""

    labels: Dict[str, str]
    value: float
    timestamp: Optional[float] = None


class Timestamp:
    """A sample's time in seconds and nanoseconds since the epoch, exact
    where a float would round."""

    def __init__(self, sec: float, nsec: float) -> None:
        if nsec < 0 or nsec >= 1e9:
            raise ValueError(f"Invalid value for nanoseconds in Timestamp: {nsec}")
        if sec < 0:
            nsec = -nsec
        self.sec = int(sec)
        self.nsec = int(nsec)

    def __str__(self) -> str:
        return f"{self.sec}.{self.nsec:09d}"

    def __repr__(self) -> str:
        return f"Timestamp({self.sec}, {self.nsec})"

    def __float__(self) -> float:
        return float(self.sec) + float(self.nsec) / 1e9

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timestamp) and (self.sec, self.nsec) == (other.sec, other.nsec)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __gt__(self, other: "Timestamp") -> bool:
        return (self.sec, self.nsec) > (other.sec, other.nsec)

    def __lt__(self, other: "Timestamp") -> bool:
        return (self.sec, self.nsec) < (other.sec, other.nsec)

    def __hash__(self) -> int:
        return hash((self.sec, self.nsec))


class Sample(NamedTuple):
    """One line of an exposition: the sample's full name (with its suffix,
    such as ``_total`` or ``_bucket``), its labels and its value."""

    name: str
    labels: Dict[str, str]
    value: float
    timestamp: Optional[Union[float, Timestamp]] = None
    exemplar: Optional[Exemplar] = None
    native_histogram: Optional[Any] = None


__all__ = ["Exemplar", "Sample", "Timestamp"]

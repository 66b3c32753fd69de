"""Metric families for custom collectors, named and shaped as
prometheus_client's ``metrics_core`` classes: a collector's ``collect()``
yields them, and the in-process exposition (``generate_latest``, the
WSGI/ASGI apps, ``start_http_server``) writes them after the store's
families. The store's own families are read as ``Metric`` objects too
(``CollectorRegistry.collect()``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native
from .samples import Exemplar, Sample

METRIC_TYPES = ("counter", "gauge", "summary", "histogram", "gaugehistogram",
                "unknown", "info", "stateset")

Bucket = Union[Tuple[str, float], Tuple[str, float, Exemplar]]


class Metric:
    """A metric family and its samples: ``name`` (without a counter's
    ``_total``), ``documentation``, ``type``, ``unit`` and ``samples``."""

    def __init__(self, name: str, documentation: str, typ: str, unit: str = "") -> None:
        if unit and not name.endswith("_" + unit):
            name = f"{name}_{unit}"
        if not name or not isinstance(name, str):
            raise _native.InvalidNameError(f"invalid metric name {name!r}: it must be a non-empty string")
        typ = "unknown" if typ == "untyped" else typ
        if typ not in METRIC_TYPES:
            raise _native.InvalidOptionsError(
                f"{name}: unknown metric type {typ!r}; one of {', '.join(METRIC_TYPES)}")
        self.name = name
        self.documentation = documentation
        self.unit = unit
        self.type = typ
        self.samples: List[Sample] = []

    def add_sample(self, name: str, labels: Dict[str, str], value: float,
                   timestamp: Optional[float] = None, exemplar: Optional[Exemplar] = None) -> None:
        """Appends one sample, as is."""
        self.samples.append(Sample(name, labels, value, timestamp, exemplar))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Metric):
            return NotImplemented
        mine = (self.name, self.documentation, self.type, self.unit, self.samples)
        return mine == (other.name, other.documentation, other.type, other.unit, other.samples)

    def __repr__(self) -> str:
        return (f"Metric({self.name}, {self.documentation}, {self.type}, {self.unit}, "
                f"{self.samples})")


class _Family(Metric):
    """A family built from label values: ``labels`` names them, and either
    ``labels`` or a value for the unlabelled series may be given."""

    def __init__(self, name: str, documentation: str, typ: str, labels: Optional[Sequence[str]],
                 has_value: bool, unit: str = "") -> None:
        super().__init__(name, documentation, typ, unit)
        if labels is not None and has_value:
            raise ValueError(f"{self.name}: give a value or label names, not both")
        self._labelnames: Tuple[str, ...] = tuple(labels or ())

    def _labels(self, values: Sequence[str], *extra: Tuple[str, str]) -> Dict[str, str]:
        labels = dict(zip(self._labelnames, values))
        labels.update(extra)
        return labels


class _OneSample(_Family):
    """A family whose series are one sample each, named as the family."""

    TYPE = ""

    def __init__(self, name: str, documentation: str, value: Optional[float] = None,
                 labels: Optional[Sequence[str]] = None, unit: str = "") -> None:
        super().__init__(name, documentation, self.TYPE, labels, value is not None, unit)
        if value is not None:
            self.add_metric([], value)

    def add_metric(self, labels: Sequence[str], value: float, timestamp: Optional[float] = None) -> None:
        """Adds the series with these label values."""
        self.add_sample(self.name, self._labels(labels), value, timestamp)


class UnknownMetricFamily(_OneSample):
    """Samples of unknown type (``untyped`` in the Prometheus text format)."""

    TYPE = "unknown"


UntypedMetricFamily = UnknownMetricFamily


class CounterMetricFamily(_Family):
    """A counter; a name ending in ``_total`` loses it (the samples get it
    back)."""

    def __init__(self, name: str, documentation: str, value: Optional[float] = None,
                 labels: Optional[Sequence[str]] = None, created: Optional[float] = None,
                 unit: str = "", exemplar: Optional[Exemplar] = None) -> None:
        name = name[:-len("_total")] if name.endswith("_total") else name
        super().__init__(name, documentation, "counter", labels, value is not None, unit)
        if value is not None:
            self.add_metric([], value, created, exemplar=exemplar)

    def add_metric(self, labels: Sequence[str], value: float, created: Optional[float] = None,
                   timestamp: Optional[float] = None, exemplar: Optional[Exemplar] = None) -> None:
        """Adds the series with these label values (and its ``_created``
        sample, in Unix seconds, if given)."""
        self.add_sample(self.name + "_total", self._labels(labels), value, timestamp, exemplar)
        if created is not None:
            self.add_sample(self.name + "_created", self._labels(labels), created, timestamp)


class GaugeMetricFamily(_OneSample):
    """A gauge."""

    TYPE = "gauge"


class SummaryMetricFamily(_Family):
    """A summary's ``_count`` and ``_sum``."""

    def __init__(self, name: str, documentation: str, count_value: Optional[int] = None,
                 sum_value: Optional[float] = None, labels: Optional[Sequence[str]] = None,
                 unit: str = "") -> None:
        if (count_value is None) != (sum_value is None):
            raise ValueError(f"{name}: give count_value and sum_value together")
        super().__init__(name, documentation, "summary", labels, count_value is not None, unit)
        if count_value is not None and sum_value is not None:
            self.add_metric([], count_value, sum_value)

    def add_metric(self, labels: Sequence[str], count_value: int, sum_value: float,
                   timestamp: Optional[float] = None) -> None:
        """Adds the series with these label values."""
        self.add_sample(self.name + "_count", self._labels(labels), count_value, timestamp)
        self.add_sample(self.name + "_sum", self._labels(labels), sum_value, timestamp)


class HistogramMetricFamily(_Family):
    """A histogram: ``buckets`` are ``(le, cumulative_count)`` pairs (or
    triples with an ``Exemplar``), ``+Inf`` last."""

    def __init__(self, name: str, documentation: str, buckets: Optional[Sequence[Bucket]] = None,
                 sum_value: Optional[float] = None, labels: Optional[Sequence[str]] = None,
                 unit: str = "") -> None:
        if sum_value is not None and buckets is None:
            raise ValueError(f"{name}: sum_value needs buckets")
        super().__init__(name, documentation, "histogram", labels, buckets is not None, unit)
        if buckets is not None:
            self.add_metric([], buckets, sum_value)

    def add_metric(self, labels: Sequence[str], buckets: Sequence[Bucket],
                   sum_value: Optional[float], timestamp: Optional[float] = None) -> None:
        """Adds the series with these label values: its buckets, and its
        ``_count`` and ``_sum`` when ``sum_value`` is given and no bound is
        negative."""
        count = buckets[-1][1]
        for bucket in buckets:
            exemplar = bucket[2] if len(bucket) == 3 else None  # type: ignore[misc]
            self.add_sample(self.name + "_bucket", self._labels(labels, ("le", bucket[0])),
                            bucket[1], timestamp, exemplar)
        if sum_value is not None and buckets and float(buckets[0][0]) >= 0:
            self.add_sample(self.name + "_count", self._labels(labels), count, timestamp)
            self.add_sample(self.name + "_sum", self._labels(labels), sum_value, timestamp)


class GaugeHistogramMetricFamily(_Family):
    """A gauge histogram: ``(le, count)`` buckets, ``+Inf`` last, and the
    sum of the values, as ``_gcount`` and ``_gsum``."""

    def __init__(self, name: str, documentation: str,
                 buckets: Optional[Sequence[Tuple[str, float]]] = None,
                 gsum_value: Optional[float] = None, labels: Optional[Sequence[str]] = None,
                 unit: str = "") -> None:
        super().__init__(name, documentation, "gaugehistogram", labels, buckets is not None, unit)
        if buckets is not None:
            self.add_metric([], buckets, gsum_value)

    def add_metric(self, labels: Sequence[str], buckets: Sequence[Tuple[str, float]],
                   gsum_value: Optional[float], timestamp: Optional[float] = None) -> None:
        """Adds the series with these label values."""
        for le, count in buckets:
            self.add_sample(self.name + "_bucket", self._labels(labels, ("le", le)), count, timestamp)
        self.add_sample(self.name + "_gcount", self._labels(labels), buckets[-1][1], timestamp)
        self.add_sample(self.name + "_gsum", self._labels(labels), gsum_value, timestamp)  # type: ignore[arg-type]


class _DictFamily(_Family):
    """A family whose series take a dict: an info's or a state set's."""

    TYPE = ""

    def __init__(self, name: str, documentation: str, value: Optional[Dict[str, Any]] = None,
                 labels: Optional[Sequence[str]] = None) -> None:
        super().__init__(name, documentation, self.TYPE, labels, value is not None)
        if value is not None:
            self.add_metric([], value)

    def add_metric(self, labels: Sequence[str], value: Any, timestamp: Optional[float] = None) -> None:
        raise NotImplementedError


class InfoMetricFamily(_DictFamily):
    """Key-value information: one ``<name>_info`` sample of value 1 whose
    labels are the label values and the info's keys."""

    TYPE = "info"

    def add_metric(self, labels: Sequence[str], value: Dict[str, str],
                   timestamp: Optional[float] = None) -> None:
        """Adds the series with these label values and this info."""
        self.add_sample(self.name + "_info", self._labels(labels, *value.items()), 1, timestamp)


class StateSetMetricFamily(_DictFamily):
    """A state set: one sample per state (label ``<name>``), 1 for the
    states that are on, in the order of their names."""

    TYPE = "stateset"

    def add_metric(self, labels: Sequence[str], value: Dict[str, bool],
                   timestamp: Optional[float] = None) -> None:
        """Adds the series with these label values and states."""
        for state in sorted(value):
            self.add_sample(self.name, self._labels(labels, (self.name, state)),
                            1 if value[state] else 0, timestamp)


__all__ = [
    "Metric", "UnknownMetricFamily", "UntypedMetricFamily", "CounterMetricFamily",
    "GaugeMetricFamily", "SummaryMetricFamily", "HistogramMetricFamily",
    "GaugeHistogramMetricFamily", "InfoMetricFamily", "StateSetMetricFamily",
]

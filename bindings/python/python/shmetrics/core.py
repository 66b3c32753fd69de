"""The names of prometheus_client's ``core`` module, where custom
collectors usually import their families from
(``from shmetrics.core import GaugeMetricFamily, REGISTRY``)."""

from ._metrics import Counter, Enum, Gauge, Histogram, Info, Summary
from .metrics_core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
    StateSetMetricFamily,
    SummaryMetricFamily,
    UnknownMetricFamily,
    UntypedMetricFamily,
)
from .registry import REGISTRY, CollectorRegistry, DuplicateTimeseries
from .samples import Exemplar, Sample, Timestamp

__all__ = [
    "CollectorRegistry", "Counter", "CounterMetricFamily", "DuplicateTimeseries", "Enum",
    "Exemplar", "Gauge", "GaugeHistogramMetricFamily", "GaugeMetricFamily", "Histogram",
    "HistogramMetricFamily", "Info", "InfoMetricFamily", "Metric", "REGISTRY", "Sample",
    "StateSetMetricFamily", "Summary", "SummaryMetricFamily", "UnknownMetricFamily",
    "UntypedMetricFamily", "Timestamp",
]

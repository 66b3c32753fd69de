"""prometheus_client's ``metrics`` module: the metric classes."""

import abc
import os

from ._metrics import Counter, Enum, Gauge, Histogram, Info, Summary


def _get_use_created() -> bool:
    """Whether ``_created`` samples are collected by default: unless
    ``PROMETHEUS_DISABLE_CREATED_SERIES`` is ``true``, as in
    prometheus_client."""
    return os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "False").lower() not in ("true", "1", "yes")


_use_created = _get_use_created()


def disable_created_metrics() -> None:
    """Leaves the ``_created`` samples of counters, histograms and summaries
    out of what registries collect (and so of the in-process pages)."""
    global _use_created
    _use_created = False


def enable_created_metrics() -> None:
    """Puts the ``_created`` samples back (the default, unless
    ``PROMETHEUS_DISABLE_CREATED_SERIES`` is ``true``)."""
    global _use_created
    _use_created = True


class MetricWrapperBase(abc.ABC):
    """prometheus_client's base class of the metric classes, for
    ``isinstance(x, MetricWrapperBase)``: every shmetrics metric class
    (the native ``Counter``, ``Gauge``, ``Histogram`` and ``Summary``,
    and ``Info`` and ``Enum``) is registered as a virtual subclass."""


for _cls in (Counter, Enum, Gauge, Histogram, Info, Summary):
    MetricWrapperBase.register(_cls)


__all__ = ["Counter", "Enum", "Gauge", "Histogram", "Info", "MetricWrapperBase", "Summary",
           "disable_created_metrics", "enable_created_metrics"]

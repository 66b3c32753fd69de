"""prometheus_client's ``metrics`` module: the metric classes."""

from ._metrics import Counter, Enum, Gauge, Histogram, Info, Summary
import os

from .registry import disable_created_metrics, enable_created_metrics


def _get_use_created() -> bool:
    """Whether ``_created`` samples are collected by default: unless
    ``PROMETHEUS_DISABLE_CREATED_SERIES`` is ``true``, as in
    prometheus_client."""
    return os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "False").lower() not in ("true", "1", "yes")


_use_created = _get_use_created()


__all__ = ["Counter", "Enum", "Gauge", "Histogram", "Info", "Summary",
           "disable_created_metrics", "enable_created_metrics"]

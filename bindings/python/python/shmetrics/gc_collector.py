"""``GCCollector``: the garbage collector's counts per generation
(``python_gc_*``), as prometheus_client exports them (CPython)."""

from __future__ import annotations

import gc
import platform
from typing import Any, Iterator

from .metrics_core import CounterMetricFamily, Metric
from .registry import REGISTRY


class GCCollector:
    """``python_gc_objects_collected_total``,
    ``python_gc_objects_uncollectable_total`` and
    ``python_gc_collections_total`` by ``generation``."""

    def __init__(self, registry: Any = REGISTRY) -> None:
        if not hasattr(gc, "get_stats") or platform.python_implementation() != "CPython":
            return
        if registry is not None:
            registry.register(self)

    def collect(self) -> Iterator[Metric]:
        collected = CounterMetricFamily("python_gc_objects_collected",
                                        "Objects collected during gc", labels=["generation"])
        uncollectable = CounterMetricFamily("python_gc_objects_uncollectable",
                                            "Uncollectable objects found during GC", labels=["generation"])
        collections = CounterMetricFamily("python_gc_collections",
                                          "Number of times this generation was collected",
                                          labels=["generation"])
        for generation, stat in enumerate(gc.get_stats()):
            g = str(generation)
            collected.add_metric([g], value=stat["collected"])
            uncollectable.add_metric([g], value=stat["uncollectable"])
            collections.add_metric([g], value=stat["collections"])
        return iter([collected, uncollectable, collections])


GC_COLLECTOR = GCCollector()
"""The collector of this process, registered in ``REGISTRY`` as prometheus_client's is:
it shows on the pages rendered in the process (see docs/python.md)."""

__all__ = ["GCCollector", "GC_COLLECTOR"]

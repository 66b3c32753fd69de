"""``CollectorRegistry``: prometheus_client's registry, as a view over the
store plus the custom collectors registered in this process.

The store's families are already summed over all processes by the core;
``collect()`` reads them through one native snapshot and yields them as
``Metric`` objects, then runs each registered collector here, in the
process, as prometheus_client's multiprocess mode does."""

from __future__ import annotations

import math
import threading
from typing import Any, Dict, Iterable, Iterator, List, Optional, Protocol, Set, Tuple

from . import _native
from ._text import float_text
from .metrics_core import Metric

_SUFFIXES = {
    "counter": ("_total", "_created"),
    "summary": ("_sum", "_count", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "info": ("_info",),
}


class Collector(Protocol):
    """Anything with a ``collect()`` that yields ``Metric`` objects."""

    def collect(self) -> Iterable[Metric]: ...


class DuplicateTimeseries(ValueError):
    """A collector would add series names that another registered collector
    already produces."""

    def __init__(self, duplicates: Set[str]) -> None:
        super().__init__(f"duplicated timeseries in CollectorRegistry: {sorted(duplicates)}")


def _store_metric(name: str, help: str, unit: str, kind: str,
                  series: List[Tuple[List[Tuple[str, str]], Any, int]]) -> Metric:
    """One family of ``Store.collect()`` as a ``Metric`` with samples named
    as prometheus_client names them."""
    m = Metric(name, help, kind)
    m.unit = unit
    for pairs, value, _created in series:
        labels = dict(pairs)
        if kind == "counter":
            m.add_sample(name + "_total", labels, value)
        elif kind == "gauge":
            m.add_sample(name, labels, value)
        elif kind == "histogram":
            bounds, cumulative, total = value
            for le, count in zip(list(bounds) + [math.inf], cumulative):
                m.add_sample(name + "_bucket", {**labels, "le": float_text(le)}, float(count))
            m.add_sample(name + "_count", labels, float(cumulative[-1]))
            m.add_sample(name + "_sum", labels, total)
        else:
            count, total, quantiles = value
            for q, v in quantiles:
                m.add_sample(name, {**labels, "quantile": float_text(q)}, v)
            m.add_sample(name + "_count", labels, float(count))
            m.add_sample(name + "_sum", labels, total)
    return m


class StoreCollector:
    """The families of one store (``None``: the default store, looked up
    at each collection, which raises ``NotConfiguredError`` while no store
    is configured, so that a misconfigured process never serves an empty
    page)."""

    def __init__(self, store: Optional[_native.Store] = None) -> None:
        self.store = store

    def resolve(self) -> _native.Store:
        """The store collected."""
        return self.store if self.store is not None else _native.default_store()

    def collect(self) -> Iterator[Metric]:
        for family in self.resolve().collect():
            yield _store_metric(*family)


class CollectorRegistry:
    """The store's metrics, and the custom collectors registered here.

    Every metric lives in the store, whatever registry it was created
    with; ``register()`` takes custom collectors (objects whose
    ``collect()`` yields ``Metric`` objects), which run in this process
    whenever the registry is collected or rendered. Registering a
    shmetrics metric is accepted and changes nothing: it is in the store
    already."""

    def __init__(self, auto_describe: bool = False, target_info: Optional[Dict[str, str]] = None,
                 support_collectors_without_names: bool = False) -> None:
        self._auto_describe = auto_describe
        self._store = StoreCollector()
        self._lock = threading.Lock()
        self._collectors: Dict[Any, List[str]] = {}
        self._target_info: Optional[Dict[str, str]] = None
        self.set_target_info(target_info)

    @property
    def store_collector(self) -> StoreCollector:
        """The view of the store this registry shows."""
        return self._store

    def _show(self, view: StoreCollector) -> None:
        """Shows the store of ``view`` instead (``shmetrics.multiprocess``)."""
        self._store = view

    def _names(self, collector: Any) -> List[str]:
        describe = getattr(collector, "describe", None)
        if describe is None and self._auto_describe:
            describe = collector.collect
        names: List[str] = []
        for metric in describe() if describe is not None else ():
            names.append(metric.name)
            names.extend(metric.name + s for s in _SUFFIXES.get(metric.type, ()))
        return names

    def register(self, collector: Any) -> None:
        """Adds a custom collector. Its series names (from its
        ``describe()``, or ``collect()`` with ``auto_describe``) must not
        clash with another registered collector's."""
        if _is_store_metric(collector):
            return
        with self._lock:
            names = self._names(collector)
            taken = {n for ns in self._collectors.values() for n in ns}
            if self._target_info:
                taken.add("target_info")
            clash = taken.intersection(names)
            if clash or collector in self._collectors:
                raise DuplicateTimeseries(clash or set(names))
            self._collectors[collector] = names

    def unregister(self, collector: Any) -> None:
        """Removes a custom collector (a shmetrics metric stays in the
        store: use its ``clear()`` to drop its series)."""
        if _is_store_metric(collector):
            return
        with self._lock:
            del self._collectors[collector]

    def set_target_info(self, labels: Optional[Dict[str, str]]) -> None:
        """Sets (or, with ``None``, removes) the ``target_info`` metric."""
        with self._lock:
            if labels and any("target_info" in ns for ns in self._collectors.values()):
                raise ValueError("CollectorRegistry already has a target_info metric")
            self._target_info = dict(labels) if labels else None

    def get_target_info(self) -> Optional[Dict[str, str]]:
        """The labels of ``target_info``, if set."""
        with self._lock:
            return self._target_info

    def _own(self) -> Tuple[Optional[Metric], List[Any]]:
        """``target_info`` (if set) and the registered collectors."""
        with self._lock:
            collectors = list(self._collectors)
            target = self._target_info
        if not target:
            return None, collectors
        info = Metric("target", "Target metadata", "info")
        info.add_sample("target_info", target, 1)
        return info, collectors

    def collect(self) -> Iterator[Metric]:
        """``target_info``, the store's families, then each collector's."""
        info, collectors = self._own()
        if info is not None:
            yield info
        yield from self._store.collect()
        for c in collectors:
            yield from c.collect()

    def collect_custom(self) -> Iterator[Metric]:
        """What ``collect()`` yields but the store's families: what the
        in-process exposition writes after the store's native page."""
        info, collectors = self._own()
        if info is not None:
            yield info
        for c in collectors:
            yield from c.collect()

    def restricted_registry(self, names: Iterable[str]) -> "RestrictedRegistry":
        """A view of this registry with only the samples of these full
        names (``http_requests_total``, ``latency_seconds_bucket``), as
        ``?name[]=`` asks of the in-process exposition."""
        return RestrictedRegistry(names, self)

    def get_sample_value(self, name: str, labels: Optional[Dict[str, str]] = None) -> Optional[float]:
        """The value of the sample with this full name and exactly these
        labels, or ``None``. Meant for tests: it collects everything."""
        want = labels or {}
        for metric in self.collect():
            for s in metric.samples:
                if s.name == name and s.labels == want:
                    return s.value
        return None


class RestrictedRegistry:
    """A registry's samples of some names only; families left without
    samples are left out."""

    def __init__(self, names: Iterable[str], registry: CollectorRegistry) -> None:
        self._names = frozenset(names)
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        for m in self._registry.collect():
            kept = [s for s in m.samples if s.name in self._names]
            if kept:
                part = Metric(m.name, m.documentation, m.type)
                part.unit, part.samples = m.unit, kept
                yield part


def _is_store_metric(obj: Any) -> bool:
    from ._metrics import Enum, Info
    return isinstance(obj, (_native.Counter, _native.Gauge, _native.Histogram,
                            _native.Summary, Info, Enum))


REGISTRY = CollectorRegistry(auto_describe=True)
"""The default registry: the default store, and the collectors registered
in this process."""

__all__ = ["Collector", "CollectorRegistry", "DuplicateTimeseries", "REGISTRY", "RestrictedRegistry",
           "StoreCollector"]

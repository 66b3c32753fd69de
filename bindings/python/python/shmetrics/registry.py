"""``CollectorRegistry``: prometheus_client's registry, as a view over the
store plus the custom collectors registered in this process.

The store's families are already summed over all processes by the core;
``collect()`` reads them through one native snapshot and yields them as
``Metric`` objects, then runs each registered collector here, in the
process, as prometheus_client's multiprocess mode does."""

from __future__ import annotations

import math
import os
import threading
import weakref
from typing import AbstractSet, Any, Callable, Dict, Iterable, Iterator, List, Optional, Protocol, Set, Tuple

from . import _check, _metrics, _native, _publish, metrics
from .metrics import disable_created_metrics, enable_created_metrics
from .metrics_core import Metric

_SUFFIXES = {
    "counter": ("_total", "_created"),
    "summary": ("_sum", "_count", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "info": ("_info",),
}

float_text = _native.float_text


# Every registry, to give each a new lock in a forked child: a lock held by
# another thread at the fork (in collect(), register()) would be held
# there for good, as that thread does not exist in the child.
_REGISTRIES: "weakref.WeakSet[CollectorRegistry]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for r in list(_REGISTRIES):
        r._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Collector(Protocol):
    """Anything with a ``collect()`` that yields ``Metric`` objects."""

    def collect(self) -> Iterable[Metric]: ...


class DuplicateTimeseries(ValueError):
    """A collector would add series names that another registered collector
    already produces."""

    def __init__(self, duplicates: Set[str]) -> None:
        # prometheus_client's message, which libraries match.
        super().__init__(f"Duplicated timeseries in CollectorRegistry: {duplicates}")


def _use_created() -> bool:
    return metrics._use_created


def _store_metric(name: str, help: str, unit: str, kind: str,
                  series: List[Tuple[List[Tuple[str, str]], Any, int]],
                  retype: Optional[str] = None, created: bool = True) -> Metric:
    """One family of ``Store.collect()`` as a ``Metric`` with samples named
    as prometheus_client names them; ``retype`` (``info``, ``stateset``)
    for the gauges that hold an ``Info`` or an ``Enum``. Without
    ``created`` (a ``MultiProcessCollector``), as multiprocess mode reads
    them: no ``_created``, and a histogram with a negative bucket bound
    keeps its ``_sum``, which prometheus_client's registries leave out."""
    negative_bucket_sum = not created
    created = created and kind in ("counter", "histogram", "summary") and _use_created()
    if retype == "info":
        m = Metric(name[: -len("_info")], help, "info")
    elif retype == "stateset":
        m = Metric(name, help, "stateset")
    else:
        m = Metric(name, help, kind)
    m.unit = unit
    for pairs, value, created_ns in series:
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
            if negative_bucket_sum or not bounds or bounds[0] >= 0:
                m.add_sample(name + "_sum", labels, total)
        else:
            count, total, quantiles = value
            for q, v in quantiles:
                m.add_sample(name, {**labels, "quantile": float_text(q)}, v)
            m.add_sample(name + "_count", labels, float(count))
            m.add_sample(name + "_sum", labels, total)
        if created:
            m.add_sample(name + "_created", labels, created_ns / 1e9)
    return m


class StoreCollector:
    """The families of one store (``None``: the default store, looked up
    at each collection, which raises ``NotConfiguredError`` while no store
    is configured, so that a misconfigured process never serves an empty
    page)."""

    def __init__(self, store: Optional[_native.Store] = None,
                 retype: Optional[Dict[str, str]] = None, created: bool = True) -> None:
        self.store = store
        self.retype = retype if retype is not None else {}
        # Multiprocess mode's collector has no _created samples.
        self.created = created
        # Families left out: metrics unregistered from the registry that
        # shows this view (their series stay in the store) ...
        self.hidden: Set[str] = set()
        # ... and the names the registry's own collectors give, which run
        # in the process and so take those names on its pages (a family a
        # Publisher put in the store from such a collector is not shown
        # twice).
        self.taken: Callable[[], AbstractSet[str]] = frozenset

    def _skip(self) -> AbstractSet[str]:
        taken = self.taken()
        return self.hidden.union(taken) if taken else set(self.hidden)

    def shows(self, store: _native.Store) -> bool:
        """Whether this view shows ``store``."""
        mine = self.store
        if mine is None:
            try:
                mine = _native.default_store()
            except _native.NotConfiguredError:
                return False
        return mine is store or mine.path == store.path

    def resolve(self) -> _native.Store:
        """The store collected (the default store checked for a replaced
        file first: ``shmetrics.check_store``)."""
        if self.store is not None:
            return self.store
        store = _native.default_store()
        _check.check_store(store)
        return store

    def collect(self) -> Iterator[Metric]:
        store = self.resolve()
        _publish.run_functions(store)
        retype = self.retype or _RETYPE_DEFAULT
        skip = self._skip()
        for family in store.collect():
            if family[0] not in skip:
                yield _store_metric(*family, retype=retype.get(family[0]), created=self.created)

    def render(self, openmetrics: bool, escaping: str) -> bytes:
        """What ``collect()`` yields, written natively as prometheus_client
        writes it (without OpenMetrics' ``# EOF``)."""
        store = self.resolve()
        _publish.run_functions(store)
        return store.render_client_python(openmetrics, escaping, self.created and _use_created(),
                                          self.retype or _RETYPE_DEFAULT,
                                          negative_bucket_sum=not self.created, skip=self._skip() or None)


class CollectorRegistry:
    """Metrics created with it, the custom collectors registered here and,
    with a ``MultiProcessCollector``, a store's families.

    ``REGISTRY``, the default, shows the default store: the metrics that
    every process writes. Any other ``CollectorRegistry`` is a registry of
    its own, as in prometheus_client: empty when new, it keeps the metrics
    created with ``registry=`` it in a private store (an unlinked file,
    made when its first metric is, shared with the processes forked after
    that), whose gauges default to the mode ``shared`` (one value, no
    ``pid`` label). The exporter does not see a private store."""

    def __init__(self, auto_describe: bool = False, target_info: Optional[Dict[str, str]] = None,
                 support_collectors_without_names: bool = False, _default: bool = False) -> None:
        self._auto_describe = auto_describe
        self._nameless = support_collectors_without_names
        self._default = _default
        self._retype: Dict[str, str] = {}
        self._views: List[StoreCollector] = []
        # The private store new metrics go to (the last one made), and how
        # many private stores there are (their views come first).
        self._private: Optional[_native.Store] = None
        self._n_private = 0
        # The names the metrics unregistered from ``_private`` exposed: a
        # metric that would take one goes to a new private store, so that
        # it starts afresh as in prometheus_client (a store cannot remove a
        # family; the old one stays there, hidden).
        self._private_freed: Set[str] = set()
        # Info metrics of this registry not set yet (a registry of its own).
        self._pending_infos: List[Any] = []
        self._lock = threading.Lock()
        _REGISTRIES.add(self)
        self._collectors: Dict[Any, List[str]] = {}
        self._store_names: Dict[str, str] = {}
        # The metric objects created with this registry, by store family
        # name (what ``_collector_to_names`` lists).
        self._metrics: Dict[str, Any] = {}
        # The store view a ``MultiProcessCollector`` added: the metrics
        # created with this registry go to that store, as multiprocess
        # mode writes every metric to its files.
        self._shown: Optional[StoreCollector] = None
        # The family names unregistered from ``REGISTRY``: defined again
        # otherwise than in the store, they go to a store of their own.
        self._default_freed: Set[str] = set()
        # REGISTRY's process and default store path (``_new_epoch``).
        self._epoch: Optional[Tuple[int, str]] = None
        self._target_info: Optional[Dict[str, str]] = None
        if _default:
            self._views.append(self._view(StoreCollector(retype=self._retype)))
        self.set_target_info(target_info)

    def _view(self, view: StoreCollector) -> StoreCollector:
        """``view``, leaving out the names this registry's collectors give."""
        view.taken = self._collector_names
        return view

    def _collector_names(self) -> AbstractSet[str]:
        """The series names of the registered collectors."""
        with self._lock:
            return frozenset(n for ns in self._collectors.values() for n in ns)

    @property
    def store_collector(self) -> Optional[StoreCollector]:
        """The first store view this registry shows, if any."""
        return self._views[0] if self._views else None

    def _show(self, view: StoreCollector) -> None:
        """Shows the store of ``view`` too (``shmetrics.multiprocess``),
        unless it shows that store already."""
        with self._lock:
            for v in self._views:
                if v.store is view.store or (v.store is not None and view.store is not None
                                             and v.store.path == view.store.path):
                    if self._shown is None:
                        self._shown = v
                    return
            self._views.append(self._view(view))
            if self._shown is None:
                self._shown = view

    def _shmetrics_attach(self, name: str, kind: str, labelnames: List[str],
                          reserved: bool = False) -> Tuple[Optional[_native.Store], Optional[str]]:
        """Called by a metric created with ``registry=self``: the store it
        goes to (``None``: the default one) and the default gauge mode.
        A name this registry already has raises ``DuplicateTimeseries``
        (unless ``reserved`` by ``_shmetrics_reserve``)."""
        names = [name] + [name + s for s in _SUFFIXES.get(kind, ())]
        with self._lock:
            self._new_epoch()
            taken = {n for ns in self._collectors.values() for n in ns}
            if self._target_info:
                taken.add("target_info")
            # A name this registry has is refused, as prometheus_client's
            # registries refuse it (libraries catch it to reuse their first
            # metric). REGISTRY takes the same definition again (the store
            # hands back the same family; another definition raises the
            # store's ConflictError), unless code runs through
            # install_as_prometheus_client(), which gets prometheus_client's
            # rule (for this process's names: other processes' definitions
            # of a name are the same family).
            clash = taken.union(self._own_names()).intersection(names)
            if clash and not reserved:
                raise DuplicateTimeseries(clash)
            if self._default or self._shown is not None:
                for n in names:
                    self._store_names[n] = name
                store = None if self._default or self._shown is None else self._shown.store
                return store, _default_gauge_mode()
            if self._private is None or self._private_freed.intersection(names):
                self._private = _private_store()
                self._private_freed = set()
                self._views.insert(self._n_private, self._view(StoreCollector(self._private, self._retype)))
                self._n_private += 1
            for n in names:
                self._store_names[n] = name
            return self._private, "shared"

    def _shmetrics_registered(self, name: str, store: _native.Store) -> None:
        """Called once a metric created with this registry is in ``store``
        (by the native constructors): a family of that name that
        ``unregister()`` hid there shows again."""
        with self._lock:
            views = [v for v in self._views if name in v.hidden]
        for v in views:
            if v.shows(store):
                v.hidden.discard(name)

    def _own_names(self) -> AbstractSet[str]:
        """The names of this registry's metrics that a new metric may not
        take (see ``_shmetrics_attach``)."""
        if self._default and not _compat():
            return frozenset()
        return self._store_names.keys()

    def _new_epoch(self) -> None:
        """``REGISTRY`` lists the metrics this process created in the
        default store; in a forked child, or once another default store is
        configured, that list starts again (the child's or the new store's
        metrics are not yet created there). Called with the lock held."""
        if not self._default:
            return
        import os
        try:
            path = str(_native.default_store().path)
        except _native.NotConfiguredError:
            return
        epoch = (os.getpid(), path)
        if self._epoch != epoch:
            self._epoch = epoch
            self._store_names.clear()
            self._metrics.clear()
            self._default_freed.clear()

    def _shmetrics_redefine(self, name: str, kind: str) -> Optional[_native.Store]:
        """Called when the store refused a metric's definition
        (``ConflictError``): if a metric of that name was unregistered
        from this registry, the new definition goes to a store of its own
        (made here, shown by this registry in the old family's place), as
        prometheus_client takes any definition once the old metric is
        unregistered; else ``None`` (the error stands). The store cannot
        drop the old family, which another process may be writing, so the
        exporter keeps serving the old one."""
        with self._lock:
            freed = self._default_freed if (self._default or self._shown is not None) else self._private_freed
            if name not in freed:
                return None
            freed.discard(name)
            store = _private_store()
            self._views.insert(self._n_private, self._view(StoreCollector(store, self._retype)))
            self._n_private += 1
            return store

    def _shmetrics_track(self, metric: Any) -> bool:
        """Called once a metric created with this registry is made: it is
        listed in ``_collector_to_names`` until unregistered. True if a
        metric of its name was unregistered from this registry and the
        store still holds that family: the new metric then drops its
        series, to start from zero as in prometheus_client."""
        name = _store_name(metric)
        with self._lock:
            self._metrics[name] = metric
            if name in self._default_freed:
                self._default_freed.discard(name)
                return True
            return False

    @property
    def _collector_to_names(self) -> Dict[Any, List[str]]:
        """prometheus_client's map of each registered collector to the
        series names it gives: the custom collectors, and the metrics
        created with this registry."""
        with self._lock:
            out: Dict[Any, List[str]] = {c: list(ns) for c, ns in self._collectors.items()}
            for family, metric in self._metrics.items():
                out[metric] = sorted(n for n, owner in self._store_names.items() if owner == family)
            return out

    @property
    def _names_to_collectors(self) -> Dict[str, Any]:
        """prometheus_client's map of each series name to its collector."""
        return {n: c for c, ns in self._collector_to_names.items() for n in ns}

    def _shmetrics_pending_info(self, info: Any) -> None:
        """An ``Info`` created with this registry: in a registry of its own
        it shows empty (``name_info 1.0``, one sample per child made by
        ``labels()``) until its first ``info()`` call, as prometheus_client
        shows a new Info. (Its keys become the store's label names, so it
        has no series in the store until then.)"""
        if not self._default:
            with self._lock:
                self._pending_infos.append(info)

    def _pending(self) -> List[Metric]:
        """The Info metrics not set yet, as prometheus_client shows them."""
        with self._lock:
            infos = list(self._pending_infos)
        out = []
        for i in infos:
            if i._shared.get("gauge") is not None:
                continue
            m = Metric(i._name, i._documentation, "info")
            if not i._labelnames:
                m.add_sample(i._name + "_info", {}, 1.0)
            for values in list(i._children):
                m.add_sample(i._name + "_info", dict(zip(i._labelnames, values)), 1.0)
            out.append(m)
        return out

    def _shmetrics_retype(self, family: str, kind: str) -> None:
        """Marks the store family ``family`` as holding an ``Info``
        (``info``) or ``Enum`` (``stateset``)."""
        with self._lock:
            self._retype[family] = kind

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
            taken = {n for ns in self._collectors.values() for n in ns}.union(self._store_names)
            if self._target_info:
                taken.add("target_info")
            clash = taken.intersection(names)
            if clash or collector in self._collectors:
                raise DuplicateTimeseries(clash or set(names))
            self._collectors[collector] = names

    def unregister(self, collector: Any) -> None:
        """Removes a custom collector, or a metric created with this
        registry: see ``_unregister_metric``."""
        if _is_store_metric(collector):
            self._unregister_metric(collector)
            return
        with self._lock:
            del self._collectors[collector]

    def _unregister_metric(self, metric: Any) -> None:
        """A shmetrics metric leaves this registry: its family is no longer
        shown by the registry (pages, ``collect()``, ``get_sample_value``)
        and its names are free here. The store cannot remove a family
        (another process may be writing it), so its series stay there and
        the exporter still serves them: ``clear()`` drops them. Created
        again with this registry, a metric of that name is, in ``REGISTRY``,
        the same family again (another definition still raises
        ``ConflictError``), and in a registry of its own a new metric that
        starts afresh (in a new private store, if the old family's names
        would clash)."""
        name = _store_name(metric)
        store = _metric_store(metric)
        with self._lock:
            freed = [n for n, owner in self._store_names.items() if owner == name]
            for n in freed:
                del self._store_names[n]
            if store is None or store is self._private:
                self._private_freed.update(freed)
            if self._default or self._shown is not None:
                self._default_freed.add(name)
            if self._metrics.get(name) is metric:
                del self._metrics[name]
            self._pending_infos = [i for i in self._pending_infos if i is not metric]
            views = list(self._views)
        for v in views:
            if store is None or v.shows(store):
                v.hidden.add(name)

    def _shmetrics_reserve(self, name: str, kind: str) -> None:
        """Takes the names of a metric made later (an ``Info``'s gauge is
        made by its first ``info()``), refusing a clash now."""
        names = [name] + [name + s for s in _SUFFIXES.get(kind, ())]
        with self._lock:
            self._new_epoch()
            taken = {n for ns in self._collectors.values() for n in ns}
            if self._target_info:
                taken.add("target_info")
            clash = taken.union(self._own_names()).intersection(names)
            if clash:
                raise DuplicateTimeseries(clash)
            for n in names:
                self._store_names[n] = name

    @property
    def _shmetrics_private(self) -> bool:
        """Whether the metrics created with this registry are its own
        (every registry but ``REGISTRY``)."""
        return not self._default

    def set_target_info(self, labels: Optional[Dict[str, str]]) -> None:
        """Sets (or, with ``None``, removes) the ``target_info`` metric."""
        with self._lock:
            if labels and ("target_info" in self._store_names
                           or any("target_info" in ns for ns in self._collectors.values())):
                raise ValueError("CollectorRegistry already has a target_info metric")
            self._target_info = dict(labels) if labels else None

    def get_target_info(self) -> Optional[Dict[str, str]]:
        """The labels of ``target_info``, if set."""
        with self._lock:
            return self._target_info

    def _own(self) -> Tuple[Optional[Metric], List[Any]]:
        """``target_info`` (if set) and the registered collectors."""
        with self._lock:
            collectors = ([_PendingInfos(self)] if self._pending_infos else []) + list(self._collectors)
            target = self._target_info
        if not target:
            return None, collectors
        info = Metric("target", "Target metadata", "info")
        info.add_sample("target_info", target, 1)
        return info, collectors

    def collect(self) -> Iterator[Metric]:
        """``target_info``, the stores' families, then each collector's."""
        info, collectors = self._own()
        if info is not None:
            yield info
        for view in list(self._views):
            yield from view.collect()
        for c in collectors:
            yield from c.collect()

    def _parts(self) -> Iterator[Any]:
        """What ``collect()`` yields, with each store view as itself (a
        ``StoreCollector``, which the exposition renders natively) rather
        than as its ``Metric`` objects."""
        info, collectors = self._own()
        if info is not None:
            yield info
        yield from list(self._views)
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
    samples are left out, and collectors whose names (from
    ``describe()``) are all outside are not run."""

    def __init__(self, names: Iterable[str], registry: CollectorRegistry) -> None:
        self._names = frozenset(names)
        self._registry = registry

    def _metrics(self) -> Iterator[Metric]:
        r = self._registry
        info, _ = r._own()
        if info is not None and "target_info" in self._names:
            yield info
        for view in list(r._views):
            yield from view.collect()
        yield from r._pending()
        with r._lock:
            collectors = [(c, names) for c, names in r._collectors.items()
                          if self._names.intersection(names) or (not names and r._nameless)]
        for c, _names in collectors:
            yield from c.collect()

    def collect(self) -> Iterator[Metric]:
        for m in self._metrics():
            kept = [s for s in m.samples if s.name in self._names]
            if kept:
                part = Metric(m.name, m.documentation, m.type)
                part.unit, part.samples = m.unit, kept
                yield part


class _PendingInfos:
    """The ``Info`` metrics of a registry not set yet, as a collector."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        return iter(self._registry._pending())


def _metric_store(obj: Any) -> Optional[_native.Store]:
    """The store a shmetrics metric is in (``None``: an ``Info`` not set
    yet, which is in none)."""
    if isinstance(obj, _metrics.Info):
        gauge = obj._shared.get("gauge")
        return None if gauge is None else gauge._store
    if isinstance(obj, _metrics.Enum):
        return obj._gauge._store
    return obj._store


def _store_name(obj: Any) -> str:
    """The store family name of a shmetrics metric."""
    if isinstance(obj, _metrics.Info):
        return obj._name + "_info"
    if isinstance(obj, _metrics.Enum):
        return obj._gauge._name
    return obj._name


def _is_store_metric(obj: Any) -> bool:
    return isinstance(obj, (_native.Counter, _native.Gauge, _native.Histogram,
                            _native.Summary, _metrics.Info, _metrics.Enum))


def _compat() -> bool:
    """Whether ``install_as_prometheus_client()`` made ``prometheus_client``
    this package: code written for it gets its defaults."""
    import sys
    return bool(getattr(sys.modules.get("prometheus_client"), "__shmetrics__", False))


def _default_gauge_mode() -> Optional[str]:
    """The gauge mode of a metric created without ``multiprocess_mode``
    in the default store (``None``: the core's default, ``all``, one
    series per process labelled ``pid``). Code run unchanged through
    ``install_as_prometheus_client()`` gets prometheus_client's defaults:
    ``all`` in its multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set),
    else one value without ``pid`` (``shared``), as a single-process
    gauge is."""
    import os
    if not _compat():
        return None
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir"):
        return None
    return "shared"


def _private_store() -> _native.Store:
    """A store of one registry's own: a file made in /dev/shm (or the
    temporary directory), opened, and unlinked at once, so nothing is left
    behind and no other process can open it by name."""
    import os
    import tempfile
    where = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    fd, path = tempfile.mkstemp(prefix="shmetrics-registry-", suffix=".shm", dir=where)
    os.close(fd)
    os.unlink(path)
    try:
        return _native.Store(path, create=True, max_series=4096, label_bytes=1 << 20, max_writers=8)
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


class _NoRegistry:
    """What ``registry=None`` gives a metric, as in prometheus_client: no
    registry lists it (so no name clash is checked); it goes to the default
    store, which ``REGISTRY`` and the exporter show."""

    def _shmetrics_attach(self, name: str, kind: str, labelnames: List[str]) -> Tuple[None, Optional[str]]:
        return None, _default_gauge_mode()


NO_REGISTRY = _NoRegistry()

_RETYPE_DEFAULT: Dict[str, str] = {}

REGISTRY = CollectorRegistry(auto_describe=True, _default=True)
_RETYPE_DEFAULT = REGISTRY._retype
"""The default registry: the default store, and the collectors registered
in this process."""

# The modules below this one take the registry of a metric made without
# one from here: handed down, since they do not import this module back.
_native._provide(REGISTRY=REGISTRY, NO_REGISTRY=NO_REGISTRY)
_metrics._provide_registry(REGISTRY)

__all__ = ["Collector", "CollectorRegistry", "DuplicateTimeseries", "REGISTRY", "RestrictedRegistry",
           "StoreCollector", "disable_created_metrics", "enable_created_metrics"]

"""Values computed in the process (``Gauge.set_function``), set into the
store whenever this process collects it, so that the in-process pages and
the exporter, which runs elsewhere, both see them.

Nothing here is on the update path: a gauge with a function costs its
callers nothing; the function runs only when a registry of this process
collects the store, or when ``shmetrics.publish.Publisher`` ticks."""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, List, Tuple

_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    # A lock held by another thread at the fork would be held for good in
    # the child, where that thread does not exist.
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
# Per store object (by identity): the gauges with a function, by gauge.
_FUNCTIONS: Dict[int, Dict[int, Tuple[Any, Callable[[], float]]]] = {}


def set_function(gauge: Any, f: Callable[[], float]) -> None:
    """Makes ``gauge`` (an observable ``Gauge``) take ``f()`` as its value
    whenever the store is collected in this process."""
    if not callable(f):
        raise TypeError(f"set_function() takes a function, not {type(f).__name__}")
    with _LOCK:
        _FUNCTIONS.setdefault(id(gauge._store), {})[id(gauge)] = (gauge, f)
    gauge.set(float(f()))


def functions(store: Any) -> List[Tuple[Any, Callable[[], float]]]:
    """The gauges with a function in ``store``, and their functions."""
    with _LOCK:
        return list(_FUNCTIONS.get(id(store), {}).values())


def run_functions(store: Any) -> None:
    """Sets each function gauge of ``store`` to its function's value. A
    function that raises leaves its gauge as it was; the error is the
    application's, and is raised after the others have run."""
    error = None
    for gauge, f in functions(store):
        try:
            gauge.set(float(f()))
        except Exception as e:  # noqa: BLE001 - re-raised below, unchanged
            error = error or e
    if error is not None:
        raise error


class Publisher:
    """Publishes what only this process can compute into the store, so the
    exporter (another process) serves it too: every ``interval`` seconds,
    from a daemon thread of this process, the ``set_function`` gauges of
    the store are set, and each custom collector registered in
    ``registry`` is collected and its families written to the store:
    gauges (and unknown, info and stateset samples) as gauges of mode
    ``gauge_mode`` (default ``liveall``: one series per process, labelled
    ``pid``, gone when the process dies), counters as counters, by the
    increase since the last tick (so a dead process's counts stay, as a
    counter's do). Histograms and summaries of collectors are not
    published (their buckets are cumulative snapshots the store cannot
    merge); they stay on the in-process page.

    Nothing of this runs on the update path: publishing costs the
    application's updates nothing (benches/python). Start one per process,
    after forking (gunicorn's ``post_fork`` hook): threads do not survive
    ``fork``."""

    def __init__(self, registry: Any = None, interval: float = 15.0, gauge_mode: str = "liveall",
                 store: Any = None) -> None:
        from . import _native
        from .registry import REGISTRY
        self.registry = REGISTRY if registry is None else registry
        self.interval = interval
        self.gauge_mode = gauge_mode
        self.store = store if store is not None else _native.default_store()
        self._metrics: Dict[Tuple[str, str, Tuple[str, ...]], Any] = {}
        self._last: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float] = {}
        self._stop = threading.Event()
        self._thread: Any = None

    def _metric(self, kind: str, name: str, help: str, labelnames: Tuple[str, ...]) -> Any:
        from ._metrics import Counter, Gauge
        key = (kind, name, labelnames)
        m = self._metrics.get(key)
        if m is None:
            if kind == "counter":
                m = Counter(name, help, labelnames, registry=self.store)
            else:
                m = Gauge(name, help, labelnames, registry=self.store, multiprocess_mode=self.gauge_mode)
            self._metrics[key] = m
        return m

    def publish(self) -> None:
        """One tick: functions and collectors, now."""
        run_functions(self.store)
        with self.registry._lock:
            collectors = list(self.registry._collectors)
        for collector in collectors:
            for family in collector.collect():
                kind = family.type
                if kind in ("histogram", "summary", "gaugehistogram"):
                    continue
                for s in family.samples:
                    if kind == "counter" and not s.name.endswith("_total"):
                        continue  # _created: the store keeps its own
                    names = tuple(s.labels)
                    values = tuple(s.labels[n] for n in names)
                    if kind == "counter":
                        m = self._metric("counter", s.name[: -len("_total")], family.documentation, names)
                        key = (s.name, tuple(s.labels.items()))
                        delta = float(s.value) - self._last.get(key, 0.0)
                        if delta < 0:  # the source restarted from zero
                            delta = float(s.value)
                        self._last[key] = float(s.value)
                        if delta > 0:
                            (m.labels(*values) if names else m).inc(delta)
                    else:
                        m = self._metric("gauge", s.name, family.documentation, names)
                        (m.labels(*values) if names else m).set(float(s.value))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.publish()
            except Exception:  # noqa: BLE001 - a collector's error must not end the thread
                pass

    def start(self) -> "Publisher":
        """Publishes once now, then every ``interval`` seconds."""
        self.publish()
        self._thread = threading.Thread(target=self._run, name="shmetrics-publisher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops the thread (what was published stays until the process
        exits; ``live`` gauges leave then)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def start_publisher(registry: Any = None, interval: float = 15.0, gauge_mode: str = "liveall") -> Publisher:
    """Starts a ``Publisher`` for ``registry`` (default ``REGISTRY``) and
    the default store."""
    return Publisher(registry, interval, gauge_mode).start()

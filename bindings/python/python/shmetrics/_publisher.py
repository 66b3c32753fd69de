"""``Publisher``: publishes what only this process can compute (the
``set_function`` gauges of ``_publish.py``, the custom collectors of a
registry) into the store, from a thread of the process, so that the
exporter, which runs elsewhere, serves it too.

A module apart from ``_publish.py``: the registries call that one when
they collect, so it sits below ``registry``; this one uses a registry, so
it sits above."""

from __future__ import annotations

import threading
from typing import Any, Dict, Tuple

from . import _native, _publish
from ._metrics import Counter, Gauge
from .registry import REGISTRY


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
        self.registry = REGISTRY if registry is None else registry
        self.interval = interval
        self.gauge_mode = gauge_mode
        self.store = store if store is not None else _native.default_store()
        self._metrics: Dict[Tuple[str, str, Tuple[str, ...]], Any] = {}
        self._last: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float] = {}
        self._stop = threading.Event()
        self._thread: Any = None

    def _metric(self, kind: str, name: str, help: str, labelnames: Tuple[str, ...]) -> Any:
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
        _publish.run_functions(self.store)
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

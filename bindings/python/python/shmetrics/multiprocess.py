"""prometheus_client's ``multiprocess`` module, for code written for its
multiprocess mode: the names it imports, doing what the store needs.

The store is already shared by every process, so there are no files to
merge and nothing to clean up when a worker dies:

    from shmetrics import CollectorRegistry, generate_latest, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)   # the registry shows the store
    page = generate_latest(registry)

    def child_exit(server, worker):                # gunicorn's hook
        multiprocess.mark_process_dead(worker.pid)  # accepted; nothing to do
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional, Union

from . import _native
from .metrics_core import Metric
from .registry import CollectorRegistry, StoreCollector


def _store_at(path: Union[str, "os.PathLike[str]"]) -> _native.Store:
    """The store of a multiprocess ``path``: the file ``shmetrics.shm`` in
    it if it is a directory (as ``PROMETHEUS_MULTIPROC_DIR`` is read), else
    the store file at ``path``."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, _native.MULTIPROC_STORE_FILE)
    return _native.Store(path)


def _check_path(path: Optional[Union[str, "os.PathLike[str]"]]) -> None:
    """Refuses (``ValueError``, as prometheus_client does) a ``path`` that
    does not exist and, without ``path``, a ``PROMETHEUS_MULTIPROC_DIR``
    that is not a directory, or no store at all (neither that variable
    nor ``SHMETRICS_STORE``/``configure()``)."""
    if path is not None:
        if not os.path.exists(path):
            raise ValueError(f"{os.fspath(path)!r} is neither a multiprocess directory nor a store file")
        return
    env = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")
    if env and not os.path.isdir(env):
        raise ValueError(f"env PROMETHEUS_MULTIPROC_DIR ({env!r}) is not a directory")
    if not env and not os.environ.get("SHMETRICS_STORE"):
        try:
            _native.default_store()
        except _native.NotConfiguredError:
            raise ValueError("env PROMETHEUS_MULTIPROC_DIR is not set and no store is configured "
                             "(SHMETRICS_STORE or shmetrics.configure())") from None


class MultiProcessCollector:
    """The store's families, all processes summed, as a collector.

    ``path`` is a multiprocess directory (the store is the file
    ``shmetrics.shm`` in it) or a store file; ``None`` means the default
    store (``SHMETRICS_STORE``, else ``PROMETHEUS_MULTIPROC_DIR``). Given
    a ``CollectorRegistry``, the registry shows that store: it already
    shows the default one, so for ``path=None`` nothing changes and no
    family is counted twice. Any other registry gets the collector
    registered in it."""

    def __init__(self, registry: Optional[Any], path: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        _check_path(path)
        self._view = StoreCollector(_store_at(path) if path is not None else None, created=False)
        if isinstance(registry, CollectorRegistry):
            registry._show(self._view)
        elif registry is not None:
            registry.register(self)

    def collect(self) -> Iterator[Metric]:
        """The store's families."""
        return self._view.collect()


def mark_process_dead(pid: int, path: Optional[str] = None) -> None:
    """Accepted for gunicorn's ``child_exit`` hook; there is nothing to do.

    The store knows each writer's process (pid and start time) and checks
    that it is alive whenever it is read, so a dead worker's ``live*``
    gauges leave the page at the next scrape, its other values stay
    counted (as multiprocess mode keeps them), and its writer slot goes to
    the next process that starts."""
    if not isinstance(pid, int):
        raise TypeError(f"mark_process_dead() takes a process id, not {type(pid).__name__}")


__all__ = ["MultiProcessCollector", "mark_process_dead"]

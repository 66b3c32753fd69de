"""Values computed in the process (``Gauge.set_function``), set into the
store whenever this process collects it, so that the in-process pages and
the exporter, which runs elsewhere, both see them.

Nothing here is on the update path: a gauge with a function costs its
callers nothing; the function runs only when a registry of this process
collects the store, or when a ``shmetrics.Publisher`` (``_publisher.py``)
ticks."""

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

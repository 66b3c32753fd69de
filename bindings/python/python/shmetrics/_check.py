"""Following a store file that was replaced: a long-lived worker notices
that the store's path names another file (removed and created again by a
deploy script, or by ``rm`` and a restarted exporter) and opens it again,
so that its updates land in the file the exporter serves.

``Store.check()`` costs an ``fstat`` and an ``lstat`` (a few microseconds),
too much for every update, so it runs between requests at most once per
interval (``CheckStoreMiddleware``, ``CheckStoreASGIMiddleware``), on a
timer thread (``start_store_check``), before every in-process page of the
default store, or when called."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable, List, Optional

from . import _native


def check_store(store: Optional[_native.Store] = None) -> bool:
    """Checks ``store`` (default: the default store, if one is open) and
    opens its path again if it names another file than the one mapped.
    Returns whether it did. A file that cannot be opened (half-created, or
    refused) is left for the next check."""
    if store is None:
        try:
            store = _native.default_store()
        except _native.NotConfiguredError:
            return False
    try:
        return store.check()
    except _native.StoreFileError:
        return False


class _Every:
    """Runs ``check_store`` at most once per ``interval`` seconds."""

    def __init__(self, interval: float, stores: Optional[List[_native.Store]]) -> None:
        self.interval_ns = int(interval * 1e9)
        self.stores = stores
        self.next = 0

    def __call__(self) -> None:
        now = time.monotonic_ns()
        if now < self.next:
            return
        self.next = now + self.interval_ns
        for s in self.stores if self.stores is not None else [None]:
            check_store(s)


class CheckStoreMiddleware:
    """WSGI middleware: before a request, at most once per ``interval``
    seconds, checks the stores (``stores``, default the default store) for
    a replaced file and opens it again.

        app = shmetrics.CheckStoreMiddleware(app, interval=1.0)
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], interval: float = 1.0,
                 stores: Optional[List[_native.Store]] = None) -> None:
        self.app = app
        self._every = _Every(interval, stores)

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        self._every()
        return self.app(environ, start_response)


class CheckStoreASGIMiddleware:
    """The same for an ASGI app (Starlette, FastAPI: ``app.add_middleware
    (shmetrics.CheckStoreASGIMiddleware)``)."""

    def __init__(self, app: Callable[..., Any], interval: float = 1.0,
                 stores: Optional[List[_native.Store]] = None) -> None:
        self.app = app
        self._every = _Every(interval, stores)

    async def __call__(self, scope: dict, receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope.get("type") == "http":
            self._every()
        await self.app(scope, receive, send)


class StoreCheck:
    """A daemon thread of this process that checks the stores every
    ``interval`` seconds. Threads do not survive ``fork``: start it in each
    worker (gunicorn's ``post_fork`` hook)."""

    def __init__(self, interval: float = 1.0, stores: Optional[List[_native.Store]] = None) -> None:
        self.interval = interval
        self.stores = stores
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "StoreCheck":
        self._thread = threading.Thread(target=self._run, name="shmetrics-store-check", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for s in self.stores if self.stores is not None else [None]:
                check_store(s)

    def stop(self) -> None:
        """Stops the thread and waits for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def start_store_check(interval: float = 1.0, stores: Optional[List[_native.Store]] = None) -> StoreCheck:
    """Starts a ``StoreCheck`` thread."""
    return StoreCheck(interval, stores).start()


__all__ = ["CheckStoreASGIMiddleware", "CheckStoreMiddleware", "StoreCheck", "check_store",
           "start_store_check"]

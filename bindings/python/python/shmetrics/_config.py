"""Choosing the store."""

from __future__ import annotations

import os
from typing import Optional, Union

from . import _native


def configure(path: Optional[Union[str, "os.PathLike[str]"]] = None, *, create: bool = True,
              mode: int = 0o600, max_series: Optional[int] = None,
              max_families: Optional[int] = None, label_bytes: Optional[int] = None,
              max_writers: Optional[int] = None) -> _native.Store:
    """Opens (or creates) the store at ``path`` and makes it the default for
    metrics created from now on. Without ``path``, ``SHMETRICS_STORE`` names
    it, or else ``PROMETHEUS_MULTIPROC_DIR`` names the directory of the file
    ``shmetrics.shm``.

    The path is also put in ``os.environ["SHMETRICS_STORE"]``, so processes
    started from this one (``multiprocessing`` with the spawn method,
    subprocesses) attach to the same store. Capacities apply only when the
    file is created."""
    if path is None:
        path = _native.store_path_from_env()
        if path is None:
            raise _native.NotConfiguredError(
                "configure() needs a path, or the SHMETRICS_STORE environment variable "
                "(or prometheus_client's PROMETHEUS_MULTIPROC_DIR, for a store file in it)")
    path = os.fspath(path)
    store = _native.Store(path, create=create, mode=mode, max_series=max_series,
                          max_families=max_families, label_bytes=label_bytes,
                          max_writers=max_writers)
    _native.set_default_store(store)
    os.environ[_native.STORE_ENV] = path
    return store


def default_store() -> _native.Store:
    """The store metrics go to unless given another: the one ``configure()``
    opened, else the file ``SHMETRICS_STORE`` names, else ``shmetrics.shm``
    in the directory ``PROMETHEUS_MULTIPROC_DIR`` names."""
    return _native.default_store()

"""``install_as_prometheus_client()``: makes ``import prometheus_client``
(and its submodules) give shmetrics, for code that is to run unchanged.
Opt-in, and only for names that are not imported yet."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Dict

# prometheus_client's module -> the shmetrics module that stands for it.
MODULES: Dict[str, str] = {
    "prometheus_client": "shmetrics",
    "prometheus_client.core": "shmetrics.core",
    "prometheus_client.registry": "shmetrics.registry",
    "prometheus_client.metrics": "shmetrics.metrics",
    "prometheus_client.metrics_core": "shmetrics.metrics_core",
    "prometheus_client.samples": "shmetrics.samples",
    "prometheus_client.exposition": "shmetrics._exposition",
    "prometheus_client.multiprocess": "shmetrics.multiprocess",
    "prometheus_client.openmetrics": "shmetrics.openmetrics",
    "prometheus_client.openmetrics.exposition": "shmetrics.openmetrics.exposition",
    "prometheus_client.process_collector": "shmetrics.process_collector",
    "prometheus_client.platform_collector": "shmetrics.platform_collector",
    "prometheus_client.gc_collector": "shmetrics.gc_collector",
    "prometheus_client.asgi": "shmetrics.asgi",
    "prometheus_client.decorator": "shmetrics.decorator",
    "prometheus_client.validation": "shmetrics.validation",
    "prometheus_client.utils": "shmetrics.utils",
    "prometheus_client.bridge": "shmetrics.bridge",
    "prometheus_client.bridge.graphite": "shmetrics.bridge.graphite",
}
# Imported only if their framework is installed.
OPTIONAL: Dict[str, str] = {
    "prometheus_client.aiohttp": "shmetrics.aiohttp",
    "prometheus_client.django": "shmetrics.django",
    "prometheus_client.twisted": "shmetrics.twisted",
}


def install_as_prometheus_client() -> None:
    """Puts shmetrics's modules in ``sys.modules`` under prometheus_client's
    names, so that ``import prometheus_client``, ``from prometheus_client
    import Counter`` and ``from prometheus_client.multiprocess import
    MultiProcessCollector`` give shmetrics's. Refused (``RuntimeError``)
    if prometheus_client itself is already imported: the two would mix."""
    real = sys.modules.get("prometheus_client")
    if real is not None and not getattr(real, "__shmetrics__", False):
        raise RuntimeError("prometheus_client is already imported; call "
                           "shmetrics.install_as_prometheus_client() before anything imports it")
    for alias, target in list(MODULES.items()) + list(OPTIONAL.items()):
        try:
            module = importlib.import_module(target)
        except ImportError:
            if alias in OPTIONAL:
                continue
            raise
        sys.modules[alias] = module
        parent, _, child = alias.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)


def public_module(module: str) -> str:
    """The name ``module`` (a shmetrics module) is imported by: its
    prometheus_client name where ``install_as_prometheus_client()`` made
    that name give this very module, else its own."""
    target = sys.modules.get(module)
    for alias, name in MODULES.items():
        if name == module and target is not None and sys.modules.get(alias) is target:
            return alias
    return module


__all__ = ["install_as_prometheus_client", "MODULES", "public_module"]

"""``PlatformCollector``: ``python_info``, the interpreter's version and
implementation (and the JVM's on Jython), as prometheus_client exports it."""

from __future__ import annotations

import platform as pf
from typing import Any, Dict, Iterator, Optional

from .metrics_core import GaugeMetricFamily, Metric
from .registry import REGISTRY


class PlatformCollector:
    """``python_info`` with the labels ``version``, ``implementation``,
    ``major``, ``minor``, ``patchlevel`` (and ``jvm_*`` on Java)."""

    def __init__(self, registry: Any = REGISTRY, platform: Optional[Any] = None) -> None:
        self._platform = pf if platform is None else platform
        info = self._info()
        self._metrics = [self._family("python_info", "Python platform information", info)]
        if registry is not None:
            registry.register(self)

    def _info(self) -> Dict[str, str]:
        p = self._platform
        major, minor, patchlevel = p.python_version_tuple()
        info = {"version": p.python_version(), "implementation": p.python_implementation(),
                "major": major, "minor": minor, "patchlevel": patchlevel}
        if p.system() == "Java":
            _release, _vendor, vm, _os = p.java_ver()
            info.update({"jvm_version": _release, "jvm_release": vm[1], "jvm_vendor": vm[2],
                         "jvm_name": vm[0]})
        return info

    @staticmethod
    def _family(name: str, help: str, labels: Dict[str, str]) -> Metric:
        f = GaugeMetricFamily(name, help, labels=list(labels))
        f.add_metric(list(labels.values()), 1)
        return f

    def collect(self) -> Iterator[Metric]:
        return iter(self._metrics)


PLATFORM_COLLECTOR = PlatformCollector()
"""The collector of this process, registered in ``REGISTRY`` as prometheus_client's is:
it shows on the pages rendered in the process (see docs/python.md)."""

__all__ = ["PlatformCollector", "PLATFORM_COLLECTOR"]

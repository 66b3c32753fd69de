"""``GraphiteBridge``: pushes a registry's samples to Graphite's plaintext
protocol, once (``push``) or from a daemon thread (``start``)."""

from __future__ import annotations

import re
import socket
import threading
import time
from typing import Any, Callable, Tuple

from .._native import float_text
from ..registry import REGISTRY

_UNSAFE = re.compile(r"[^a-zA-Z0-9_]")


def _sanitize(s: str) -> str:
    return _UNSAFE.sub("_", s)


class GraphiteBridge:
    """Sends every sample of ``registry`` to the Graphite server at
    ``address`` (host, port): labels become path parts (``name.k.v``) or,
    with ``tags``, Graphite tags (``name;k=v``)."""

    def __init__(self, address: Tuple[str, int], registry: Any = REGISTRY, timeout_seconds: float = 30,
                 _timer: Callable[[], float] = time.time, tags: bool = False) -> None:
        self._address = address
        self._registry = registry
        self._timeout = timeout_seconds
        self._timer = _timer
        self._tags = tags

    def _line(self, prefix: str, name: str, labels: Any, value: float, now: int) -> str:
        if self._tags:
            path = name + "".join(f";{k}={_sanitize(v)}" for k, v in sorted(labels.items()))
        else:
            path = name + "".join(f".{k}.{_sanitize(v)}" for k, v in sorted(labels.items()))
        return f"{prefix}{path} {float_text(value)} {now}\n"

    def push(self, prefix: str = "") -> None:
        """Sends the registry's samples now."""
        now = int(self._timer())
        pre = prefix + "." if prefix else ""
        lines = [self._line(pre, s.name, s.labels, s.value, now)
                 for metric in self._registry.collect() for s in metric.samples]
        with socket.create_connection(self._address, self._timeout) as conn:
            conn.sendall("".join(lines).encode("ascii"))

    def start(self, interval: float = 60.0, prefix: str = "") -> None:
        """Pushes every ``interval`` seconds from a daemon thread."""
        def run() -> None:
            while True:
                started = time.monotonic()
                try:
                    self.push(prefix=prefix)
                except OSError:
                    pass
                time.sleep(max(0.0, interval - (time.monotonic() - started)))

        threading.Thread(target=run, name="shmetrics-graphite", daemon=True).start()


__all__ = ["GraphiteBridge"]

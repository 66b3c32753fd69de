"""prometheus_client's ``twisted`` module: a resource serving a registry."""

from __future__ import annotations

from typing import Any

from twisted.internet import reactor
from twisted.web.resource import Resource
from twisted.web.wsgi import WSGIResource

from ._exposition import make_wsgi_app
from .registry import REGISTRY


class MetricsResource(WSGIResource):
    """A Twisted Web resource serving ``registry`` from the reactor's
    thread pool."""

    def __init__(self, registry: Any = REGISTRY) -> None:
        super().__init__(reactor, reactor.getThreadPool(), make_wsgi_app(registry))


__all__ = ["MetricsResource", "Resource"]

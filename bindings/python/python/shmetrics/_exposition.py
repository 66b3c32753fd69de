"""Exposition: the whole store, summed over all processes, then the
registry's custom collectors, run in this process, as prometheus_client's
helpers serve them. The store's part is rendered natively, releasing the
GIL; usually the ``shmetrics serve`` exporter serves the store instead, so
no worker renders at all."""

from __future__ import annotations

import gzip
import threading
from typing import Any, Callable, Iterable, List, Optional, Tuple
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from socketserver import ThreadingMixIn

from . import _native, _text
from .registry import REGISTRY, CollectorRegistry, RestrictedRegistry, StoreCollector

CONTENT_TYPE_LATEST: str = _native.content_type("text")
"""The Content-Type of the Prometheus text format 0.0.4."""

CONTENT_TYPE_OPENMETRICS: str = _native.content_type("openmetrics")
"""The Content-Type of OpenMetrics 1.0 text."""


def _render(registry: Any, fmt: str) -> bytes:
    """The page of ``registry`` in ``fmt``: a ``CollectorRegistry``'s store
    rendered natively, then its custom collectors, run here; a ``Store``
    alone; a ``RestrictedRegistry`` written sample by sample here; anything
    else (prometheus_client's ``REGISTRY``, ``None``) the default store and
    this process's ``REGISTRY`` collectors."""
    if isinstance(registry, _native.Store):
        return registry.render(fmt)
    if isinstance(registry, RestrictedRegistry):
        return _text.write(registry.collect(), fmt == "openmetrics")
    if not isinstance(registry, CollectorRegistry):
        registry = REGISTRY
    page = registry.store_collector.resolve().render(fmt)
    return _text.write(registry.collect_custom(), fmt == "openmetrics", page)


def generate_latest(registry: Any = REGISTRY) -> bytes:
    """The Prometheus text exposition of the registry: the store, all
    processes summed, and the registry's custom collectors."""
    return _render(registry, "text")


def generate_openmetrics(registry: Any = REGISTRY) -> bytes:
    """The OpenMetrics exposition of the registry."""
    return _render(registry, "openmetrics")


def choose_encoder(accept_header: Optional[str]) -> Tuple[Callable[[Any], bytes], str]:
    """The encoder and Content-Type for a scrape's ``Accept`` header."""
    fmt, content_type = _native.negotiate(accept_header)
    if fmt == "openmetrics":
        return generate_openmetrics, content_type
    return generate_latest, content_type


def _restrict(registry: Any, query: str) -> Any:
    """``registry``, or its samples of the names ``?name[]=`` asks for."""
    names = parse_qs(query).get("name[]")
    if not names:
        return registry
    if isinstance(registry, _native.Store):
        view = CollectorRegistry()
        view._show(StoreCollector(registry))
        registry = view
    elif not isinstance(registry, CollectorRegistry):
        registry = REGISTRY
    return registry.restricted_registry(names)


def _answer(registry: Any, query: str, accept: Optional[str], accept_encoding: Optional[str],
            disable_compression: bool) -> Tuple[bytes, List[Tuple[str, str]]]:
    fmt, content_type = _native.negotiate(accept)
    body = _render(_restrict(registry, query), fmt)
    headers = [("Content-Type", content_type)]
    if not disable_compression and "gzip" in (accept_encoding or ""):
        body = gzip.compress(body, compresslevel=1)
        headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    return body, headers


def make_wsgi_app(registry: Any = REGISTRY, disable_compression: bool = False) -> Callable[..., Iterable[bytes]]:
    """A WSGI app that serves the registry: content negotiation from
    ``Accept``, gzip when the client takes it, only the samples of the
    names given by ``?name[]=`` if any."""

    def app(environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b""]
        body, headers = _answer(registry, environ.get("QUERY_STRING", ""), environ.get("HTTP_ACCEPT"),
                                environ.get("HTTP_ACCEPT_ENCODING"), disable_compression)
        start_response("200 OK", headers)
        return [body]

    return app


def make_asgi_app(registry: Any = REGISTRY, disable_compression: bool = False) -> Callable[..., Any]:
    """An ASGI app that serves the store (rendering releases the GIL, and
    runs in a thread so the event loop keeps going)."""
    import asyncio

    async def app(scope: dict, receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        assert scope["type"] == "http"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        body, out = await asyncio.get_running_loop().run_in_executor(
            None, _answer, registry, scope.get("query_string", b"").decode("latin-1"),
            headers.get("accept"), headers.get("accept-encoding"), disable_compression)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(k.lower().encode(), v.encode()) for k, v in out]})
        await send({"type": "http.response.body", "body": body})

    return app


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _SilentHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def start_http_server(port: int, addr: str = "127.0.0.1", registry: Any = REGISTRY) -> Tuple[WSGIServer, threading.Thread]:
    """Serves the store over HTTP from a daemon thread of this process.

    It binds loopback unless told otherwise (prometheus_client binds all
    interfaces). With several worker processes, prefer the exporter
    (``shmetrics serve``), which renders outside the workers."""
    httpd = make_server(addr, port, make_wsgi_app(registry), _ThreadingWSGIServer,
                        handler_class=_SilentHandler)
    t = threading.Thread(target=httpd.serve_forever, name="shmetrics-http", daemon=True)
    t.start()
    return httpd, t


start_wsgi_server = start_http_server

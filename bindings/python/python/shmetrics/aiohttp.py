"""prometheus_client's ``aiohttp`` module: a handler serving a registry."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from ._exposition import _bake_output
from .registry import REGISTRY


def make_aiohttp_handler(registry: Any = REGISTRY,
                         disable_compression: bool = False) -> Callable[[Any], Awaitable[Any]]:
    """An aiohttp handler serving ``registry`` as ``make_wsgi_app`` does."""
    from aiohttp import hdrs, web

    async def handler(request: Any) -> Any:
        status, headers, output = _bake_output(
            registry, request.headers.get(hdrs.ACCEPT), request.headers.get(hdrs.ACCEPT_ENCODING),
            {k: request.query.getall(k) for k in request.query}, disable_compression)
        return web.Response(body=output, status=int(status.split(" ")[0]), headers=headers)

    return handler


__all__ = ["make_aiohttp_handler"]

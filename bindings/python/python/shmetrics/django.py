"""prometheus_client's ``django`` module: a view serving a registry."""

from __future__ import annotations

from typing import Any

import django.http  # type: ignore[import-untyped,import-not-found,unused-ignore]
import django.views  # type: ignore[import-untyped,import-not-found,unused-ignore]

from ._exposition import _bake_output
from .registry import REGISTRY


class PrometheusDjangoView(django.views.View):
    """Serves ``registry`` (a class attribute, or ``as_view(registry=...)``)."""

    registry: Any = REGISTRY
    disable_compression: bool = False

    def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        status, headers, output = _bake_output(
            self.registry, request.headers.get("Accept"), request.headers.get("Accept-Encoding"),
            {k: request.GET.getlist(k) for k in request.GET}, self.disable_compression)
        return django.http.HttpResponse(output, status=int(status.split(" ")[0]), headers=dict(headers))

    def options(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return django.http.HttpResponse(status=200, headers={"Allow": "OPTIONS,GET"})


__all__ = ["PrometheusDjangoView"]

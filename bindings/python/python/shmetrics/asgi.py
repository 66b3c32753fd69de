"""prometheus_client's ``asgi`` module."""

from ._exposition import make_asgi_app

__all__ = ["make_asgi_app"]

"""A Flask app (WSGI, for gunicorn) and a Starlette app (ASGI, for
uvicorn) that count their requests in the store SHMETRICS_STORE names
and serve /metrics in process, as a migrated prometheus_client app does
(a registry with a MultiProcessCollector)."""

from __future__ import annotations

import os

import shmetrics
from shmetrics import multiprocess

REQUESTS = shmetrics.Counter("app_requests", "Requests served.", ["route"])
LATENCY = shmetrics.Histogram("app_request_seconds", "Request latency.", ["route"], buckets=[0.01, 0.1, 1])


def metrics_registry() -> shmetrics.CollectorRegistry:
    registry = shmetrics.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def make_flask():
    from flask import Flask, Response

    app = Flask(__name__)

    @app.route("/work/<name>")
    def work(name: str):
        with LATENCY.labels("/work").time():
            REQUESTS.labels("/work").inc()
            return str(os.getpid())

    @app.route("/metrics")
    def metrics():
        registry = metrics_registry()
        return Response(shmetrics.generate_latest(registry), content_type=shmetrics.CONTENT_TYPE_PLAIN_0_0_4)

    return app


def make_starlette():
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    async def work(request):
        with LATENCY.labels("/work").time():
            REQUESTS.labels("/work").inc()
            return PlainTextResponse(str(os.getpid()))

    return Starlette(routes=[Route("/work/{name}", work),
                             Mount("/metrics", app=shmetrics.make_asgi_app(metrics_registry()))])


flask_app = make_flask()
starlette_app = make_starlette()

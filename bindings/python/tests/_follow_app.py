"""The WSGI app of test_store_follow.py, behind CheckStoreMiddleware
checking the store at most every 0.1 s. Its metric objects, a labelled
child included, are made at import, before any replacement of the store;
it answers with the worker's pid."""

from __future__ import annotations

import os

import shmetrics

REQUESTS = shmetrics.Counter("follow_app_requests", "Requests served.")
BY_ROUTE = shmetrics.Counter("follow_app_routes", "Requests by route.", ["route"])
ROOT = BY_ROUTE.labels("/")
LATENCY = shmetrics.Histogram("follow_app_seconds", "Request time.", buckets=[0.5])


def _app(environ, start_response):
    with LATENCY.time():
        REQUESTS.inc()
        ROOT.inc()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(os.getpid()).encode()]


app = shmetrics.CheckStoreMiddleware(_app, interval=0.1)


async def _asgi(scope, receive, send):
    with LATENCY.time():
        REQUESTS.inc()
        ROOT.inc()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": str(os.getpid()).encode()})


# The same app for an ASGI server (uvicorn, run with `--lifespan off`).
asgi_app = shmetrics.CheckStoreASGIMiddleware(_asgi, interval=0.1)

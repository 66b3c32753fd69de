"""The WSGI app of test_store_follow.py: one counter, behind
CheckStoreMiddleware checking the store at most every 0.1 s."""

from __future__ import annotations

import shmetrics

REQUESTS = shmetrics.Counter("follow_app_requests", "Requests served.")


def _app(environ, start_response):
    REQUESTS.inc()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


app = shmetrics.CheckStoreMiddleware(_app, interval=0.1)

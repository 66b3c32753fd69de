"""The WSGI app that test_gunicorn.py runs under a real gunicorn: request
metrics as a web app would keep them, shared by all workers through the
store that SHMETRICS_STORE names."""

from __future__ import annotations

import os

import shmetrics

REQUESTS = shmetrics.Counter("app_requests", "Requests served.", ["route", "status"])
LATENCY = shmetrics.Histogram("app_request_seconds", "Request latency.", ["route"],
                              buckets=[0.001, 0.01, 0.1, 1])
INFLIGHT = shmetrics.Gauge("app_inflight", "Requests in progress.", multiprocess_mode="livesum")
WORKER = shmetrics.Gauge("app_worker_pid", "Each live worker's pid.", multiprocess_mode="liveall")
ERRORS = shmetrics.Counter("app_errors", "Requests that raised.")


def mark_worker() -> None:
    WORKER.set(os.getpid())


def app(environ, start_response):
    route = environ.get("PATH_INFO", "/")
    with INFLIGHT.track_inprogress(), LATENCY.labels(route).time():
        status = "404" if route == "/missing" else "200"
        REQUESTS.labels(route, status).inc()
        body = str(os.getpid()).encode()
        start_response(f"{status} X", [("Content-Type", "text/plain"),
                                       ("Content-Length", str(len(body)))])
        return [body]

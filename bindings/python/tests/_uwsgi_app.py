"""The WSGI app that test_uwsgi.py runs under a real uWSGI: request
metrics as a web app keeps them, created at import (in the master, unless
`lazy-apps`), with no fork hook; the store comes from SHMETRICS_STORE (the
ini's `env`). /work answers with the serving pid and the pid that imported
the app; /slow sleeps until harakiri kills its worker."""

from __future__ import annotations

import os
import time

import shmetrics

IMPORTED_IN = os.getpid()
REQUESTS = shmetrics.Counter("app_requests", "Requests served.", ["route"])
LATENCY = shmetrics.Histogram("app_request_seconds", "Request latency.", ["route"],
                              buckets=[0.001, 0.01, 0.1, 1])
SLOW_STARTED = shmetrics.Counter("app_slow_started", "Slow requests begun.")
MULE_MESSAGES = shmetrics.Counter("app_mule_messages", "Messages the mule handled.")
TO_MULE = os.environ.get("APP_TO_MULE") == "1"


def app(environ, start_response):
    route = environ.get("PATH_INFO", "/")
    if route == "/slow":
        SLOW_STARTED.inc()
        time.sleep(60)  # harakiri kills the worker first
    with LATENCY.labels(route).time():
        delay = environ.get("QUERY_STRING", "")
        if delay.startswith("sleep="):
            time.sleep(float(delay[6:]))
        REQUESTS.labels(route).inc()
        if TO_MULE and route == "/work":
            import uwsgi

            uwsgi.mule_msg(b"1", 1)
    body = f"{os.getpid()} {IMPORTED_IN}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]

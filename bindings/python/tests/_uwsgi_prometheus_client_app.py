"""A WSGI app written for prometheus_client's multiprocess mode (its
metrics, and /metrics from a MultiProcessCollector as the multiprocess
guide writes it), run by test_uwsgi.py under uWSGI with the one line that
switches it to shmetrics."""

import shmetrics; shmetrics.install_as_prometheus_client()  # noqa: E702  the one added line

import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess

REQUESTS = Counter("app_requests", "Requests served.", ["route"])
LATENCY = Histogram("app_request_seconds", "Request latency.", ["route"])


def app(environ, start_response):
    route = environ.get("PATH_INFO", "/")
    if route == "/metrics":
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        data = generate_latest(registry)
        start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(data)))])
        return [data]
    with LATENCY.labels(route).time():
        REQUESTS.labels(route).inc()
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]

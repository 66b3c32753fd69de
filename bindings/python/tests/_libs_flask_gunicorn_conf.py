"""gunicorn.conf.py as prometheus-flask-exporter's README writes it for
GunicornPrometheusMetrics, with the one line that switches to shmetrics."""

import shmetrics; shmetrics.install_as_prometheus_client()  # noqa: E702  the one added line

import os

from prometheus_flask_exporter.multiprocess import GunicornPrometheusMetrics


def when_ready(server):
    GunicornPrometheusMetrics.start_http_server_when_ready(int(os.environ["METRICS_PORT"]))


def child_exit(server, worker):
    GunicornPrometheusMetrics.mark_process_dead_on_child_exit(worker.pid)

"""prometheus-flask-exporter's GunicornPrometheusMetrics app, as its README
writes it, with the one line that switches to shmetrics."""

import shmetrics; shmetrics.install_as_prometheus_client()  # noqa: E702  the one added line

import os

from flask import Flask
from prometheus_flask_exporter.multiprocess import GunicornPrometheusMetrics

app = Flask(__name__)
metrics = GunicornPrometheusMetrics(app)


@app.route("/work")
def work():
    return str(os.getpid())


@app.route("/ready")
@metrics.do_not_track()
def ready():
    return "ok"

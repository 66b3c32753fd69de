"""generate_latest, the WSGI and ASGI apps and start_http_server, checked
with prometheus_client's parsers and promtool."""

from __future__ import annotations

import asyncio
import gzip
import subprocess
import urllib.request
from wsgiref.util import setup_testing_defaults

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

import shmetrics
from conftest import dump, samples_of, which

PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


@pytest.fixture
def populated(store):
    c = shmetrics.Counter("requests_total", "Requests.", ["route"])
    c.labels("/").inc(3)
    h = shmetrics.Histogram("latency_seconds", "Latency.", buckets=[0.1, 1])
    h.observe(0.5)
    shmetrics.Gauge("up", "Up.", multiprocess_mode="max").set(1)
    return store


def test_generate_latest_matches_both_parsers_and_promtool(populated):
    text = shmetrics.generate_latest()
    # Written as prometheus_client writes (values 1.0, _created), unlike
    # the exporter's native page, which has the same samples.
    assert samples_of(populated.render("text").decode()).items() <= samples_of(text.decode()).items()
    assert b"\nup 1.0\n" in text and b"requests_created{route=\"/\"} " in text
    s = samples_of(text.decode())
    assert s[("requests_total", frozenset({("route", "/")}))] == 3
    assert s[("latency_seconds_bucket", frozenset({("le", "1.0")}))] == 1
    om = shmetrics.generate_openmetrics().decode()
    assert om.endswith("# EOF\n")
    assert samples_of(om, openmetrics=True)[("up", frozenset())] == 1
    # promtool reads the Prometheus text format (OpenMetrics is checked by
    # prometheus_client's OpenMetrics parser above).
    r = subprocess.run([which("promtool"), "check", "metrics"], input=text, capture_output=True)
    assert r.returncode == 0 and not r.stdout and not r.stderr, r.stderr.decode() + r.stdout.decode()


def test_choose_encoder_follows_accept(populated):
    enc, ct = shmetrics.choose_encoder(PROMETHEUS_ACCEPT)
    assert ct.startswith("application/openmetrics-text") and enc().endswith(b"# EOF\n")
    enc, ct = shmetrics.choose_encoder(None)
    assert ct == shmetrics.CONTENT_TYPE_PLAIN_0_0_4 == "text/plain; version=0.0.4; charset=utf-8"
    # prometheus_client 0.26: CONTENT_TYPE_LATEST is 1.0.0, served when asked for by version.
    assert shmetrics.CONTENT_TYPE_LATEST == "text/plain; version=1.0.0; charset=utf-8"
    enc, ct = shmetrics.choose_encoder("text/plain;version=1.0.0;escaping=allow-utf-8")
    assert ct == shmetrics.CONTENT_TYPE_LATEST + "; escaping=allow-utf-8"


def call_wsgi(app, **environ):
    setup_testing_defaults(environ)
    out = {}

    def start_response(status, headers):
        out["status"], out["headers"] = status, dict(headers)

    body = b"".join(app(environ, start_response))
    return out["status"], out["headers"], body


def test_wsgi_app(populated):
    app = shmetrics.make_wsgi_app()
    status, headers, body = call_wsgi(app)
    assert status == "200 OK" and headers["Content-Type"] == shmetrics.CONTENT_TYPE_PLAIN_0_0_4
    assert b"requests_total{route=\"/\"} 3.0" in body
    status, headers, body = call_wsgi(app, HTTP_ACCEPT=PROMETHEUS_ACCEPT, HTTP_ACCEPT_ENCODING="gzip")
    assert headers["Content-Encoding"] == "gzip"
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert gzip.decompress(body).endswith(b"# EOF\n")
    # As prometheus_client's: no Content-Length (the WSGI server adds one).
    assert "Content-Length" not in headers
    _, headers, _ = call_wsgi(shmetrics.make_wsgi_app(disable_compression=True), HTTP_ACCEPT_ENCODING="gzip")
    assert "Content-Encoding" not in headers


def test_asgi_app(populated):
    app = shmetrics.make_asgi_app()
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/metrics",
             "headers": [(b"accept", PROMETHEUS_ACCEPT.encode())]}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 200
    assert dict(sent[0]["headers"])[b"Content-Type"].startswith(b"application/openmetrics-text")
    assert samples_of(sent[1]["body"].decode(), openmetrics=True)[("requests_total", frozenset({("route", "/")}))] == 3


def test_start_http_server_binds_loopback(populated):
    server, thread = shmetrics.start_http_server(0)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            body = r.read()
            assert r.headers["Content-Type"] == shmetrics.CONTENT_TYPE_PLAIN_0_0_4
        assert samples_of(body.decode())[("up", frozenset())] == 1
    finally:
        server.shutdown()
        server.server_close()


def test_exporter_page_is_prometheus_clients(store, monkeypatch):
    """What `shmetrics serve` writes for a single-process app's families
    (the exporter's renderer, from another process): prometheus_client's
    `name_created` gauges in the text format, and its `info` and
    `stateset` types in OpenMetrics (gauges in the text format)."""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.delenv("PROMETHEUS_DISABLE_CREATED_SERIES", raising=False)
    shmetrics.Counter("jobs", "Jobs.", ["q"]).labels("a").inc()
    shmetrics.Info("build", "Build.").info({"version": "1.2"})
    shmetrics.Enum("state", "State.", states=["up", "down"]).state("up")
    text = dump(store, "text")
    assert '# HELP jobs_created Jobs.\n# TYPE jobs_created gauge\njobs_created{q="a"} ' in text, text
    assert "# TYPE build_info gauge\n" in text and "# TYPE state gauge\n" in text, text
    assert samples_of(text).keys() >= {("jobs_created", frozenset({("q", "a")}))}
    om = dump(store, "openmetrics")
    assert '# TYPE build info\n# HELP build Build.\nbuild_info{version="1.2"} 1\n' in om, om
    assert '# TYPE state stateset\n# HELP state State.\nstate{state="up"} 1\n' in om, om
    # prometheus_client's OpenMetrics parser takes the types as they are.
    types = {f.name: f.type for f in parse_openmetrics(om)}
    assert (types["build"], types["state"], types["jobs"]) == ("info", "stateset", "counter")


def test_exporter_page_without_created(store, monkeypatch):
    """`PROMETHEUS_DISABLE_CREATED_SERIES=true` when a family is first
    registered: no `_created` on the exporter's page, in any format."""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.setenv("PROMETHEUS_DISABLE_CREATED_SERIES", "true")
    shmetrics.Counter("jobs", "Jobs.").inc()
    for fmt in ("text", "openmetrics"):
        assert "_created" not in dump(store, fmt)

"""UTF-8 metric and label names, as prometheus_client 0.26 takes them:
stored as given, written per ``escaping`` by the in-process page and by
the exporter per the scrape's ``Accept``, read back by prometheus_client's
own parsers; legacy validation refuses them, through the core's rules."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

import shmetrics
from conftest import dump, shmetrics_bin
from test_gunicorn import free_port, stop_all, wait_up


@pytest.fixture
def utf8(store):
    c = shmetrics.Counter("http.requests", "Requests.", ["http.method"])
    c.labels("GET").inc(7)
    shmetrics.Gauge("température °C", "Heat.", multiprocess_mode="max").set(21.5)
    shmetrics.Counter("plain", "Legacy.", ["queue"]).labels("q").inc(2)
    return store


def values(families) -> dict:
    return {(s.name, frozenset(s.labels.items())): s.value for f in families for s in f.samples}


# (escaping, the counter's sample name, its label, the gauge's name), as
# the exporter names them.
SCHEMES = [
    ("allow-utf-8", "http.requests_total", "http.method", "température °C"),
    ("underscores", "http_requests_total", "http_method", "temp_rature__C"),
    ("dots", "http_dot_requests_total", "http_dot_method", "temp__rature____C"),
]


@pytest.mark.parametrize("escaping, counter, label, gauge, plain, openmetrics", [
    SCHEMES[0] + ("plain_total", True),
    SCHEMES[1] + ("plain_total", True),
    # prometheus_client escapes every sample's whole name (`_total` too,
    # legacy names too) under `dots`, as the page does byte for byte; its
    # own OpenMetrics parser then refuses its `dots` page (samples not
    # named after their family).
    ("dots", "http_dot_requests__total", "http_dot_method", "temp__rature____C", "plain__total", False),
])
def test_in_process_page_per_escaping_read_by_prometheus_client(utf8, escaping, counter, label, gauge, plain,
                                                                openmetrics):
    pages = [(shmetrics.generate_latest(escaping=escaping), parse_text)]
    if openmetrics:
        pages.append((shmetrics.generate_openmetrics(escaping=escaping), parse_openmetrics))
    for text, parse in pages:
        got = values(parse(text.decode()))
        assert got[(counter, frozenset({(label, "GET")}))] == 7, text.decode()
        assert got[(gauge, frozenset())] == 21.5, text.decode()
        assert got[(plain, frozenset({("queue", "q")}))] == 2, text.decode()


def test_default_page_escapes_with_underscores(utf8):
    text = shmetrics.generate_latest().decode()
    assert 'http_requests_total{http_method="GET"} 7.0\n' in text
    assert "http.requests" not in text
    assert '{"http.requests_total","http.method"="GET"} 7.0\n' in shmetrics.generate_latest(
        escaping="allow-utf-8").decode()


def scrape(port: int, accept: str | None) -> tuple[str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics", headers={"Accept": accept} if accept else {})
        r = conn.getresponse()
        assert r.status == 200
        return r.getheader("Content-Type"), r.read().decode()
    finally:
        conn.close()


def test_exporter_negotiates_escaping_read_by_prometheus_client(utf8):
    """The exporter serving what Python wrote: Prometheus 3's Accept gets
    quoted UTF-8 names, one without `escaping` gets them underscored, and
    the Content-Type says which. Legacy names stay as they are under every
    scheme (as client_golang escapes), `dots` included."""
    port = free_port()
    exporter = subprocess.Popen([shmetrics_bin(), "serve", "--store", str(utf8.path),
                                 "--listen", f"127.0.0.1:{port}"], stderr=subprocess.PIPE)
    try:
        wait_up(port, "/healthz", exporter, "the exporter")
        cases = [
            ("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
             "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,*/*;q=0.1",
             "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8",
             parse_openmetrics, SCHEMES[0]),
            ("text/plain;version=1.0.0;escaping=allow-utf-8",
             "text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8", parse_text, SCHEMES[0]),
            (None, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", parse_text, SCHEMES[1]),
            ("text/plain;version=1.0.0;escaping=dots",
             "text/plain; version=1.0.0; charset=utf-8; escaping=dots", parse_text, SCHEMES[2]),
        ]
        for accept, content_type, parse, (_, counter, label, gauge) in cases:
            ct, body = scrape(port, accept)
            assert ct == content_type, accept
            got = values(parse(body))
            assert got[(counter, frozenset({(label, "GET")}))] == 7, body
            assert got[(gauge, frozenset())] == 21.5, body
            assert got[("plain_total", frozenset({("queue", "q")}))] == 2, body
    finally:
        stop_all([exporter])


def test_legacy_validation_refuses_what_the_default_takes(store):
    shmetrics.validation.enable_legacy_validation()
    try:
        assert shmetrics.validation.get_legacy_validation()
        with pytest.raises(shmetrics.InvalidNameError, match=r"a-zA-Z_:"):
            shmetrics.Counter("my.metric", "x")
        with pytest.raises(shmetrics.InvalidNameError, match="my.label"):
            shmetrics.Counter("ok_total", "x", ["my.label"])
        c = shmetrics.Counter("ex", "x", exemplars=True)
        with pytest.raises(shmetrics.InvalidNameError, match="trace-id"):
            c.inc(1, exemplar={"trace-id": "abc"})
    finally:
        shmetrics.validation.disable_legacy_validation()
    shmetrics.Counter("my.metric", "x", ["my.label"]).labels("v").inc()
    c.inc(1, exemplar={"trace-id": "abc"})
    assert 'trace_id="abc"' in dump(store, "openmetrics")  # the exporter's default: underscores


def test_legacy_validation_from_the_environment(tmp_path):
    code = ("import shmetrics\n"
            "shmetrics.configure(%r)\n"
            "assert shmetrics.validation.get_legacy_validation()\n"
            "try:\n"
            "    shmetrics.Counter('a.b', 'x')\n"
            "except shmetrics.InvalidNameError:\n"
            "    print('refused')\n") % str(tmp_path / "env.shm")
    env = dict(os.environ, PROMETHEUS_LEGACY_NAME_VALIDATION="True")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "refused\n", r.stderr

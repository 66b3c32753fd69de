"""The judge itself: the strict parser keeps what a page wrote (where
prometheus_client's parser renames), and the verdict reads
docs/migrating.md's table."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

import harness as h

PAGE = """# HELP http_status HTTP status codes
# TYPE http_status counter
http_status{code="200",service="say \\"hi\\"\\\\ new\\nline"} 3
# TYPE size histogram
size_bucket{le="1"} 1
size_bucket{le="+Inf"} 2
size_sum 11.5
size_count 2
"""


def test_parser_keeps_names_and_bounds():
    page = h.parse_page(PAGE, openmetrics=False)
    got = h.page_series(page)
    assert got == {
        'http_status{code="200",service="say \\"hi\\"\\\\ new\\nline"}': 3.0,
        'size_bucket{le="1"}': 1.0,
        'size_bucket{le="+Inf"}': 2.0,
        "size_sum": 11.5,
        "size_count": 2.0,
    }
    assert page.samples[0].labels == (("code", "200"), ("service", 'say "hi"\\ new\nline'))
    assert h.page_sample_types(page)["size_bucket"] == "histogram"
    assert h.page_sample_types(page)["http_status"] == "counter"


def test_prometheus_client_parser_hides_the_rename():
    """Why harness.py has its own parser: prometheus_client's gives the
    counter's sample a `_total` the page does not have."""
    names = [s.name for f in text_string_to_metric_families(PAGE) for s in f.samples]
    assert "http_status_total" in names and "http_status" not in names


def test_openmetrics_page():
    body = '# TYPE c counter\nc_total{a="x"} 1.0 # {trace_id="1"} 1.0\nc_created{a="x"} 1.7e9\n# EOF\n'
    page = h.parse_page(body, openmetrics=True)
    assert h.page_series(page) == {'c_total{a="x"}': 1.0, 'c_created{a="x"}': 1.7e9}
    assert h.page_sample_types(page) == {"c_total": "counter", "c_created": "counter"}
    with pytest.raises(h.ParseError):
        h.parse_page("c_total 1\n", openmetrics=True)  # no # EOF


@pytest.mark.parametrize(
    "line",
    ['a{b="\\x"} 1', 'a{b="1"', 'a{b="1",b="2"} 1', "a 1 2 3", "a{b=1} 1", "a one"],
)
def test_parser_refuses(line):
    with pytest.raises(h.ParseError):
        h.parse_page(line + "\n", openmetrics=False)


def test_a_series_twice_is_refused():
    with pytest.raises(h.ParseError):
        h.parse_page("a 1\na 2\n", openmetrics=False)


def test_diff_pages_sees_renames_bounds_and_types():
    peer = h.parse_page(PAGE, False)
    ours = h.parse_page(PAGE.replace('le="1"', 'le="1.0"').replace("http_status{", "http_status_total{"), False)
    kinds = sorted((d.kind, d.series) for d in h.diff_pages("page-text", peer, ours))
    assert kinds == [
        ("extra", 'http_status_total{code="200",service="say \\"hi\\"\\\\ new\\nline"}'),
        ("extra", 'size_bucket{le="1.0"}'),
        ("missing", 'http_status{code="200",service="say \\"hi\\"\\\\ new\\nline"}'),
        ("missing", 'size_bucket{le="1"}'),
    ]
    gauge = h.parse_page(PAGE.replace("size histogram", "size summary"), False)
    assert [d.kind for d in h.diff_pages("page-text", peer, gauge)] == ["type"] * 3


def test_allowance_table():
    doc = f"""text
{h.TABLE_BEGIN}
| Pair | Check | Kind | Series (regex) | Reason |
|---|---|---|---|---|
| `nginx-*` | `prometheus-*` | `extra` | `.*_created(\\{{.*\\}})?` | OpenMetrics asks for it |
{h.TABLE_END}
"""
    (a,) = h.parse_allowances(doc)
    d = h.Difference("prometheus-default", "extra", 'x_created{a="1"}')
    assert a.covers("nginx-lua-prometheus", d)
    assert not a.covers("promphp-apcng", d)
    assert not a.covers("nginx-lua-prometheus", h.Difference("page-text", "extra", "x_created"))
    assert not a.covers("nginx-lua-prometheus", h.Difference("prometheus-default", "missing", "x_created"))
    with pytest.raises(AssertionError):
        h.parse_allowances(doc.replace("OpenMetrics asks for it", ""))


def test_the_docs_table_parses():
    for a in h.allowances():
        assert a.reason


def test_metadata_rename_is_one_difference_only_when_type_and_help_agree():
    peer = {"a_total": ("counter", "A"), "b_total": ("counter", "B"), "c": ("gauge", "C"), "d": ("counter", "D"),
            "e": ("info", "E"), "f": ("info", "F")}
    ours = {"a": ("counter", "A"), "b": ("counter", "other help"), "c": ("counter", "C"), "d_total": ("counter", "D"),
            "e_info": ("gauge", "E"), "f_info": ("gauge", "other help")}
    got = sorted((d.kind, d.series) for d in h.diff_metadata("prometheus-default", peer, ours))
    assert got == [
        ("metadata-extra", "b"),
        ("metadata-extra", "f_info"),
        ("metadata-missing", "b_total"),
        ("metadata-missing", "f"),
        ("metadata-renamed", "a_total -> a"),
        ("metadata-renamed", "d -> d_total"),
        ("metadata-renamed", "e -> e_info"),
        ("type", "c gauge -> counter"),
    ]


def test_values_must_agree_closely():
    assert h.same_value(0.1 + 0.2, 0.3)
    assert not h.same_value(1795868861.8207, 1795868861.8217)  # two _created 1 ms apart

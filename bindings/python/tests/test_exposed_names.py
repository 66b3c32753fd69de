"""One exposed name, one family: a metric whose exposed names (`x`,
`x_total`, `x_bucket`, `x_count`, `x_sum`, `x_created`) another metric of
any type already takes is refused with ConflictError naming both; names
that only come close are accepted, and their page parses."""

from __future__ import annotations

import pytest

import shmetrics


def test_a_gauge_cannot_take_a_counters_total_name(store):
    shmetrics.Counter("x", "A counter.")
    with pytest.raises(shmetrics.ConflictError) as e:
        shmetrics.Gauge("x_total", "A gauge.")
    assert 'gauge "x_total"' in str(e.value)
    assert 'counter "x"' in str(e.value)


@pytest.mark.parametrize(
    "first, second",
    [
        (lambda: shmetrics.Histogram("lat", "h"), lambda: shmetrics.Gauge("lat_bucket", "g")),
        (lambda: shmetrics.Summary("size", "s"), lambda: shmetrics.Counter("size_count", "c")),
        (lambda: shmetrics.Gauge("req_created", "g"), lambda: shmetrics.Counter("req", "c")),
    ],
)
def test_collisions_across_types_are_refused(store, first, second):
    first()
    with pytest.raises(shmetrics.ConflictError, match="already exposes"):
        second()


def test_near_names_are_accepted_and_render_a_valid_page(store, scrape):
    shmetrics.Counter("x", "A counter.").inc()
    shmetrics.Gauge("x_totals", "A gauge.", multiprocess_mode="livesum").set(2)
    shmetrics.Histogram("lat", "A histogram.", buckets=[1.0]).observe(0.5)
    shmetrics.Gauge("lat_buckets", "A gauge.", multiprocess_mode="livesum").set(3)
    got = scrape()  # both of prometheus_client's parsers read it
    assert got.get("x_total") == 1
    assert got.get("x_totals") == 2
    assert got.get("lat_count") == 1
    assert got.get("lat_buckets") == 3

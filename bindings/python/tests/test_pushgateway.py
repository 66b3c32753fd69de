"""push_to_gateway, pushadd_to_gateway and delete_from_gateway against a
real Pushgateway (Debian's prometheus-pushgateway), read back from its
/metrics."""

import socket
import subprocess
import time
import urllib.request
from typing import Iterator

import pytest

import shmetrics
from conftest import samples_of, which


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gateway(tmp_path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([which("prometheus-pushgateway"), f"--web.listen-address=127.0.0.1:{port}",
                             f"--persistence.file={tmp_path / 'pg.db'}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://{url}/-/ready", timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("the pushgateway did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def pushed(url: str):
    with urllib.request.urlopen(f"http://{url}/metrics", timeout=10) as r:
        return samples_of(r.read().decode())


def test_push_pushadd_and_delete(gateway):
    reg = shmetrics.CollectorRegistry()
    jobs = shmetrics.Counter("batch_jobs", "Jobs.", ["kind"], registry=reg)
    jobs.labels("import").inc(3)
    last = shmetrics.Gauge("batch_last_success_seconds", "Last success.", registry=reg)
    last.set(1700000000)
    shmetrics.push_to_gateway(gateway, "nightly", reg, grouping_key={"shard": "a/1"})
    got = pushed(gateway)
    key = frozenset({("job", "nightly"), ("shard", "a/1"), ("kind", "import"), ("instance", "")})
    assert got[("batch_jobs_total", key)] == 3
    assert got[("batch_last_success_seconds",
                frozenset({("job", "nightly"), ("shard", "a/1"), ("instance", "")}))] == 1700000000

    # POST replaces only the names pushed: the counter stays.
    other = shmetrics.CollectorRegistry()
    shmetrics.Gauge("batch_last_success_seconds", "Last success.", registry=other).set(1700000100)
    shmetrics.pushadd_to_gateway(gateway, "nightly", other, grouping_key={"shard": "a/1"}, compression="gzip")
    got = pushed(gateway)
    assert got[("batch_jobs_total", key)] == 3
    assert got[("batch_last_success_seconds",
                frozenset({("job", "nightly"), ("shard", "a/1"), ("instance", "")}))] == 1700000100

    # PUT replaces the whole group.
    shmetrics.push_to_gateway(gateway, "nightly", other, grouping_key={"shard": "a/1"})
    assert ("batch_jobs_total", key) not in pushed(gateway)

    shmetrics.delete_from_gateway(gateway, "nightly", grouping_key={"shard": "a/1"})
    assert not any(dict(labels).get("job") == "nightly" for _, labels in pushed(gateway))


def test_a_refused_push_raises(gateway):
    a, b = shmetrics.CollectorRegistry(), shmetrics.CollectorRegistry()
    shmetrics.Counter("clash", "C.", registry=a).inc()
    shmetrics.Gauge("clash_total", "G.", registry=b).set(1)
    shmetrics.push_to_gateway(gateway, "one", a)
    # The gateway refuses a family whose type differs from the one it holds.
    with pytest.raises(OSError):
        shmetrics.push_to_gateway(gateway, "two", b)

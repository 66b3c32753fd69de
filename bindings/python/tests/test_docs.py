"""The Python snippets in docs/python.md run as written (with the store
path pointed at a temporary file) and do what the text says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO, samples_of

DOC = REPO / "docs" / "python.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def run(code: str, tmp_path: Path) -> str:
    store = tmp_path / "doc.shm"
    code = code.replace("/dev/shm/myapp.shm", str(store))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={"SHMETRICS_STORE": str(store), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_doc_has_its_snippets():
    assert len(blocks()) == 8


def test_migration_snippet(tmp_path):
    out = run(blocks()[0], tmp_path)
    s = samples_of(out)
    assert s[("myapp_requests_total", frozenset({("route", "/users"), ("status", "200")}))] == 1
    assert s[("myapp_request_seconds_count", frozenset({("route", "/users")}))] == 1
    assert s[("myapp_inflight", frozenset())] == 0


def test_multiprocess_snippet(tmp_path):
    calls = ["import os, shmetrics, types",
             "shmetrics.Counter('served', 'x').inc(3)",
             "child_exit(None, types.SimpleNamespace(pid=os.getpid()))",
             "print(metrics_endpoint().decode())"]
    out = run(blocks()[1] + "\n".join([""] + calls + [""]), tmp_path)
    assert samples_of(out)[("served_total", frozenset())] == 3


def test_check_store_middleware_snippet(tmp_path):
    code = blocks()[2] + (
        "\nstatus = []\n"
        "assert app({'PATH_INFO': '/'}, lambda s, h: status.append(s)) == [b'ok']\n"
        "assert status == ['200 OK']\n"
        "assert isinstance(app, shmetrics.CheckStoreMiddleware)\n")
    run(code, tmp_path)


def test_gunicorn_app_snippet(tmp_path):
    code = blocks()[5] + (
        "\nstatus = []\n"
        "body = app({'PATH_INFO': '/x'}, lambda s, h: status.append(s))\n"
        "assert status == ['200 OK'] and body == [str(os.getpid()).encode()]\n"
        "print(shmetrics.generate_latest().decode())\n")
    s = samples_of(run(code, tmp_path))
    assert s[("app_requests_total", frozenset({("route", "/x"), ("status", "200")}))] == 1


def test_passenger_startup_file_snippet(tmp_path):
    """passenger_wsgi.py as Passenger loads it (its folder on sys.path),
    beside the gunicorn snippet as myapp.py: the app it hands Passenger
    counts. tests/test_passenger.py runs it under Passenger itself."""
    (tmp_path / "myapp.py").write_text(blocks()[5])
    code = (f"import os, sys\nsys.path.insert(0, {str(tmp_path)!r})\n" + blocks()[6] +
            "\nimport shmetrics\n"
            "status = []\n"
            "application({'PATH_INFO': '/x'}, lambda s, h: status.append(s))\n"
            "assert status == ['200 OK']\n"
            "print(shmetrics.generate_latest().decode())\n")
    s = samples_of(run(code, tmp_path))
    assert s[("app_requests_total", frozenset({("route", "/x"), ("status", "200")}))] == 1


def test_native_histogram_snippet(tmp_path):
    s = samples_of(run(blocks()[4], tmp_path))
    rpc = {dict(l).get("le") for (n, l) in s if n == "rpc_seconds_bucket"}
    assert rpc == {"+Inf"}, "native only: the text carries +Inf, _count and _sum"
    assert s[("rpc_seconds_count", frozenset({("method", "get")}))] == 1
    assert s[("job_seconds_bucket", frozenset({("le", "10.0")}))] == 0
    assert s[("job_seconds_bucket", frozenset({("le", "60.0")}))] == 1


def test_sizing_snippet(tmp_path):
    run(blocks()[7] + "\nassert store.path.name == 'doc.shm'\n", tmp_path)


def test_publisher_snippet(tmp_path):
    run(blocks()[3], tmp_path)
    out = subprocess.run([str(Path(sys.executable)), "-c", "import shmetrics, sys; "
                          f"sys.stdout.write(shmetrics.Store({str(tmp_path / 'doc.shm')!r}).render('text').decode())"],
                         capture_output=True, text=True, check=True).stdout
    # The snippet's process has exited: its value (3) no longer counts.
    assert "\nmyapp_queue_depth 0\n" in out

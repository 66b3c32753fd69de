"""Runs prometheus_client 0.26.0's own test suite against shmetrics.

The source distribution (fetched once by pip into target/, then reused)
holds ``tests/``. Its test ids are collected against prometheus_client
itself (the sdist's own package), then the same tests run against
shmetrics through ``shmetrics.install_as_prometheus_client()`` (this
directory's ``conftest.py``). The run fails if fewer than ``FLOOR`` tests
pass, or if a test that does not pass is not listed, with its reason, in
docs/python.md ("prometheus_client's own tests")."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import List, Set

VERSION = "0.26.0"
# The measured count (2026-11-26, 259 when the flaky TLS test passes):
# raise it when more pass, never lower it to make a run pass.
FLOOR = 258

ROOT = Path(__file__).resolve().parents[3]
WORK = ROOT / "target" / "prometheus_client_suite"
SDIST = WORK / f"prometheus_client-{VERSION}.tar.gz"
SOURCE = WORK / f"prometheus_client-{VERSION}"
RUN = WORK / "run"
DOCS = ROOT / "docs" / "python.md"


def fetch() -> None:
    """The sdist, downloaded by pip once and kept under target/."""
    WORK.mkdir(parents=True, exist_ok=True)
    if not SDIST.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                        "--no-binary", ":all:", "--no-deps", f"prometheus_client=={VERSION}", "-d", str(WORK)],
                       check=True)
    if SOURCE.exists():
        shutil.rmtree(SOURCE)
    with tarfile.open(SDIST) as t:
        if hasattr(tarfile, "data_filter"):
            t.extractall(WORK, filter="data")
        else:
            # Python before 3.11.4 (Debian 12's 3.11.2) has no extraction
            # filters: refuse absolute paths, "..", links and devices.
            for m in t.getmembers():
                parts = Path(m.name).parts
                if Path(m.name).is_absolute() or ".." in parts or not (m.isfile() or m.isdir()):
                    raise SystemExit(f"{SDIST}: refusing to extract {m.name!r}")
            t.extractall(WORK)


def pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")}
    # A bounded run: a test that fails can leave a thread of its own behind
    # (test_graphite_bridge's server, when localhost does not resolve), and
    # pytest then never exits.
    try:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "ignore", *args],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as e:
        raise SystemExit(f"pytest {' '.join(args)} did not exit within 900 s:\n{e.stdout}\n{e.stderr}")


def all_ids() -> List[str]:
    """Every test id, collected with the sdist's own prometheus_client
    (its directory comes first on the path)."""
    out = pytest(SOURCE, "--collect-only", "-q", "tests")
    ids = [line.split("tests/", 1)[1] for line in out.stdout.splitlines() if line.startswith("tests/")]
    if not ids:
        raise SystemExit(f"collecting prometheus_client's tests found nothing:\n{out.stdout}\n{out.stderr}")
    return ids


def passed_ids() -> Set[str]:
    """The ids of the tests that pass against shmetrics."""
    if RUN.exists():
        shutil.rmtree(RUN)
    shutil.copytree(SOURCE / "tests", RUN / "tests")
    shutil.copy(Path(__file__).with_name("conftest.py"), RUN / "tests" / "conftest.py")
    junit = RUN / "junit.xml"
    pytest(RUN, "-q", "--continue-on-collection-errors", f"--junitxml={junit}", "tests")
    passed = set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        if any(child.tag in ("failure", "error", "skipped") for child in case):
            continue
        module = case.get("classname", "")
        parts = module.split(".")
        # tests.test_core.TestCounter -> test_core.py::TestCounter
        path = parts[1] + ".py" if len(parts) > 1 else module
        rest = "::".join(parts[2:] + [case.get("name", "")])
        passed.add(f"{path}::{rest}")
    return passed


def documented() -> List[str]:
    """The entries of docs/python.md's list: every test id quoted there
    (`test_x.py::Class::test`), or a prefix (a file, a class) for a
    group."""
    text = DOCS.read_text()
    if "### prometheus_client's own tests" not in text:
        return []
    section = text.split("### prometheus_client's own tests", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`(test_[a-z_]+\.py(?:::[A-Za-z_0-9\[\]-]+)*)`", section)


def main() -> int:
    fetch()
    ids = all_ids()
    passed = passed_ids()
    entries = documented()
    failing = [i for i in ids if i not in passed]
    unlisted = [i for i in failing if not any(i == e or i.startswith(e + "::") or i.startswith(e + "[")
                                               for e in entries)]
    stale = [e for e in entries if not any(i == e or i.startswith(e + "::") or i.startswith(e + "[")
                                           for i in failing)]
    n = len(ids) - len(failing)
    print(f"prometheus_client {VERSION}'s own tests against shmetrics: {n} of {len(ids)} pass "
          f"(floor {FLOOR}); {len(failing)} do not, each listed in docs/python.md")
    ok = True
    if n < FLOOR:
        print(f"FAIL: {n} pass, fewer than the floor {FLOOR}")
        ok = False
    for i in unlisted:
        print(f"FAIL: not passing and not listed in docs/python.md: {i}")
        ok = False
    for e in stale:
        print(f"note: listed in docs/python.md but passing in this run: {e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

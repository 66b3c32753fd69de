"""Runs the own test suites of the libraries built on prometheus_client
(prometheus-flask-exporter, prometheus-fastapi-instrumentator,
django-prometheus) twice: on prometheus_client itself, and on shmetrics
through ``shmetrics.install_as_prometheus_client()`` (this directory's
``libs_conftest.py``, installed before any test imports the library).

The libraries are installed from PyPI (scripts/setup.sh); their tests come
from the copies in ``../shared/peers`` (or ``$PYTHON_LIBS_PEERS``). The
run fails if a test that passes on prometheus_client does not pass on
shmetrics and is not listed, with its reason, in docs/migrating.md
("The libraries' own tests")."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[3]
PEERS = Path(os.environ.get("PYTHON_LIBS_PEERS") or ROOT.parent / "shared" / "peers")
WORK = ROOT / "target" / "python_libs_suite"
DOCS = ROOT / "docs" / "migrating.md"
SECTION = "### The libraries' own tests"
PLUGIN = Path(__file__).with_name("libs_plugin.py")
MODES = ("prometheus_client", "shmetrics")
# In a suite's env: the run's store directory.
MULTIPROC_DIR = "<store dir>"


@dataclass
class Suite:
    """One pytest run of a library's tests: ``copies`` (source under the
    peer's folder -> destination under the run folder), the paths given
    to pytest, the ini options and extra environment."""
    name: str
    peer: str
    copies: Dict[str, str]
    args: List[str]
    ini: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)


SUITES = [
    Suite("flask-exporter", "prometheus-flask-exporter-0.23.2", {"tests": "tests"}, ["tests"],
          ["pythonpath = tests"]),
    Suite("fastapi-instrumentator", "prometheus-fastapi-instrumentator-8.0.2", {"tests": "tests"},
          ["tests"], ["norecursedirs = tests/helpers", "asyncio_mode = auto",
                      "markers =\n    slow: mark test as slow."]),
    # Its multiprocess tests run only with PROMETHEUS_MULTIPROC_DIR set
    # before pytest starts (an empty directory of the run's own).
    Suite("fastapi-instrumentator-multiproc", "prometheus-fastapi-instrumentator-8.0.2",
          {"tests": "tests"}, ["tests/test_instrumentator_multiproc.py"],
          ["norecursedirs = tests/helpers", "asyncio_mode = auto"],
          {"PROMETHEUS_MULTIPROC_DIR": MULTIPROC_DIR}),
    Suite("django-prometheus", "django-prometheus-2.5.0",
          {"django_prometheus/tests": "tests"}, ["tests", "--ignore=tests/end2end"]),
    Suite("django-prometheus-end2end", "django-prometheus-2.5.0",
          {"django_prometheus/tests/end2end": "end2end"}, ["end2end/testapp"],
          ["pythonpath = end2end", "DJANGO_SETTINGS_MODULE = testapp.settings"]),
]


def prepare(suite: Suite, mode: str) -> Path:
    """A fresh run folder with the suite's tests, an ini file and, on
    shmetrics, the conftest that installs the alias."""
    run = WORK / suite.name / mode
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    src = PEERS / suite.peer
    for s, d in suite.copies.items():
        shutil.copytree(src / s, run / d)
    ini = ["[pytest]", "addopts = -p no:cacheprovider -W ignore"] + suite.ini
    (run / "pytest.ini").write_text("\n".join(ini) + "\n")
    if mode == "shmetrics":
        shutil.copy(PLUGIN, run / "shmetrics_alias_plugin.py")
    return run


def plugin_args(mode: str) -> List[str]:
    """On shmetrics, the plugin that installs the alias, loaded before
    any conftest or plugin (pytest-django sets Django up, importing the
    library, before the conftests)."""
    return ["-p", "shmetrics_alias_plugin"] if mode == "shmetrics" else []


def pytest(suite: Suite, mode: str) -> Tuple[Set[str], Set[str]]:
    """Runs the suite in ``mode``: the ids collected, and those that
    passed (no failure, error or skip)."""
    run = prepare(suite, mode)
    junit = run / "junit.xml"
    env = {k: v for k, v in os.environ.items()
           if k not in ("SHMETRICS_STORE", "PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir",
                        "DJANGO_SETTINGS_MODULE")}
    with tempfile.TemporaryDirectory(prefix="shmetrics-libs-") as store_dir:
        env.update({k: store_dir if v == MULTIPROC_DIR else v for k, v in suite.env.items()})
        env["SHMETRICS_LIBS_STORE_DIR"] = store_dir
        try:
            out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--continue-on-collection-errors",
                                  f"--junitxml={junit}", *plugin_args(mode), *suite.args], cwd=run, env=env, capture_output=True, text=True,
                                 timeout=900)
        except subprocess.TimeoutExpired as e:
            raise SystemExit(f"{suite.name} on {mode} did not exit within 900 s:\n{e.stdout}\n{e.stderr}")
    (run / "pytest.log").write_text(out.stdout + out.stderr)
    if not junit.exists():
        raise SystemExit(f"{suite.name} on {mode}: pytest wrote no report:\n{out.stdout}\n{out.stderr}")
    return read_junit(junit)


def read_junit(junit: Path) -> Tuple[Set[str], Set[str]]:
    """The test ids of a junit report (``classname::name``), and those that
    passed."""
    ids, passed = set(), set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        tid = f"{case.get('classname', '')}::{case.get('name', '')}"
        ids.add(tid)
        if not any(child.tag in ("failure", "error", "skipped") for child in case):
            passed.add(tid)
    return ids, passed


def documented() -> List[str]:
    """The entries of docs/migrating.md's list: ``suite:test id`` in
    backquotes, a prefix (a module, a class) standing for its tests."""
    text = DOCS.read_text() if DOCS.exists() else ""
    if SECTION not in text:
        return []
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    return re.findall(r"`([a-z0-9-]+:[A-Za-z0-9_.:\[\]-]+)`", section)


def listed(tid: str, entries: List[str]) -> bool:
    return any(tid == e or tid.startswith(e + "::") or tid.startswith(e + ".") or tid.startswith(e + "[")
               for e in entries)


def main() -> int:
    entries = documented()
    missing: List[str] = []
    regressed: List[str] = []
    totals = {m: 0 for m in MODES}
    for suite in SUITES:
        ids, passed_pc = pytest(suite, "prometheus_client")
        _, passed_sh = pytest(suite, "shmetrics")
        lost = sorted(passed_pc - passed_sh)
        totals["prometheus_client"] += len(passed_pc)
        totals["shmetrics"] += len(passed_pc & passed_sh)
        print(f"{suite.name}: {len(ids)} tests; {len(passed_pc)} pass on prometheus_client, "
              f"{len(passed_pc & passed_sh)} of them on shmetrics"
              + (f" (+{len(passed_sh - passed_pc)} passing on shmetrics only)" if passed_sh - passed_pc else ""))
        for tid in lost:
            full = f"{suite.name}:{tid}"
            (missing if listed(full, entries) else regressed).append(full)
    print(f"total: {totals['prometheus_client']} pass on prometheus_client, "
          f"{totals['shmetrics']} of them on shmetrics; {len(missing)} listed in docs/migrating.md")
    for tid in regressed:
        print(f"FAIL: passes on prometheus_client, not on shmetrics, not listed in docs/migrating.md: {tid}")
    stale = [e for e in entries if not any(listed(t, [e]) for t in missing)]
    for e in stale:
        print(f"note: listed in docs/migrating.md but not failing in this run: {e}")
    return 1 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())

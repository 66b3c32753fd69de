"""Runs prometheus_client's own tests against shmetrics: before any test
module imports ``prometheus_client``, the opt-in alias makes that name
give shmetrics's modules. The default store is a file of this run, as a
deployment names it (``SHMETRICS_STORE``, or ``PROMETHEUS_MULTIPROC_DIR``)."""

import atexit
import os
import shutil
import tempfile

import shmetrics

_DIR = tempfile.mkdtemp(prefix="shmetrics-suite-")
_PID = os.getpid()


@atexit.register
def _remove_dir() -> None:
    """Removes the run's folder when the process that made it ends (not
    when a child forked by a test does)."""
    if os.getpid() == _PID:
        shutil.rmtree(_DIR, ignore_errors=True)


shmetrics.configure(os.path.join(_DIR, "default.shm"))
shmetrics.install_as_prometheus_client()

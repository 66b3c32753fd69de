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
atexit.register(shutil.rmtree, _DIR, True)
shmetrics.configure(os.path.join(_DIR, "default.shm"))
shmetrics.install_as_prometheus_client()

"""A pytest plugin (loaded with ``-p``, before any conftest or plugin) that runs a library's own tests on shmetrics: before any test module imports
the library (which imports ``prometheus_client``), the opt-in alias makes
that name give shmetrics's modules. The default store is a file of this
run (libs.py makes the directory), named as a deployment names it."""

import os

import shmetrics

# With PROMETHEUS_MULTIPROC_DIR set (a multiprocess suite), the store is
# its shmetrics.shm, as a deployment in multiprocess mode finds it.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    shmetrics.configure(os.path.join(os.environ["SHMETRICS_LIBS_STORE_DIR"], "default.shm"))
shmetrics.install_as_prometheus_client()

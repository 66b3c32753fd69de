"""gunicorn.conf.py as prometheus_client's multiprocess guide writes it,
with only the import changed."""

from shmetrics import multiprocess  # was: from prometheus_client import multiprocess


def child_exit(server, worker):
    multiprocess.mark_process_dead(worker.pid)

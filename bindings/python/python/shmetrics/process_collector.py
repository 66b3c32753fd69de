"""``ProcessCollector``: the process's CPU time, memory, open files and
start time from ``/proc`` (``process_*``), as prometheus_client exports
them. It runs where the registry is collected: in the process."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, List, Union

from .metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from .registry import REGISTRY


class ProcessCollector:
    """``process_*`` of ``pid()`` (default this process) read from
    ``proc``; nothing on systems without it."""

    def __init__(self, namespace: str = "", pid: Callable[[], Union[int, str]] = lambda: "self",
                 proc: str = "/proc", registry: Any = REGISTRY) -> None:
        self._namespace = namespace
        self._pid = pid
        self._proc = proc
        self._prefix = namespace + "_process_" if namespace else "process_"
        self._ticks = 100.0
        self._pagesize = 4096
        try:
            self._ticks = float(os.sysconf("SC_CLK_TCK"))
            self._pagesize = os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            pass
        self._btime = self._boot_time()
        if registry is not None:
            registry.register(self)

    def _boot_time(self) -> float:
        try:
            with open(os.path.join(self._proc, "stat"), "rb") as f:
                for line in f:
                    if line.startswith(b"btime "):
                        return float(line.split()[1])
        except OSError:
            pass
        return 0.0

    def collect(self) -> Iterator[Metric]:
        if not self._btime:
            return iter(())
        pid = os.path.join(self._proc, str(self._pid()).strip())
        out: List[Metric] = []
        try:
            with open(os.path.join(pid, "stat"), "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            # After the command: state is field 3 of stat(5), so field n is at n - 3.
            utime, stime, start = float(fields[11]), float(fields[12]), float(fields[19])
            vsize, rss = float(fields[20]), float(fields[21])
            out.append(GaugeMetricFamily(self._prefix + "virtual_memory_bytes",
                                         "Virtual memory size in bytes.", value=vsize))
            out.append(GaugeMetricFamily(self._prefix + "resident_memory_bytes",
                                         "Resident memory size in bytes.", value=rss * self._pagesize))
            out.append(GaugeMetricFamily(self._prefix + "start_time_seconds",
                                         "Start time of the process since unix epoch in seconds.",
                                         value=start / self._ticks + self._btime))
            out.append(CounterMetricFamily(self._prefix + "cpu_seconds",
                                           "Total user and system CPU time spent in seconds.",
                                           value=(utime + stime) / self._ticks))
        except OSError:
            pass
        try:
            with open(os.path.join(pid, "limits"), "rb") as f:
                for line in f:
                    if line.startswith(b"Max open files"):
                        out.append(GaugeMetricFamily(self._prefix + "max_fds",
                                                     "Maximum number of open file descriptors.",
                                                     value=float(line.split()[3])))
                        break
            out.append(GaugeMetricFamily(self._prefix + "open_fds", "Number of open file descriptors.",
                                         len(os.listdir(os.path.join(pid, "fd")))))
        except (OSError, ValueError):
            pass
        return iter(out)


PROCESS_COLLECTOR = ProcessCollector()
"""The collector of this process, registered in ``REGISTRY`` as prometheus_client's is:
it shows on the pages rendered in the process (see docs/python.md)."""

__all__ = ["ProcessCollector", "PROCESS_COLLECTOR"]

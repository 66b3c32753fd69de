"""Prometheus 3's escaping schemes for names outside the classic
character set, as prometheus_client 0.26 applies them; the native writer
(``shmetrics_expo::client_python``) does the work."""

from __future__ import annotations

from . import _native

ALLOWUTF8, UNDERSCORES, DOTS, VALUES = "allow-utf-8", "underscores", "dots", "values"


def escape_metric_name(name: str, escaping: str = UNDERSCORES) -> str:
    """A metric name as written under ``escaping``: ``underscores`` turns
    each character outside the classic set into ``_``; ``dots`` writes
    ``.`` as ``_dot_``, ``_`` as ``__`` and others as ``__`` (always);
    ``values`` writes ``U__`` and each other character as ``_<hex>_``
    (``_`` as ``__``); ``allow-utf-8`` leaves it."""
    return _native.escape_name(name, escaping, True)


def escape_label_name(name: str, escaping: str = UNDERSCORES) -> str:
    """A label name as written under ``escaping``."""
    return _native.escape_name(name, escaping, False)

"""prometheus_client's ``validation`` switches. Metric and label names may
be any UTF-8 string, as in prometheus_client 0.26 (the store keeps them as
given; the exposition quotes or escapes them as the scrape asks). Legacy
validation, on with ``enable_legacy_validation()`` or the environment
variable ``PROMETHEUS_LEGACY_NAME_VALIDATION`` (``true``, ``1``, ``t``),
refuses names outside ``[a-zA-Z_:][a-zA-Z0-9_:]*`` (metrics) and
``[a-zA-Z_][a-zA-Z0-9_]*`` (labels, exemplar labels) in this process."""

import os

from . import _native


def get_legacy_validation() -> bool:
    """Whether legacy name validation is on."""
    return _native.legacy_validation()


def enable_legacy_validation() -> None:
    """Refuse names outside the legacy character set."""
    _native.set_legacy_validation(True)


def disable_legacy_validation() -> None:
    """Take any UTF-8 name (the default)."""
    _native.set_legacy_validation(False)


_native.set_legacy_validation(
    os.environ.get("PROMETHEUS_LEGACY_NAME_VALIDATION", "False").lower() in ("true", "1", "t"))

__all__ = ["get_legacy_validation", "enable_legacy_validation", "disable_legacy_validation"]

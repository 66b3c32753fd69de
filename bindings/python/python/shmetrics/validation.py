"""prometheus_client's ``validation`` switches. Names are always checked
against the classic pattern here (the store refuses UTF-8 names), so
these are accepted and change nothing."""


def enable_legacy_validation() -> None:
    """Accepted: classic names are the only ones the store takes."""


def disable_legacy_validation() -> None:
    """Accepted, and changes nothing: UTF-8 names still raise."""


__all__ = ["enable_legacy_validation", "disable_legacy_validation"]

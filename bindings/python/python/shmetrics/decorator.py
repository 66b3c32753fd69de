"""prometheus_client's ``decorator.getargspec``: the decorators here keep
the decorated function's signature (``functools.wraps``)."""

import inspect
from typing import Any, Callable, List, NamedTuple, Optional, Tuple


class ArgSpec(NamedTuple):
    args: List[str]
    varargs: Optional[str]
    varkw: Optional[str]
    defaults: Optional[Tuple[Any, ...]]


def getargspec(f: Callable[..., Any]) -> ArgSpec:
    """The arguments of ``f`` (followed through ``__wrapped__``)."""
    spec = inspect.getfullargspec(inspect.unwrap(f))
    return ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)


__all__ = ["getargspec"]

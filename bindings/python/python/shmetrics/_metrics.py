"""prometheus_client's conveniences that the native metric classes hand
out (timers, exception counting, in-progress tracking), and Info and Enum,
which are gauges underneath."""

from __future__ import annotations

import functools
import inspect
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, TypeVar

from . import _native

F = TypeVar("F", bound=Callable[..., Any])


class _Decorating:
    """Base of the helpers that work as a context manager and as a decorator.

    As a decorator, each call gets a fresh helper, so concurrent and
    recursive calls do not share state; coroutine functions are timed until
    they finish, not until they return a coroutine."""

    __slots__ = ()

    def _fresh(self) -> "_Decorating":
        raise NotImplementedError

    def __enter__(self) -> Any:
        raise NotImplementedError

    def __exit__(self, typ: Optional[type], value: object, tb: object) -> None:
        raise NotImplementedError

    def __call__(self, f: F) -> F:
        if inspect.iscoroutinefunction(f):

            @functools.wraps(f)
            async def awrapped(*args: Any, **kwargs: Any) -> Any:
                with self._fresh():
                    return await f(*args, **kwargs)

            return awrapped  # type: ignore[return-value]

        @functools.wraps(f)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return f(*args, **kwargs)

        return wrapped  # type: ignore[return-value]


class Timer(_Decorating):
    """Times a block or a function and records the seconds it took
    (``duration`` after the block) with ``metric``'s method ``method``.
    On a metric with label names, ``labels(...)`` inside the block picks
    the child, as prometheus_client's timer allows."""

    __slots__ = ("_metric", "_method", "_start", "duration")

    def __init__(self, metric: Any, method: str) -> None:
        self._metric = metric
        self._method = method
        self._start = 0.0
        self.duration: Optional[float] = None

    def _fresh(self) -> "Timer":
        return Timer(self._metric, self._method)

    def labels(self, *values: Any, **kwargs: Any) -> None:
        """Records into the child with these label values."""
        self._metric = self._metric.labels(*values, **kwargs)

    def __enter__(self) -> "Timer":
        self._start = time.perf_counter()
        return self

    def __exit__(self, typ: Optional[type], value: object, tb: object) -> None:
        self.duration = max(time.perf_counter() - self._start, 0.0)
        try:
            getattr(self._metric, self._method)(self.duration)
        except Exception:
            # The application's exception is the one that propagates.
            if typ is None:
                raise


class ExceptionCounter(_Decorating):
    """Counts the exceptions of a given type raised in a block or function
    (and lets them propagate)."""

    __slots__ = ("_counter", "_exception")

    def __init__(self, counter: _native.Counter, exception: Any) -> None:
        self._counter = counter
        self._exception = exception

    def _fresh(self) -> "ExceptionCounter":
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: Optional[type], value: object, tb: object) -> None:
        if typ is not None and issubclass(typ, self._exception):
            self._counter.inc()


class InprogressTracker(_Decorating):
    """Adds one to a gauge while a block or function runs."""

    __slots__ = ("_gauge",)

    def __init__(self, gauge: _native.Gauge) -> None:
        self._gauge = gauge

    def _fresh(self) -> "InprogressTracker":
        return self

    def __enter__(self) -> None:
        self._gauge.inc()

    def __exit__(self, typ: Optional[type], value: object, tb: object) -> None:
        self._gauge.dec()


def set_function(gauge: Any, f: Callable[[], float]) -> None:
    """``Gauge.set_function``: see ``shmetrics._publish``."""
    from . import _publish
    _publish.set_function(gauge, f)


def remove_by_labels(metric: Any, labels: Any) -> None:
    """``remove_by_labels``: deletes every series of ``metric`` whose
    labels include ``labels``, as the store lists them now."""
    labelnames = tuple(metric._labelnames)
    if not labelnames:
        raise _native.LabelError(f"No label names were set when constructing {metric!r}")
    if not isinstance(labels, dict):
        raise TypeError("labels must be a dict of {label_name: label_value}")
    if not labels:
        return
    unknown = [k for k in labels if k not in labelnames]
    if unknown:
        raise _native.LabelError(f"Unknown label names: {unknown}; expected {labelnames}")
    want = {k: str(v) for k, v in labels.items()}
    for name, _help, _unit, _kind, series in metric._store.collect():
        if name != metric._name:
            continue
        for pairs, _value, _created in series:
            got = dict(pairs)
            if all(got.get(k) == v for k, v in want.items()):
                metric.remove(*(got.get(n, "") for n in labelnames))


def metric_repr(metric: Any) -> str:
    """A metric's ``repr()`` as prometheus_client writes it: the module the
    class is imported from, the class and the name
    (``shmetrics.metrics.Counter(c)``; ``prometheus_client.metrics.Counter(c)``
    once ``install_as_prometheus_client()`` made that name give it)."""
    from ._alias import public_module
    return f"{public_module('shmetrics.metrics')}.{type(metric).__name__}({metric._name})"


Counter = _native.Counter
Gauge = _native.Gauge
Histogram = _native.Histogram
Summary = _native.Summary


def _label_values(name: str, labelnames: Tuple[str, ...], bound: Tuple[str, ...],
                  values: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[str, ...]:
    """The label values ``labels()`` was given, as strings in label-name
    order, checked as the native metrics check them."""
    if not labelnames:
        raise _native.LabelError(f"{name} was created without label names, so it takes no label values")
    if bound:
        raise _native.LabelError(f"{name} is already a child with label values {list(bound)}")
    if kwargs:
        if values or set(kwargs) != set(labelnames):
            raise _native.LabelError(
                f"{name}: expected label names {list(labelnames)}, got {list(kwargs)}")
        values = tuple(kwargs[n] for n in labelnames)
    if len(values) != len(labelnames):
        raise _native.LabelError(
            f"{name}: expected {len(labelnames)} label values for {list(labelnames)}, got {len(values)}")
    return tuple(str(v) for v in values)


class _Reserved:
    """A registry whose ``_shmetrics_attach`` takes a name reserved before
    (an ``Info``'s gauge)."""

    def __init__(self, registry: Any) -> None:
        self._registry = registry

    def _shmetrics_attach(self, name: str, kind: str, labelnames: Any) -> Any:
        return self._registry._shmetrics_attach(name, kind, labelnames, reserved=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._registry, name)


class _NotGiven:
    """The default of ``registry``: ``REGISTRY``, where ``None`` is no
    registry, as in prometheus_client."""

    def __repr__(self) -> str:
        return "REGISTRY"


NOT_GIVEN: Any = _NotGiven()


# ``REGISTRY``, handed down by ``shmetrics.registry`` once it made it
# (``_provide_registry``): that module imports this one (for ``Info`` and
# ``Enum``), so this one does not import it back.
_REGISTRY: Any = None


def _provide_registry(registry: Any) -> None:
    """Takes ``REGISTRY`` from ``shmetrics.registry``."""
    global _REGISTRY
    _REGISTRY = registry


def _default_registry() -> Any:
    """``REGISTRY``, the registry of a metric created without one."""
    if _REGISTRY is None:
        raise RuntimeError("shmetrics.registry.REGISTRY was not provided to shmetrics._metrics yet: "
                           "import shmetrics first")
    return _REGISTRY


def _track(registry: Any, metric: Any) -> None:
    """Lists ``metric`` in its shmetrics registry (``_collector_to_names``)."""
    track = getattr(registry, "_shmetrics_track", None)
    if track is not None:
        track(metric)


def _full_name(name: str, namespace: str, subsystem: str) -> str:
    return "_".join(p for p in (namespace, subsystem, name) if p)


class Info:
    """Key-value information about the target, exposed as the gauge
    ``<name>_info`` with the keys as labels and the value 1, as
    prometheus_client does.

    The keys become label names, so they are fixed by the first ``info()``
    call in the store; a later call with other keys raises
    ``ConflictError``. Until then it has no series in the store; a
    registry of its own shows it empty meanwhile, as prometheus_client
    does. Across processes the series are combined with ``max``: every
    process that sets the same info shares one series."""

    def __init__(
        self,
        name: str,
        documentation: str = "",
        labelnames: Iterable[str] = (),
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = NOT_GIVEN,
        _labelvalues: Optional[Sequence[str]] = None,
    ) -> None:
        if unit:
            raise _native.InvalidOptionsError(f"{name}: an Info metric has no unit")
        if not isinstance(documentation, str):
            # As the other metrics (their Rust side); prometheus_client takes
            # it and fails at the next scrape.
            raise TypeError(f"{name}: documentation must be a str, not {type(documentation).__name__}")
        registry = _default_registry() if registry is NOT_GIVEN else registry
        self._name = _full_name(name, namespace, subsystem)
        self._documentation = documentation
        self._labelnames = _str_names(name, labelnames)
        reserve = getattr(registry, "_shmetrics_reserve", None)
        if reserve is not None and not _labelvalues:
            reserve(self._name + "_info", "gauge")
            registry = _Reserved(registry)
        self._registry = registry
        self._labelvalues = tuple(_labelvalues or ())
        # Shared by the parent and its children: the gauge, made by the
        # first info() call, and its keys.
        self._shared: Dict[str, Any] = {}
        self._current: Optional[Tuple[str, ...]] = None
        self._children: Dict[Tuple[Any, ...], "Info"] = {}
        retype = getattr(registry, "_shmetrics_retype", None)
        if retype is not None and not _labelvalues:
            retype(self._name + "_info", "info")
        pending = getattr(registry, "_shmetrics_pending_info", None)
        if pending is not None and not _labelvalues:
            pending(self)
        if not _labelvalues:
            _track(registry, self)

    def __repr__(self) -> str:
        return metric_repr(self)

    def __str__(self) -> str:
        return f"info:{self._name}"

    def labels(self, *values: Any, **kwargs: Any) -> "Info":
        """The child for these label values."""
        key = _label_values(self._name, self._labelnames, self._labelvalues, values, kwargs)
        child = self._children.get(key)
        if child is None:
            child = Info(self._name, self._documentation, self._labelnames,
                         registry=None, _labelvalues=key)
            child._shared = self._shared
            child._registry = self._registry
            self._children[key] = child
        return child

    def info(self, val: Dict[str, str]) -> None:
        """Sets the info. The keys must not clash with the label names, and
        no value may be ``None`` (``LabelError``, a ``ValueError``); ``val``
        that is not a mapping is a ``TypeError`` (prometheus_client lets
        the ``AttributeError`` of ``val.values()`` through)."""
        if not isinstance(val, Mapping):
            raise TypeError(f"{self._name}: info() takes a dict of str to str, not {type(val).__name__}")
        if self._labelnames and not self._labelvalues:
            raise _native.LabelError(
                f"{self._name} has label names {list(self._labelnames)}: call .labels(...) first"
            )
        if set(val) & set(self._labelnames):
            raise _native.LabelError(
                f"{self._name}: info keys {sorted(set(val) & set(self._labelnames))} clash with its label names"
            )
        if any(v is None for v in val.values()):
            # Refused before anything is registered: the keys of a refused
            # call do not become the info's keys.
            raise _native.LabelError(f"{self._name}: info values cannot be None")
        keys = tuple(sorted(_str_names(self._name, val)))
        gauge = self._shared.get("gauge")
        if gauge is None:
            gauge = Gauge(self._name + "_info", self._documentation, self._labelnames + keys,
                          registry=self._registry, multiprocess_mode="max", _openmetrics_type="info")
            self._shared["gauge"], self._shared["keys"] = gauge, keys
        elif self._shared["keys"] != keys:
            raise _native.ConflictError(
                f"{self._name}: info keys {list(keys)} differ from the first call's {list(self._shared['keys'])}")
        values = self._labelvalues + tuple(str(val[k]) for k in keys)
        if self._current is not None and self._current != values:
            gauge.remove(*self._current)
        gauge.labels(*values).set(1)
        self._current = values


def _str_names(metric: str, names: Iterable[Any]) -> Tuple[str, ...]:
    """Label names (or info keys) as a tuple; ``TypeError`` for one that is
    not a str, as prometheus_client's name check raises."""
    out = tuple(names)
    for n in out:
        if not isinstance(n, str):
            raise TypeError(f"{metric}: label names must be str, not {type(n).__name__} ({n!r})")
    return out


class Enum:
    """A state set: which one of ``states`` the target is in, exposed as a
    gauge with a label named after the metric, 1 for the current state and
    0 for the others, as prometheus_client does. Across processes the most
    recently set state wins.

    Unlike prometheus_client, a new Enum is not put in its first state: in
    a pre-fork server every restarting worker would reset the state that
    the others set. It appears once ``state()`` is called."""

    def __init__(
        self,
        name: str,
        documentation: str = "",
        labelnames: Iterable[str] = (),
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = NOT_GIVEN,
        _labelvalues: Optional[Sequence[str]] = None,
        states: Optional[Sequence[str]] = None,
    ) -> None:
        full = _full_name(name, namespace, subsystem)
        if unit:
            raise _native.InvalidOptionsError(f"{full}: an Enum metric has no unit")
        if not states:
            raise _native.InvalidOptionsError(f"{full}: an Enum needs at least one state")
        labelnames = tuple(labelnames)
        if full in labelnames:
            raise _native.InvalidNameError(f"{full}: an Enum's own name cannot be one of its labels")
        self._states = [str(s) for s in states]
        registry = _default_registry() if registry is NOT_GIVEN else registry
        self._gauge = Gauge(full, documentation, labelnames + (full,), registry=registry,
                            multiprocess_mode="mostrecent", _openmetrics_type="stateset")
        retype = getattr(registry, "_shmetrics_retype", None)
        if retype is not None:
            retype(full, "stateset")

        self._labelnames = labelnames
        self._labelvalues = tuple(_labelvalues or ())
        if getattr(registry, "_shmetrics_private", False) and not labelnames:
            # A registry of its own is one process's: the Enum starts in
            # its first state, as prometheus_client's does.
            self.state(self._states[0])
        # Listed in the registry in its gauge's place.
        _track(registry, self)

    @property
    def _name(self) -> str:
        return str(self._gauge._name)

    def __repr__(self) -> str:
        return metric_repr(self)

    def __str__(self) -> str:
        return f"stateset:{self._name}"

    def labels(self, *values: Any, **kwargs: Any) -> "Enum":
        """The child for these label values."""
        key = _label_values(self._gauge._name, self._labelnames, self._labelvalues, values, kwargs)
        child = Enum.__new__(Enum)
        child._states = self._states
        child._gauge = self._gauge
        child._labelnames = self._labelnames
        child._labelvalues = key
        return child

    def state(self, state: str) -> None:
        """Sets the current state."""
        if self._labelnames and not self._labelvalues:
            raise _native.LabelError(
                f"{self._gauge._name} has label names {list(self._labelnames)}: call .labels(...) first"
            )
        if state not in self._states:
            raise _native.InvalidValueError(
                f"{self._gauge._name}: {state!r} is not one of its states {self._states}"
            )
        for s in self._states:
            self._gauge.labels(*self._labelvalues, s).set(1 if s == state else 0)


# What the native metric classes hand out or call (src/provided.rs): the
# native module is imported by this one, so it does not import this one
# back.
_native._provide(Timer=Timer, ExceptionCounter=ExceptionCounter, InprogressTracker=InprogressTracker,
                 set_function=set_function, remove_by_labels=remove_by_labels, metric_repr=metric_repr)

__all__ = [
    "Counter", "Gauge", "Histogram", "Summary", "Info", "Enum",
    "Timer", "ExceptionCounter", "InprogressTracker",
]

"""Type stubs of the native module (checked against it by mypy's stubtest
in ./run-tests)."""

from os import PathLike
from typing import AbstractSet, Any, Callable, ClassVar, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple, TypeVar, Union, final

__all__ = [
    "InvalidNameError",
    "LabelError",
    "InvalidValueError",
    "InvalidOptionsError",
    "ConflictError",
    "CapacityError",
    "WrongTypeError",
    "StaleHandleError",
    "StoreFileError",
    "NotConfiguredError",
    "Store",
    "Counter",
    "Gauge",
    "Histogram",
    "Summary",
    "set_default_store",
    "default_store",
    "store_path_from_env",
    "content_type",
    "negotiate",
    "render_metrics",
    "float_text",
    "escape_name",
    "legacy_validation",
    "set_legacy_validation",
    "DEFAULT_BUCKETS",
    "LAYOUT_VERSION",
    "STORE_ENV",
    "MULTIPROC_STORE_FILE",
    "__version__",
]

__version__: str
DEFAULT_BUCKETS: Tuple[float, ...]
LAYOUT_VERSION: int
STORE_ENV: str
MULTIPROC_STORE_FILE: str

class InvalidNameError(ValueError): ...
class LabelError(ValueError): ...
class InvalidValueError(ValueError): ...
class InvalidOptionsError(ValueError): ...
class ConflictError(ValueError): ...
class CapacityError(ValueError): ...
class WrongTypeError(TypeError): ...
class StaleHandleError(RuntimeError): ...
class StoreFileError(OSError): ...
class NotConfiguredError(RuntimeError): ...

# One series of `Store.collect()`: labels, value (a float, a histogram's
# (bounds, cumulative counts, sum) or a summary's (count, sum, quantiles))
# and its creation time in Unix nanoseconds.
_Series = Tuple[List[Tuple[str, str]], Any, int]

@final
class Store:
    def __new__(
        cls,
        path: Union[str, PathLike[str]],
        *,
        create: bool = True,
        read_only: bool = False,
        mode: int = 0o600,
        max_series: Optional[int] = None,
        max_families: Optional[int] = None,
        label_bytes: Optional[int] = None,
        max_writers: Optional[int] = None,
    ) -> Store: ...
    @property
    def path(self) -> Any: ...
    @property
    def read_only(self) -> bool: ...
    def render(self, format: str = "text") -> bytes: ...
    @property
    def generation(self) -> int:
        """How many times ``check()`` opened the path again."""
    def path_now(self) -> str:
        """``"same"``, ``"gone"`` or ``"other"``: what the path names now."""
    def check(self) -> bool:
        """Opens the path again if it names another file; whether it did."""
    def render_client_python(self, openmetrics: bool = False, escaping: str = "underscores",
                             created: bool = True, retype: Optional[Dict[str, str]] = None,
                             negative_bucket_sum: bool = False,
                             skip: Optional[AbstractSet[str]] = None) -> bytes:
        """The store's families as prometheus_client writes a registry
        that shows them (``_created`` samples if ``created``; the gauges
        named in ``retype`` typed ``info`` or ``stateset`` in
        OpenMetrics; the families named in ``skip`` left out), without
        OpenMetrics' ``# EOF``."""
    def collect(self) -> List[Tuple[str, str, str, str, List[_Series]]]: ...
    def reset(self) -> None: ...
    def wipe(self) -> None: ...

_M = TypeVar("_M")
_F = TypeVar("_F", bound=Callable[..., Any])

class _Decorator(Protocol):
    """A context manager that is also a decorator (shmetrics._metrics)."""
    def __enter__(self) -> Any: ...
    def __exit__(self, typ: Optional[type], value: object, tb: object) -> None: ...
    def __call__(self, f: _F) -> _F: ...

class _Metric:
    def __init__(self, *_args: Any, **_kwargs: Any) -> None: ...
    def labels(self: _M, *values: object, **kwargs: object) -> _M: ...
    def remove(self, *values: object) -> None: ...
    def remove_by_labels(self, labels: Any) -> None: ...
    def clear(self) -> None: ...
    @property
    def _name(self) -> str: ...
    @property
    def _labelnames(self) -> Tuple[str, ...]: ...
    @property
    def _labelvalues(self) -> Tuple[str, ...]: ...
    @property
    def _store(self) -> Store: ...

@final
class Counter(_Metric):
    def __new__(
        cls,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        exemplars: Optional[bool] = None,
    ) -> Counter: ...
    def __init__(
        self,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        exemplars: Optional[bool] = None,
    ) -> None: ...
    def inc(self, amount: float = 1.0, exemplar: Optional[Dict[str, Any]] = None) -> None: ...
    def reset(self) -> None: ...
    def count_exceptions(self, exception: Any = None) -> _Decorator: ...

@final
class Gauge(_Metric):
    def __new__(
        cls,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        multiprocess_mode: Optional[str] = None,
        _openmetrics_type: Optional[str] = None,
    ) -> Gauge: ...
    def __init__(
        self,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        multiprocess_mode: Optional[str] = None,
        _openmetrics_type: Optional[str] = None,
    ) -> None: ...
    def set_function(self, f: Callable[[], float]) -> None: ...
    def inc(self, amount: float = 1.0) -> None: ...
    def dec(self, amount: float = 1.0) -> None: ...
    def set(self, value: float) -> None: ...
    def set_to_current_time(self) -> None: ...
    def track_inprogress(self) -> _Decorator: ...
    def time(self) -> _Decorator: ...

@final
class Histogram(_Metric):
    DEFAULT_BUCKETS: ClassVar[Tuple[float, ...]]
    def __new__(
        cls,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        buckets: Optional[Sequence[float]] = None,
        native_histogram_bucket_factor: Optional[float] = None,
        native_histogram_zero_threshold: Optional[float] = None,
        native_histogram_max_bucket_number: Optional[int] = None,
        exemplars: Optional[bool] = None,
    ) -> Histogram: ...
    def __init__(
        self,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        buckets: Optional[Sequence[float]] = None,
        native_histogram_bucket_factor: Optional[float] = None,
        native_histogram_zero_threshold: Optional[float] = None,
        native_histogram_max_bucket_number: Optional[int] = None,
        exemplars: Optional[bool] = None,
    ) -> None: ...
    @property
    def _upper_bounds(self) -> List[float]: ...
    def observe(self, amount: float, exemplar: Optional[Dict[str, Any]] = None) -> None: ...
    def time(self) -> _Decorator: ...

@final
class Summary(_Metric):
    def __new__(
        cls,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        quantiles: Optional[Sequence[float]] = None,
        max_age_seconds: float = 600.0,
        age_buckets: int = 5,
    ) -> Summary: ...
    def __init__(
        self,
        name: str,
        documentation: str = "",
        labelnames: Optional[Iterable[str]] = None,
        namespace: str = "",
        subsystem: str = "",
        unit: str = "",
        registry: Any = ...,
        _labelvalues: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[float] = None,
        quantiles: Optional[Sequence[float]] = None,
        max_age_seconds: float = 600.0,
        age_buckets: int = 5,
    ) -> None: ...
    def observe(self, amount: float) -> None: ...
    def time(self) -> _Decorator: ...

def set_default_store(store: Optional[Store]) -> None: ...
def default_store() -> Store: ...
def store_path_from_env() -> Optional[Any]: ...
def content_type(format: str) -> str: ...
def negotiate(accept: Optional[str]) -> Tuple[str, str]: ...
def set_legacy_validation(on: bool) -> None:
    """Turns prometheus_client's legacy name validation on or off."""
def legacy_validation() -> bool:
    """Whether legacy name validation is on."""
def render_metrics(metrics: Iterable[Any], openmetrics: bool, escaping: str = "underscores") -> bytes:
    """prometheus_client ``Metric`` objects written as prometheus_client
    writes them, without OpenMetrics' ``# EOF``."""
def float_text(v: float) -> str:
    """A number as prometheus_client writes values (``1.0``, ``1e+06``)."""
def escape_name(name: str, escaping: str, metric: bool) -> str:
    """A metric (``metric``) or label name as ``escaping`` writes it."""
def _provide(**objects: Any) -> None:
    """Takes the objects of ``shmetrics.registry`` and ``shmetrics._metrics``
    that the metric classes use, by name; for those modules only."""

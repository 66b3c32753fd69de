"""shmetrics: Prometheus metrics for pre-fork Python servers.

prometheus_client's API on one shared-memory store: every process of a
gunicorn or uWSGI server writes its metrics there without locks, and one
exporter (``shmetrics serve``) serves the sum of all of them.

    import shmetrics
    shmetrics.configure("/dev/shm/myapp.shm")   # or set SHMETRICS_STORE
    REQUESTS = shmetrics.Counter("requests", "Requests served.", ["route"])
    REQUESTS.labels("/").inc()
"""

from ._native import (
    DEFAULT_BUCKETS,
    LAYOUT_VERSION,
    CapacityError,
    ConflictError,
    InvalidNameError,
    InvalidOptionsError,
    InvalidValueError,
    LabelError,
    NotConfiguredError,
    StaleHandleError,
    Store,
    StoreFileError,
    WrongTypeError,
    __version__,
)
from ._config import configure, default_store
from ._metrics import Counter, Enum, Gauge, Histogram, Info, Summary
from .registry import REGISTRY, CollectorRegistry, disable_created_metrics, enable_created_metrics
from .metrics_core import (CounterMetricFamily, GaugeHistogramMetricFamily, GaugeMetricFamily,
                           HistogramMetricFamily, InfoMetricFamily, Metric, StateSetMetricFamily,
                           SummaryMetricFamily, UnknownMetricFamily, UntypedMetricFamily)
from .samples import Exemplar, Sample, Timestamp
from ._exposition import (
    CONTENT_TYPE_LATEST,
    CONTENT_TYPE_OPENMETRICS,
    CONTENT_TYPE_PLAIN_0_0_4,
    CONTENT_TYPE_PLAIN_1_0_0,
    MetricsHandler,
    choose_encoder,
    delete_from_gateway,
    instance_ip_grouping_key,
    push_to_gateway,
    pushadd_to_gateway,
    write_to_textfile,
    generate_latest,
    generate_openmetrics,
    make_asgi_app,
    make_wsgi_app,
    start_http_server,
    start_wsgi_server,
)

from ._alias import install_as_prometheus_client
from ._publisher import Publisher, start_publisher
from ._check import (CheckStoreASGIMiddleware, CheckStoreMiddleware, StoreCheck, check_store,
                     start_store_check)
from .process_collector import PROCESS_COLLECTOR, ProcessCollector
from .platform_collector import PLATFORM_COLLECTOR, PlatformCollector
from .gc_collector import GC_COLLECTOR, GCCollector
from . import validation  # noqa: E402,F401  (reads PROMETHEUS_LEGACY_NAME_VALIDATION)
from . import multiprocess  # noqa: E402  (prometheus_client exposes it as an attribute)

__shmetrics__ = True

__all__ = [
    "install_as_prometheus_client", "Publisher", "start_publisher", "CheckStoreMiddleware",
    "CheckStoreASGIMiddleware", "StoreCheck", "check_store", "start_store_check", "ProcessCollector", "PROCESS_COLLECTOR", "PlatformCollector",
    "PLATFORM_COLLECTOR", "GCCollector", "GC_COLLECTOR", "Timestamp", "disable_created_metrics",
    "enable_created_metrics", "CONTENT_TYPE_PLAIN_0_0_4", "CONTENT_TYPE_PLAIN_1_0_0", "MetricsHandler",
    "delete_from_gateway", "instance_ip_grouping_key", "push_to_gateway", "pushadd_to_gateway",
    "write_to_textfile",
    "Counter", "Gauge", "Histogram", "Summary", "Info", "Enum",
    "configure", "default_store", "Store", "REGISTRY", "CollectorRegistry",
    "Metric", "CounterMetricFamily", "GaugeMetricFamily", "HistogramMetricFamily",
    "SummaryMetricFamily", "InfoMetricFamily", "GaugeHistogramMetricFamily", "StateSetMetricFamily",
    "UnknownMetricFamily", "UntypedMetricFamily", "Sample", "Exemplar",
    "generate_latest", "generate_openmetrics", "choose_encoder",
    "make_wsgi_app", "make_asgi_app", "start_http_server", "start_wsgi_server",
    "CONTENT_TYPE_LATEST", "CONTENT_TYPE_OPENMETRICS", "DEFAULT_BUCKETS", "LAYOUT_VERSION",
    "InvalidNameError", "LabelError", "InvalidValueError", "InvalidOptionsError",
    "ConflictError", "CapacityError", "WrongTypeError", "StaleHandleError",
    "StoreFileError", "NotConfiguredError", "__version__",
]

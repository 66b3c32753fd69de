"""prometheus_client's ``openmetrics.exposition``: the OpenMetrics text
writer and the escaping schemes' names."""

from .._exposition import ALLOWUTF8, DOTS, UNDERSCORES, VALUES, CONTENT_TYPE_OPENMETRICS
from .._exposition import generate_openmetrics as generate_latest
from .._names import escape_label_name, escape_metric_name

CONTENT_TYPE_LATEST = CONTENT_TYPE_OPENMETRICS
ESCAPING_HEADER_TAG = "escaping"

__all__ = ["ALLOWUTF8", "DOTS", "UNDERSCORES", "VALUES", "CONTENT_TYPE_LATEST", "ESCAPING_HEADER_TAG",
           "generate_latest", "escape_label_name", "escape_metric_name"]

"""prometheus_client's ``openmetrics`` package: the OpenMetrics writer."""

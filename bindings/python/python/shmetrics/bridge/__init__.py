"""prometheus_client's ``bridge`` package."""

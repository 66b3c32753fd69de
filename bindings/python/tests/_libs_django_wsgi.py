"""The Django project's wsgi.py, with the one line that switches to
shmetrics."""

import shmetrics; shmetrics.install_as_prometheus_client()  # noqa: E702  the one added line

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "_libs_django_settings")
application = get_wsgi_application()

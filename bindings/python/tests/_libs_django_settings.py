"""A Django project with django-prometheus as its README sets it up (the
app, the two middlewares, its URLs; multiprocess mode through
PROMETHEUS_MULTIPROC_DIR), settings and URLs in one module."""

import os

from django.http import HttpResponse
from django.urls import include, path

SECRET_KEY = "test"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = ["django_prometheus"]
MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]
ROOT_URLCONF = "_libs_django_settings"
DATABASES = {}
USE_TZ = True


def work(request):
    return HttpResponse(str(os.getpid()))


def ready(request):
    return HttpResponse("ok")


urlpatterns = [
    path("work", work, name="work"),
    path("ready", ready, name="ready"),
    path("", include("django_prometheus.urls")),
]

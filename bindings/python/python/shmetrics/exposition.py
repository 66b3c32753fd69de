"""prometheus_client's ``exposition`` module: pages, servers and the
Pushgateway client."""

from ._exposition import *  # noqa: F401,F403
from ._exposition import _bake_output  # noqa: F401

"""The mule of test_uwsgi.py (`mule = _uwsgi_mule.py`): counts each message
the workers send it, in the same store, through the metric the app module
created in the master."""

import uwsgi

from _uwsgi_app import MULE_MESSAGES

while True:
    uwsgi.mule_get_msg()
    MULE_MESSAGES.inc()

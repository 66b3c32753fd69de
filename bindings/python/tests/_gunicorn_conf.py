"""gunicorn settings for test_gunicorn.py (the bind address, worker count
and preload flag come from the command line)."""


def post_worker_init(worker):
    import _gunicorn_app

    _gunicorn_app.mark_worker()

"""The site: settings, the root URLconf (with the API routes), WSGI/ASGI and the Celery app.

The one module that imports both apps (tests/test_architecture.py): ``submissions`` depends on
``leaderboard``, and only the site wires the two together. Nothing in either app imports it.

Loading the Celery app here (Celery's Django recipe) binds ``@shared_task`` to it in every
process that reads the settings, web processes included."""

from leaderboard.site.celery import app as celery_app

__all__ = ["celery_app"]

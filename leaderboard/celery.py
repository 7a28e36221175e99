"""The Celery application. Workers: `celery -A leaderboard worker` (`make worker`, any number);
exactly one `celery -A leaderboard beat` for the whole site (`make beat`)."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery
from celery.beat import PersistentScheduler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("podium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class Scheduler(PersistentScheduler):
    """Celery's own scheduler, creating the folder of its schedule file first: the file lives
    under PODIUM_VAR_DIR (settings.CELERY_BEAT_SCHEDULE_FILENAME), which nothing else creates
    on a host whose database is PostgreSQL."""

    def setup_schedule(self) -> None:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()

"""The Celery application.

Workers: `celery -A leaderboard.site worker` (`make worker`, any number). A worker started
without -Q consumes both queues, verdicts first (settings CELERY_TASK_DEFAULT_QUEUE and
PODIUM_FOLLOWUP_QUEUE, in that order: `-Q podium,podium-followups` says the same); exactly
one `celery -A leaderboard.site beat` for the whole site (`make beat`: the sweeper).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.beat import PersistentScheduler
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.site.settings")

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


# Tasks that follow a verdict (never needed for one): they go to the follow-up queue. Verdict
# notifications (a slow webhook waits up to its timeout) and a release's rescoring (every stored
# bundle) must never hold up a verdict either.
FOLLOWUP_TASKS = frozenset(
    {
        "submissions.tasks.compute_run_confidence",
        "submissions.tasks.deliver_notification",
        "submissions.tasks.compute_rescore",
    }
)


def route_task(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **kw: Any) -> dict[str, str] | None:
    """Celery router (settings.CELERY_TASK_ROUTES): follow-ups to settings.PODIUM_FOLLOWUP_QUEUE,
    everything else to the default queue (verification, the sweeper)."""
    if name in FOLLOWUP_TASKS:
        return {"queue": settings.PODIUM_FOLLOWUP_QUEUE}
    return None

"""Celery tasks: load a row by id, call a service. All are safe to run twice.

Reliability (settings CELERY_*): tasks are acknowledged late and re-queued when
their worker dies, one at a time per worker process. A verifying worker holds a
renewed lease on its submission row; the beat sweeper (every
settings.PODIUM_SWEEP_EVERY_SECONDS) re-enqueues a submission whose lease ran
out (its worker was killed) and whatever the broker lost (a flushed Redis, a
dropped on_commit enqueue). The verification service counts attempts on the
row, so a bundle that kills its worker still ends bounded.

Queues: verification and the sweeper on settings.CELERY_TASK_DEFAULT_QUEUE,
follow-ups (compute_run_confidence) on settings.PODIUM_FOLLOWUP_QUEUE (routed by
leaderboard.site.celery.route_task); workers consume both, verdicts first.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from submissions.models import NotificationDelivery, Rescore
from submissions.services.cards import cards_close_idle
from submissions.services.notifications import notification_deliver, notifications_due_ids, retry_delay_seconds
from submissions.services.rescoring import rescore_compute, rescore_enqueue, rescores_stuck_ids
from submissions.services.runs import run_confidence_compute, runs_missing_confidence_ids
from submissions.services.verification import TRANSIENT_ERRORS, stuck_submission_ids, submission_verify

logger = logging.getLogger(__name__)

# Transient faults are retried this many times, waiting 2, 4, 8 ... seconds
# (capped, with jitter so a recovering database is not hit by every worker at once).
VERIFY_MAX_RETRIES = 5
VERIFY_RETRY_BACKOFF_MAX_SECONDS = 300


@shared_task(
    bind=True,
    name="submissions.tasks.verify_submission",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=VERIFY_RETRY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
    max_retries=VERIFY_MAX_RETRIES,
)
def verify_submission(self: Any, submission_id: str) -> None:
    # The task id is the lease owner: a retry keeps it, so it reclaims its own row at once (a
    # dropped database connection), while another delivery waits for the lease to run out.
    submission_verify(submission_id=submission_id, lease_owner=self.request.id or "")


@shared_task(
    name="submissions.tasks.compute_run_confidence",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=VERIFY_RETRY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
    max_retries=VERIFY_MAX_RETRIES,
)
def compute_run_confidence(run_id: int) -> None:
    """The bootstrap intervals of a freshly recorded run, off the verification path (idempotent)."""
    run_confidence_compute(run_id=run_id)


@shared_task(name="submissions.tasks.sweep_stuck_submissions", acks_late=True)
def sweep_stuck_submissions() -> int:
    """Re-enqueue submissions whose verifying lease ran out (their worker died; the claim
    counted the attempt, so a poison bundle still ends bounded) or left in received or error
    longer than settings.PODIUM_STUCK_AFTER_SECONDS (returns how many), and the confidence
    intervals of runs recorded a while ago without them."""
    ids = stuck_submission_ids()
    for submission_id in ids:
        verify_submission.delay(str(submission_id))
    if ids:
        logger.warning(
            "re-enqueued %d stuck submission(s) (lease %ss, stuck limit %ss)",
            len(ids),
            settings.PODIUM_LEASE_SECONDS,
            settings.PODIUM_STUCK_AFTER_SECONDS,
        )
    # Runs whose confidence follow-up the broker lost; not counted in the return value.
    run_ids = runs_missing_confidence_ids()
    for run_id in run_ids:
        compute_run_confidence.delay(run_id)
    if run_ids:
        logger.warning("re-enqueued the confidence intervals of %d run(s)", len(run_ids))
    # Rescores whose computation the broker lost; not counted either.
    for rescore in Rescore.objects.filter(pk__in=rescores_stuck_ids()):
        rescore_enqueue(rescore=rescore)
        logger.warning("re-enqueued the computation of rescore %s", rescore.pk)
    return len(ids)


@shared_task(name="submissions.tasks.close_idle_scorecards", acks_late=True)
def close_idle_scorecards() -> int:
    """Close every scorecard idle past settings.PODIUM_CARD_IDLE_SECONDS, as /close would
    (returns how many). Safe to run twice: each card is re-checked under its row lock."""

    closed = cards_close_idle()
    if closed:
        logger.info("closed %d idle scorecard(s)", closed)
    return closed


# --- verdict notifications -----------------------------------------------


@shared_task(name="submissions.tasks.deliver_notification", acks_late=True, bind=True)
def deliver_notification(self: Any, delivery_id: int) -> None:
    """One attempt at a verdict email or webhook (the row records it; safe to run twice).

    A failed attempt is retried with backoff (submissions.services.notifications.retry_delay_seconds)
    until the row is sent or failed. In-process mode (no broker) does not wait in the request:
    the sweeper retries due rows instead."""

    delivery = notification_deliver(delivery_id=delivery_id)
    if delivery is None or delivery.state != NotificationDelivery.State.PENDING or self.request.is_eager:
        return
    raise self.retry(countdown=retry_delay_seconds(delivery.attempts), max_retries=None)


@shared_task(name="submissions.tasks.sweep_notifications", acks_late=True)
def sweep_notifications() -> int:
    """Re-enqueue pending notifications whose retry is due (a lost enqueue, or in-process mode)."""
    ids = notifications_due_ids()
    for delivery_id in ids:
        deliver_notification.delay(delivery_id)
    return len(ids)


# --- rescoring ---------------------------------------------------------


@shared_task(
    name="submissions.tasks.compute_rescore",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=VERIFY_RETRY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
    max_retries=VERIFY_MAX_RETRIES,
)
def compute_rescore(rescore_id: int) -> None:
    """The dry-run stage of a rescore: recompute every stored bundle, record before/after (idempotent)."""
    rescore_compute(rescore_id=rescore_id)

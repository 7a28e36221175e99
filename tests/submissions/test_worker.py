"""Against a real Celery worker process on Redis and PostgreSQL (marked services)."""

from __future__ import annotations

import io
import time

import pytest

from submissions.models import Run, Submission
from submissions.services.submissions import submission_create

WAIT_SECONDS = 60


def wait_for(submission_id, predicate, *, timeout: float = WAIT_SECONDS) -> Submission:
    deadline = time.monotonic() + timeout
    while True:
        submission = Submission.objects.get(pk=submission_id)
        if predicate(submission):
            return submission
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting; submission is {submission.status} {submission.verdict}")
        time.sleep(0.1)


def finished(submission: Submission) -> bool:
    return submission.status == Submission.Status.DONE


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_rejects_an_upload_that_is_not_an_age_file(owner, site_identity, celery_worker):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(b"not age\n" * 10))
    done = wait_for(submission.pk, finished)
    assert (done.verdict, done.error_code, done.attempts) == ("rejected", "not_age_file", 1)
    assert Run.objects.count() == 0


def upload(owner, bundle: bytes) -> Submission:
    submission, created = submission_create(user=owner, uploaded_file=io.BytesIO(bundle))
    assert created is True
    return submission


def sweep_after_stuck_limit(settings) -> int:
    """Run the beat sweeper once the submission has been stuck past the (shortened) limit."""
    from submissions.tasks import sweep_stuck_submissions

    time.sleep(settings.PODIUM_STUCK_AFTER_SECONDS + 0.2)
    return sweep_stuck_submissions()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_an_upload_reaches_validated_through_the_real_worker(owner, demo_release, seal, celery_worker):
    submission = upload(owner, seal())
    done = wait_for(submission.pk, finished)
    assert (done.verdict, done.attempts) == ("validated", 1)
    assert Run.objects.filter(submission=done).count() == 1
    assert "submissions.tasks.verify_submission" in celery_worker.log()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_while_verifying_loses_nothing_and_a_new_worker_finishes_with_one_run(
    owner, demo_release, seal, settings, celery_worker_factory
):
    settings.PODIUM_STUCK_AFTER_SECONDS = 1
    slow = celery_worker_factory().start(PODIUM_VERIFY_DELAY_SECONDS="30")
    submission = upload(owner, seal())
    verifying = wait_for(submission.pk, lambda s: s.status == Submission.Status.VERIFYING)
    assert verifying.attempts == 1
    slow.kill9()
    assert Submission.objects.get(pk=submission.pk).status == "verifying"  # nobody is working on it now
    celery_worker_factory().start()
    assert sweep_after_stuck_limit(settings) == 1
    done = wait_for(submission.pk, finished)
    assert (done.verdict, done.attempts) == ("validated", 2)
    assert Run.objects.filter(submission=done).count() == 1
    assert Run.objects.count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_sweeper_recovers_a_submission_whose_queued_task_redis_lost(
    owner, demo_release, seal, settings, celery_worker_factory
):
    import redis
    from django.conf import settings as django_settings

    from leaderboard.celery import app

    queue = app.conf.task_default_queue  # this session's queue (see tests/conftest.py)
    settings.PODIUM_STUCK_AFTER_SECONDS = 1
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    submission = upload(owner, seal())  # enqueued on commit; no worker yet
    assert broker.llen(queue) == 1
    # A Redis restart without persistence: the queue is gone. (Only this session's queue is
    # deleted; FLUSHALL would also wipe other suites sharing the server.)
    broker.delete(queue)
    celery_worker_factory().start()
    time.sleep(1)
    assert Submission.objects.get(pk=submission.pk).status == "received"
    assert sweep_after_stuck_limit(settings) == 1
    done = wait_for(submission.pk, finished)
    assert (done.verdict, done.attempts) == ("validated", 1)
    assert Run.objects.count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_bundle_that_kills_every_worker_ends_rejected_after_the_attempt_limit(
    owner, demo_release, seal, settings, celery_worker_factory
):
    settings.PODIUM_STUCK_AFTER_SECONDS = 1
    settings.PODIUM_MAX_ATTEMPTS = 2
    submission = upload(owner, seal())
    for attempt in (1, 2):
        doomed = celery_worker_factory().start(PODIUM_VERIFY_DELAY_SECONDS="30")
        if attempt > 1:
            sweep_after_stuck_limit(settings)
        wait_for(submission.pk, lambda s, n=attempt: s.status == "verifying" and s.attempts == n)
        doomed.kill9()
    celery_worker_factory().start()
    sweep_after_stuck_limit(settings)
    done = wait_for(submission.pk, finished)
    assert (done.verdict, done.error_code, done.attempts) == ("rejected", "worker_crashed", 2)
    assert Run.objects.count() == 0

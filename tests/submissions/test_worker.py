"""Against real Celery worker (and beat) processes on Redis and PostgreSQL (marked services).

The fault tests run at default settings (lease, sweep cadence, stuck limit, attempts): each
injects its fault, then asserts the verdict, exactly one Run (none for a poison bundle) and the
time bound of issue 14 -- 60 s after the fault, 180 s for a bundle that kills every worker --
with the sweeper driven by a real `celery beat`, as in production.
"""

from __future__ import annotations

import io
import time

import pytest

from leaderboard.models import Run
from submissions.models import Submission
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


def test_the_fault_tests_run_at_the_default_settings(settings):
    # The time bounds below are only meaningful at the defaults an operator gets.
    assert (
        settings.PODIUM_LEASE_SECONDS,
        settings.PODIUM_SWEEP_EVERY_SECONDS,
        settings.PODIUM_STUCK_AFTER_SECONDS,
        settings.PODIUM_MAX_ATTEMPTS,
    ) == (15, 5, 30, 3)


# Issue 14's bounds, from the fault to the verdict.
RECOVERY_SECONDS = 60
POISON_SECONDS = 180


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_while_verifying_is_taken_over_within_a_minute_with_one_run(
    owner, demo_release, seal, celery_worker_factory
):
    slow = celery_worker_factory().start(PODIUM_VERIFY_DELAY_SECONDS="30")
    submission = upload(owner, seal())
    verifying = wait_for(submission.pk, lambda s: s.status == Submission.Status.VERIFYING)
    assert verifying.attempts == 1 and verifying.lease_owner
    celery_worker_factory().start(beat=True)
    celery_worker_factory().start()
    slow.kill9()  # as the OOM killer would
    killed_at = time.monotonic()
    assert Submission.objects.get(pk=submission.pk).status == "verifying"  # nobody is working on it now
    done = wait_for(submission.pk, finished, timeout=RECOVERY_SECONDS)
    elapsed = time.monotonic() - killed_at
    print(f"killed worker: verdict {elapsed:.1f} s after the fault")  # shown with pytest -rP
    assert (done.verdict, done.attempts) == ("validated", 2)
    assert done.lease_owner != verifying.lease_owner  # another worker took it over
    assert Run.objects.filter(submission=done).count() == 1
    assert Run.objects.count() == 1
    assert elapsed < RECOVERY_SECONDS


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_submission_whose_queued_task_a_broker_flush_lost_reaches_its_verdict_within_a_minute(
    owner, demo_release, seal, celery_worker_factory
):
    import redis
    from django.conf import settings as django_settings

    from tests.conftest import TEST_FOLLOWUP_QUEUE, TEST_QUEUE

    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    submission = upload(owner, seal())  # enqueued on commit; no worker yet
    assert broker.llen(TEST_QUEUE) == 1
    # The flush: this session's queues only (FLUSHALL would also wipe others sharing the server).
    broker.delete(TEST_QUEUE, TEST_FOLLOWUP_QUEUE)
    flushed_at = time.monotonic()
    celery_worker_factory().start(beat=True)
    celery_worker_factory().start()
    done = wait_for(submission.pk, finished, timeout=RECOVERY_SECONDS)
    elapsed = time.monotonic() - flushed_at
    print(f"broker flush: verdict {elapsed:.1f} s after the fault")  # shown with pytest -rP
    assert (done.verdict, done.attempts) == ("validated", 1)
    assert Run.objects.filter(submission=done).count() == 1
    assert Run.objects.count() == 1
    assert elapsed < RECOVERY_SECONDS


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_verification_whose_database_connections_were_terminated_reaches_its_verdict_within_a_minute(
    owner, demo_release, seal, celery_worker_factory
):
    from django.db import connection

    celery_worker_factory().start(beat=True)
    worker = celery_worker_factory().start(PODIUM_VERIFY_DELAY_SECONDS="3")
    submission = upload(owner, seal())
    wait_for(submission.pk, lambda s: s.status == Submission.Status.VERIFYING)
    with connection.cursor() as cursor:
        # Every other backend on the test database: the worker's, mid-verification.
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert cursor.fetchone()[0] >= 1
    terminated_at = time.monotonic()
    done = wait_for(submission.pk, finished, timeout=RECOVERY_SECONDS)
    elapsed = time.monotonic() - terminated_at
    print(f"terminated database connections: verdict {elapsed:.1f} s after the fault")  # shown with pytest -rP
    assert done.verdict == "validated"
    # The automatic retry did it, after the fault was recorded: not a lease running out (a
    # claim of a row left verifying counts an attempt), and the retry itself is no attempt.
    assert done.attempts == 1
    assert Run.objects.filter(submission=done).count() == 1
    assert Run.objects.count() == 1
    assert elapsed < RECOVERY_SECONDS
    assert "retry" in worker.log().lower()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_bundle_that_kills_every_worker_ends_as_worker_crashed_within_three_minutes(
    owner, demo_release, seal, celery_worker_factory
):
    from django.conf import settings

    celery_worker_factory().start(beat=True)
    doomed = celery_worker_factory().start(PODIUM_VERIFY_DELAY_SECONDS="600")
    submission = upload(owner, seal())
    uploaded_at = time.monotonic()
    for attempt in range(1, settings.PODIUM_MAX_ATTEMPTS + 1):
        wait_for(submission.pk, lambda s, n=attempt: s.status == "verifying" and s.attempts == n, timeout=60)
        # The bundle kills its worker (as running out of memory would); the service restarts one.
        doomed.kill9()
        last = attempt == settings.PODIUM_MAX_ATTEMPTS
        doomed = celery_worker_factory().start(**({} if last else {"PODIUM_VERIFY_DELAY_SECONDS": "600"}))
    done = wait_for(submission.pk, finished, timeout=POISON_SECONDS)
    elapsed = time.monotonic() - uploaded_at
    print(f"poison bundle: verdict {elapsed:.1f} s after the fault")  # shown with pytest -rP
    assert (done.verdict, done.error_code, done.attempts) == ("rejected", "worker_crashed", 3)
    assert Run.objects.count() == 0
    assert elapsed < POISON_SECONDS

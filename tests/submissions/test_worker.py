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

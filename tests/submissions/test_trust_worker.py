"""The trust checks through a real Celery worker process on Redis and PostgreSQL (marked services)."""

from __future__ import annotations

import io
import time

import pytest

from leaderboard.models import Run
from submissions.models import SubmissionChallenge
from submissions.services.submissions import submission_create
from tests.submissions.test_worker import finished, wait_for


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_refuses_another_accounts_challenge_and_accepts_the_owners(
    owner, stranger, demo_release, seal, issue_challenge, celery_worker
):
    sealed = seal(challenge=issue_challenge(owner))
    stolen, _ = submission_create(user=stranger, uploaded_file=io.BytesIO(sealed))
    done = wait_for(stolen.pk, finished)
    assert (done.verdict, done.error_code) == ("rejected", "challenge_not_yours")
    assert not Run.objects.exists()
    mine, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal(challenge=issue_challenge(owner), seed=5)))
    done = wait_for(mine.pk, finished)
    assert (done.verdict, done.bundle_format) == ("validated", "podium-bundle/2")
    assert SubmissionChallenge.objects.filter(submission=done).count() == 1
    # Let the worker also take the run's confidence follow-up, so no task of this test is left
    # queued for the next one (which counts its queue).
    deadline = time.monotonic() + 60
    while not Run.objects.get(submission=done).confidence and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Run.objects.get(submission=done).confidence


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_ends_a_non_utf8_member_name_as_a_rejection(owner, demo_release, site_identity, celery_worker):
    from tests.submissions.test_trust_boundary import _sealed_tar

    submission, _ = submission_create(
        user=owner, uploaded_file=io.BytesIO(_sealed_tar(site_identity, [(b"results/\xff.json", b"{}")]))
    )
    done = wait_for(submission.pk, finished)
    assert (done.status, done.verdict, done.error_code) == ("done", "rejected", "invalid_member_name")

import io
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from submissions.models import Submission
from submissions.services.submissions import submission_create
from submissions.tasks import VERIFY_MAX_RETRIES, sweep_stuck_submissions, verify_submission


def test_verification_is_acknowledged_late_requeued_on_worker_loss_and_retried_with_backoff():
    assert verify_submission.acks_late is True
    assert verify_submission.reject_on_worker_lost is True
    assert OperationalError in verify_submission.autoretry_for
    assert OSError in verify_submission.autoretry_for
    assert (verify_submission.retry_backoff, verify_submission.retry_jitter) == (2, True)
    assert verify_submission.max_retries == VERIFY_MAX_RETRIES


@pytest.mark.django_db
def test_the_sweeper_requeues_only_submissions_stuck_past_the_limit(owner, site_identity, settings):
    settings.PODIUM_STUCK_AFTER_SECONDS = 60
    stuck, _ = submission_create(user=owner, uploaded_file=io.BytesIO(b"stuck, not an age file" * 4))
    fresh, _ = submission_create(user=owner, uploaded_file=io.BytesIO(b"fresh, not an age file" * 4))
    Submission.objects.filter(pk=stuck.pk).update(
        status="verifying", attempts=1, updated_at=timezone.now() - timedelta(seconds=61)
    )
    assert sweep_stuck_submissions() == 1  # tasks run in-process in tests
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert (stuck.status, stuck.verdict, stuck.attempts) == ("done", "rejected", 2)
    assert (fresh.status, fresh.attempts) == ("received", 0)

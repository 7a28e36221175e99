"""The verification state machine (submissions.services.verification), in-process."""

import io
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from submissions.models import Run, Submission
from submissions.services import verification
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify


@pytest.fixture
def garbage(owner, site_identity):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(b"this is not an age file at all\n" * 4))
    return submission


@pytest.mark.django_db
def test_an_unreadable_upload_ends_rejected_with_its_code_and_no_run(garbage):
    submission = submission_verify(submission_id=garbage.pk)
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "rejected", "not_age_file")
    assert submission.attempts == 1
    assert submission.finished_at is not None
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_a_finished_submission_is_never_verified_again(garbage):
    first = submission_verify(submission_id=garbage.pk)
    again = submission_verify(submission_id=garbage.pk)
    assert (again.status, again.verdict, again.attempts, again.finished_at) == (
        "done",
        "rejected",
        1,
        first.finished_at,
    )


@pytest.mark.django_db
def test_a_bundle_that_keeps_killing_its_worker_ends_rejected_after_the_attempt_limit(garbage, settings):
    settings.PODIUM_MAX_ATTEMPTS = 3
    settings.PODIUM_STUCK_AFTER_SECONDS = 1
    for _ in range(3):
        verification._claim(garbage.pk)  # each claim is a worker that died before finishing ...
        Submission.objects.filter(pk=garbage.pk).update(verifying_since=timezone.now() - timedelta(seconds=2))
    submission = submission_verify(submission_id=garbage.pk)  # ... as the sweeper finds it later
    assert (submission.status, submission.verdict, submission.error_code, submission.attempts) == (
        "done",
        "rejected",
        "worker_crashed",
        3,
    )
    assert submission.error_message == (
        "the verification worker crashed or was killed 3 times while processing this bundle "
        "(for example it ran out of memory); it will not be tried again"
    )
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_a_transient_fault_leaves_the_submission_retryable_and_is_raised_for_a_retry(garbage, monkeypatch):
    def database_down(path):
        raise OperationalError("connection refused")

    monkeypatch.setattr(verification, "_open_bundle", database_down)
    with pytest.raises(OperationalError):
        submission_verify(submission_id=garbage.pk)
    garbage.refresh_from_db()
    assert (garbage.status, garbage.verdict, garbage.attempts) == ("error", "", 1)
    assert garbage.error_message == (
        "verification was interrupted by a temporary fault on the server; it will be retried automatically"
    )
    monkeypatch.undo()
    submission = submission_verify(submission_id=garbage.pk)
    assert (submission.status, submission.verdict, submission.attempts) == ("done", "rejected", 2)


@pytest.mark.django_db
def test_repeated_transient_faults_end_rejected_not_in_a_loop(garbage, settings, monkeypatch):
    settings.PODIUM_MAX_ATTEMPTS = 2

    def storage_down(path):
        raise OSError("storage unavailable")

    monkeypatch.setattr(verification, "_open_bundle", storage_down)
    for _ in range(2):
        with pytest.raises(OSError):
            submission_verify(submission_id=garbage.pk)
    submission = submission_verify(submission_id=garbage.pk)
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "rejected", "verification_failed")
    assert submission.error_message == (
        "verification was interrupted by a fault on the server 2 times and has been given up; "
        "the site's maintainers have been told (the bundle is kept)"
    )


@pytest.mark.django_db
def test_verifying_a_missing_submission_does_nothing(db):
    assert submission_verify(submission_id="00000000-0000-0000-0000-000000000000") is None
    assert Submission.objects.count() == 0


@pytest.mark.django_db
def test_the_sweeper_lists_submissions_stuck_longer_than_the_limit(garbage, settings):
    settings.PODIUM_STUCK_AFTER_SECONDS = 60
    assert verification.stuck_submission_ids() == []
    later = timezone.now() + timedelta(seconds=61)
    assert verification.stuck_submission_ids(now=later) == [garbage.pk]
    submission_verify(submission_id=garbage.pk)
    assert verification.stuck_submission_ids(now=later) == []


@pytest.mark.django_db
def test_a_duplicate_delivery_leaves_a_submission_another_worker_is_verifying_alone(garbage):
    verification._claim(garbage.pk)  # a live worker is on it
    assert submission_verify(submission_id=garbage.pk).status == "verifying"
    garbage.refresh_from_db()
    assert (garbage.status, garbage.attempts) == ("verifying", 1)

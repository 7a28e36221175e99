"""The verification state machine (submissions.services.verification), in-process."""

import io
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from leaderboard.models import Run
from submissions.models import Submission
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
    for _ in range(3):
        verification._claim(garbage.pk)  # each claim is a worker that died before finishing ...
        Submission.objects.filter(pk=garbage.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
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


@pytest.mark.django_db
def test_a_claim_writes_a_lease_of_the_configured_length_under_the_callers_token(garbage, settings):
    settings.PODIUM_LEASE_SECONDS = 15
    before = timezone.now()
    claimed = verification._claim(garbage.pk, "task-1")
    row = Submission.objects.get(pk=garbage.pk)
    assert (claimed.pk, row.status, row.lease_owner, row.attempts) == (garbage.pk, "verifying", "task-1", 1)
    assert before + timedelta(seconds=15) <= row.lease_expires_at <= timezone.now() + timedelta(seconds=15)


@pytest.mark.django_db
def test_the_same_owner_reclaims_its_row_at_once_after_a_transient_fault(garbage):
    verification._claim(garbage.pk, "task-1")  # the first try lost its database connection mid-way
    assert verification._claim(garbage.pk, "task-2") is None  # anyone else waits for the lease
    done = submission_verify(submission_id=garbage.pk, lease_owner="task-1")  # the retry keeps its task id
    assert (done.status, done.verdict, done.error_code, done.attempts) == ("done", "rejected", "not_age_file", 2)


@pytest.mark.django_db
def test_a_submission_whose_lease_ran_out_is_taken_over_by_the_next_claim(garbage):
    verification._claim(garbage.pk, "dead-worker")
    Submission.objects.filter(pk=garbage.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    done = submission_verify(submission_id=garbage.pk, lease_owner="next-worker")
    assert (done.status, done.verdict, done.attempts) == ("done", "rejected", 2)


@pytest.mark.django_db
def test_the_sweeper_lists_a_verifying_submission_only_once_its_lease_ran_out_and_once_per_lease(garbage, settings):
    settings.PODIUM_LEASE_SECONDS = 15
    verification._claim(garbage.pk, "worker")
    now = timezone.now()
    assert verification.stuck_submission_ids(now=now + timedelta(seconds=14)) == []  # the lease still runs
    assert verification.stuck_submission_ids(now=now + timedelta(seconds=16)) == [garbage.pk]
    # Re-enqueued: the next sweeps leave it alone for one lease while its task waits in the queue.
    assert verification.stuck_submission_ids(now=now + timedelta(seconds=21)) == []
    assert verification.stuck_submission_ids(now=now + timedelta(seconds=32)) == [garbage.pk]


@pytest.mark.django_db(transaction=True)  # the heartbeat writes from a thread of its own
def test_the_heartbeat_renews_the_lease_while_the_work_goes_on_and_stops_with_it(garbage, settings):
    import time

    settings.PODIUM_LEASE_SECONDS = 3  # a beat every second
    Submission.objects.filter(pk=garbage.pk).update(status="received", verdict="")  # verified on commit
    verification._claim(garbage.pk, "slow-worker")
    first = Submission.objects.get(pk=garbage.pk).lease_expires_at
    with verification._Heartbeat(garbage.pk, "slow-worker") as heartbeat:
        time.sleep(2.5)
    renewed = Submission.objects.get(pk=garbage.pk).lease_expires_at
    assert renewed > first + timedelta(seconds=1)
    assert not heartbeat.thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_never_renews_a_lease_another_worker_took_over(garbage, settings):
    import time

    settings.PODIUM_LEASE_SECONDS = 3
    Submission.objects.filter(pk=garbage.pk).update(status="received", verdict="")  # verified on commit
    verification._claim(garbage.pk, "new-owner")
    before = Submission.objects.get(pk=garbage.pk).lease_expires_at
    with verification._Heartbeat(garbage.pk, "old-owner") as heartbeat:
        time.sleep(1.5)
        assert not heartbeat.thread.is_alive()  # it found the row was not its own and stopped
    assert Submission.objects.get(pk=garbage.pk).lease_expires_at == before

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
        "the verification worker crashed, was killed or failed 3 times while processing this bundle "
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
    # The retry after a recorded fault is not another attempt: only crashes are counted.
    assert (submission.status, submission.verdict, submission.attempts) == ("done", "rejected", 1)


@pytest.mark.django_db
def test_transient_faults_never_use_up_the_attempts_a_crash_would(garbage, settings, monkeypatch):
    # A 13-second storage outage took three attempts and rejected valid bundles for good
    # (verification_failed); the fault-injection review.
    settings.PODIUM_MAX_ATTEMPTS = 2

    def storage_down(path):
        raise OSError("storage unavailable")

    monkeypatch.setattr(verification, "_open_bundle", storage_down)
    for _ in range(5):
        with pytest.raises(OSError):
            submission_verify(submission_id=garbage.pk)
    garbage.refresh_from_db()
    assert (garbage.status, garbage.attempts) == ("error", 1)
    monkeypatch.undo()
    submission = submission_verify(submission_id=garbage.pk)
    assert (submission.status, submission.error_code) == ("done", "not_age_file")  # its own verdict at last


@pytest.mark.django_db
def test_transient_faults_end_rejected_once_they_outlast_the_give_up_time(garbage, settings, monkeypatch):
    settings.PODIUM_FAULT_GIVE_UP_SECONDS = 3600

    def storage_down(path):
        raise OSError("storage unavailable")

    monkeypatch.setattr(verification, "_open_bundle", storage_down)
    with pytest.raises(OSError):
        submission_verify(submission_id=garbage.pk)
    Submission.objects.filter(pk=garbage.pk).update(created_at=timezone.now() - timedelta(seconds=3601))
    submission = submission_verify(submission_id=garbage.pk)
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "rejected", "verification_failed")
    assert submission.error_message == (
        "verification kept being interrupted by faults on the server for 1 hours and has been given up; "
        "the bundle is kept, and the site's maintainers can queue it again"
    )


@pytest.mark.django_db
def test_a_bug_of_ours_counts_as_an_attempt_so_a_bundle_failing_every_time_ends(garbage, settings, monkeypatch):
    settings.PODIUM_MAX_ATTEMPTS = 2

    def bug(path):
        raise KeyError("a bug")

    monkeypatch.setattr(verification, "_open_bundle", bug)
    for _ in range(2):
        with pytest.raises(KeyError):
            submission_verify(submission_id=garbage.pk)
        row = Submission.objects.get(pk=garbage.pk)
        assert row.status == "verifying" and row.lease_expires_at <= timezone.now()  # for the sweeper
    submission = submission_verify(submission_id=garbage.pk)
    assert (submission.status, submission.error_code, submission.attempts) == ("done", "worker_crashed", 2)


@pytest.mark.django_db
def test_a_fault_is_not_recorded_on_a_row_another_worker_took_over(garbage, monkeypatch):
    claimed = verification._claim(garbage.pk, "first")
    Submission.objects.filter(pk=garbage.pk).update(lease_owner="second")  # its lease ran out, taken over
    verification._mark_error(claimed)
    row = Submission.objects.get(pk=garbage.pk)
    assert (row.status, row.lease_owner) == ("verifying", "second")


@pytest.mark.django_db
def test_staff_queue_again_a_submission_rejected_for_the_servers_faults_and_it_gets_its_verdict(garbage, settings):
    Submission.objects.filter(pk=garbage.pk).update(
        status="done", verdict="rejected", error_code="verification_failed", attempts=2, finished_at=timezone.now()
    )
    assert verification.submission_requeue(submission=garbage) is True
    garbage.refresh_from_db()  # tasks run in-process in tests: it was verified again at once
    assert (garbage.status, garbage.verdict, garbage.error_code, garbage.attempts) == (
        "done",
        "rejected",
        "not_age_file",
        1,
    )


@pytest.mark.django_db
def test_a_submission_with_a_verdict_of_its_own_is_not_queued_again(garbage):
    first = submission_verify(submission_id=garbage.pk)
    assert verification.submission_requeue(submission=first) is False
    garbage.refresh_from_db()
    assert (garbage.error_code, garbage.attempts, garbage.finished_at) == ("not_age_file", 1, first.finished_at)


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


def test_a_verdict_message_quoting_a_huge_bundle_value_is_stored_cut_to_its_head():
    message = verification._storable("mismatch: claimed " + "x" * 10_000_000)
    assert len(message) < verification.MAX_VERDICT_MESSAGE_CHARS + 60
    assert message.startswith("mismatch: claimed xxx") and message.endswith("(message cut at 2000 characters)")
    assert verification._storable("short") == "short"


def test_a_stored_diff_keeps_numbers_whole_and_bounds_long_claimed_values_and_rows():
    rows = [{"path": "tasks.a.note", "claimed": "y" * 10_000_000, "recomputed": None, "status": "unexpected"}]
    rows += [{"path": f"p{i}", "claimed": 0.1 * i, "recomputed": 0.2, "status": "mismatch"} for i in range(1000)]
    stored = verification._jsonable_diff(rows)
    assert len(stored) == verification.MAX_DIFF_ROWS
    assert stored[0]["claimed"].endswith("... (10000000 characters)") and len(stored[0]["claimed"]) < 250
    assert stored[1] == {"path": "p0", "claimed": 0.0, "recomputed": 0.2, "status": "mismatch"}

"""The backfill of SignedResultDigest rows for podium-bundle/1 runs accepted before verification kept
them (submissions.services.signed_result_digests, ``manage.py signed_result_digests backfill``).

A run accepted "before migration 0003" is made here by uploading a signed podium-bundle/1 bundle
and deleting the rows its verification stored: what is left is exactly such a run.
"""

from __future__ import annotations

import io

import pyrage
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from leaderboard.models import Evaluator, Run
from submissions.api_keys import api_key_create
from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
from submissions.bundle.signatures import public_key_b64
from submissions.models import SignedResultDigest, Submission
from submissions.services.signed_result_digests import (
    BUNDLE_MISSING,
    BUNDLE_UNREADABLE,
    CANNOT_DECRYPT,
    signed_result_digests_backfill,
)
from submissions.services.signing_keys import signing_key_register

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_daily_counters")]


@pytest.fixture
def evaluator_key(demo_release):
    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(key), user=None
    )
    return key


@pytest.fixture
def file_v1(django_capture_on_commit_callbacks, tmp_path, site_identity, evaluator_key):
    """file_v1(user, agent_name, tasks=None, seed=0) -> the submission of a signed podium-bundle/1
    bundle, verified. The same seed makes the same signed result documents (a copy)."""
    recipient = str(site_identity.to_public())
    counter = iter(range(10_000))

    def upload(user, agent_name: str, tasks=None, seed: int = 0) -> Submission:
        directory = write_paper_gap_bundle_dir(
            tmp_path / f"bundle-{next(counter)}", agent_name=agent_name, sign_with=evaluator_key, tasks=tasks, seed=seed
        )
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(user=user, name='harness').plaintext}")
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/api/v1/submissions/",
                {"benchmark": "ale-robotics", "bundle": io.BytesIO(seal_dir(directory, recipient).read_bytes())},
                format="multipart",
            )
        assert response.status_code in (200, 201), response.content
        return Submission.objects.get(pk=response.json()["id"])

    return upload


def accepted_before_the_rows_were_kept(submission: Submission) -> list[str]:
    """Delete the rows verification stored (as a run accepted before migration 0003 has none);
    returns the digests it had, sorted."""
    assert submission.verdict == "validated", (submission.error_code, submission.error_message)
    digests = sorted(submission.signed_result_digests.values_list("digest", flat=True))
    assert digests
    submission.signed_result_digests.all().delete()
    return digests


def rows() -> list[tuple[object, str]]:
    return sorted(
        SignedResultDigest.objects.values_list("submission_id", "digest"), key=lambda row: (str(row[0]), row[1])
    )


def test_the_backfill_stores_the_digests_verification_stored_for_a_submission_with_none(file_v1, owner):
    submission = file_v1(owner, "alice")
    digests = accepted_before_the_rows_were_kept(submission)

    report = signed_result_digests_backfill()

    assert rows() == [(submission.pk, digest) for digest in digests]
    assert (report.checked, report.backfilled, report.digests, report.skipped, report.duplicates) == (
        1,
        1,
        len(digests),
        [],
        [],
    )


def test_a_second_backfill_changes_nothing_and_finds_nothing_to_check(file_v1, owner):
    submission = file_v1(owner, "alice")
    digests = accepted_before_the_rows_were_kept(submission)
    signed_result_digests_backfill()
    before = list(SignedResultDigest.objects.order_by("pk").values_list("pk", "submission_id", "digest"))

    report = signed_result_digests_backfill()

    assert list(SignedResultDigest.objects.order_by("pk").values_list("pk", "submission_id", "digest")) == before
    assert rows() == [(submission.pk, digest) for digest in digests]
    assert (report.checked, report.backfilled, report.digests) == (0, 0, 0)


def test_a_submission_that_kept_its_rows_is_left_alone(file_v1, owner):
    submission = file_v1(owner, "alice")
    before = rows()

    report = signed_result_digests_backfill()

    assert rows() == before
    assert before and all(holder == submission.pk for holder, _ in before)
    assert (report.checked, report.backfilled) == (0, 0)


def test_a_dry_run_reports_what_it_would_store_and_writes_nothing(file_v1, owner):
    submission = file_v1(owner, "alice")
    digests = accepted_before_the_rows_were_kept(submission)
    out = io.StringIO()

    call_command("signed_result_digests", "backfill", "--dry-run", stdout=out)

    assert not SignedResultDigest.objects.exists()
    assert out.getvalue().splitlines()[-1] == (
        f"dry run, nothing written: signed result digests: checked 1, would backfill 1 ({len(digests)} digest(s)), "
        "skipped 0, already duplicated 0"
    )


def test_a_submission_whose_stored_bundle_is_gone_is_skipped_as_bundle_missing_and_the_command_fails(
    file_v1, owner, stranger
):
    gone = file_v1(owner, "alice")
    accepted_before_the_rows_were_kept(gone)
    kept = file_v1(stranger, "bob", seed=1)
    kept_digests = accepted_before_the_rows_were_kept(kept)
    default_storage.delete(gone.file.name)
    out = io.StringIO()

    with pytest.raises(CommandError) as failure:
        call_command("signed_result_digests", "backfill", "--batch-size", "1", stdout=out)

    assert rows() == [(kept.pk, digest) for digest in kept_digests]
    assert failure.value.returncode == 1
    assert "1 submission(s) skipped for an error" in str(failure.value)
    lines = out.getvalue().splitlines()
    assert f"error: submission {gone.pk}: {BUNDLE_MISSING} ({gone.file.name})" in lines
    assert lines[-1] == (
        f"signed result digests: checked 2, backfilled 1 ({len(kept_digests)} digest(s)), "
        "skipped 1 (1 for an error), already duplicated 0"
    )
    assert "Traceback" not in out.getvalue()


def replace_stored_bundle(submission: Submission, content: bytes) -> None:
    name = submission.file.name
    default_storage.delete(name)
    assert default_storage.save(name, ContentFile(content)) == name


def test_a_stored_bundle_no_site_key_opens_is_skipped_as_cannot_decrypt_and_the_command_fails(file_v1, owner, tmp_path):
    submission = file_v1(owner, "alice")
    accepted_before_the_rows_were_kept(submission)
    # The same kind of file, sealed to a key this site does not hold (a lost or rotated-out identity).
    foreign = seal_dir(
        write_paper_gap_bundle_dir(tmp_path / "foreign"), str(pyrage.x25519.Identity.generate().to_public())
    )
    replace_stored_bundle(submission, foreign.read_bytes())
    out = io.StringIO()

    with pytest.raises(CommandError) as failure:
        call_command("signed_result_digests", "backfill", stdout=out)

    assert failure.value.returncode == 1
    assert f"error: submission {submission.pk}: {CANNOT_DECRYPT} (wrong_key)" in out.getvalue().splitlines()
    assert rows() == []
    assert "Traceback" not in out.getvalue()


def test_a_stored_file_that_is_not_a_bundle_is_skipped_with_its_reason_and_nothing_is_written(file_v1, owner):
    submission = file_v1(owner, "alice")
    accepted_before_the_rows_were_kept(submission)
    replace_stored_bundle(submission, b"not an age file at all\n")

    report = signed_result_digests_backfill()

    assert [(skip.submission_id, skip.reason, skip.detail) for skip in report.skipped] == [
        (submission.pk, BUNDLE_UNREADABLE, "not_age_file")
    ]
    assert report.skipped[0].error and report.errors == 1
    assert (report.backfilled, rows()) == (0, [])


def test_two_old_submissions_sharing_a_signed_result_both_get_their_rows_and_are_reported_already_duplicated(
    file_v1, owner, stranger
):
    alice = file_v1(owner, "alice")
    alice_digests = accepted_before_the_rows_were_kept(alice)
    taken = min(alice.run.task_results.values_list("release_task__task__slug", flat=True))
    bob = file_v1(stranger, "bob", tasks=[taken])  # one of Alice's signed files, filed on its own
    (shared,) = accepted_before_the_rows_were_kept(bob)
    assert shared in alice_digests
    out = io.StringIO()

    call_command("signed_result_digests", "backfill", stdout=out)

    assert rows() == sorted(
        [(alice.pk, digest) for digest in alice_digests] + [(bob.pk, shared)], key=lambda row: (str(row[0]), row[1])
    )
    assert Run.objects.filter(submission__in=[alice, bob]).count() == 2  # nothing deleted
    lines = out.getvalue().splitlines()
    assert (
        f"already duplicated: submission {bob.pk}: signed result {shared} was also accepted for submission {alice.pk}"
        in lines
    )
    assert lines[-1].endswith(", skipped 0, already duplicated 1")


def test_after_the_backfill_a_signed_result_of_an_old_run_filed_again_is_duplicate_results(file_v1, owner, stranger):
    alice = file_v1(owner, "alice")
    accepted_before_the_rows_were_kept(alice)
    taken = min(alice.run.task_results.values_list("release_task__task__slug", flat=True))
    signed_result_digests_backfill()

    again = file_v1(stranger, "bob", tasks=[taken])

    assert (again.verdict, again.error_code) == ("rejected", "duplicate_results")
    assert Run.objects.filter(submission=again).count() == 0
    assert not SignedResultDigest.objects.filter(submission=again).exists()


def test_a_submission_whose_evaluator_key_was_revoked_is_skipped_without_failing_the_command(
    file_v1, owner, evaluator_key
):
    """A revoked key's signature is read as unregistered: verification would keep no digest for it
    today, and a copy filed now counts as unsigned, so there is nothing to store and nothing to fix."""
    from leaderboard.models import SigningKey
    from submissions.bundle.signatures import key_id_for
    from submissions.services.signing_keys import signing_key_revoke

    submission = file_v1(owner, "alice")
    accepted_before_the_rows_were_kept(submission)
    signing_key_revoke(signing_key=SigningKey.objects.get(key_id=key_id_for(public_key_b64(evaluator_key))), user=None)
    out = io.StringIO()

    call_command("signed_result_digests", "backfill", stdout=out)

    assert not SignedResultDigest.objects.exists()
    lines = out.getvalue().splitlines()
    assert f"skipped: submission {submission.pk}: no_registered_signature" in lines
    assert lines[-1] == (
        "signed result digests: checked 1, backfilled 0 (0 digest(s)), skipped 1, already duplicated 0"
    )

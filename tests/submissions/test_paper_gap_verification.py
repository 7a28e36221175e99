"""Paper-gap bundles through the real path: submission_create + submission_verify, in-process."""

import io
import shutil
import subprocess
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.utils import timezone

from leaderboard.models import Agent, Release, Run, Standing, TaskResult, VerificationEvent
from leaderboard.selectors.standing_ranks import standings_ranked
from submissions.bundle.signatures import public_key_b64
from submissions.models import Submission
from submissions.services.signing_keys import signing_key_register
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify


@pytest.fixture
def submit(owner, django_capture_on_commit_callbacks):
    def run(bundle: bytes, *, user=None, is_private: bool = False) -> Submission:
        submission, _ = submission_create(user=user or owner, uploaded_file=io.BytesIO(bundle), is_private=is_private)
        # As after a real commit: the run's follow-up (its confidence intervals) runs too.
        with django_capture_on_commit_callbacks(execute=True):
            return submission_verify(submission_id=submission.pk)

    return run


@pytest.fixture
def evaluator_key(demo_release, owner):
    from leaderboard.models import Evaluator

    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(key), user=None
    )
    return key


@pytest.fixture
def judge_key(demo_release, owner):
    """A judge key calibrated (rubric/1) for every reproduction task of the demo release."""
    from leaderboard.models import ReleaseTask

    key = Ed25519PrivateKey.generate()
    reproduction = ReleaseTask.objects.filter(release=demo_release, genre="reproduction")
    # The release's faithfulness gate passed with rubric/1: a judge key counts for what was calibrated.
    reproduction.update(faithfulness_rubric_version="rubric/1", faithfulness_calibrated_at=timezone.now())
    tasks = {rt.task: "rubric/1" for rt in reproduction}
    signing_key_register(judge_name="judge/1", tasks=tasks, public_key_b64=public_key_b64(key), user=None)
    return key


@pytest.mark.django_db
def test_a_complete_consistent_bundle_is_validated_with_one_run_and_a_standing(demo_release, seal, submit):
    submission = submit(seal(agent_name="Demo Agent", agent_version="2.1"))
    assert (submission.status, submission.verdict, submission.error_code, submission.kind) == (
        "done",
        "validated",
        "",
        "paper_gap",
    )
    assert submission.release_id == demo_release.pk
    run = Run.objects.get(submission=submission)
    assert (run.level, run.covered, run.required, run.complete) == ("validated", 11, 11, True)
    assert (run.agent_version.agent.slug, run.agent_version.agent.name, run.agent_version.version) == (
        "demo-agent",
        "Demo Agent",
        "2.1",
    )
    assert run.breakdown["aggregates"]["overall"] == run.overall
    assert set(run.confidence) == {"overall", "reproduction", "open"}
    assert run.confidence["overall"][0] <= run.overall <= run.confidence["overall"][1]
    assert TaskResult.objects.filter(run=run).count() == 11
    assert set(TaskResult.objects.filter(run=run).values_list("episodes", "signature")) == {(100, "unsigned")}
    assert list(VerificationEvent.objects.filter(run=run).values_list("level", "actor", "evidence_sha256")) == [
        ("validated", None, submission.sha256)
    ]
    assert standings_ranked().filter(release=demo_release, tab="overall", run=run, rank=1).exists()
    # Two refreshes: one when the run is recorded, one when its confidence intervals arrive.
    assert Release.objects.get(pk=demo_release.pk).generation == 2


@pytest.mark.django_db
def test_a_bundle_signed_by_a_registered_evaluator_key_is_attested(
    demo_release, evaluator_key, judge_key, seal, submit, owner, issue_challenge
):
    challenge = issue_challenge(owner)
    submission = submit(seal(sign_with=evaluator_key, challenge=challenge, judge_with=judge_key))
    assert submission.verdict == "attested", submission.error_message
    run = Run.objects.get(submission=submission)
    assert run.level == "attested"
    assert set(TaskResult.objects.filter(run=run).values_list("signature", flat=True)) == {"valid"}
    assert TaskResult.objects.filter(run=run, signing_key__isnull=True).count() == 0
    reproduction = TaskResult.objects.filter(run=run, release_task__genre="reproduction")
    assert set(reproduction.values_list("faithfulness_source", "judge", "rubric_version")) == {
        ("judge_signed", "judge/1", "rubric/1")
    }


@pytest.mark.django_db
def test_a_bundle_signed_by_an_unregistered_key_is_only_validated(demo_release, seal, submit):
    submission = submit(seal(sign_with=Ed25519PrivateKey.generate()))
    assert submission.verdict == "validated"
    assert set(TaskResult.objects.filter(run__submission=submission).values_list("signature", flat=True)) == {
        "unregistered"
    }


@pytest.mark.django_db
def test_a_claim_that_differs_from_the_recomputation_is_a_mismatch_with_its_diff_and_no_run(demo_release, seal, submit):
    submission = submit(seal(tamper="claimed_score"))
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "mismatch", "")
    assert [row["path"] for row in submission.diff] == ["tasks.act-aloha-transfer.final"]
    row = submission.diff[0]
    assert row["claimed"] == pytest.approx(row["recomputed"] + 0.05)
    assert submission.error_message.startswith("score_breakdown.json: 1 claimed value(s) differ")
    assert Run.objects.count() == 0
    assert Standing.objects.count() == 0


@pytest.mark.django_db
def test_partial_coverage_is_validated_and_marked_incomplete(demo_release, seal, submit):
    submission = submit(seal(tasks=["act-aloha-transfer", "nuplan-closed-loop", "orb-slam-ate", "robomimic-lift-bc"]))
    run = Run.objects.get(submission=submission)
    assert (submission.verdict, run.covered, run.required, run.complete) == ("validated", 4, 11, False)
    assert Standing.objects.get(release=demo_release, tab="overall").complete is False


@pytest.mark.django_db
def test_a_missing_declared_safety_metric_is_scored_fail_closed_not_rejected(demo_release, seal, submit):
    submission = submit(seal(tamper="missing_safety_metric"))
    assert submission.verdict == "validated"
    result = TaskResult.objects.get(run__submission=submission, release_task__task__slug="carla-route-completion")
    assert (result.factors, result.factor, result.final) == ({"collision_rate": 0.0}, 0.0, 0.0)


@pytest.mark.django_db
def test_a_private_run_is_stored_but_kept_off_the_public_standings(demo_release, seal, submit):
    submission = submit(seal(), is_private=True)
    run = Run.objects.get(submission=submission)
    assert run.is_private is True
    assert Standing.objects.filter(release=demo_release).count() == 0


@pytest.mark.django_db
def test_verifying_again_after_the_run_exists_writes_no_second_run(demo_release, seal, submit):
    submission = submit(seal())
    # As if a redelivered task found the row unfinished although its Run was written.
    Submission.objects.filter(pk=submission.pk).update(
        status="verifying",
        verdict="",
        verifying_since=timezone.now() - timedelta(hours=1),
        lease_expires_at=timezone.now() - timedelta(minutes=59),
    )
    again = submission_verify(submission_id=submission.pk)
    assert (again.status, again.verdict) == ("done", "validated")
    assert Run.objects.filter(submission=submission).count() == 1
    assert TaskResult.objects.count() == 11
    assert VerificationEvent.objects.count() == 1


@pytest.mark.django_db
def test_the_same_agent_name_reuses_the_agent_and_adds_versions(demo_release, seal, submit):
    submit(seal(agent_name="Robo", agent_version="1", seed=1))
    submit(seal(agent_name="Robo", agent_version="2", seed=2))
    assert Agent.objects.filter(slug="robo").count() == 1
    assert Agent.objects.get(slug="robo").versions.count() == 2
    assert Standing.objects.filter(release=demo_release, tab="overall").count() == 2


@pytest.mark.django_db
def test_a_bundle_for_an_unknown_release_is_rejected(demo_release, seal, submit):
    submission = submit(seal(release_version="9.9"))
    assert (submission.verdict, submission.error_code, submission.error_message) == (
        "rejected",
        "unknown_release",
        f"manifest.json: benchmark 'ale-robotics' has no published release '9.9' on this server "
        f"(published: {demo_release.version})",
    )
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_a_bundle_for_an_unpublished_release_is_rejected(release_from_spec, seal, submit):
    from submissions.bundle.demo import DEMO_RELEASE, demo_release_spec

    release_from_spec(demo_release_spec()[0], benchmark="ale-robotics", version=DEMO_RELEASE, published=False)
    submission = submit(seal())
    assert (submission.verdict, submission.error_code) == ("rejected", "unknown_release")
    # The same words as for a version that does not exist: the answer must not confirm unpublished versions.
    assert submission.error_message == (
        f"manifest.json: benchmark 'ale-robotics' has no published release {DEMO_RELEASE!r} on this server"
    )


@pytest.mark.skipif(shutil.which("age") is None, reason="Debian's age package is not installed")
@pytest.mark.django_db
def test_a_bundle_sealed_by_the_age_command_line_tool_is_validated(demo_release, site_identity, tmp_path, submit):
    from submissions.bundle.archive import write_archive
    from submissions.bundle.demo import write_paper_gap_bundle_dir
    from submissions.bundle.seal import directory_members

    directory = write_paper_gap_bundle_dir(tmp_path / "bundle")
    write_archive(directory_members(directory), tmp_path / "bundle.tar.zst")
    subprocess.run(
        [
            "age",
            "-r",
            str(site_identity.to_public()),
            "-o",
            str(tmp_path / "bundle.age"),
            str(tmp_path / "bundle.tar.zst"),
        ],
        check=True,
    )
    submission = submit((tmp_path / "bundle.age").read_bytes())
    assert (submission.verdict, submission.error_code) == ("validated", "")
    assert Run.objects.filter(submission=submission).count() == 1


@pytest.mark.django_db
def test_a_bundle_sealed_to_the_key_before_a_rotation_still_verifies(
    demo_release, site_identity, settings, seal, submit
):
    import pyrage

    bundle = seal()  # sealed to the current key ...
    settings.PODIUM_SITE_KEYS = f"{site_identity}\n{pyrage.x25519.Identity.generate()}"  # ... which a rotation retires
    submission = submit(bundle)
    assert (submission.verdict, submission.error_code) == ("validated", "")


@pytest.mark.django_db
def test_verifying_an_unsigned_bundle_does_not_read_the_signing_keys(demo_release, seal, owner):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    with CaptureQueriesContext(connection) as queries:
        verified = submission_verify(submission_id=submission.pk)
    assert verified.verdict == "validated"
    assert not [query for query in queries.captured_queries if "leaderboard_signingkey" in query["sql"]]
    # The run's task results are written in one statement, whatever the number of tasks.
    assert len([query for query in queries.captured_queries if 'INTO "leaderboard_taskresult"' in query["sql"]]) == 1


@pytest.mark.django_db
def test_a_verdict_updates_its_submission_once_and_reads_no_webhook_of_its_own(demo_release, seal, owner):
    """After the claim, the verdict's columns and the run link are one UPDATE of the submission;
    the submitter's webhook comes with the locked row (no query of its own), and an account with
    neither an email nor a webhook is owed no notification row."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from submissions.models import NotificationDelivery

    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    with CaptureQueriesContext(connection) as queries:
        verified = submission_verify(submission_id=submission.pk)
    assert verified.verdict == "validated" and verified.run_id is not None
    statements = [query["sql"] for query in queries.captured_queries]
    updates = [sql for sql in statements if sql.startswith('UPDATE "submissions_submission"')]
    assert len(updates) == 2  # the claim, then the verdict with its run
    assert '"run_id"' in updates[1] and '"verdict"' in updates[1]
    assert not [sql for sql in statements if sql.startswith('SELECT "submissions_webhookendpoint"')]
    assert not [sql for sql in statements if "submissions_notificationdelivery" in sql]
    assert not NotificationDelivery.objects.filter(submission=submission).exists()

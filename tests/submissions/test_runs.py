"""Maintainer attestations (submissions.services.runs.run_record_verified)."""

import io

import pytest

from leaderboard.models import Standing
from submissions.models import Run, VerificationEvent
from submissions.services.runs import RunError, run_record_verified
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify

EVIDENCE = "ab" * 32


@pytest.fixture
def run(demo_release, seal, owner):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    return Run.objects.get(submission=submission)


@pytest.mark.django_db
def test_a_maintainer_attestation_makes_the_run_verified_and_is_appended_to_the_log(run, make_user):
    maintainer = make_user("maintainer")
    event = run_record_verified(
        run=run, actor=maintainer, method="official re-run on hidden seeds", evidence_sha256=EVIDENCE
    )
    run.refresh_from_db()
    assert run.level == "verified"
    assert list(
        VerificationEvent.objects.filter(run=run).values_list("level", "actor__username", "evidence_sha256")
    ) == [
        ("validated", None, run.submission.sha256),
        ("verified", "maintainer", EVIDENCE),
    ]
    assert event.method == "official re-run on hidden seeds"
    assert set(Standing.objects.filter(run=run).values_list("verification", flat=True)) == {"verified"}


@pytest.mark.parametrize(
    ("method", "evidence", "message"),
    [
        ("", EVIDENCE, "method: say how the run was verified (e.g. 'official re-run on hidden seeds')"),
        ("re-run", "not-a-hash", "evidence_sha256: expected the 64-character hex SHA-256 of the evidence"),
    ],
)
@pytest.mark.django_db
def test_an_attestation_needs_a_method_and_an_evidence_hash(run, owner, method, evidence, message):
    with pytest.raises(RunError) as refused:
        run_record_verified(run=run, actor=owner, method=method, evidence_sha256=evidence)
    assert str(refused.value) == message
    assert VerificationEvent.objects.filter(run=run).count() == 1
    run.refresh_from_db()
    assert run.level == "validated"

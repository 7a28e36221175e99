"""An upload names its benchmark (its daily allowance is counted there); a bundle
for another benchmark is rejected, so no benchmark's allowance can be borrowed."""

import io

import pytest

from leaderboard.models import Benchmark, Run
from submissions.models import Submission
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify


@pytest.mark.django_db
def test_a_bundle_uploaded_under_another_benchmark_is_rejected_with_no_run(demo_release, seal, owner):
    other = Benchmark.objects.create(slug="other-bench", name="Other", scheme=Benchmark.Scheme.PAPER_GAP)
    submission, _ = submission_create(
        user=owner, uploaded_file=io.BytesIO(seal(agent_name="Borrower", agent_version="1")), declared_benchmark=other
    )
    submission_verify(submission_id=submission.pk)
    submission.refresh_from_db()
    assert (submission.verdict, submission.error_code) == (Submission.Verdict.REJECTED, "benchmark_mismatch")
    assert submission.error_message == (
        "manifest.json: benchmark is 'ale-robotics', but the bundle was uploaded for 'other-bench'; "
        "seal it again (a new seal is new bytes: these are already a submission) and upload it naming the "
        "benchmark it is for"
    )
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_a_bundle_uploaded_under_its_own_benchmark_is_verified(demo_release, seal, owner):
    submission, _ = submission_create(
        user=owner,
        uploaded_file=io.BytesIO(seal(agent_name="Honest", agent_version="1")),
        declared_benchmark=demo_release.benchmark,
    )
    submission_verify(submission_id=submission.pk)
    submission.refresh_from_db()
    assert submission.verdict == Submission.Verdict.VALIDATED
    assert Run.objects.filter(submission=submission).count() == 1


@pytest.mark.django_db
def test_a_refused_submissions_page_says_it_is_listed_nowhere_not_public_once_verified(
    demo_release, seal, owner, client
):
    other = Benchmark.objects.create(slug="other-bench", name="Other", scheme=Benchmark.Scheme.PAPER_GAP)
    submission, _ = submission_create(
        user=owner, uploaded_file=io.BytesIO(seal(agent_name="Borrower", agent_version="1")), declared_benchmark=other
    )
    submission_verify(submission_id=submission.pk)
    client.force_login(owner)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "not listed (refused)" in page and "public once verified" not in page

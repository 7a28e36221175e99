"""Issue 13: a run is priced when verification records it, so the board's cost column is
precomputed with its standing (leaderboard.services.declarations.run_cost_refresh)."""

import io
from decimal import Decimal

import pytest

from leaderboard.models import ReleasePrice, Run, RunCost
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify


@pytest.mark.django_db
def test_a_verified_run_is_priced_with_the_release_price_table(demo_release, seal, owner):
    ReleasePrice.objects.create(
        release=demo_release, model="*", input_usd_per_mtok=Decimal(3), output_usd_per_mtok=Decimal(15)
    )
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal(agent_name="Priced")), is_private=False)
    submission_verify(submission_id=submission.pk)
    run = Run.objects.get(submission=submission)
    assert run.tokens_in is not None or run.tokens_out is not None
    cost = RunCost.objects.get(run=run)
    expected = ((run.tokens_in or 0) * 3 + (run.tokens_out or 0) * 15) / 1_000_000
    assert (cost.basis, cost.priced_model) == ("recorded", "*")
    assert cost.usd == pytest.approx(expected)


@pytest.mark.django_db
def test_a_verified_run_without_a_price_or_declaration_has_no_cost(demo_release, seal, owner):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal(agent_name="Free")), is_private=False)
    submission_verify(submission_id=submission.pk)
    assert not RunCost.objects.filter(run__submission=submission).exists()

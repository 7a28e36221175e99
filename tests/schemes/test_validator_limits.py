"""A validator's race runs are limited per validator key (set by staff), not by the uploading
account's per-benchmark allowance (issue 11 item 8)."""

from __future__ import annotations

from schemes_race_helpers import QUALIFYING, members, scoring_outcomes

from leaderboard.models import RaceRun, SigningKey
from submissions.models import DailyCount
from submissions.quotas import quota_consume, quota_peek, quota_scope


def test_a_validator_run_is_charged_to_its_key_and_not_to_the_uploading_account(
    race_benchmark, race_release, submitter, submit, make_validator
):
    validator, key = make_validator("validator-a")
    signing_key = SigningKey.objects.get(validator=validator)
    scope = quota_scope(race_benchmark)
    # What the upload path charged the account when the bundle arrived.
    quota_consume(user=submitter, api_key=None, scope=scope, limit=race_benchmark.daily_submission_limit)
    submission = submit(
        submitter,
        members(validator=validator, key=key, agent="Alpha", version="1", outcomes=scoring_outcomes(0.5, QUALIFYING),
                race=None, tasks=QUALIFYING),
    )  # fmt: skip
    assert submission.verdict == "attested", submission.error_message
    assert quota_peek(user=submitter, api_key=None, scope=scope, limit=10).used == 0
    assert DailyCount.objects.get(subject=f"validator-key:{signing_key.key_id}").used == 1


def test_a_validator_key_over_its_limit_is_refused_and_nothing_is_recorded(
    race_benchmark, race_release, submitter, submit, make_validator
):
    validator, key = make_validator("validator-a")
    SigningKey.objects.filter(validator=validator).update(daily_limit=0)
    submission = submit(
        submitter,
        members(validator=validator, key=key, agent="Alpha", version="1", outcomes=scoring_outcomes(0.5, QUALIFYING),
                race=None, tasks=QUALIFYING),
    )  # fmt: skip
    assert (submission.verdict, submission.error_code) == ("rejected", "validator_daily_limit_reached")
    assert "validator key" in submission.error_message
    assert not RaceRun.objects.exists()
    assert not DailyCount.objects.filter(subject__startswith="validator-key:").exists()


def test_the_filing_account_sees_its_validator_keys_limit_on_the_api_keys_page(
    client, race_benchmark, race_release, submitter, submit, make_validator
):
    validator, key = make_validator("validator-a")
    signing_key = SigningKey.objects.get(validator=validator)
    SigningKey.objects.filter(pk=signing_key.pk).update(daily_limit=7)
    submit(
        submitter,
        members(validator=validator, key=key, agent="Alpha", version="1", outcomes=scoring_outcomes(0.5, QUALIFYING),
                race=None, tasks=QUALIFYING),
    )  # fmt: skip
    client.force_login(submitter)
    for page in ("/accounts/api-keys/", "/submit/"):
        body = client.get(page).content.decode()
        row = body.split(f'<tr data-validator-limit="{signing_key.key_id}">', 1)[1].split("</tr>", 1)[0]
        assert "<strong>6</strong>" in row and '<td class="num">1</td>' in row and '<td class="num">7</td>' in row

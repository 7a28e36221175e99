"""Staff exclusion of race runs (leaderboard.services.race_exclusions), the race side of a
compromised validator key: the runs it signed stop counting everywhere and stay listed, marked,
with the public reason. Exact codes, permissions and the rows after."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient
from schemes_race_helpers import RACE_TASKS, members, scoring_outcomes

from leaderboard.models import RaceRun, SigningKey
from leaderboard.models.races import OverallStanding, RaceResult
from leaderboard.permissions import CHANGE_RUN
from leaderboard.services import races as lifecycle
from leaderboard.services.race_exclusions import RaceExclusionError, race_runs_exclude, race_runs_reinstate
from leaderboard.services.race_standings import race_standings_refresh
from submissions.services.signing_keys import signing_key_revoke
from tests.staff import staff_with

REASON = "Validator key compromised on 2026-12-01; its runs no longer count."
# Honest validator A and compromised validator B, per race: (Alpha, Bravo) run scores.
HONEST = {1: (0.6, 0.4), 2: (0.5, 0.7)}
FORGED = {1: (0.1, 1.0), 2: (0.0, 1.0)}


@pytest.fixture
def two_validators(race_benchmark, race_release, submitter, submit, make_validator):
    """Races 1 and 2 released; validators A (honest) and B (its key later found compromised) ran
    Alpha and Bravo in each. Returns B's signing key."""
    honest, honest_key = make_validator("validator-a")
    forged, forged_key = make_validator("validator-b")
    for number in (1, 2):
        race = lifecycle.race_schedule(
            benchmark=race_benchmark, number=number, task_ids=RACE_TASKS, is_launch=number == 1, release=race_release
        )
        race = lifecycle.race_start(race=race)
        for validator, key, scores in ((honest, honest_key, HONEST), (forged, forged_key, FORGED)):
            for agent, score in zip(("Alpha", "Bravo"), scores[number], strict=True):
                submit(
                    submitter,
                    members(
                        validator=validator,
                        key=key,
                        agent=agent,
                        version="1",
                        outcomes=scoring_outcomes(score),
                        race=number,
                    ),
                    name=f"r{number}-{validator.slug}-{agent}",
                )
        lifecycle.race_close(race=race)
        lifecycle.race_release(race=race)
    assert RaceRun.objects.count() == 8
    # Found out: revoked, so its runs may be excluded by key (a live key's may not).
    return signing_key_revoke(signing_key=SigningKey.objects.get(validator=forged), user=None)


def raw_scores(number: int) -> dict[str, float]:
    rows = RaceResult.objects.filter(race__number=number).select_related("agent_version__agent")
    return {row.agent_version.agent.name: round(row.raw_score, 6) for row in rows}


def boards() -> tuple[list[tuple], list[tuple]]:
    """Every RaceResult and OverallStanding row, as comparable tuples."""
    results = RaceResult.objects.order_by("race__number", "agent_version_id")
    overall = OverallStanding.objects.order_by("race__number", "agent_version_id")
    return (
        list(results.values_list("race__number", "agent_version_id", "raw_score", "rank", "baseline", "delta")),
        list(overall.values_list("race__number", "agent_version_id", "rank", "is_top")),
    )


def test_excluding_a_keys_runs_rescores_every_race_from_the_honest_runs_alone(two_validators):
    assert raw_scores(1) == {"Alpha": 0.35, "Bravo": 0.7}  # the forged runs lifted Bravo above Alpha
    excluded = race_runs_exclude(user=None, reason=REASON, signed_by=two_validators.key_id)
    assert sorted(excluded) == sorted(RaceRun.objects.filter(signing_key=two_validators).values_list("pk", flat=True))
    assert raw_scores(1) == {"Alpha": 0.6, "Bravo": 0.4}
    assert raw_scores(2) == {"Alpha": 0.5, "Bravo": 0.7}
    assert RaceResult.objects.get(race__number=1, agent_version__agent__name="Alpha").rank == 1
    # The incremental recompute lands on the rows the full rebuild writes.
    incremental = boards()
    race_standings_refresh(benchmark=two_validators.benchmark)
    assert boards() == incremental


def test_excluded_runs_stay_listed_with_their_reason_on_the_run_and_race_pages(client, two_validators):
    race_runs_exclude(user=None, reason=REASON, signed_by=two_validators.key_id)
    run = RaceRun.objects.filter(signing_key=two_validators).order_by("pk").first()
    page = client.get(reverse("race_run_detail", args=[run.public_id])).content.decode()
    assert "excluded by staff" in page and REASON in page
    race_page = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
    assert race_page.count("excluded by staff") >= 2  # B's two runs, in the run list (and the signal line)
    assert "2 excluded by staff" in race_page


def test_a_released_races_results_no_longer_name_the_excluded_key(two_validators):
    honest = SigningKey.objects.exclude(pk=two_validators.pk).get(owner_kind=SigningKey.Owner.VALIDATOR)
    rows = APIClient().get(reverse("api-race-results", args=["shop-race", 1])).json()["rows"]
    assert {row["validator_keys"] for row in rows} == {" ".join(sorted([honest.key_id, two_validators.key_id]))}
    race_runs_exclude(user=None, reason=REASON, signed_by=two_validators.key_id)
    rows = APIClient().get(reverse("api-race-results", args=["shop-race", 1])).json()["rows"]
    assert {row["validator_keys"] for row in rows} == {honest.key_id}


def test_reinstating_counts_the_runs_again_and_restores_the_board(two_validators):
    before = boards()
    race_runs_exclude(user=None, reason=REASON, signed_by=two_validators.key_id)
    assert boards() != before
    reinstated = race_runs_reinstate(user=None, signed_by=two_validators.key_id)
    assert len(reinstated) == 4
    assert boards() == before
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()
    assert set(RaceRun.objects.values_list("excluded_reason", flat=True)) == {""}


def test_excluding_again_changes_nothing_not_even_the_reason(two_validators):
    race_runs_exclude(user=None, reason=REASON, signed_by=two_validators.key_id)
    stamps = dict(RaceRun.objects.filter(signing_key=two_validators).values_list("pk", "excluded_at"))
    assert race_runs_exclude(user=None, reason="another reason", signed_by=two_validators.key_id) == []
    assert dict(RaceRun.objects.filter(signing_key=two_validators).values_list("pk", "excluded_at")) == stamps
    assert set(RaceRun.objects.filter(signing_key=two_validators).values_list("excluded_reason", flat=True)) == {REASON}


@pytest.mark.parametrize(
    ("target", "reason", "code"),
    [
        ({"run_ids": [999_999]}, REASON, "not_found"),
        ({"run_ids": [2**63]}, REASON, "not_found"),
        ({"signed_by": "0" * 16}, REASON, "no_runs"),
        ({}, REASON, "target_missing"),
        ({"signed_by": "KEY"}, "   ", "reason_missing"),
        ({"signed_by": "KEY"}, "x" * 501, "reason_too_long"),
    ],
    ids=[
        "unknown run",
        "id beyond a bigint",
        "key that signed nothing",
        "no target",
        "blank reason",
        "reason too long",
    ],
)
def test_a_refused_exclusion_says_why_and_changes_nothing(two_validators, target, reason, code):
    target = {name: two_validators.key_id if value == "KEY" else value for name, value in target.items()}
    before = boards()
    with pytest.raises(RaceExclusionError) as raised:
        race_runs_exclude(user=None, reason=reason, **target)
    assert raised.value.code == code
    assert boards() == before
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


@pytest.mark.parametrize("who", ["entrant", "validator account", "another account", "staff without the permission"])
def test_only_staff_holding_change_run_may_exclude_race_runs(two_validators, make_user, who):
    user = {
        "entrant": lambda: get_user_model().objects.get(username="entrant"),
        "validator account": lambda: get_user_model().objects.get(username="submitter"),
        "another account": lambda: make_user("another"),
        "staff without the permission": lambda: staff_with("viewer"),
    }[who]()
    before = boards()
    with pytest.raises(PermissionDenied):
        race_runs_exclude(user=user, reason=REASON, signed_by=two_validators.key_id)
    assert boards() == before
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def test_staff_holding_change_run_exclude_and_are_recorded_as_the_actor(two_validators):
    staff = staff_with("maintainer", CHANGE_RUN)
    excluded = race_runs_exclude(user=staff, reason=REASON, signed_by=two_validators.key_id)
    assert set(RaceRun.objects.filter(pk__in=excluded).values_list("excluded_by", flat=True)) == {staff.pk}


def test_an_excluded_qualifying_run_leaves_the_qualifying_score(race_release, submitter, submit, make_validator):
    from schemes_race_helpers import QUALIFYING

    from leaderboard.selectors.race import qualifying_board

    honest, honest_key = make_validator("validator-a")
    forged, forged_key = make_validator("validator-b")
    for validator, key, score in ((honest, honest_key, 0.3), (forged, forged_key, 0.9)):
        submit(
            submitter,
            members(
                validator=validator,
                key=key,
                agent="Alpha",
                version="1",
                outcomes=scoring_outcomes(score, QUALIFYING),
                race=None,
                tasks=QUALIFYING,
            ),
            name=f"q-{validator.slug}",
        )
    assert [round(row.score, 6) for row in qualifying_board(release=race_release)] == [0.6]
    forged_signer = signing_key_revoke(signing_key=SigningKey.objects.get(validator=forged), user=None)
    race_runs_exclude(user=None, reason=REASON, signed_by=forged_signer.key_id)
    (row,) = qualifying_board(release=race_release)
    assert (round(row.score, 6), row.runs_included, len(row.runs)) == (0.3, 1, 2)


def test_the_command_excludes_a_keys_runs_and_reinstates_them(two_validators, capsys):
    call_command("exclude_race_runs", "--signed-by", two_validators.key_id, "--reason", REASON)
    assert "excluded 4 race run(s)" in capsys.readouterr().out
    assert RaceRun.objects.filter(excluded_at__isnull=False).count() == 4
    call_command("exclude_race_runs", "--signed-by", two_validators.key_id, "--reinstate")
    assert "reinstated 4 race run(s)" in capsys.readouterr().out
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def test_the_command_names_a_run_by_the_id_in_its_address(two_validators, capsys):
    run = _forged_run(two_validators)
    call_command("exclude_race_runs", "--run", run.public_id, "--reason", REASON)
    assert f"excluded 1 race run(s): {run.public_id}" in capsys.readouterr().out
    assert list(RaceRun.objects.filter(excluded_at__isnull=False).values_list("pk", flat=True)) == [run.pk]


def test_the_command_refuses_a_run_id_that_names_no_run_and_changes_nothing(two_validators):
    run = _forged_run(two_validators)
    with pytest.raises(CommandError, match="not_found: no race run with id nope"):
        call_command("exclude_race_runs", "--run", run.public_id, "--run", "nope", "--reason", REASON)
    with pytest.raises(CommandError, match="not_found"):  # a row number is not a run's id
        call_command("exclude_race_runs", "--run", str(run.pk), "--reason", REASON)
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def test_the_command_refuses_to_exclude_a_live_keys_runs(two_validators):
    SigningKey.objects.filter(pk=two_validators.pk).update(revoked_at=None)
    with pytest.raises(CommandError, match="key_not_revoked"):
        call_command("exclude_race_runs", "--signed-by", two_validators.key_id, "--reason", REASON)
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def test_the_command_refuses_an_exclusion_without_a_reason(two_validators):
    with pytest.raises(CommandError, match="reason_missing"):
        call_command("exclude_race_runs", "--signed-by", two_validators.key_id)
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def _admin_action(client, user, key: SigningKey):
    client.force_login(user)
    return client.post(
        reverse("admin:leaderboard_signingkey_changelist"),
        {"action": "exclude_race_runs", "_selected_action": [key.pk]},
        follow=True,
    )


def test_the_keys_admin_action_excludes_a_revoked_keys_runs_with_a_reason_naming_the_key(client, two_validators):
    signing_key_revoke(signing_key=two_validators, user=None)
    response = _admin_action(
        client, staff_with("maintainer", CHANGE_RUN, "leaderboard.change_signingkey"), two_validators
    )
    assert "excluded 4 race run(s) from every score" in response.content.decode()
    reasons = set(RaceRun.objects.filter(signing_key=two_validators).values_list("excluded_reason", flat=True))
    assert len(reasons) == 1 and two_validators.key_id in reasons.pop()
    assert not RaceRun.objects.exclude(signing_key=two_validators).filter(excluded_at__isnull=False).exists()


def test_the_keys_admin_action_refuses_a_key_not_yet_revoked(client, two_validators):
    SigningKey.objects.filter(pk=two_validators.pk).update(revoked_at=None)
    response = _admin_action(
        client, staff_with("maintainer", CHANGE_RUN, "leaderboard.change_signingkey"), two_validators
    )
    assert "revoke it first" in response.content.decode()
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def test_the_keys_admin_action_refuses_staff_without_change_run(client, two_validators):
    signing_key_revoke(signing_key=two_validators, user=None)
    response = _admin_action(client, staff_with("keykeeper", "leaderboard.change_signingkey"), two_validators)
    assert CHANGE_RUN in response.content.decode()
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


# ---------------------------------------------------------------- the run page's form (one run)


def _forged_run(key: SigningKey) -> RaceRun:
    """The compromised validator's run of Alpha in race 1 (0.1 there; the honest run says 0.6)."""
    return RaceRun.objects.get(signing_key=key, race__number=1, agent_version__agent__name="Alpha")


def test_the_exclusion_form_is_shown_to_staff_holding_change_run_only(client, two_validators, make_user):
    run = _forged_run(two_validators)
    page, form = reverse("race_run_detail", args=[run.public_id]), reverse("race_run_exclude", args=[run.public_id])
    assert form not in client.get(page).content.decode()  # anonymous
    for user in (make_user("another"), staff_with("viewer")):
        client.force_login(user)
        assert form not in client.get(page).content.decode()
    client.force_login(staff_with("maintainer", CHANGE_RUN))
    assert form in client.get(page).content.decode()


def test_staff_exclude_one_run_through_the_form_and_only_its_race_scores_move(client, two_validators):
    run, staff = _forged_run(two_validators), staff_with("maintainer", CHANGE_RUN)
    client.force_login(staff)
    response = client.post(reverse("race_run_exclude", args=[run.public_id]), {"reason": REASON}, follow=True)
    assert response.redirect_chain == [(reverse("race_run_detail", args=[run.public_id]), 302)]
    body = response.content.decode()
    assert "Run excluded from every score" in body and REASON in body
    assert reverse("race_run_reinstate", args=[run.public_id]) in body  # the form turns into its undo
    run.refresh_from_db()
    assert (run.excluded_reason, run.excluded_by_id) == (REASON, staff.pk) and run.excluded_at is not None
    assert RaceRun.objects.filter(excluded_at__isnull=False).count() == 1
    # Race 1's Alpha now has the honest run alone (0.6); Bravo keeps both runs' mean (0.4, 1.0).
    assert raw_scores(1) == {"Alpha": 0.6, "Bravo": 0.7}
    assert raw_scores(2) == {"Alpha": 0.25, "Bravo": 0.85}


def test_staff_reinstate_one_run_through_the_form_and_the_board_is_as_before(client, two_validators):
    run, before = _forged_run(two_validators), boards()
    client.force_login(staff_with("maintainer", CHANGE_RUN))
    client.post(reverse("race_run_exclude", args=[run.public_id]), {"reason": REASON})
    assert boards() != before
    response = client.post(reverse("race_run_reinstate", args=[run.public_id]), follow=True)
    assert "Run reinstated" in response.content.decode()
    assert boards() == before
    run.refresh_from_db()
    assert (run.excluded_at, run.excluded_reason, run.excluded_by_id) == (None, "", None)


@pytest.mark.parametrize(("reason", "said"), [("   ", "reason: say publicly"), ("x" * 501, "at most 500 characters")])
def test_a_refused_reason_through_the_form_is_said_on_the_run_page_and_changes_nothing(
    client, two_validators, reason, said
):
    run, before = _forged_run(two_validators), boards()
    client.force_login(staff_with("maintainer", CHANGE_RUN))
    response = client.post(reverse("race_run_exclude", args=[run.public_id]), {"reason": reason}, follow=True)
    assert response.redirect_chain == [(reverse("race_run_detail", args=[run.public_id]), 302)]
    assert said in response.content.decode()
    assert boards() == before
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


@pytest.mark.parametrize("who", ["validator account", "another account", "staff without the permission"])
@pytest.mark.parametrize("route", ["race_run_exclude", "race_run_reinstate"])
def test_only_staff_holding_change_run_may_use_the_forms_others_get_403(client, two_validators, make_user, who, route):
    run = _forged_run(two_validators)
    race_runs_exclude(user=None, reason=REASON, run_ids=[run.pk])  # something for reinstate to undo
    before = boards()
    client.force_login(
        {
            "validator account": lambda: get_user_model().objects.get(username="submitter"),
            "another account": lambda: make_user("another"),
            "staff without the permission": lambda: staff_with("viewer"),
        }[who]()
    )
    response = client.post(reverse(route, args=[run.public_id]), {"reason": "mine now"})
    assert response.status_code == 403
    assert CHANGE_RUN in response.content.decode()
    assert boards() == before
    run.refresh_from_db()
    assert run.excluded_reason == REASON


@pytest.mark.parametrize("route", ["race_run_exclude", "race_run_reinstate"])
def test_anonymous_posting_the_forms_is_sent_to_sign_in_and_nothing_changes(client, two_validators, route):
    run = _forged_run(two_validators)
    response = client.post(reverse(route, args=[run.public_id]), {"reason": REASON})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def test_the_forms_answer_404_for_a_run_that_does_not_exist_and_405_to_a_get(client, two_validators):
    client.force_login(staff_with("maintainer", CHANGE_RUN))
    assert client.post(reverse("race_run_exclude", args=["no-such-run"]), {"reason": REASON}).status_code == 404
    run = _forged_run(two_validators)
    # A run's row number is not its address.
    assert client.post(f"/races/runs/{run.pk}/exclude/", {"reason": REASON}).status_code == 404
    assert client.get(reverse("race_run_exclude", args=[run.public_id])).status_code == 405
    assert not RaceRun.objects.filter(excluded_at__isnull=False).exists()


def test_a_run_is_not_reinstated_beside_the_run_its_validator_filed_since(two_validators):
    """Excluded, the run freed its validator's slot; a run filed there since stands, and bringing
    the first back would count two runs of one validator (outside review)."""
    run = _forged_run(two_validators)
    race_runs_exclude(user=None, reason=REASON, run_ids=[run.pk])
    since = RaceRun.objects.create(
        validator=run.validator, agent_version=run.agent_version, release=run.release, race=run.race, score=0.5
    )
    with pytest.raises(RaceExclusionError) as refused:
        race_runs_reinstate(user=None, run_ids=[run.pk])
    assert refused.value.code == "slot_taken" and run.public_id in refused.value.message
    run.refresh_from_db()
    assert run.excluded_at is not None
    race_runs_exclude(user=None, reason=REASON, run_ids=[since.pk])  # the newer one leaves: the slot is free
    assert race_runs_reinstate(user=None, run_ids=[run.pk]) == [run.pk]


def test_a_race_runs_public_id_is_letters_and_digits_so_a_command_line_never_reads_it_as_an_option():
    """URL-safe base64 put a "-" first in 1 id of 64: `exclude_race_runs --run -x...` then failed."""
    from leaderboard.models.runs import RACE_RUN_PUBLIC_ID_CHARS, race_run_public_id

    ids = {race_run_public_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(public_id) == RACE_RUN_PUBLIC_ID_CHARS and public_id.isalnum() for public_id in ids)

"""Race benchmarks (seed 002) through the whole pipeline: signed validator runs in, pages out."""

from __future__ import annotations

import pytest
from django.urls import reverse
from schemes_race_helpers import RACE_TASKS, accepted, enter, env_error, members, rejected, scoring_outcomes

from leaderboard.models import Race, RaceRun, RaceTaskOutcome
from leaderboard.models.races import OverallStanding, RaceResult
from leaderboard.services import races as lifecycle
from leaderboard.services.races import RaceTransitionError, race_close, race_schedule, race_start
from tests.concurrency import committed_meanwhile, on_postgresql_committing


@pytest.fixture
def validators(make_validator):
    return [make_validator("validator-a"), make_validator("validator-b")]


@pytest.fixture
def run_race(race_benchmark, race_release, submitter, submit, validators):
    """run_race(number, {(agent, version): score}, is_launch=False, release=True) -> Race.

    Every version is run by validator A; the race is started, its runs submitted as
    signed sealed bundles, then closed and (by default) released."""
    (validator, key), _ = validators

    def run(number, scores, *, is_launch=False, release=True, margin=0.02):
        race = race_schedule(
            benchmark=race_benchmark,
            number=number,
            task_ids=RACE_TASKS,
            is_launch=is_launch,
            challenge_margin=margin,
            release=race_release,
        )
        race_start(race=race)
        for (agent, version), score in scores.items():
            submission = submit(
                submitter,
                members(
                    validator=validator,
                    key=key,
                    agent=agent,
                    version=version,
                    outcomes=scoring_outcomes(score),
                    race=number,
                ),
                name=f"{number}-{agent}-{version}",
            )
            assert submission.verdict == "attested", submission.error_message
        if release:
            race_close(race=race)
            lifecycle.race_release(race=race)
        race.refresh_from_db()
        return race

    return run


def overall_of(race, agent, version="1"):
    return OverallStanding.objects.get(race=race, agent_version__agent__name=agent, agent_version__version=version)


def test_a_run_with_over_30_percent_infrastructure_errors_is_excluded_and_marked_for_rerun(
    race_benchmark, race_release, submitter, submit, validators, client
):
    (validator_a, key_a), (validator_b, key_b) = validators
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    race_start(race=race)
    good = submit(
        submitter,
        members(validator=validator_a, key=key_a, agent="Shopper", version="1", outcomes=scoring_outcomes(0.8), race=1),
        name="a",
    )
    broken_outcomes = [env_error(task) for task in RACE_TASKS[:4]] + [accepted(task) for task in RACE_TASKS[4:]]
    broken = submit(
        submitter,
        members(validator=validator_b, key=key_b, agent="Shopper", version="1", outcomes=broken_outcomes, race=1),
        name="b",
    )
    assert (good.verdict, broken.verdict) == ("attested", "attested")
    assert broken.error_message == (
        "infrastructure failure: 4 of 10 tasks ended in an environment or verifier error (more than 30%); "
        "this run does not count and is marked for a re-run"
    )
    run = RaceRun.objects.get(submission=broken)
    assert (run.infrastructure_failure, run.needs_rerun, run.score) == (True, True, None)
    result = RaceResult.objects.get(race=race)
    assert (result.raw_score, result.runs_included, result.runs_excluded) == (0.8, 1, 1)
    client.force_login(submitter)  # the account that filed it; visitors see "embargoed" (test_embargo.py)
    page = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
    assert "no — infrastructure failure, re-run pending" in page


def test_a_run_with_exactly_30_percent_infrastructure_errors_counts_them_as_zero(
    race_benchmark, race_release, submitter, submit, validators
):
    (validator, key), _ = validators
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    race_start(race=race)
    outcomes = [env_error(task) for task in RACE_TASKS[:3]] + [accepted(task) for task in RACE_TASKS[3:]]
    submission = submit(
        submitter, members(validator=validator, key=key, agent="Shopper", version="1", outcomes=outcomes, race=1)
    )
    run = RaceRun.objects.get(submission=submission)
    assert (run.infrastructure_failure, run.score) == (False, 0.7)
    assert RaceResult.objects.get(race=race).raw_score == 0.7


def test_the_rerun_of_an_infrastructure_failure_lands_during_the_embargo_and_settles_it(
    race_benchmark, race_release, submitter, submit, validators
):
    (validator, key), _ = validators
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    race_start(race=race)
    submit(
        submitter,
        members(
            validator=validator,
            key=key,
            agent="Shopper",
            version="1",
            outcomes=[env_error(task) for task in RACE_TASKS],
            race=1,
        ),
        name="broken",
    )
    race_close(race=race)
    rerun = submit(
        submitter,
        members(validator=validator, key=key, agent="Shopper", version="1", outcomes=scoring_outcomes(0.6), race=1),
        name="rerun",
    )
    assert rerun.verdict == "attested"
    assert not RaceRun.objects.filter(needs_rerun=True).exists()
    assert RaceResult.objects.get(race=race).raw_score == 0.6


def test_the_raw_race_score_is_the_mean_of_the_included_validator_runs(
    race_benchmark, race_release, submitter, submit, validators
):
    (validator_a, key_a), (validator_b, key_b) = validators
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    race_start(race=race)
    submit(
        submitter,
        members(validator=validator_a, key=key_a, agent="Shopper", version="1", outcomes=scoring_outcomes(0.8), race=1),
        name="a",
    )
    submit(
        submitter,
        members(validator=validator_b, key=key_b, agent="Shopper", version="1", outcomes=scoring_outcomes(0.5), race=1),
        name="b",
    )
    assert RaceResult.objects.get(race=race).raw_score == pytest.approx(0.65)


def test_the_field_baseline_is_the_top_half_average_and_vs_field_the_difference(run_race, client):
    race = run_race(1, {("Alpha", "1"): 0.9, ("Bravo", "1"): 0.7, ("Charlie", "1"): 0.5, ("Delta", "1"): 0.3})
    results = {r.agent_version.agent.name: r for r in RaceResult.objects.filter(race=race)}
    assert {name: r.baseline for name, r in results.items()} == pytest.approx(
        {"Alpha": 0.8, "Bravo": 0.8, "Charlie": 0.8, "Delta": 0.8}
    )
    assert {name: r.delta for name, r in results.items()} == pytest.approx(
        {"Alpha": 0.1, "Bravo": -0.1, "Charlie": -0.3, "Delta": -0.5}
    )
    page = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
    assert "0.800" in page
    assert "+0.100" in page
    assert "\u22120.500" in page


def test_the_launch_race_overall_averages_only_itself_then_the_window_fills(run_race, client):
    first = run_race(1, {("Alpha", "1"): 0.9, ("Bravo", "1"): 0.5}, is_launch=True)
    second = run_race(2, {("Alpha", "1"): 0.6, ("Bravo", "1"): 0.8})
    third = run_race(3, {("Alpha", "1"): 0.7, ("Bravo", "1"): 0.7})
    fourth = run_race(4, {("Alpha", "1"): 1.0, ("Bravo", "1"): 0.4})
    # Two agents: the baseline is the better score. Alpha's deltas: 0, -0.2, 0, 0; Bravo's: -0.4, 0, 0, -0.6.
    assert overall_of(first, "Alpha").overall == pytest.approx(0.0)
    assert overall_of(first, "Bravo").overall == pytest.approx(-0.4)
    assert overall_of(first, "Alpha").window == 1
    assert overall_of(second, "Bravo").overall == pytest.approx(-0.4 / 2)
    assert overall_of(second, "Alpha").window == 2
    assert overall_of(third, "Alpha").overall == pytest.approx(-0.2 / 3)
    assert overall_of(fourth, "Alpha").overall == pytest.approx(-0.2 / 3)
    assert overall_of(fourth, "Bravo").overall == pytest.approx(-0.6 / 3)
    assert overall_of(fourth, "Bravo").window == 3
    page = client.get(reverse("race_overall", args=["shop-race"])).content.decode()
    assert "Overall as of" in page and "race 4" in page


@pytest.mark.parametrize("page", ["race_overall", "race_detail", "race_leaderboard", "race_history", "home"])
def test_a_version_with_slashes_is_linked_from_every_race_page_and_opens(run_race, race_benchmark, client, page):
    # An agent version is free text: "2026/05" is filed, ranked and linked like any other.
    run_race(1, {("Alpha", "2026/05"): 0.8, ("Beta", "1"): 0.5}, is_launch=True)
    args = {"home": [], "race_overall": [race_benchmark.slug], "race_history": [race_benchmark.slug]}
    response = client.get(reverse(page, args=args.get(page, [race_benchmark.slug, 1])))
    assert response.status_code == 200
    version_page = reverse("race_agent_version", args=[race_benchmark.slug, "alpha", "2026/05"])
    assert version_page == f"/races/{race_benchmark.slug}/agents/alpha/2026/05/"
    assert version_page.encode() in response.content
    opened = client.get(version_page)
    assert opened.status_code == 200 and b"2026/05" in opened.content


def test_a_racing_agents_page_links_its_race_versions_instead_of_saying_it_has_no_runs(
    run_race, race_benchmark, client
):
    # The agent page listed paper-gap runs only: "No public runs yet" for an agent racing weekly.
    run_race(1, {("Alpha", "2026/05"): 0.8, ("Beta", "1"): 0.5}, is_launch=True)
    page = client.get(reverse("agent_detail", args=["alpha"])).content.decode()
    assert "No public runs yet" not in page and "No paper-gap runs: this agent's races are below." in page
    assert f'href="{reverse("race_agent_version", args=[race_benchmark.slug, "alpha", "2026/05"])}"' in page
    assert "Beta" not in page.split('id="races-heading"')[1]


def test_equal_raw_scores_share_a_race_rank_and_an_overall_rank(run_race, race_benchmark, client):
    race = run_race(1, {("Zulu", "1"): 0.6, ("Alpha", "1"): 0.6, ("Mike", "1"): 0.9}, is_launch=True)
    ranks = {r.agent_version.agent.name: r.rank for r in RaceResult.objects.filter(race=race)}
    assert ranks == {"Mike": 1, "Alpha": 2, "Zulu": 2}
    overall = {s.agent_version.agent.name: s.rank for s in OverallStanding.objects.filter(race=race)}
    assert overall == {"Mike": 1, "Alpha": 2, "Zulu": 2}
    # Listed in a stable order among equals (by name) on every read.
    page = client.get(reverse("race_detail", args=[race_benchmark.slug, 1])).content.decode()
    assert page.index("Alpha") < page.index("Zulu")


def test_races_before_the_launch_race_are_not_back_filled(run_race):
    run_race(1, {("Alpha", "1"): 0.2, ("Bravo", "1"): 0.9})
    launch = run_race(2, {("Alpha", "1"): 0.9, ("Bravo", "1"): 0.5}, is_launch=True)
    assert overall_of(launch, "Alpha").overall == pytest.approx(0.0)
    assert overall_of(launch, "Alpha").races_counted == 1


def test_a_new_version_is_damped_by_the_races_it_missed(run_race, client):
    run_race(1, {("Alpha", "1"): 0.5, ("Bravo", "1"): 0.5}, is_launch=True)
    run_race(2, {("Alpha", "1"): 0.5, ("Bravo", "1"): 0.5})
    third = run_race(3, {("Alpha", "1"): 0.5, ("Bravo", "1"): 0.5, ("Alpha", "2"): 1.0, ("Charlie", "1"): 0.3})
    # Field of four: top half (1.0, 0.5) -> baseline 0.75; Alpha 2 is +0.25 in its only race of three.
    fresh = overall_of(third, "Alpha", "2")
    assert fresh.overall == pytest.approx(0.25 / 3)
    assert (fresh.races_counted, fresh.window) == (1, 3)
    page = client.get(reverse("race_agent_version", args=["shop-race", "alpha", "2"])).content.decode()
    assert page.count("Did not race: counts at the field baseline (vs Field 0.000)") == 2
    assert "+0.250" in page


def test_the_top_agent_changes_only_beyond_the_challenge_margin(run_race, client):
    first = run_race(1, {("Alpha", "1"): 0.8, ("Bravo", "1"): 0.7}, is_launch=True, margin=0.05)
    assert overall_of(first, "Alpha").is_top
    # Race 2: Bravo 0.9 vs Alpha 0.8 -> Overalls Alpha (0 - 0.1)/2 = -0.05, Bravo (-0.1 + 0)/2 = -0.05: no change.
    second = run_race(2, {("Alpha", "1"): 0.8, ("Bravo", "1"): 0.9}, margin=0.05)
    assert overall_of(second, "Alpha").is_top
    # Race 3: Bravo 1.0 vs Alpha 0.7 -> Alpha -0.4/3, Bravo -0.1/3: Bravo leads by 0.1 > 0.05 and takes the spot.
    third = run_race(3, {("Alpha", "1"): 0.7, ("Bravo", "1"): 1.0}, margin=0.05)
    assert overall_of(third, "Bravo").is_top
    assert not overall_of(third, "Alpha").is_top


def test_a_challenger_ahead_by_less_than_the_margin_does_not_take_the_top_spot(run_race):
    run_race(1, {("Alpha", "1"): 0.8, ("Bravo", "1"): 0.6}, is_launch=True, margin=0.3)
    second = run_race(2, {("Alpha", "1"): 0.5, ("Bravo", "1"): 1.0}, margin=0.3)
    # Alpha (0 - 0.5)/2 = -0.25, Bravo (-0.2 + 0)/2 = -0.1: Bravo ranks first, but 0.15 <= 0.3.
    assert overall_of(second, "Bravo").rank == 1
    assert overall_of(second, "Alpha").is_top


def test_a_run_for_a_scheduled_race_is_rejected(race_benchmark, race_release, submitter, submit, validators):
    (validator, key), _ = validators
    race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    submission = submit(
        submitter,
        members(validator=validator, key=key, agent="Shopper", version="1", outcomes=scoring_outcomes(0.5), race=1),
    )
    assert (submission.verdict, submission.error_code) == ("rejected", "race_not_running")
    assert submission.error_message == (
        "race run: shop-race race 1 is scheduled; results are accepted only while a race is running"
    )
    assert not RaceRun.objects.exists()


def test_a_run_signed_by_an_unregistered_key_is_rejected(race_release, submitter, submit, validators):
    from submissions.bundle.signatures import generate_signing_key, key_id_for, public_key_b64

    (validator, _), _ = validators
    stranger_key = generate_signing_key()
    submission = submit(
        submitter,
        members(
            validator=validator,
            key=stranger_key,
            agent="Shopper",
            version="1",
            outcomes=scoring_outcomes(0.5, [f"q{i:02d}" for i in range(10)]),
            race=None,
            tasks=[f"q{i:02d}" for i in range(10)],
        ),
    )
    assert (submission.verdict, submission.error_code) == ("rejected", "validator_key_unknown")
    key_id = key_id_for(public_key_b64(stranger_key))
    assert submission.error_message == (
        f"race_run.json signature: key '{key_id}' is not a registered, unrevoked validator key on this server; "
        "a race run counts only when signed by a registered validator"
    )


def test_a_claimed_score_that_differs_is_a_mismatch(race_release, submitter, submit, validators):
    (validator, key), _ = validators
    tasks = [f"q{i:02d}" for i in range(10)]
    submission = submit(
        submitter,
        members(
            validator=validator,
            key=key,
            agent="Shopper",
            version="1",
            outcomes=scoring_outcomes(0.5, tasks),
            race=None,
            tasks=tasks,
            claimed={"status": "ok", "run_score": 0.9},
        ),
    )
    assert (submission.verdict, submission.error_code) == ("mismatch", "race_run_mismatch")
    assert submission.error_message == "the claimed values differ from the server's recomputation in: run_score"
    assert not RaceRun.objects.exists()


def test_a_qualifying_run_scores_the_public_frozen_task_set(race_release, submitter, submit, validators, client):
    (validator, key), _ = validators
    tasks = [f"q{i:02d}" for i in range(10)]
    outcomes = scoring_outcomes(0.7, tasks)
    submission = submit(
        submitter,
        members(validator=validator, key=key, agent="Shopper", version="1", outcomes=outcomes, race=None, tasks=tasks),
    )
    run = RaceRun.objects.get(submission=submission)
    assert (run.race, run.score, run.expected_tasks) == (None, 0.7, 10)
    assert RaceTaskOutcome.objects.filter(run=run, failure_category="rejected_order").count() == 3
    page = client.get(reverse("race_qualifying", args=["shop-race"])).content.decode()
    assert "0.700" in page


def test_lifecycle_steps_out_of_order_are_refused(race_benchmark, race_release):
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    with pytest.raises(RaceTransitionError) as error:
        lifecycle.race_release(race=race)
    assert error.value.code == "race_wrong_state"
    assert str(error.value) == "shop-race race 1 is scheduled; only an embargoed race can be released"
    race.refresh_from_db()
    assert race.status == Race.Status.SCHEDULED


def test_a_race_cannot_start_while_another_race_of_its_benchmark_is_running(race_benchmark, race_release):
    first = race_start(race=race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True))
    second = race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS)
    with pytest.raises(RaceTransitionError) as error:
        race_start(race=second)
    assert error.value.code == "race_already_running"
    assert str(error.value) == (
        "shop-race race 2 cannot start while race 1 of shop-race is running; close race 1 first "
        "(a benchmark runs one race at a time: the one its Overall view anchors to)"
    )
    assert list(Race.objects.order_by("number").values_list("number", "status", "starts_at")) == [
        (1, "running", first.starts_at),
        (2, "scheduled", None),
    ]


def test_the_next_race_is_scheduled_while_one_runs_and_starts_once_that_one_is_closed(race_benchmark, race_release):
    first = race_start(race=race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True))
    second = race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS)
    race_close(race=first)  # embargoed: completed, though its results are not released yet
    race_start(race=second)
    assert list(Race.objects.order_by("number").values_list("number", "status")) == [
        (1, "embargoed"),
        (2, "running"),
    ]


def test_a_race_numbered_below_one_that_started_cannot_be_scheduled(race_benchmark, race_release):
    race_close(race=race_start(race=race_schedule(benchmark=race_benchmark, number=5, task_ids=RACE_TASKS)))
    with pytest.raises(RaceTransitionError) as error:
        race_schedule(benchmark=race_benchmark, number=0, task_ids=RACE_TASKS)
    assert error.value.code == "race_out_of_order"
    assert str(error.value) == (
        "race 0 of shop-race could never start: race 5 has started, and races are held in their numbers' order; "
        "give it a number after 5"
    )
    assert list(Race.objects.values_list("number", flat=True)) == [5]


def test_a_race_cannot_start_after_a_later_numbered_race_of_its_benchmark_has_started(race_benchmark, race_release):
    earlier = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True)
    later = race_close(race=race_start(race=race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS)))
    with pytest.raises(RaceTransitionError) as error:
        race_start(race=earlier)
    assert error.value.code == "race_out_of_order"
    assert str(error.value) == (
        "shop-race race 1 cannot start after race 2 of shop-race has started; races are held in their numbers' "
        "order (the Overall view's rolling window takes them in that order): schedule it again with a number "
        "after 2"
    )
    assert list(Race.objects.order_by("number").values_list("number", "status", "starts_at")) == [
        (1, "scheduled", None),
        (2, "embargoed", later.starts_at),
    ]


def test_a_running_race_of_another_benchmark_does_not_hold_a_start_back(race_benchmark, race_release):
    from leaderboard.models import Benchmark

    other = Benchmark.objects.create(slug="other-race", name="Other race", scheme=Benchmark.Scheme.RACE)
    race_start(race=race_schedule(benchmark=other, number=1, task_ids=RACE_TASKS))
    started = race_start(race=race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS))
    assert started.status == Race.Status.RUNNING
    assert Race.objects.filter(status=Race.Status.RUNNING).count() == 2


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_races_of_one_benchmark_started_at_once_leave_one_running(race_benchmark):
    first = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True)
    second = race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS)
    # The first start commits while the second is between its state check and its write: the
    # second waits on the benchmark's row and then sees race 1 running.
    with committed_meanwhile(lambda: race_start(race=first)), pytest.raises(RaceTransitionError) as error:
        race_start(race=second)
    assert error.value.code == "race_already_running"
    assert list(Race.objects.order_by("number").values_list("number", "status")) == [(1, "running"), (2, "scheduled")]


def test_a_race_needs_a_hidden_task_set(race_benchmark):
    with pytest.raises(RaceTransitionError) as error:
        race_schedule(benchmark=race_benchmark, number=1, task_ids=[])
    assert str(error.value) == "a race needs a non-empty hidden task set (a list of task ids)"
    assert not Race.objects.exists()


def test_rejected_orders_pay_zero(run_race):
    race = run_race(1, {("Alpha", "1"): 0.3})
    outcomes = RaceTaskOutcome.objects.filter(run__race=race)
    assert sorted(set(outcomes.values_list("failure_category", "paid_reward"))) == [("", 1.0), ("rejected_order", 0.0)]
    assert rejected("x").order_placed


def test_outcomes_altered_after_signing_are_rejected(race_release, submitter, submit, validators):
    import json

    from submissions.bundle.signatures import sign_object
    from submissions.demo_loaders.scheme_bundles import bundle_members, outcome_document

    (validator, key), _ = validators
    tasks = [f"q{i:02d}" for i in range(10)]
    document = {
        "validator": validator.slug,
        "race": None,
        "agent": {"name": "Shopper", "version": "1"},
        "outcomes": [outcome_document(outcome) for outcome in scoring_outcomes(0.5, tasks)],
        "claimed": {"status": "ok", "run_score": 0.5},
    }
    enter("Shopper", "1", None)
    signed = sign_object(document, key)
    signed["outcomes"][9] = outcome_document(accepted("q09"))  # a rejected order turned into a full reward
    signed["claimed"]["run_score"] = 0.6
    members = bundle_members(
        kind="race_run",
        benchmark="shop-race",
        release="q1",
        agent="Shopper",
        version="1",
        payload={"race_run.json": json.dumps(signed).encode()},
    )
    submission = submit(submitter, members)
    assert (submission.verdict, submission.error_code) == ("rejected", "bad_signature")
    assert not RaceRun.objects.exists()


def test_the_overall_view_anchors_to_the_running_race_else_the_latest_completed(run_race, race_benchmark, client):
    from leaderboard.selectors.race import race_anchor

    run_race(1, {("Alpha", "1"): 0.8, ("Bravo", "1"): 0.6}, is_launch=True)
    live = run_race(2, {("Alpha", "1"): 0.5}, release=False)
    race_schedule(benchmark=race_benchmark, number=3, task_ids=RACE_TASKS)
    assert race_anchor(benchmark=race_benchmark).number == 2
    page = client.get(reverse("race_overall", args=["shop-race"])).content.decode()
    assert "Overall as of" in page and "race 2" in page and "running" in page
    race_close(race=live)
    assert race_anchor(benchmark=race_benchmark).number == 2  # embargoed: completed, still the latest
    assert race_anchor(benchmark=race_benchmark).status == "embargoed"


def test_between_races_the_overall_view_falls_back_to_the_last_completed_race(run_race, race_benchmark):
    from leaderboard.selectors.race import race_anchor

    run_race(1, {("Alpha", "1"): 0.8}, is_launch=True)
    race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS)
    anchor = race_anchor(benchmark=race_benchmark)
    assert (anchor.number, anchor.status) == (1, "released")


def race_board(benchmark) -> list[tuple]:
    from leaderboard.models.races import OverallStanding, RaceResult

    results = sorted(
        RaceResult.objects.filter(race__benchmark=benchmark).values_list(
            "race__number", "agent_version_id", "raw_score", "rank", "baseline", "delta", "runs_included"
        )
    )
    overall = sorted(
        OverallStanding.objects.filter(race__benchmark=benchmark).values_list(
            "race__number", "agent_version_id", "overall", "rank", "races_counted", "window", "is_top"
        )
    )
    return results + overall


def test_a_race_run_rewrites_only_its_race_and_later_ones_and_lands_where_the_rebuild_does(run_race, race_benchmark):
    from leaderboard.models.races import OverallStanding, RaceResult
    from leaderboard.services.race_standings import race_standings_refresh

    run_race(1, {("Alpha", "1"): 0.8, ("Bravo", "1"): 0.6}, is_launch=True, margin=0.05)
    run_race(2, {("Alpha", "1"): 0.5, ("Bravo", "1"): 1.0}, margin=0.05)
    earlier = set(RaceResult.objects.filter(race__number=1).values_list("pk", flat=True)) | set(
        OverallStanding.objects.filter(race__number=1).values_list("pk", flat=True)
    )
    run_race(3, {("Alpha", "1"): 0.7, ("Bravo", "1"): 1.0, ("Charlie", "1"): 0.9}, release=False, margin=0.05)
    # Race 1's rows were never rewritten by the runs of races 2 and 3 (same primary keys) ...
    assert earlier == set(RaceResult.objects.filter(race__number=1).values_list("pk", flat=True)) | set(
        OverallStanding.objects.filter(race__number=1).values_list("pk", flat=True)
    )
    incremental = race_board(race_benchmark)
    # ... and the incremental rows are the ones the full rebuild writes.
    race_standings_refresh(benchmark=race_benchmark)
    assert race_board(race_benchmark) == incremental


def test_every_race_step_needs_its_permission_whoever_calls_the_service(race_benchmark, race_release):
    """The admin actions and the API check first; the lifecycle services check again
    (leaderboard.permissions): staff status alone, or the wrong permission, changes nothing."""
    from django.core.exceptions import PermissionDenied

    from tests.staff import staff_with

    viewer = staff_with("viewer")
    with pytest.raises(PermissionDenied):
        race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release, user=viewer)
    assert not Race.objects.exists()
    race = race_schedule(
        benchmark=race_benchmark,
        number=1,
        task_ids=RACE_TASKS,
        release=race_release,
        user=staff_with("scheduler", "leaderboard.add_race"),
    )
    changer = staff_with("changer", "leaderboard.change_race")
    for step, status in ((race_start, "running"), (race_close, "embargoed"), (lifecycle.race_release, "released")):
        with pytest.raises(PermissionDenied):
            step(race=race, user=viewer)
        race.refresh_from_db()
        assert race.status != status
        step(race=race, user=changer)
        race.refresh_from_db()
        assert race.status == status


def test_a_versions_page_names_its_result_vs_field_as_the_race_page_does(run_race, client):
    run_race(1, {("Alpha", "1"): 0.9, ("Bravo", "1"): 0.5}, is_launch=True)
    page = client.get(reverse("race_agent_version", args=["shop-race", "alpha", "1"])).content.decode()
    race = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
    assert ">vs Field<" in page and ">vs Field<" in race
    assert "Delta" not in page

"""The reveal embargo (seed 002): a race episode's failure category is shown only once
the race is released; qualifying episodes show theirs as soon as results are in."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from schemes_race_helpers import QUALIFYING, RACE_TASKS, accepted, env_error, members, scoring_outcomes

from leaderboard.models import RaceRun
from leaderboard.selectors.race import race_outcomes_visible
from leaderboard.services import races as lifecycle
from scoring.race import FAILURE_CATEGORIES, TaskOutcome
from submissions.bundle.signatures import generate_signing_key

# Every string that would name or describe a failure category.
CATEGORY_STRINGS = [category.code for category in FAILURE_CATEGORIES] + [
    category.message for category in FAILURE_CATEGORIES
]


def every_category(tasks: list[str]) -> list[TaskOutcome]:
    """One episode of each category (and full-reward ones for the rest of the set)."""
    t = tasks
    return [
        env_error(t[0]),
        TaskOutcome(t[1], order_placed=False, verifier_error=True),
        TaskOutcome(t[2], order_placed=False, agent_error=True),
        TaskOutcome(t[3], order_placed=False, step_limit_hit=True),
        TaskOutcome(t[4], order_placed=True, time_limit_hit=True),  # placed, never graded: time ran out
        TaskOutcome(t[5], order_placed=False),
        TaskOutcome(t[6], order_placed=True, verdict_status="rejected", reward=0.0),
        TaskOutcome(t[7], order_placed=True, verdict_status="accepted", reward=0.5),
        accepted(t[8]),
        accepted(t[9]),
    ]


@pytest.fixture
def race_world(race_benchmark, race_release, submitter, submit, make_validator):
    """A released race 1, race 2 with a run whose episodes cover every category, and a qualifying run."""
    validator, key = make_validator("validator-a")
    first = lifecycle.race_schedule(
        benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True, release=race_release
    )
    lifecycle.race_start(race=first)
    submit(
        submitter,
        members(validator=validator, key=key, agent="Alpha", version="1", outcomes=scoring_outcomes(0.6), race=1),
        name="r1",
    )
    lifecycle.race_close(race=first)
    lifecycle.race_release(race=first)
    second = lifecycle.race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS, release=race_release)
    second = lifecycle.race_start(race=second)
    submission = submit(
        submitter,
        members(validator=validator, key=key, agent="Alpha", version="1", outcomes=every_category(RACE_TASKS), race=2),
        name="r2",
    )
    qualifying = submit(
        submitter,
        members(
            validator=validator,
            key=key,
            agent="Alpha",
            version="1",
            outcomes=every_category(QUALIFYING),
            race=None,
            tasks=QUALIFYING,
        ),
        name="q",
    )
    return {
        "race": second,
        "run": RaceRun.objects.get(submission=submission),
        "qualifying_run": RaceRun.objects.get(submission=qualifying),
    }


def race_pages(run, qualifying_run) -> list[str]:
    return [
        reverse("race_overall", args=["shop-race"]),
        reverse("race_leaderboard", args=["shop-race", 2]),
        reverse("race_detail", args=["shop-race", 2]),
        reverse("race_agent_version", args=["shop-race", "alpha", "1"]),
        reverse("race_run_detail", args=[run.public_id]),
        reverse("home"),
    ]


def assert_no_category(client, urls):
    for url in urls:
        response = client.get(url, follow=True)
        assert response.status_code == 200, url
        body = response.content.decode()
        leaked = [text for text in CATEGORY_STRINGS if text in body]
        assert leaked == [], f"{url} shows {leaked}"


def test_no_page_shows_a_failure_category_while_the_race_runs(client, race_world):
    assert race_world["race"].status == "running"
    assert_no_category(client, race_pages(race_world["run"], race_world["qualifying_run"]))


def test_no_page_shows_a_failure_category_during_the_reveal_embargo(client, race_world):
    lifecycle.race_close(race=race_world["race"])
    assert_no_category(client, race_pages(race_world["run"], race_world["qualifying_run"]))


def test_the_embargoed_run_page_hides_the_hidden_task_ids_too(client, race_world):
    body = client.get(reverse("race_run_detail", args=[race_world["run"].public_id])).content.decode()
    assert not any(task in body for task in RACE_TASKS)
    assert "under embargo until the race result is released" in body


def test_every_category_is_shown_once_the_race_is_released(client, race_world):
    lifecycle.race_close(race=race_world["race"])
    lifecycle.race_release(race=race_world["race"])
    body = client.get(reverse("race_run_detail", args=[race_world["run"].public_id])).content.decode()
    assert [category.code for category in FAILURE_CATEGORIES if category.code in body] == [
        category.code for category in FAILURE_CATEGORIES
    ]


def test_a_qualifying_run_shows_its_categories_at_once(client, race_world):
    body = client.get(reverse("race_run_detail", args=[race_world["qualifying_run"].public_id])).content.decode()
    assert "<code>rejected_order</code> — The verifier rejected the order, so it scores 0." in body


def test_the_outcome_selector_blanks_categories_of_an_unreleased_race(race_world):
    views = race_outcomes_visible(race_world["run"])
    assert len(views) == 10
    assert {(view.failure_category, view.failure_message, view.verdict_status) for view in views} == {("", "", "")}
    assert all(view.embargoed for view in views)
    assert [view.task_label for view in views[:2]] == ["hidden task 1", "hidden task 2"]


def test_the_outcome_selector_shows_qualifying_categories(race_world):
    views = race_outcomes_visible(race_world["qualifying_run"])
    assert sorted(view.failure_category for view in views if view.failure_category) == sorted(
        category.code for category in FAILURE_CATEGORIES
    )


def test_a_race_runs_stored_diff_carries_no_failure_category(race_world):
    submission = race_world["run"].submission
    assert submission.diff != []
    assert not any(row["path"].endswith("failure_category") for row in submission.diff)
    assert [text for text in CATEGORY_STRINGS if text in str(submission.diff)] == []


def test_a_qualifying_runs_stored_diff_keeps_its_categories(race_world):
    diff = race_world["qualifying_run"].submission.diff
    assert {
        "path": "tasks.q06.failure_category",
        "claimed": "rejected_order",
        "recomputed": "rejected_order",
        "status": "match",
    } in diff


def test_the_submitters_own_views_of_a_race_run_show_no_category_during_the_race(client, submitter, race_world):
    submission = race_world["run"].submission
    client.force_login(submitter)
    urls = [
        reverse("my_submissions"),
        reverse("submission_detail", args=[submission.pk]),
        reverse("submission_status", args=[submission.pk]),
        f"/api/v1/submissions/{submission.pk}/",
    ]
    # (The API's list also carries the qualifying run, whose categories are public at once.)
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert [text for text in CATEGORY_STRINGS if text in body] == [], url


# --- the board exports, the board API and the history chart (issue 13 item 12) ----------------


def export_urls() -> list[str]:
    """Every download and API response of race boards, and the Overall history."""
    return [
        reverse("race_overall_csv", args=["shop-race"]),
        reverse("race_overall_json", args=["shop-race"]),
        reverse("race_results_csv", args=["shop-race", 2]),
        reverse("race_results_json", args=["shop-race", 2]),
        reverse("race_qualifying_csv", args=["shop-race"]),
        reverse("race_qualifying_json", args=["shop-race"]),
        reverse("race_history", args=["shop-race"]),
        reverse("race_history_json", args=["shop-race"]),
        reverse("api-race-overall", args=["shop-race"]),
        reverse("api-race-results", args=["shop-race", 2]),
        reverse("api-race-qualifying", args=["shop-race"]),
    ]


def race_two_values(race) -> list[str]:
    """Every raw value of race 2 as the exports would print it: raw scores, baseline, vs Field,
    run scores, and the Overall rows after race 2 (they fold in race 2's deltas)."""
    from leaderboard.models.races import OverallStanding, RaceResult

    values: set[float] = set()
    for result in RaceResult.objects.filter(race=race):
        values.update({result.raw_score, result.baseline, result.delta})
    values.update(RaceRun.objects.filter(race=race).values_list("score", flat=True))
    values.update(OverallStanding.objects.filter(race=race).values_list("overall", flat=True))
    # A value race 1 or qualifying also has says nothing about race 2 (this world's qualifying run
    # has race 2's very episodes, so its public score is race 2's run score).
    values -= set(RaceRun.objects.filter(race__isnull=True).values_list("score", flat=True))
    values -= set(RaceResult.objects.filter(race__number=1).values_list("raw_score", flat=True))
    values -= set(OverallStanding.objects.filter(race__number=1).values_list("overall", flat=True))
    values.discard(None)
    return sorted({repr(value) for value in values if value not in (0.0, 1.0)})


def shows_number(body: str, value: str) -> bool:
    """Whether the number ``value`` (a repr) is shown in ``body`` at any rounding: every decimal
    number in the body is compared with the value rounded to as many decimals (so "0.700" and
    "-0.050" (any minus sign) count, and a timestamp's "30.712" does not hold 0.7)."""
    import re

    secret = abs(float(value))
    for match in re.finditer(r"(?<![\d.])\d+\.(\d+)", body):
        decimals = len(match.group(1))
        if abs(float(match.group(0)) - round(secret, decimals)) < 10 ** -(decimals + 3):
            return True
    return False


def body_of(response) -> str:
    if hasattr(response, "streaming_content"):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@pytest.fixture
def bravo_in_race_two(race_world, submitter, submit, make_validator):
    """A second entrant in race 2 with a score of its own, so race 2 has values nothing public shares."""
    validator, key = make_validator("validator-b")
    submit(
        submitter,
        members(validator=validator, key=key, agent="Bravo", version="1", outcomes=scoring_outcomes(0.7), race=2),
        name="r2-bravo",
    )
    return race_world


@pytest.mark.parametrize("phase", ["running", "embargoed"])
@pytest.mark.parametrize("viewer", ["anonymous", "unrelated", "entrant"])
def test_no_export_or_board_api_shows_a_value_or_category_of_an_unreleased_race(
    client, bravo_in_race_two, make_user, submitter, phase, viewer
):
    race_world = bravo_in_race_two
    if phase == "embargoed":
        lifecycle.race_close(race=race_world["race"])
    if viewer == "unrelated":
        client.force_login(make_user("unrelated"))
    elif viewer == "entrant":
        client.force_login(submitter)
    secrets = race_two_values(race_world["race"])
    assert secrets, "race 2 must have raw values for this walk to mean anything"
    for url in export_urls():
        response = client.get(url)
        body = body_of(response)
        if "/race/2/" in url or "/races/2/" in url:
            assert response.status_code == 403, url
            assert "race_embargoed" in body or "under embargo" in body, url
        else:
            assert response.status_code == 200, url
        assert [value for value in secrets if shows_number(body, value)] == [], url
        assert [text for text in CATEGORY_STRINGS if text in body] == [], url


def test_the_exports_show_race_two_once_it_is_released(client, bravo_in_race_two):
    race_world = bravo_in_race_two
    lifecycle.race_close(race=race_world["race"])
    lifecycle.race_release(race=race_world["race"])
    secrets = race_two_values(race_world["race"])
    body = body_of(client.get(reverse("race_results_json", args=["shop-race", 2])))
    assert secrets and [value for value in secrets if shows_number(body, value)] != []


# --- how many episodes a run reported (a run's unreported tasks are paid 0) -------------------


@pytest.fixture
def short_run(race_world, make_user, submit, make_validator):
    """A race 2 run that reported 3 of the race's 10 tasks, filed by its own validator's account:
    the 7 it did not report count 0, so its score is at most 0.3."""
    from schemes_race_helpers import challenge_for, enter

    filer = make_user("short-filer")
    validator, key = make_validator("validator-short")
    validator.accounts.add(filer)
    submission = submit(
        filer,
        members(
            validator=validator,
            key=key,
            agent="Alpha",
            version="1",
            outcomes=[accepted(task) for task in RACE_TASKS[:3]],
            race=2,
            challenge=enter("Alpha", "1", 2) and challenge_for("Alpha", "1", 2, user=filer),
        ),
        name="r2-short",
    )
    assert submission.verdict == "attested", submission.error_message
    run = RaceRun.objects.get(submission=submission)
    assert run.outcomes.count() == 3 and abs(run.score - 0.3) < 1e-9
    return {"run": run, "filer": filer}


def rows_shown(body: str) -> int:
    return body.count('<th scope="row">hidden task ')


@pytest.mark.parametrize("phase", ["running", "embargoed"])
@pytest.mark.parametrize("viewer", ["anonymous", "unrelated"])
def test_an_embargoed_run_page_does_not_tell_how_many_episodes_the_run_reported(
    client, race_world, short_run, make_user, phase, viewer
):
    """/races/runs/<pk>/ of a run that reported 3 of 10 hidden tasks listed 3 embargoed rows, while
    the race page says the race has 10 tasks: a visitor learnt that 7 of the run's tasks were paid 0
    (its score is at most 0.3) before the release. Every run with output shows one row per task."""
    if phase == "embargoed":
        lifecycle.race_close(race=race_world["race"])
    if viewer == "unrelated":
        client.force_login(make_user("unrelated"))
    race_page = client.get(reverse("race_detail", args=["shop-race", 2])).content.decode()
    assert f"{len(RACE_TASKS)} tasks, pinned to this race" in race_page
    short = client.get(reverse("race_run_detail", args=[short_run["run"].public_id])).content.decode()
    full = client.get(reverse("race_run_detail", args=[race_world["run"].public_id])).content.decode()
    assert rows_shown(short) == rows_shown(full) == len(RACE_TASKS)
    assert len(race_outcomes_visible(short_run["run"])) == len(RACE_TASKS)


def test_the_filer_and_everyone_after_the_release_see_the_episodes_the_run_reported(client, race_world, short_run):
    client.force_login(short_run["filer"])
    body = client.get(reverse("race_run_detail", args=[short_run["run"].public_id])).content.decode()
    assert rows_shown(body) == 3 and body.count(">1.000<") == 3
    client.logout()
    lifecycle.race_close(race=race_world["race"])
    lifecycle.race_release(race=race_world["race"])
    body = client.get(reverse("race_run_detail", args=[short_run["run"].public_id])).content.decode()
    assert [task for task in RACE_TASKS if f'<th scope="row">{task}</th>' in body] == RACE_TASKS[:3]


# --- whether a run counts (an infrastructure failure is > 30% of its episodes in one category) ----


@pytest.mark.parametrize("phase", ["running", "embargoed"])
def test_a_visitor_is_not_told_during_the_embargo_that_a_run_was_an_infrastructure_failure(
    client, race_world, submitter, submit, make_validator, phase
):
    """ "Infrastructure failure" says more than 30% of the run's episodes ended in an environment
    or verifier error: a failure category, which seed 002 shows only once the race is released.
    So while the race runs or is embargoed a visitor sees "embargoed" for every run that
    produced output, counted or not; the filer sees the truth."""
    validator, key = make_validator("validator-infra")
    outcomes = [env_error(task) for task in RACE_TASKS[:4]] + [accepted(task) for task in RACE_TASKS[4:]]
    broken = submit(
        submitter,
        members(validator=validator, key=key, agent="Alpha", version="1", outcomes=outcomes, race=2),
        name="r2-infra",
    )
    run = RaceRun.objects.get(submission=broken)
    assert run.infrastructure_failure
    if phase == "embargoed":
        lifecycle.race_close(race=race_world["race"])
    race_page = client.get(reverse("race_detail", args=["shop-race", 2])).content.decode()
    run_page = client.get(reverse("race_run_detail", args=[run.public_id])).content.decode()
    for body in (race_page, run_page):
        assert "infrastructure failure" not in body
    assert race_page.count('<td><span class="withheld">embargoed</span></td>') == 2  # both runs alike
    client.force_login(submitter)
    assert "infrastructure failure" in client.get(reverse("race_run_detail", args=[run.public_id])).content.decode()


@pytest.mark.parametrize("uploader", ["stranger", "other-validator"])
def test_an_upload_during_the_embargo_does_not_tell_whether_another_validators_run_was_an_infrastructure_failure(
    race_benchmark, race_release, submitter, submit, make_validator, make_user, uploader
):
    """During the embargo a race run is accepted only as the re-run its validator owes. Whether a
    re-run is owed says the earlier run was an infrastructure failure, so the answer to an upload
    must not depend on another validator's owed runs: a fresh account (or another validator's
    account) naming a version whose run failed gets the very refusal a version that counted gets."""
    validator, key = make_validator("validator-a")
    race = lifecycle.race_start(
        race=lifecycle.race_schedule(
            benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True, release=race_release
        )
    )
    broken = [env_error(task) for task in RACE_TASKS[:4]] + [accepted(task) for task in RACE_TASKS[4:]]
    for agent, outcomes in (("Broken", broken), ("Steady", scoring_outcomes(0.7))):
        filed = submit(
            submitter,
            members(validator=validator, key=key, agent=agent, version="1", outcomes=outcomes, race=1),
            name=f"r1-{agent}",
        )
        assert filed.verdict == "attested", filed.error_message
    assert RaceRun.objects.get(agent_version__agent__name="Broken").needs_rerun
    lifecycle.race_close(race=race)
    account = make_user(uploader)
    if uploader == "other-validator":
        other, other_key = make_validator("validator-b")
        other.accounts.set([account])
        signer, signing_key = other, other_key
    else:
        signer, signing_key = validator, generate_signing_key()  # an outsider holds no registered key
    answers = {}
    for agent in ("Broken", "Steady"):
        probe = submit(
            account,
            members(
                validator=signer,
                key=signing_key,
                agent=agent,
                version="1",
                outcomes=scoring_outcomes(0.1),
                race=1,
                entered=False,
                challenge=None,  # podium-bundle/1: no challenge, so nothing is checked before the race
            ),
            name=f"probe-{agent}",
        )
        answers[agent] = (probe.verdict, probe.error_code, probe.error_message)
    assert answers["Broken"] == answers["Steady"]
    assert answers["Broken"][:2] == ("rejected", "race_not_running")
    assert RaceRun.objects.filter(race=race).count() == 2


# --- whether a run was re-run (only an infrastructure failure is) --------------------------------


@pytest.fixture
def rerun_world(race_benchmark, race_release, submitter, submit, make_validator, make_user):
    """Race 1, closed: validator A ran Broken (an infrastructure failure, re-run during the
    embargo, as the owed re-run may be) and Steady (counted, so never re-run)."""
    validator, key = make_validator("validator-a")
    race = lifecycle.race_start(
        race=lifecycle.race_schedule(
            benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True, release=race_release
        )
    )
    broken = [env_error(task) for task in RACE_TASKS[:4]] + [accepted(task) for task in RACE_TASKS[4:]]
    for agent, outcomes in (("Broken", broken), ("Steady", scoring_outcomes(0.7))):
        filed = submit(
            submitter,
            members(validator=validator, key=key, agent=agent, version="1", outcomes=outcomes, race=1),
            name=f"r1-{agent}",
        )
        assert filed.verdict == "attested", filed.error_message
    race = lifecycle.race_close(race=race)
    rerun = submit(
        submitter,
        members(validator=validator, key=key, agent="Broken", version="1", outcomes=scoring_outcomes(0.6), race=1),
        name="r1-Broken-rerun",
    )
    assert rerun.verdict == "attested", rerun.error_message
    staff = make_user("race-staff")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    return {
        "race": race,
        "rerun": RaceRun.objects.get(submission=rerun),
        "filer": submitter,
        "stranger": make_user("stranger"),
        "staff": staff,
    }


def runs_listed(body: str, agent: str) -> int:
    return body.count(f">{agent} 1</a>")


@pytest.mark.parametrize("who", ["anonymous", "stranger"])
def test_a_visitor_is_not_told_during_the_embargo_that_a_run_was_re_run(client, rerun_world, who):
    """Only an infrastructure failure is re-run, so a second run of a version by the same validator
    says the first was one. Until the release a visitor sees each validator's first run of a
    version only: the race page, the Overall page's live entries and the signing summary read
    the same for the re-run version as for one whose run counted."""
    if who == "stranger":
        client.force_login(rerun_world["stranger"])
    race_page = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
    assert (runs_listed(race_page, "Broken"), runs_listed(race_page, "Steady")) == (1, 1)
    assert "Validator A</strong> (key" in race_page and ", 2 runs." in race_page
    overall = client.get(reverse("race_overall", args=["shop-race"])).content.decode()
    assert overall.count("1 validator run landed") == 2
    assert "2 validator runs landed" not in overall


def test_a_re_run_filed_during_the_embargo_has_no_page_for_a_visitor(client, rerun_world, make_user):
    """The re-run's page answers a visitor exactly as a run that does not exist (a page that
    appears during the embargo would say a re-run landed)."""
    rerun = rerun_world["rerun"]
    hidden = client.get(reverse("race_run_detail", args=[rerun.public_id]))
    absent = client.get(reverse("race_run_detail", args=["no-such-run-here"]))
    assert (hidden.status_code, absent.status_code) == (404, 404)
    assert hidden.content.decode().replace(rerun.public_id, "ID") == absent.content.decode().replace(
        "no-such-run-here", "ID"
    )


def test_a_re_run_leaves_no_gap_a_visitor_can_count_between_the_run_addresses(client, rerun_world):
    """Row ids are sequential: with runs addressed by them, the re-run's id was a 404 between two
    pages a visitor could open, and pointed at the run just before it (the infrastructure
    failure). A run is addressed by its opaque public id; no row number is an address."""
    race_page = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
    linked = set(re.findall(r'href="/races/runs/([^/"]+)/"', race_page))
    shown = set(RaceRun.objects.exclude(pk=rerun_world["rerun"].pk).values_list("public_id", flat=True))
    assert linked and linked <= shown
    assert not any(address.isdigit() for address in linked)
    # Every row number answers as a run that does not exist, the visible runs' and the re-run's alike.
    by_number = {client.get(f"/races/runs/{pk}/").status_code for pk in RaceRun.objects.values_list("pk", flat=True)}
    assert by_number == {404}


def test_the_filer_staff_and_after_the_release_everyone_see_the_re_run(client, rerun_world):
    rerun = rerun_world["rerun"]
    for user in (rerun_world["filer"], rerun_world["staff"]):
        client.force_login(user)
        assert client.get(reverse("race_run_detail", args=[rerun.public_id])).status_code == 200
        race_page = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
        assert runs_listed(race_page, "Broken") == 2
    client.logout()
    lifecycle.race_release(race=rerun_world["race"])
    assert client.get(reverse("race_run_detail", args=[rerun.public_id])).status_code == 200
    race_page = client.get(reverse("race_detail", args=["shop-race", 1])).content.decode()
    assert runs_listed(race_page, "Broken") == 2


def test_during_the_embargo_a_run_lands_only_as_the_re_run_its_own_validator_owes(rerun_world, submit, make_validator):
    """An account acting for two validators, one of which owes a re-run of Broken, files a run
    of Broken signed by the other: refused as if the race were simply closed, and nothing is
    written (that validator's first run of Broken appearing during the embargo would say some
    run of Broken was re-run)."""
    filer = rerun_world["filer"]
    other, other_key = make_validator("validator-b")  # make_validator lets the filer act for it too
    assert set(filer.validators.values_list("slug", flat=True)) == {"validator-a", "validator-b"}
    first = RaceRun.objects.filter(agent_version__agent__name="Broken").order_by("pk").first()
    RaceRun.objects.filter(pk=first.pk).update(needs_rerun=True)  # validator A owes a re-run again
    before = RaceRun.objects.count()
    probe = submit(
        filer,
        members(validator=other, key=other_key, agent="Broken", version="1", outcomes=scoring_outcomes(0.6), race=1),
        name="r1-Broken-by-b",
    )
    assert (probe.verdict, probe.error_code) == ("rejected", "race_not_running")
    assert probe.race_run is None and RaceRun.objects.count() == before

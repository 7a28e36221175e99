"""CSV/JSON exports and API endpoints of scorecard and race boards, and the race
Overall history: the pages' rows, behind the pages' visibility (race embargo included)."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from rest_framework.test import APIClient
from schemes_race_helpers import RACE_TASKS, members, scoring_outcomes

from leaderboard.models import Agent, AgentVersion, ScorecardRun, SigningKey
from leaderboard.models.races import RaceResult, ScorecardStanding
from leaderboard.services import races as lifecycle
from submissions.models import Card
from submissions.services.signing_keys import signing_key_revoke

SCORECARD = ("sokoban-play", "p1")  # tests/schemes/conftest.py: play_release


def _card(release, user, *, agent: str, success: float, rank: int, private: bool = False) -> ScorecardRun:
    """A closed card and its board row, written directly: the exports read ScorecardStanding
    rows whatever produced them (leaderboard.selectors.scheme_boards)."""
    agent_row, _ = Agent.objects.get_or_create(slug=agent.lower(), defaults={"name": agent})
    version, _ = AgentVersion.objects.get_or_create(agent=agent_row, version="1")
    # Whatever produced the card (a self-reported bundle before issue 12, a card played on the
    # server after it), the board reads only its ScorecardStanding row and the ScorecardRun.
    card = ScorecardRun.objects.create(
        release=release,
        agent_version=version,
        level="validated",
        episodes=100,
        solved=round(success * 100),
        success_rate=success,
        move_efficiency=0.874,
        avg_steps_solved=23.4,
        deadlock_rate=0.08,
        total_actions=4120,
    )
    # The card played on the server that recorded it (its one-to-one points at the run).
    Card.objects.create(release=release, agent_version=version, owner=user, status="closed", run=card)
    if not private:
        ScorecardStanding.objects.create(release=release, agent=agent_row, scorecard=card, rank=rank)
    return card


@pytest.fixture
def scorecard_release(play_release):
    return play_release


@pytest.fixture
def scorecard_board(scorecard_release, submitter):
    _card(scorecard_release, submitter, agent="Alpha", success=0.31, rank=1)
    _card(scorecard_release, submitter, agent="Bravo", success=0.12, rank=2)
    _card(scorecard_release, submitter, agent="Secret", success=0.99, rank=0, private=True)
    return scorecard_release


def test_the_scorecard_board_csv_has_the_boards_rows_in_rank_order(client, scorecard_board):
    response = client.get(reverse("scorecard_board_csv", args=SCORECARD))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["rank"], r["agent"], r["success_rate"], r["solved"]) for r in rows] == [
        ("1", "Alpha", "0.31", "31"),
        ("2", "Bravo", "0.12", "12"),
    ]
    assert rows[0]["deadlock_rate_lower_bound"] == "0.08"


def test_the_scorecard_board_json_and_api_agree_and_leave_private_cards_off(client, scorecard_board):
    export = client.get(reverse("scorecard_board_json", args=SCORECARD)).json()
    api = APIClient().get(reverse("api-scorecard-board", args=SCORECARD)).json()
    assert export["rows"] == api["rows"]
    assert [r["agent"] for r in api["rows"]] == ["Alpha", "Bravo"]
    assert api["episode_set_size"] == scorecard_board.episode_set_size
    assert "Secret" not in str(export) and "0.99" not in str(api)


def test_each_scorecard_row_carries_the_95_percent_wilson_interval_of_its_success_rate(client, scorecard_board):
    from scoring.scorecard import success_rate_interval

    rows = APIClient().get(reverse("api-scorecard-board", args=SCORECARD)).json()["rows"]
    for row in rows:
        low, high = success_rate_interval(row["solved"], row["episodes"])
        assert (row["success_rate_ci_low"], row["success_rate_ci_high"]) == (low, high)
        assert low <= row["success_rate"] <= high


def test_an_unpublished_scorecard_release_is_a_404_everywhere(client, scorecard_board, make_user):
    scorecard_board.published = False
    scorecard_board.save()
    assert client.get(reverse("scorecard_board_json", args=SCORECARD)).status_code == 404
    assert client.get(reverse("scorecard_board_csv", args=SCORECARD)).status_code == 404
    response = APIClient().get(reverse("api-scorecard-board", args=SCORECARD))
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert APIClient().get(reverse("api-scorecard-board", args=["sokoban-hidden", "9.9"])).status_code == 404


# --- races ------------------------------------------------------------------------------------


@pytest.fixture
def three_races(race_benchmark, race_release, submitter, submit, make_validator):
    """Races 1 and 2 released, race 3 running with a run landed: Alpha and Bravo race in each."""
    validator, key = make_validator("validator-a")
    races = []
    scores = {1: (0.6, 0.4), 2: (0.8, 0.3), 3: (0.2, 0.9)}
    for number in (1, 2, 3):
        race = lifecycle.race_schedule(
            benchmark=race_benchmark, number=number, task_ids=RACE_TASKS, is_launch=number == 1, release=race_release
        )
        race = lifecycle.race_start(race=race)
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
                name=f"r{number}-{agent}",
            )
        if number < 3:
            lifecycle.race_close(race=race)
            race = lifecycle.race_release(race=race)
        races.append(race)
    return races


def _api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_a_released_races_results_are_public_in_csv_json_and_api(client, three_races):
    expected = list(RaceResult.objects.filter(race=three_races[1]).order_by("rank").values_list("raw_score", flat=True))
    data = client.get(reverse("race_results_json", args=["shop-race", 2])).json()
    assert [r["raw_score"] for r in data["rows"]] == expected
    assert data["race"]["status"] == "released"
    api = _api().get(reverse("api-race-results", args=["shop-race", 2])).json()
    assert api["rows"] == data["rows"]
    response = client.get(reverse("race_results_csv", args=["shop-race", 2]))
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0].startswith("rank,agent,agent_slug,version,raw_score,baseline,vs_field")
    assert len(lines) == 3


def test_a_released_races_results_name_the_validator_keys_of_the_runs_they_average_and_those_revoked_since(
    client, three_races
):
    key = SigningKey.objects.get(owner_kind=SigningKey.Owner.VALIDATOR)
    rows = _api().get(reverse("api-race-results", args=["shop-race", 2])).json()["rows"]
    assert [(r["validator_keys"], r["validator_keys_revoked"]) for r in rows] == [(key.key_id, "")] * 2
    signing_key_revoke(signing_key=key, user=None)
    rows = client.get(reverse("race_results_json", args=["shop-race", 2])).json()["rows"]
    assert [(r["validator_keys"], r["validator_keys_revoked"]) for r in rows] == [(key.key_id, key.key_id)] * 2
    response = client.get(reverse("race_results_csv", args=["shop-race", 2]))
    header, first, _ = b"".join(response.streaming_content).decode().splitlines()
    assert header.endswith(",validator_keys,validator_keys_revoked")
    assert first.endswith(f",{key.key_id},{key.key_id}")


@pytest.mark.parametrize("viewer", ["anonymous", "another", "submitter"])
def test_a_running_races_results_are_refused_with_race_embargoed(client, three_races, make_user, submitter, viewer):
    user = {"anonymous": None, "another": make_user("another"), "submitter": submitter}[viewer]
    if user is not None:
        client.force_login(user)
    response = _api(user).get(reverse("api-race-results", args=["shop-race", 3]))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "race_embargoed"
    json_export = client.get(reverse("race_results_json", args=["shop-race", 3]))
    assert (json_export.status_code, json_export.json()["error"]["code"]) == (403, "race_embargoed")
    assert client.get(reverse("race_results_csv", args=["shop-race", 3])).status_code == 403


def test_staff_see_a_running_races_results(client, three_races, make_user):
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    response = _api(staff).get(reverse("api-race-results", args=["shop-race", 3]))
    assert response.status_code == 200
    assert len(response.json()["rows"]) == 2


def test_the_overall_board_is_the_one_after_the_latest_released_race_for_visitors(client, three_races, make_user):
    data = _api().get(reverse("api-race-overall", args=["shop-race"])).json()
    assert data["anchor_race"]["number"] == 2
    export = client.get(reverse("race_overall_json", args=["shop-race"])).json()
    assert export["rows"] == data["rows"] and export["anchor_race"]["number"] == 2
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    assert _api(staff).get(reverse("api-race-overall", args=["shop-race"])).json()["anchor_race"]["number"] == 3


def test_the_overall_history_covers_released_races_only(client, three_races):
    data = client.get(reverse("race_history_json", args=["shop-race"])).json()
    assert [race["number"] for race in data["races"]] == [1, 2]
    assert {s["label"] for s in data["series"]} == {"Alpha 1", "Bravo 1"}
    assert all(len(s["overall"]) == 2 and None not in s["overall"] for s in data["series"])
    page = client.get(reverse("race_history", args=["shop-race"]))
    assert page.status_code == 200
    assert "Race 3</th>" not in page.content.decode()


def test_the_qualifying_export_and_api_list_the_qualifying_board(
    client, race_benchmark, race_release, submitter, submit, make_validator
):
    validator, key = make_validator("validator-q")
    qualifying = [f"q{i:02d}" for i in range(10)]
    submit(
        submitter,
        members(
            validator=validator,
            key=key,
            agent="Alpha",
            version="1",
            outcomes=scoring_outcomes(0.5, qualifying),
            race=None,
            tasks=qualifying,
        ),
        name="q",
    )
    api = _api().get(reverse("api-race-qualifying", args=["shop-race"])).json()
    assert [(r["agent"], r["runs_included"]) for r in api["rows"]] == [("Alpha", 1)]
    assert client.get(reverse("race_qualifying_json", args=["shop-race"])).json()["rows"] == api["rows"]


def test_unknown_race_benchmarks_and_races_are_404(client, race_benchmark):
    assert _api().get(reverse("api-race-overall", args=["nope"])).status_code == 404
    assert _api().get(reverse("api-race-results", args=["shop-race", 7])).status_code == 404
    assert client.get(reverse("race_results_json", args=["shop-race", 7])).status_code == 404
    assert client.get("/races/shop-race/race/99999999999999999999/results.json").status_code == 404
    assert _api().get("/api/v1/race-boards/shop-race/races/99999999999999999999/").status_code == 404


def test_a_bad_history_size_is_a_400(client, race_benchmark):
    response = client.get(reverse("race_history_json", args=["shop-race"]), {"n": "0"})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_query")
    assert client.get(reverse("race_history", args=["shop-race"]), {"n": "x"}).status_code == 400


# --- the OpenAPI schema, on boards that have rows -----------------------------------------------
# tests/api/test_schema_conformance.py walks every operation, but its world has no scheme boards,
# so these endpoints answer 404 there; here each answers 200 (and 403) with rows and is checked
# against the schema the same way.


@pytest.fixture
def in_process_wsgi():
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_the_board_endpoints_answers_with_rows_conform_to_the_schema(three_races, scorecard_board, in_process_wsgi):
    import schemathesis
    from django.core.wsgi import get_wsgi_application
    from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())
    calls = [
        ("/api/v1/scorecard-boards/{benchmark}/{version}/", {"benchmark": SCORECARD[0], "version": SCORECARD[1]}, 200),
        ("/api/v1/race-boards/{benchmark}/overall/", {"benchmark": "shop-race"}, 200),
        ("/api/v1/race-boards/{benchmark}/races/{number}/", {"benchmark": "shop-race", "number": 2}, 200),
        ("/api/v1/race-boards/{benchmark}/races/{number}/", {"benchmark": "shop-race", "number": 3}, 403),
        ("/api/v1/race-boards/{benchmark}/qualifying/", {"benchmark": "shop-race"}, 200),
    ]
    for path, parameters, status in calls:
        case = schema[path]["GET"].Case(path_parameters=parameters)
        response = case.call()
        assert response.status_code == status, path
        case.validate_response(response, checks=[response_schema_conformance, status_code_conformance])
        if status == 200 and "qualifying" not in path:  # this world has no qualifying run
            assert response.json()["rows"], path


# --- query counts: constant in the number of rows -------------------------------------------------


def _race_rows(race_benchmark, count: int) -> None:
    """Three released races with ``count`` agent versions each (rows written directly)."""
    from leaderboard.models import Race
    from leaderboard.models.races import OverallStanding

    versions = []
    for i in range(count):
        agent = Agent.objects.create(slug=f"racer-{i}", name=f"Racer {i}")
        versions.append(AgentVersion.objects.create(agent=agent, version="1"))
    for number in (1, 2, 3):
        race = Race.objects.create(benchmark=race_benchmark, number=number, status="released", is_launch=number == 1)
        for rank, version in enumerate(versions, start=1):
            RaceResult.objects.create(
                race=race,
                agent_version=version,
                raw_score=1 - rank / 100,
                rank=rank,
                baseline=0.5,
                delta=0.5 - rank / 100,
                runs_included=1,
                runs_excluded=0,
            )
            OverallStanding.objects.create(
                race=race, agent_version=version, overall=0.5 - rank / 100, rank=rank, races_counted=number, window=3
            )


RACE_VIEWS = [
    # benchmark, races, the anchor's Overall rows (with agent versions and agents)
    ("overall-json", lambda: reverse("race_overall_json", args=["shop-race"]), 3),
    ("overall-csv", lambda: reverse("race_overall_csv", args=["shop-race"]), 3),
    ("api-overall", lambda: reverse("api-race-overall", args=["shop-race"]), 3),
    # benchmark, race, its results, the validator keys of the runs they average
    ("results-json", lambda: reverse("race_results_json", args=["shop-race", 2]), 4),
    ("api-results", lambda: reverse("api-race-results", args=["shop-race", 2]), 4),
    # benchmark, races, the released races' Overall rows; the page adds the race list
    ("history-json", lambda: reverse("race_history_json", args=["shop-race"]) + "?n=20", 3),
    ("history", lambda: reverse("race_history", args=["shop-race"]) + "?n=20", 4),
]


@pytest.mark.parametrize("count", [2, 20])
@pytest.mark.parametrize(("name", "url", "queries"), RACE_VIEWS, ids=[v[0] for v in RACE_VIEWS])
def test_a_race_board_view_issues_a_fixed_number_of_queries(
    client, race_benchmark, race_release, django_assert_num_queries, count, name, url, queries
):
    # race_release: a race benchmark is public once one of its releases is (a draft-only one is a 404).
    _race_rows(race_benchmark, count)
    target = url()
    client.get(target)
    with django_assert_num_queries(queries):
        response = client.get(target)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
    assert response.status_code == 200


@pytest.mark.parametrize("count", [2, 20])
@pytest.mark.parametrize("url", ["scorecard_board_json", "scorecard_board_csv", "api-scorecard-board"])
def test_a_scorecard_board_export_issues_a_fixed_number_of_queries(
    client, scorecard_release, submitter, django_assert_num_queries, count, url
):
    for rank in range(1, count + 1):
        _card(scorecard_release, submitter, agent=f"Agent{rank}", success=1 - rank / 100, rank=rank)
    target = reverse(url, args=SCORECARD)
    client.get(target)
    # the release (with its benchmark), the board rows (with agents, cards and versions)
    with django_assert_num_queries(2):
        response = client.get(target)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
    assert response.status_code == 200


@pytest.mark.parametrize("name", ["board_json", "board_csv", "chart_data"])
def test_the_paper_gap_exports_of_a_scorecard_release_are_a_404_not_an_empty_board(client, scorecard_board, name):
    response = client.get(reverse(name, args=SCORECARD))
    assert response.status_code == 404


def test_the_paper_gap_badge_of_a_scorecard_agent_is_a_404_not_unranked(client, scorecard_board):
    response = client.get(reverse("agent_badge", args=[*SCORECARD, "alpha"]))
    assert response.status_code == 404


def test_the_paper_gap_board_address_of_a_scorecard_release_leads_to_its_scorecard_board(client, scorecard_board):
    response = client.get(reverse("release_board", args=SCORECARD))
    assert (response.status_code, response["Location"]) == (302, reverse("scorecard_board", args=SCORECARD))


def test_the_paper_gap_board_address_of_a_race_release_leads_to_the_race_pages(client, race_release):
    response = client.get(reverse("release_board", args=[race_release.benchmark.slug, race_release.version]))
    assert (response.status_code, response["Location"]) == (
        302,
        reverse("race_benchmark", args=[race_release.benchmark.slug]),
    )


def test_a_scorecard_agents_page_lists_its_ranked_card_and_not_its_private_one(client, scorecard_board):
    body = client.get(reverse("agent_detail", args=["alpha"])).content.decode()
    alpha = ScorecardRun.objects.get(agent_version__agent__slug="alpha")
    assert "No public runs yet" not in body
    assert f'href="{reverse("scorecard_detail", args=[alpha.card_id])}"' in body
    assert "rank 1, 31% solved (31/100)" in body
    secret = client.get(reverse("agent_detail", args=["secret"])).content.decode()
    assert "No public runs yet" in secret and "scorecards-heading" not in secret


def test_an_idle_closed_cards_board_row_shows_when_the_card_closed_not_when_the_row_was_written(
    client, scorecard_board
):
    import datetime as dt

    alpha = ScorecardRun.objects.get(agent_version__agent__slug="alpha")
    closed = alpha.created_at - dt.timedelta(hours=1)  # its idle time ran out an hour before the sweep
    Card.objects.filter(run=alpha).update(closed_at=closed, closed_by="expiry")
    rows = client.get(reverse("scorecard_board_json", args=SCORECARD)).json()["rows"]
    assert rows[0]["closed_at"] == closed.isoformat()
    page = client.get(reverse("scorecard_detail", args=[alpha.card_id])).content.decode()
    assert f'datetime="{closed.isoformat()}">{closed:%Y-%m-%d %H:%M}</time> UTC after its idle time' in page


def test_a_running_races_csv_download_is_refused_in_the_apis_json_shape(client, three_races):
    response = client.get(reverse("race_results_csv", args=["shop-race", 3]))  # race 3 runs
    assert (response.status_code, response["Content-Type"]) == (403, "application/json")
    assert response.json()["error"]["code"] == "race_embargoed"


def test_an_unknown_csv_download_is_a_json_404(client, db):
    response = client.get("/scorecards/nothing-here/9.9/board.csv")
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")
    assert response.json()["error"]["code"] == "not_found"

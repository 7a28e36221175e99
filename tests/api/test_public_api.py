from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.models import Standing

pytestmark = pytest.mark.django_db

PUBLISHED_ANCHOR = 0.7123456


def test_benchmarks_list_their_published_releases(world: Any, api: Any) -> None:
    body = api.get("/api/v1/benchmarks/").json()
    assert body["count"] == 1
    benchmark = body["results"][0]
    assert benchmark["slug"] == "ale-robotics" and benchmark["daily_submission_limit"] == 2
    assert [r["version"] for r in benchmark["releases"]] == ["v0.5"]


def test_a_release_lists_required_tasks_hash_and_only_published_anchors(world: Any, api: Any) -> None:
    body = api.get(f"/api/v1/releases/{world.release.pk}/").json()
    assert body["required_task_set_hash"] == "a" * 64
    assert body["required_tasks"] == ["pick-cube", "stack-blocks"]
    anchors = {task["slug"]: (task["anchor_published"], task["paper_value"]) for task in body["tasks"]}
    assert anchors == {"pick-cube": (True, PUBLISHED_ANCHOR), "stack-blocks": (False, None)}
    assert "manifest" not in body and "budgets" not in body


def test_visitors_do_not_see_draft_releases(world: Any, api: Any) -> None:
    assert api.get(f"/api/v1/releases/{world.draft.pk}/").status_code == 404
    assert [r["version"] for r in api.get("/api/v1/releases/").json()["results"]] == ["v0.5"]


def test_staff_see_draft_releases(world: Any, client_for: Any) -> None:
    assert client_for(world.staff).get(f"/api/v1/releases/{world.draft.pk}/").status_code == 200


def test_tasks_can_be_filtered_by_genre(world: Any, api: Any) -> None:
    body = api.get("/api/v1/tasks/", {"benchmark": "ale-robotics", "genre": "open"}).json()
    assert [t["slug"] for t in body["results"]] == ["stack-blocks"]


def test_a_bad_filter_value_is_a_clear_400(world: Any, api: Any) -> None:
    response = api.get("/api/v1/tasks/", {"genre": "poetry"})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_query",
        "message": "genre: expected one of reproduction, open, got 'poetry'.",
    }


def test_the_task_detail_has_no_anchor_provenance(world: Any, api: Any) -> None:
    task_id = api.get("/api/v1/tasks/", {"genre": "open"}).json()["results"][0]["id"]
    body = api.get(f"/api/v1/tasks/{task_id}/").json()
    assert body["brief_md"] == "# Brief"
    assert "anchor_provenance" not in body


def test_the_leaderboard_shows_public_standings_with_the_page_columns(world: Any, api: Any) -> None:
    response = api.get(f"/api/v1/releases/{world.release.pk}/leaderboard/overall/")
    assert response.status_code == 200
    rows = response.json()["results"]
    # The private run's row is never public.
    assert [(r["rank"], r["run"], r["agent_slug"], r["complete"]) for r in rows] == [
        (1, world.public_run.pk, "robo-agent", True)
    ]
    assert set(rows[0]) >= {"score", "ci_low", "ci_high", "pass_rate", "covered", "required", "verification"}


def test_the_leaderboard_filters_to_complete_coverage(world: Any, api: Any) -> None:
    Standing.objects.filter(run=world.private_run).update(tab="open")
    world.private_run.is_private = False
    world.private_run.save()
    url = f"/api/v1/releases/{world.release.pk}/leaderboard/open/"
    assert [r["complete"] for r in api.get(url).json()["results"]] == [False]
    assert api.get(url, {"complete": "true"}).json()["results"] == []
    assert api.get(url, {"complete": "1"}).json()["results"] == []


def test_the_leaderboard_sorts_by_the_pages_keys(world: Any, api: Any) -> None:
    world.private_run.is_private = False
    world.private_run.save()
    Standing.objects.filter(run=world.private_run).update(score=1.2)  # partial: ranked second
    url = f"/api/v1/releases/{world.release.pk}/leaderboard/overall/"
    by_rank = [r["run"] for r in api.get(url).json()["results"]]
    by_score = [r["run"] for r in api.get(url, {"sort": "score"}).json()["results"]]
    ascending = [r["run"] for r in api.get(url, {"sort": "score", "dir": "asc"}).json()["results"]]
    assert by_rank == [world.public_run.pk, world.private_run.pk]
    assert by_score == [world.private_run.pk, world.public_run.pk]
    assert ascending == by_rank


def test_an_unknown_sort_key_is_a_clear_400(world: Any, api: Any) -> None:
    response = api.get(f"/api/v1/releases/{world.release.pk}/leaderboard/overall/", {"sort": "luck"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_query"
    assert response.json()["error"]["message"].startswith("sort='luck' is not a sortable column: expected one of rank")


def test_an_unknown_tab_is_a_json_404(world: Any, api: Any) -> None:
    response = api.get(f"/api/v1/releases/{world.release.pk}/leaderboard/best/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_the_leaderboard_answers_304_to_a_matching_etag_without_reading_standings(world: Any, api: Any) -> None:
    url = f"/api/v1/releases/{world.release.pk}/leaderboard/overall/"
    first = api.get(url)
    etag = first["ETag"]
    assert etag.startswith(f'"lb-{world.release.pk}-{world.release.generation}-')
    with CaptureQueriesContext(connection) as queries:
        second = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert second.status_code == 304 and second.content == b""
    assert not any("leaderboard_standing" in q["sql"] for q in queries.captured_queries)


def test_the_leaderboard_etag_changes_with_the_generation(world: Any, api: Any) -> None:
    url = f"/api/v1/releases/{world.release.pk}/leaderboard/overall/"
    etag = api.get(url)["ETag"]
    world.release.generation += 1
    world.release.save()
    response = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 200
    assert response["ETag"] != etag


@pytest.mark.parametrize("path", ["/api/v1/", "/api/v1/releases/{release}/prices/", "/api/v1/limits/"])
def test_reads_without_a_view_etag_get_one_and_answer_304_to_it(world: Any, client_for: Any, path: str) -> None:
    # The API root, a release's prices and the account's limits (among others) had no ETag at all.
    client = client_for(world.owner)
    url = path.format(release=world.release.pk)
    first = client.get(url)
    assert first.status_code == 200 and first["ETag"].startswith('"')
    repeat = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert (repeat.status_code, repeat.content) == (304, b"")
    assert client.get(url, HTTP_IF_NONE_MATCH='"stale"').status_code == 200


def test_other_reads_answer_304_to_a_matching_etag(world: Any, api: Any) -> None:
    first = api.get("/api/v1/benchmarks/")
    assert api.get("/api/v1/benchmarks/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    assert api.get("/api/v1/benchmarks/", HTTP_IF_NONE_MATCH='"stale"').status_code == 200


def test_a_run_shows_its_breakdown_and_verification(world: Any, api: Any) -> None:
    body = api.get(f"/api/v1/runs/{world.public_run.pk}/").json()
    tasks = {t["task"]: t for t in body["tasks"]}
    assert tasks["pick-cube"]["measured"] == 0.7 and tasks["pick-cube"]["paper_value"] == PUBLISHED_ANCHOR
    # Measured, or a gap beside a guessable measured value, would give the withheld anchor away.
    assert tasks["stack-blocks"]["measured"] is None and tasks["stack-blocks"]["paper_value"] is None
    assert (tasks["stack-blocks"]["final"], tasks["stack-blocks"]["gap"]) == (None, None)
    assert tasks["stack-blocks"]["withheld"] == ["final", "gap", "measured", "score"]
    assert tasks["pick-cube"]["final"] is not None and tasks["pick-cube"]["withheld"] == []
    assert [e["method"] for e in body["verification"]] == ["recomputed from evaluator results"]


def test_the_runs_submitter_sees_their_own_measured_values(world: Any, client_for: Any) -> None:
    body = client_for(world.owner).get(f"/api/v1/runs/{world.public_run.pk}/").json()
    assert {t["task"]: t["measured"] for t in body["tasks"]}["stack-blocks"] == pytest.approx(0.2950931)


def test_runs_can_be_filtered_by_release_and_agent(world: Any, api: Any) -> None:
    body = api.get("/api/v1/runs/", {"release": world.release.pk, "agent": "robo-agent"}).json()
    assert [r["id"] for r in body["results"]] == [world.public_run.pk]


def test_lists_are_paginated_with_limit_and_offset(world: Any, client_for: Any) -> None:
    body = client_for(world.owner).get("/api/v1/runs/", {"limit": 1, "offset": 1}).json()
    assert body["count"] == 3 and len(body["results"]) == 1 and body["previous"] is not None


def test_agents_list_their_versions(world: Any, api: Any) -> None:
    body = api.get("/api/v1/agents/robo-agent/").json()
    assert body["name"] == "Robo Agent" and [v["version"] for v in body["versions"]] == ["1.0"]


def test_list_endpoints_use_a_constant_number_of_queries(world: Any, api: Any) -> None:
    from leaderboard.models import Agent, AgentVersion

    def counts() -> list[int]:
        result = []
        for path in ("/api/v1/runs/", "/api/v1/releases/", "/api/v1/benchmarks/", "/api/v1/agents/", "/api/v1/tasks/"):
            with CaptureQueriesContext(connection) as queries:
                assert api.get(path).status_code == 200
            result.append(len(queries.captured_queries))
        return result

    from leaderboard.models import Run
    from submissions.models import Submission

    before = counts()
    for n in range(5):
        agent = Agent.objects.create(slug=f"extra-{n}", name=f"Extra {n}")
        version = AgentVersion.objects.create(agent=agent, version="1")
        submission = Submission.objects.create(submitter=world.other, sha256=f"{100 + n:064x}", size=1, file="x.age")
        linked = Run.objects.create(
            release=world.release, agent_version=version, level="validated",
            covered=2, required=2, complete=True,
        )  # fmt: skip
        submission.run = linked
        submission.save(update_fields=["run"])
    assert api.get("/api/v1/runs/").json()["count"] == 6
    assert counts() == before


def test_the_api_root_links_every_collection(db: Any, api: Any) -> None:
    body = api.get("/api/v1/").json()
    assert body["benchmarks"] == "http://testserver/api/v1/benchmarks/"
    assert body["docs"] == "http://testserver/api/v1/docs/"
    assert set(body) >= {"releases", "tasks", "runs", "agents", "submissions", "site_key", "schema"}


@pytest.mark.parametrize("path", ["/api/v1/runs/", "/api/v1/releases/", "/api/v1/tasks/", "/api/v1/benchmarks/"])
def test_a_parameter_a_list_does_not_read_is_refused_not_ignored(world: Any, api: Any, path: str) -> None:
    # ?releases=6 (a typo of release) answered every run, as if the filter had matched.
    response = api.get(path, {"releases": "6"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_query" and error["message"].startswith("releases: not a parameter of this list")
    assert api.get(path, {"limit": "1", "offset": "0"}).status_code == 200


@pytest.mark.parametrize(
    ("path", "typo", "reads"),
    [
        ("/api/v1/submissions/", "verdicts", "format, limit, offset, status, verdict"),
        ("/api/v1/scorecards/", "statuss", "format, limit, offset, status"),
        ("LEADERBOARD", "verifcation", "complete, dir, format, limit, model, offset, org, q, since, sort, until, "),
    ],
    ids=["your submissions", "your scorecards", "a release's leaderboard"],
)
def test_a_parameter_the_other_lists_do_not_read_is_refused_not_ignored(
    world: Any, client_for: Any, path: str, typo: str, reads: str
) -> None:
    # ?verdicts=rejected answered every submission; ?verifcation=verified the whole board.
    path = f"/api/v1/releases/{world.release.pk}/leaderboard/overall/" if path == "LEADERBOARD" else path
    client = client_for(world.owner)
    response = client.get(path, {typo: "x"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_query"
    assert response.json()["error"]["message"].startswith(f"{typo}: not a parameter of this list; it reads {reads}")
    assert client.get(path, {"limit": "1", "offset": "0"}).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/scorecard-boards/sokoban/2026.1/",
        "/api/v1/race-boards/shop/overall/",
        "/api/v1/race-boards/shop/races/1/",
        "/api/v1/race-boards/shop/qualifying/",
    ],
)
def test_a_scheme_board_refuses_any_query_but_format(db: Any, api: Any, path: str) -> None:
    response = api.get(path, {"limit": "abc"})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_query",
        "message": "limit: not a parameter of this board; it reads format.",
    }
    assert api.get(path, {"format": "json"}).status_code == 404  # read: the board itself does not exist


def test_a_limit_that_is_not_a_page_size_is_refused_naming_the_page_cap(world: Any, api: Any) -> None:
    response = api.get("/api/v1/runs/", {"limit": "0"})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_query",
        "message": "limit: expected a whole number from 1 to 9223372036854775807 (a page holds at most 500), got '0'.",
    }
    offset = api.get("/api/v1/runs/", {"offset": "-1"}).json()["error"]["message"]
    assert offset == "offset: expected a whole number from 0 to 9223372036854775807, got '-1'."


def test_a_parameter_the_price_table_does_not_read_is_refused_not_ignored(world: Any, api: Any) -> None:
    response = api.get(f"/api/v1/releases/{world.release.pk}/prices/?limit=1")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_query",
        "message": "limit: not a parameter of this table; it reads format.",
    }

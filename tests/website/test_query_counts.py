"""Every page issues a fixed number of SQL queries whatever the number of rows.

Each page is requested with 2 and with 50 runs and must issue exactly the
pinned number of queries both times (pytest-django's django_assert_num_queries).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard.selectors.paper_gap import release_pointer_key
from tests.website.conftest import make_release, make_run, make_user

# (name, url builder, pinned query count for an anonymous visitor)
PAGES = [
    ("home", lambda run: reverse("home"), 5),
    # uncached: release pointer (generation), release, count, rows, the page's cost and declarations
    # (leaderboard.selectors.declarations.declarations_attach), siblings, chart rows, reference baselines
    ("board", lambda run: reverse("release_board", args=["ale-robotics", "v0.5"]), 8),
    ("board-sorted", lambda run: reverse("release_board", args=["ale-robotics", "v0.5"]) + "?sort=tokens&page=2", 8),
    # a genre tab adds its coverage over the tab's tasks: the tab's task count, the rows' results
    (
        "board-reproduction",
        lambda run: reverse("release_board", args=["ale-robotics", "v0.5"]) + "?tab=reproduction",
        10,
    ),
    ("board-csv", lambda run: reverse("board_csv", args=["ale-robotics", "v0.5"]), 2),
    # release, rows, reference baselines
    ("board-json", lambda run: reverse("board_json", args=["ale-robotics", "v0.5"]), 3),
    ("chart", lambda run: reverse("chart_data", args=["ale-robotics", "v0.5"]) + "?n=50", 2),
    ("chart-by-pass-rate", lambda run: reverse("chart_data", args=["ale-robotics", "v0.5"]) + "?n=50&by=pass_rate", 2),
    ("chart-open", lambda run: reverse("chart_data", args=["ale-robotics", "v0.5"]) + "?n=50&tab=open", 4),
    # release, its tasks, the previous release (none here, so its tasks are not read)
    ("release", lambda run: reverse("release_detail", args=["ale-robotics", "v0.5"]), 3),
    # release, release task, the ranking of agents on the task (leaderboard.selectors.task_ranking)
    ("task", lambda run: reverse("task_detail", args=["ale-robotics", "v0.5", "grasp"]), 3),
    # run (+task results, events, official re-runs with their actors), ranks, the release's
    # leader (the "compare with the leader" link)
    ("run", lambda run: reverse("run_detail", args=[run.pk]), 6),
    # the public agent, its runs, their task results (leaderboard.disclosure), their ranks,
    # its versions with their declarations, its race versions (their benchmarks: one more, only
    # for an agent that races), its ranked scorecards
    ("agent", lambda run: reverse("agent_detail", args=["alpha"]), 7),
    ("badge", lambda run: reverse("agent_badge", args=["ale-robotics", "v0.5", "alpha"]), 2),
]


def fill(release, runs: int):
    first = make_run(release, agent_name="Alpha", version="0")
    for i in range(1, runs):
        make_run(release, agent_name="Alpha" if i % 2 else f"Other {i}", version=str(i))
    return first


@pytest.mark.parametrize("runs", [2, 50])
@pytest.mark.parametrize(("name", "url", "queries"), PAGES, ids=[p[0] for p in PAGES])
def test_a_page_issues_a_fixed_number_of_queries(
    client, benchmark, django_assert_num_queries, runs, name, url, queries
):
    release = make_release(benchmark)
    run = fill(release, runs)
    target = url(run)
    client.get(target)  # warm caches that are not per-request (e.g. content types)
    from django.core.cache import cache

    cache.clear()
    with django_assert_num_queries(queries):
        response = client.get(target)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("params", "joined"), [("", 0), ("?org=acme", 2)], ids=["unfiltered", "filtered-by-organisation"]
)
def test_the_board_counts_its_rows_joining_only_what_its_filters_test(client, benchmark, params, joined):
    # The rows' query joins the run's cost and the version's declaration for its columns; the
    # count needs none of them (each join is one row per standing), and joined every row of the
    # tab (28 of a cold page's ~120 ms at 10,000 runs on PostgreSQL).
    release = make_release(benchmark)
    fill(release, 3)
    with CaptureQueriesContext(connection) as captured:
        client.get(reverse("release_board", args=["ale-robotics", "v0.5"]) + params)
    (count,) = [query["sql"] for query in captured.captured_queries if 'COUNT("leaderboard_standing"' in query["sql"]]
    assert count.count(" JOIN ") == joined  # an organisation filter joins the version and its declaration


@pytest.mark.parametrize("count", [2, 50])
def test_my_submissions_issues_a_fixed_number_of_queries(client, benchmark, django_assert_num_queries, count):
    release = make_release(benchmark)
    owner = make_user()
    for i in range(count):
        make_run(release, agent_name=f"Mine {i}", submitter=owner, is_private=bool(i % 2))
    client.force_login(owner)
    # session, user, submissions (with release, benchmark and run joined)
    with django_assert_num_queries(3):
        response = client.get(reverse("my_submissions"))
    assert response.status_code == 200
    assert response.content.decode().count('<th scope="row"><a href="/submissions/') == count


def test_the_chart_data_is_cached_until_the_release_generation_changes(client, benchmark, django_assert_num_queries):
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha")
    url = reverse("chart_data", args=["ale-robotics", "v0.5"])
    first = client.get(url).json()
    with django_assert_num_queries(1):  # the release only; the rows come from the cache
        assert client.get(url).json() == first
    make_run(release, agent_name="Bravo", score=2.0, tabs=("overall",))
    release.generation += 1
    release.save()
    rows = client.get(url).json()["rows"]
    assert [row["label"] for row in rows] == ["Bravo 1.0", "Alpha 1.0"]  # ranked by score


def test_an_anonymous_board_page_is_served_from_the_cache_without_a_query(client, benchmark, django_assert_num_queries):
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha")
    url = reverse("release_board", args=["ale-robotics", "v0.5"])
    client.get(url)
    with django_assert_num_queries(0):
        cached = client.get(url)
    assert "Alpha" in cached.content.decode()


def test_a_cached_board_page_is_replaced_once_the_generation_changes(client, benchmark, monkeypatch):
    from django.core.cache import cache

    release = make_release(benchmark)
    make_run(release, agent_name="Alpha")
    url = reverse("release_board", args=["ale-robotics", "v0.5"])
    client.get(url)
    make_run(release, agent_name="Bravo", tabs=("overall",))
    assert "Bravo" not in client.get(url).content.decode()
    release.generation += 1  # what standings_refresh does
    release.save()
    assert "Bravo" not in client.get(url).content.decode()  # the pointer is still cached
    cache.delete(release_pointer_key(benchmark_slug="ale-robotics", version="v0.5"))  # its 2 seconds are up
    assert "Bravo" in client.get(url).content.decode()


def test_a_signed_in_visitor_never_gets_the_anonymous_cached_page(client, benchmark):
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha")
    url = reverse("release_board", args=["ale-robotics", "v0.5"])
    client.get(url)
    client.force_login(make_user("carol"))
    assert "Sign out" in client.get(url).content.decode()


@pytest.mark.parametrize("count", [2, 50])
@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_a_submission_page_issues_a_fixed_number_of_queries(client, benchmark, django_assert_num_queries, count, name):
    release = make_release(benchmark)
    owner = make_user()
    runs = [make_run(release, agent_name=f"Mine {i}", submitter=owner) for i in range(count)]
    client.force_login(owner)
    # session, user, the submission (with release, benchmark and run joined), the release's tasks
    # (which of the diff's values leaderboard.disclosure withholds)
    with django_assert_num_queries(4):
        response = client.get(reverse(name, args=[runs[-1].submission.pk]))
    assert response.status_code == 200

"""Issue 13's pages issue a fixed number of queries whatever the number of rows, with
declarations, costs and baselines present (2 and 50 runs, as tests/website/test_query_counts.py)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from leaderboard.services.declarations import baseline_mark
from tests.website.conftest import make_release, make_run, make_user
from tests.website.declarations_factories import declare, own, price

BOARD = reverse("release_board", args=["ale-robotics", "v0.5"])
PAGES = [
    # release pointer, release, count, rows, their cost and declarations, siblings, chart rows, baselines
    ("board-filtered", BOARD + "?org=acme&model=gpt&weights=open&level=validated&since=2020-01-01&q=a", 8),
    ("board-by-cost", BOARD + "?sort=cost&dir=desc", 8),
    # release, cost points, baselines (with their cost and declarations joined)
    ("cost-chart", reverse("cost_chart_data", args=["ale-robotics", "v0.5"]) + "?org=acme", 3),
    ("board-json-filtered", reverse("board_json", args=["ale-robotics", "v0.5"]) + "?weights=open", 3),
    # agent, its runs, their task results, their ranks, its versions with declarations and baselines,
    # its race versions (their benchmarks: one more, only for an agent that races), its ranked scorecards
    ("agent", reverse("agent_detail", args=["alpha"]), 7),
]


def fill(release, runs: int) -> None:
    owner = make_user()
    staff = make_user(is_staff=True)
    for i in range(runs):
        run = make_run(release, agent_name="Alpha" if i % 2 else f"Other {i}", version=str(i), submitter=owner)
        own(run, owner)
        declare(run, organisation="Acme Labs", weights="open", base_models=["gpt-x"])
        if i % 7 == 3:
            baseline_mark(actor=staff, agent_version=run.agent_version, kind="random")
    price(release, "gpt-x")


@pytest.mark.django_db
@pytest.mark.parametrize("runs", [2, 50])
@pytest.mark.parametrize(("name", "url", "queries"), PAGES, ids=[p[0] for p in PAGES])
def test_an_issue_13_page_issues_a_fixed_number_of_queries(
    client, benchmark, django_assert_num_queries, runs, name, url, queries
):
    fill(make_release(benchmark), runs)
    client.get(url)
    cache.clear()
    with django_assert_num_queries(queries):
        response = client.get(url)
    assert response.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("runs", [2, 50])
def test_the_declaration_form_issues_a_fixed_number_of_queries(client, benchmark, django_assert_num_queries, runs):
    release = make_release(benchmark)
    owner = make_user()
    for i in range(runs):
        run = make_run(release, agent_name="Alpha", version=str(i), submitter=owner)
    own(run, owner)
    declare(run)
    client.force_login(owner)
    url = reverse("agent_version_declare", args=["alpha", str(runs - 1)])
    # session, user, the version (with agent, declaration, baseline)
    with django_assert_num_queries(3):
        response = client.get(url)
    assert response.status_code == 200

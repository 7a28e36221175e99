"""Scheme benchmarks are reachable from the site's own navigation."""

from __future__ import annotations

import io

import pytest
from django.urls import reverse

from submissions.demo_loaders.race import load_race_demo
from submissions.demo_loaders.scorecard import load_scorecard_demo
from tests.staff import staff_grant


def test_a_scorecard_benchmark_address_leads_to_its_board(db, client):
    load_scorecard_demo(stdout=io.StringIO())
    response = client.get(reverse("scorecard_benchmark", args=["sokoban-hidden"]), follow=True)
    assert response.redirect_chain == [("/scorecards/sokoban-hidden/2026.1/", 302)]
    assert "Best scorecard per agent" in response.content.decode()


def test_a_race_benchmark_address_leads_to_the_overall_board(db, client):
    load_race_demo(stdout=io.StringIO())
    response = client.get(reverse("race_benchmark", args=["shopping-race"]), follow=True)
    assert response.redirect_chain == [("/races/shopping-race/overall/", 302)]
    body = response.content.decode()
    # Race 5 runs and race 4 is embargoed: visitors see the Overall after race 3, and race 5 as live.
    assert "ranked by their three-race Overall score after race 3" in body
    assert "Race 5 is live" in body


def test_the_home_page_lists_both_scheme_benchmarks(db, client):
    load_scorecard_demo(stdout=io.StringIO())
    load_race_demo(stdout=io.StringIO())
    body = client.get(reverse("home")).content.decode()
    assert "Sokoban hidden set" in body
    assert "Shopping race" in body


def test_an_unknown_scheme_benchmark_is_a_404(db, client):
    assert client.get(reverse("race_overall", args=["nope"])).status_code == 404
    assert client.get(reverse("scorecard_board", args=["nope", "1"])).status_code == 404


def test_the_home_pages_benchmark_links_lead_to_the_scheme_pages(db, client):
    load_scorecard_demo(stdout=io.StringIO())
    load_race_demo(stdout=io.StringIO())
    scorecards = client.get(reverse("benchmark_detail", args=["sokoban-hidden"]), follow=True)
    races = client.get(reverse("benchmark_detail", args=["shopping-race"]), follow=True)
    assert scorecards.redirect_chain[-1][0] == "/scorecards/sokoban-hidden/2026.1/"
    assert races.redirect_chain[-1][0] == "/races/shopping-race/overall/"


# Every address of a race benchmark, and the generic benchmark address that redirects to it.
DRAFT_RACE_PATHS = [
    "/benchmarks/zeta-race/",
    "/races/zeta-race/overall/",
    "/races/zeta-race/qualifying/",
    "/races/zeta-race/history/",
    "/races/zeta-race/overall.csv",
    "/races/zeta-race/overall.json",
    "/races/zeta-race/qualifying.csv",
    "/races/zeta-race/qualifying.json",
    "/races/zeta-race/history.json",
    "/races/zeta-race/race/1/",
    "/races/zeta-race/race/1/results.json",
    "/api/v1/race-boards/zeta-race/overall/",
    "/api/v1/race-boards/zeta-race/qualifying/",
    "/api/v1/race-boards/zeta-race/races/1/",
]


@pytest.fixture
def draft_only_race_benchmark(db):
    from leaderboard.models import Benchmark, Race, Release

    benchmark = Benchmark.objects.create(
        slug="zeta-race", name="Secret Project Zeta", description="Unannounced", scheme=Benchmark.Scheme.RACE
    )
    release = Release.objects.create(
        benchmark=benchmark, version="q1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=False
    )
    Race.objects.create(benchmark=benchmark, release=release, number=1, status=Race.Status.RELEASED)
    return benchmark


@pytest.mark.parametrize("path", DRAFT_RACE_PATHS)
def test_a_race_benchmark_with_only_draft_releases_is_a_404_everywhere_for_visitors_and_accounts(
    draft_only_race_benchmark, client, django_user_model, path
) -> None:
    anonymous = client.get(path)
    assert anonymous.status_code == 404, path
    assert b"Secret Project Zeta" not in anonymous.content
    client.force_login(django_user_model.objects.create_user("outsider"))
    assert client.get(path).status_code == 404, path
    # The same answer as a benchmark that does not exist at all.
    assert client.get(path.replace("zeta-race", "no-such-race")).status_code == 404


def test_staff_still_reach_a_draft_only_race_benchmark(draft_only_race_benchmark, client, django_user_model) -> None:
    staff = staff_grant(django_user_model.objects.create_user("staffer", is_staff=True))
    client.force_login(staff)
    assert client.get("/benchmarks/zeta-race/").status_code == 302
    response = client.get("/races/zeta-race/overall/")
    assert response.status_code == 200 and b"Secret Project Zeta" in response.content


def test_a_scorecard_benchmark_with_only_draft_releases_is_a_404_at_the_benchmark_address(db, client) -> None:
    from leaderboard.models import Benchmark, Release

    benchmark = Benchmark.objects.create(slug="zeta-cards", name="Zeta", scheme=Benchmark.Scheme.SCORECARD)
    Release.objects.create(
        benchmark=benchmark, version="1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=False
    )
    assert client.get("/benchmarks/zeta-cards/").status_code == 404
    assert client.get("/scorecards/zeta-cards/").status_code == 404

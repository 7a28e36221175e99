"""A race's own pages name the race in their <title>, their heading and their breadcrumb: every
race page was titled and headed by the benchmark alone, so tabs and history entries of races 3
and 4 read alike (visual review). The benchmark-wide pages keep the benchmark's name."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse

from submissions.demo_loaders.race import load_race_demo


@pytest.fixture
def shopping_race(db):
    load_race_demo(stdout=io.StringIO())
    return "shopping-race"


def title_of(body: str) -> str:
    return re.search(r"<title>(.*?)</title>", body, re.DOTALL).group(1).strip()


def heading_of(body: str) -> str:
    return re.search(r"<h1>(.*?)</h1>", body, re.DOTALL).group(1).strip()


def page(client, name: str, *args) -> str:
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return response.content.decode()


def test_a_race_page_is_titled_by_its_race(shopping_race, client):
    assert title_of(page(client, "race_detail", shopping_race, 3)) == "Race 3 (Week 3) — Shopping race · Podium"


def test_a_race_page_is_headed_by_its_race(shopping_race, client):
    assert heading_of(page(client, "race_detail", shopping_race, 3)) == 'Race 3 <span class="version">Week 3</span>'


def test_a_race_pages_breadcrumb_ends_at_the_race(shopping_race, client):
    body = page(client, "race_detail", shopping_race, 3)
    crumbs = re.search(r'<nav class="breadcrumbs"[^>]*>(.*?)</nav>', body, re.DOTALL).group(1)
    assert re.sub(r"<[^>]+>", "", crumbs) == "Benchmarks \u203a Shopping race \u203a Race 3"


def test_a_race_results_page_is_titled_by_its_race(shopping_race, client):
    body = page(client, "race_leaderboard", shopping_race, 3)
    assert title_of(body) == "Race 3 (Week 3) results — Shopping race · Podium"


def test_a_race_results_page_is_headed_by_its_race(shopping_race, client):
    body = page(client, "race_leaderboard", shopping_race, 3)
    assert heading_of(body) == 'Race 3 results <span class="version">Week 3</span>'


def test_a_validator_run_page_is_titled_by_the_race_it_ran_in(shopping_race, client):
    from leaderboard.models import RaceRun

    run = RaceRun.objects.filter(race__number=1).select_related("agent_version__agent").order_by("pk").first()
    version = run.agent_version
    title = title_of(page(client, "race_run_detail", run.public_id))
    assert title == f"{version.agent.name} {version.version}: validator run in race 1 — Shopping race · Podium"


def test_the_overall_page_is_still_headed_by_the_benchmark(shopping_race, client):
    assert heading_of(page(client, "race_overall", shopping_race)) == "Shopping race"

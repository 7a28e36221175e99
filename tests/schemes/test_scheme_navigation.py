"""Scheme benchmarks are reachable from the site's own navigation."""

from __future__ import annotations

import io

from django.urls import reverse

from submissions.demo_loaders.race import load_race_demo
from submissions.demo_loaders.scorecard import load_scorecard_demo


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

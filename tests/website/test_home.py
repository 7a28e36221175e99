"""The home page names each benchmark's leader in its own scheme's terms."""

import io
import re

import pytest
from django.urls import reverse

from submissions.demo_loaders.race import load_race_demo
from submissions.demo_loaders.scorecard import load_scorecard_demo


@pytest.fixture(autouse=True)
def _site_key_and_private_media(site_identity, media_root):
    return site_identity


@pytest.mark.django_db
def test_the_home_page_names_the_scorecard_leader_with_its_success_rate(client):
    load_scorecard_demo(stdout=io.StringIO())
    html = client.get(reverse("home")).content.decode()
    card = html[html.index("Sokoban hidden set") :]
    assert "no runs yet" not in card[: card.index("</li>")]
    assert "success " in card[: card.index("</li>")]


@pytest.mark.django_db
def test_the_home_page_names_the_race_top_agent_with_its_overall(client):
    load_race_demo(stdout=io.StringIO())
    html = client.get(reverse("home")).content.decode()
    card = html[html.index("Shopping race") :]
    card = card[: card.index("</li>")]
    assert "no runs yet" not in card
    assert re.search(r"Overall [+-]\d\.\d{3}", card)
    assert "/races/shopping-race/agents/" in card

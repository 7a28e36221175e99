"""The card and replay pages of played scorecards: what each visitor may see."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from submissions.services.cards import card_close, card_episode_play, card_episode_reset, card_open
from tests.schemes.conftest import PLAY_LEVELS


@pytest.fixture
def owner(make_user):
    return make_user("owner")


@pytest.fixture
def played(owner, play_release):
    """A closed card: the corridor solved (right x3), the room deadlocked, the rest unplayed."""
    card = card_open(user=owner, api_key=None, benchmark_slug="sokoban-play", agent_name="Pager", agent_version="1")
    card_episode_reset(card_id=card.pk, user=owner, level_id="corridor")
    card_episode_play(card_id=card.pk, user=owner, level_id="corridor", actions=["right"] * 3)
    card_episode_reset(card_id=card.pk, user=owner, level_id="room")
    card_episode_play(card_id=card.pk, user=owner, level_id="room", actions=["left", "down", "left", "up"])
    card_close(card_id=card.pk, user=owner)
    return card


def replay_data(response) -> dict:
    html_text = response.content.decode()
    # No inline script of any kind (the site's CSP rule): the data rides in an escaped attribute.
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html_text) == []
    match = re.search(r'data-replay-json="([^"]*)"', html_text)
    assert match is not None
    return json.loads(html.unescape(match.group(1)))


def test_an_open_card_has_no_page(owner, play_release, client):
    card = card_open(user=owner, api_key=None, benchmark_slug="sokoban-play", agent_name="Pager", agent_version="1")
    client.force_login(owner)
    assert client.get(reverse("scorecard_detail", args=[card.pk])).status_code == 404


def test_the_card_page_lists_the_played_episodes(played, client):
    page = client.get(reverse("scorecard_detail", args=[played.pk])).content.decode()
    assert "2 of 5 levels were played" in page
    assert reverse("scorecard_episode", args=[played.pk, "corridor"]) in page
    assert "<strong>deadlocked</strong>" in page
    assert "measured" in page
    # The board shows the success rate as a percentage: the card page says the same number so.
    assert '0.200 <span class="muted">(20%, as on the board)</span>' in page  # 1 of 5 solved


def test_a_visitor_sees_steps_but_no_actions_and_no_layout_of_a_hidden_level(played, client, make_user):
    for viewer in (None, make_user("stranger")):
        if viewer is not None:
            client.force_login(viewer)
        response = client.get(reverse("scorecard_episode", args=[played.pk, "corridor"]))
        data = replay_data(response)
        assert data["layout"] is None
        assert [(m["step"], m["action"], m["result"]) for m in data["moves"]] == [
            (0, None, "reset"),
            (1, None, None),
            (2, None, None),
            (3, None, None),
        ]
        assert data["moves"][-1]["solved"] is True
        page = response.content.decode()
        assert PLAY_LEVELS["corridor"].split("\n")[1] not in page
        assert "right" not in page


def test_the_player_and_staff_see_the_actions_but_no_board(played, client, owner, make_user):
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    for viewer in (owner, staff):
        client.force_login(viewer)
        data = replay_data(client.get(reverse("scorecard_episode", args=[played.pk, "room"])))
        assert data["layout"] is None
        assert [(m["action"], m["result"]) for m in data["moves"][1:]] == [
            ("left", "pushed"),
            ("down", "moved"),
            ("left", "moved"),
            ("up", "pushed"),
        ]
        assert data["moves"][-1]["deadlocked"] is True


def test_a_revealed_release_shows_the_layout_and_actions_to_anyone(played, play_release, client):
    play_release.reveal_hidden_levels = True
    play_release.save()
    data = replay_data(client.get(reverse("scorecard_episode", args=[played.pk, "corridor"])))
    assert data["layout"] == {
        "width": 7,
        "height": 3,
        "walls": [0, 1, 2, 3, 4, 5, 6, 7, 13, 14, 15, 16, 17, 18, 19, 20],
        "goals": [12],
        "player": 8,
        "crates": [10],
    }
    assert [m["action"] for m in data["moves"][1:]] == ["right", "right", "right"]


def test_a_level_the_card_did_not_play_has_no_replay(played, client):
    assert client.get(reverse("scorecard_episode", args=[played.pk, "room-b"])).status_code == 404
    assert client.get(reverse("scorecard_episode", args=[played.pk, "nope"])).status_code == 404


def test_staff_audit_cards_and_moves_in_the_admin_read_only(played, client, django_user_model):
    admin_user = django_user_model.objects.create_superuser(username="root", password="a-long-test-password-123")
    client.force_login(admin_user)
    listing = client.get(reverse("admin:submissions_card_changelist"))
    assert listing.status_code == 200
    # Levels started and moves sent per card (what scouting the hidden set looks like).
    (row,) = listing.context["cl"].result_list
    assert (row.started, row.sent) == (played.episodes.count(), sum(e.steps for e in played.episodes.all()))
    assert "Levels started" in listing.content.decode()
    page = client.get(reverse("admin:submissions_card_change", args=[played.pk])).content.decode()
    assert "corridor" in page and 'name="_save"' not in page
    assert client.get(reverse("admin:submissions_cardmove_changelist")).status_code == 200
    assert client.get(reverse("admin:submissions_card_delete", args=[played.pk])).status_code == 403


def test_an_out_of_range_card_id_is_a_404_not_a_500(client, db):
    assert client.get("/scorecards/cards/99999999999999999999999/").status_code == 404
    assert client.get("/scorecards/cards/99999999999999999999999/episodes/x/").status_code == 404

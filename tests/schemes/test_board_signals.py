"""Scorecard and race boards say where their numbers come from (validator runs are signed;
cards are closed by the server) and when they were last updated."""

from __future__ import annotations

import io

import pytest
from django.urls import reverse

from leaderboard.models import RaceRun
from submissions.demo_loaders.race import load_race_demo
from submissions.demo_loaders.scorecard import load_scorecard_demo

pytestmark = pytest.mark.django_db


def test_race_boards_name_the_validators_and_keys_that_signed_their_runs(client) -> None:
    load_race_demo(stdout=io.StringIO())
    html = client.get(reverse("race_overall", args=["shopping-race"])).content.decode()
    assert "data-board-signal" in html
    assert "Every result here comes from validator runs signed with a registered validator key" in html
    signed = RaceRun.objects.filter(signing_key__isnull=False).select_related("signing_key", "validator").first()
    assert signed is not None
    assert f"<code>{signed.signing_key.key_id}</code>" in html
    assert signed.validator.name in html
    assert "data-updated" in html


def test_a_race_with_unsigned_runs_says_how_many_are_signed(client) -> None:
    load_race_demo(stdout=io.StringIO())
    run = RaceRun.objects.filter(race__isnull=False).select_related("race").first()
    RaceRun.objects.filter(pk=run.pk).update(signing_key=None)
    total = RaceRun.objects.filter(race=run.race).count()
    html = client.get(reverse("race_detail", args=["shopping-race", run.race.number])).content.decode()
    assert f"{total - 1} of {total} validator runs are signed" in html
    assert "1 unsigned" in html


def test_the_scorecard_board_says_it_is_server_measured_and_when_it_was_updated(client) -> None:
    load_scorecard_demo(stdout=io.StringIO())
    html = client.get(reverse("scorecard_benchmark", args=["sokoban-hidden"]), follow=True).content.decode()
    assert "server-measured" in html
    assert "no number on this board is self-reported" in html
    assert "data-updated" in html


def test_the_qualifying_board_names_its_signers_too(client) -> None:
    load_race_demo(stdout=io.StringIO())
    html = client.get(reverse("race_qualifying", args=["shopping-race"])).content.decode()
    signed = RaceRun.objects.filter(race__isnull=True, signing_key__isnull=False).select_related("signing_key").first()
    assert signed is not None
    assert "data-board-signal" in html and f"<code>{signed.signing_key.key_id}</code>" in html

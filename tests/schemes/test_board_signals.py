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


def test_a_validator_key_revoked_since_is_marked_on_the_board_and_on_the_run_pages_it_signed(client) -> None:
    """A race run's validator signature is its whole provenance. The board said its runs were
    "signed with a registered validator key" whatever became of the key, and a run's own page
    named neither the key nor the run's level (a podium-bundle/1 run is only validated)."""
    from leaderboard.models import Race
    from submissions.services.signing_keys import signing_key_revoke

    load_race_demo(stdout=io.StringIO())
    run = (
        RaceRun.objects.filter(race__status=Race.Status.RELEASED, signing_key__isnull=False)
        .select_related("race", "signing_key", "submission")
        .first()
    )
    assert run is not None and run.submission.verdict == "attested"
    page = client.get(reverse("race_run_detail", args=[run.public_id])).content.decode()
    assert f"<code>{run.signing_key.key_id}</code>" in page and "key since revoked" not in page
    assert 'class="badge badge--attested"' in page

    key = signing_key_revoke(signing_key=run.signing_key, user=None)
    stamp = f'datetime="{key.revoked_at.isoformat()}"'
    board = client.get(reverse("race_detail", args=["shopping-race", run.race.number])).content.decode()
    assert f"<code>{key.key_id}</code> <span" in board and f"key since revoked <time {stamp}" in board
    page = client.get(reverse("race_run_detail", args=[run.public_id])).content.decode()
    assert f"<code>{key.key_id}</code>" in page and stamp in page
    assert 'class="badge badge--attested"' in page  # it attested the run before: the run keeps its level

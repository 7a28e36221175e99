"""A closed scorecard card's page and the replay of one of its episodes."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard.selectors import scorecard as scheme_selectors
from submissions.selectors import cards


@require_safe
def scorecard_detail(request: HttpRequest, pk: int) -> HttpResponse:
    card = cards.scorecard_get(pk=pk, user=request.user)
    return render(
        request,
        "scorecards/detail.html",
        {
            "card": card,
            "release": card.release,
            "benchmark": card.release.benchmark,
            "reading": scheme_selectors.scorecard_reading(card=card),
            "episodes": cards.scorecard_episodes(card=card),
        },
    )


@require_safe
def scorecard_episode(request: HttpRequest, pk: int, level: str) -> HttpResponse:
    """Replay of one episode of a closed card, drawn by static/js/replay.js from the recorded moves."""
    card = cards.scorecard_get(pk=pk, user=request.user)
    replay = cards.scorecard_replay(card=card, level_id=level, user=request.user)
    return render(
        request,
        "scorecards/episode.html",
        {
            "card": card,
            "release": card.release,
            "benchmark": card.release.benchmark,
            "replay": replay,
            "episode": replay["episode"],
            # Read by static/js/replay.js from a data attribute (autoescaped): no inline script at all.
            "replay_json": json.dumps({"layout": replay["layout"], "moves": replay["moves"]}),
        },
    )

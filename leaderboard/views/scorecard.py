"""Pages of scorecard benchmarks (seed 001).

Views only parse the URL and delegate to leaderboard.selectors.scorecard.
"""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from leaderboard.selectors import scorecard as scorecard_selectors
from leaderboard.selectors.board_signals import scorecard_updated_at


@require_GET
def scorecard_benchmark(request: HttpRequest, benchmark: str) -> HttpResponse:
    release = scorecard_selectors.scorecard_release_current(benchmark_slug=benchmark)
    return redirect("scorecard_board", benchmark=benchmark, version=release.version)


@require_GET
def scorecard_board(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    release = scorecard_selectors.scorecard_release_get(benchmark_slug=benchmark, version=version)
    rows = scorecard_selectors.scorecard_board(release=release)
    return render(
        request,
        "scorecards/board.html",
        {"release": release, "benchmark": release.benchmark, "rows": rows, "updated_at": scorecard_updated_at(rows)},
    )


@require_GET
def scorecard_detail(request: HttpRequest, pk: int) -> HttpResponse:
    card = scorecard_selectors.scorecard_get(pk=pk, user=request.user)
    return render(
        request,
        "scorecards/detail.html",
        {
            "card": card,
            "release": card.release,
            "benchmark": card.release.benchmark,
            "reading": scorecard_selectors.scorecard_reading(card=card),
            "episodes": scorecard_selectors.scorecard_episodes(card=card),
        },
    )


@require_GET
def scorecard_episode(request: HttpRequest, pk: int, level: str) -> HttpResponse:
    """Replay of one episode of a closed card, drawn by static/js/replay.js from the recorded moves."""
    card = scorecard_selectors.scorecard_get(pk=pk, user=request.user)
    replay = scorecard_selectors.scorecard_replay(card=card, level_id=level, user=request.user)
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

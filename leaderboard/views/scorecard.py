"""Pages of scorecard benchmarks (seed 001).

Views only parse the URL and delegate to leaderboard.selectors.scorecard.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from leaderboard.selectors import scorecard as scorecard_selectors
from leaderboard.selectors.board_signals import scorecard_updated_at


@require_safe
def scorecard_benchmark(request: HttpRequest, benchmark: str) -> HttpResponse:
    release = scorecard_selectors.scorecard_release_current(benchmark_slug=benchmark)
    return redirect("scorecard_board", benchmark=benchmark, version=release.version)


@require_safe
def scorecard_board(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    release = scorecard_selectors.scorecard_release_get(benchmark_slug=benchmark, version=version)
    rows = scorecard_selectors.scorecard_board(release=release)
    return render(
        request,
        "scorecards/board.html",
        {"release": release, "benchmark": release.benchmark, "rows": rows, "updated_at": scorecard_updated_at(rows)},
    )

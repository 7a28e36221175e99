"""CSV/JSON exports of scorecard (seed 001) and race (seed 002) boards.

The rows are the pages' rows (leaderboard.selectors.scheme_boards), behind the same
visibility: a published release's scorecard board; a race's results only once released
(staff excepted); the Overall as of the latest race whose results are public.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_safe

from leaderboard import run_exports
from leaderboard.api_query import MAX_ID
from leaderboard.selectors import race as race_selectors
from leaderboard.selectors import scheme_boards as boards
from leaderboard.selectors import scorecard as scorecard_selectors

SCORECARD_NOTES = {
    "success_rate": "solved / the full hidden set (unplayed episodes count as unsolved): the ranking metric",
    "move_efficiency": "mean optimal / steps over solved episodes only: a tiebreak",
    "deadlock_rate_lower_bound": "share of episodes that ended in a detected deadlock; a cheap corner test "
    "undercounts, so it is a lower bound",
}
RACE_NOTES = {
    "embargo": "a race's raw scores, ranks, baseline and vs Field are published once the race is released",
    "overall": "mean vs Field over the three most recent races as of the anchor race (seed 002)",
}


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _csv(records: list[dict[str, Any]], columns: tuple[str, ...], filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(run_exports.csv_text(records, columns), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_safe(filename)}.csv"'
    return response


def _json(payload: dict[str, Any], filename: str) -> JsonResponse:
    response = JsonResponse(payload, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'inline; filename="{_safe(filename)}.json"'
    return response


def _embargoed(error: boards.RaceEmbargoed) -> HttpResponse:
    """The CSV download's refusal too: a download's errors are the API's JSON (docs/api.md)."""
    return JsonResponse({"error": {"code": "race_embargoed", "message": str(error)}}, status=403)


# --- scorecards ------------------------------------------------------------------------------


def _scorecard(benchmark: str, version: str) -> tuple[Any, list[dict[str, Any]]]:
    release = scorecard_selectors.scorecard_release_get(benchmark_slug=benchmark, version=version)
    return release, boards.scorecard_board_records(release=release)


@require_safe
def scorecard_board_csv(request: HttpRequest, benchmark: str, version: str) -> HttpResponseBase:
    _, rows = _scorecard(benchmark, version)
    return _csv(rows, boards.SCORECARD_COLUMNS, f"{benchmark}-{version}-scorecards")


@require_safe
def scorecard_board_json(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    release, rows = _scorecard(benchmark, version)
    payload = {
        "benchmark": release.benchmark.slug,
        "release": release.version,
        "episode_set_size": release.episode_set_size,
        "notes": SCORECARD_NOTES,
        "rows": rows,
    }
    return _json(payload, f"{benchmark}-{version}-scorecards")


# --- races -----------------------------------------------------------------------------------


@require_safe
def race_overall_csv(request: HttpRequest, benchmark: str) -> HttpResponseBase:
    race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
    _, rows = boards.race_overall_records(benchmark=race_benchmark, user=request.user)
    return _csv(rows, boards.OVERALL_COLUMNS, f"{benchmark}-overall")


@require_safe
def race_overall_json(request: HttpRequest, benchmark: str) -> HttpResponse:
    race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
    anchor, rows = boards.race_overall_records(benchmark=race_benchmark, user=request.user)
    payload = {
        "benchmark": race_benchmark.slug,
        "anchor_race": boards.race_record(anchor) if anchor is not None else None,
        "notes": RACE_NOTES,
        "rows": rows,
    }
    return _json(payload, f"{benchmark}-overall")


def _race(request: HttpRequest, benchmark: str, number: int) -> tuple[Any, list[dict[str, Any]]]:
    if number > MAX_ID:  # beyond a bigint the database would raise instead of finding nothing
        raise Http404("No such race")
    race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
    race = race_selectors.race_get(benchmark=race_benchmark, number=number)
    return race, boards.race_result_records(race=race, user=request.user)


@require_safe
def race_results_csv(request: HttpRequest, benchmark: str, number: int) -> HttpResponseBase:
    try:
        _, rows = _race(request, benchmark, number)
    except boards.RaceEmbargoed as error:
        return _embargoed(error)
    return _csv(rows, boards.RACE_RESULT_COLUMNS, f"{benchmark}-race-{number}")


@require_safe
def race_results_json(request: HttpRequest, benchmark: str, number: int) -> HttpResponse:
    try:
        race, rows = _race(request, benchmark, number)
    except boards.RaceEmbargoed as error:
        return _embargoed(error)
    payload = {"benchmark": benchmark, "race": boards.race_record(race), "notes": RACE_NOTES, "rows": rows}
    return _json(payload, f"{benchmark}-race-{number}")


def _qualifying(request: HttpRequest, benchmark: str) -> tuple[Any, Any, list[dict[str, Any]]]:
    race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
    release = race_selectors.qualifying_release(benchmark=race_benchmark)
    return race_benchmark, release, boards.qualifying_records(release=release) if release is not None else []


@require_safe
def race_qualifying_csv(request: HttpRequest, benchmark: str) -> HttpResponseBase:
    _, _, rows = _qualifying(request, benchmark)
    return _csv(rows, boards.QUALIFYING_COLUMNS, f"{benchmark}-qualifying")


@require_safe
def race_qualifying_json(request: HttpRequest, benchmark: str) -> HttpResponse:
    race_benchmark, release, rows = _qualifying(request, benchmark)
    payload = {
        "benchmark": race_benchmark.slug,
        "release": release.version if release is not None else None,
        "notes": {"score": "mean of the included successful validator runs on the public frozen task set"},
        "rows": rows,
    }
    return _json(payload, f"{benchmark}-qualifying")

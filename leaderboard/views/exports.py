"""Machine-readable views: leaderboard CSV/JSON exports, chart data and SVG badges."""

from __future__ import annotations

import hashlib
import json

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_safe

from leaderboard import exports
from leaderboard.api_query import whole_number
from leaderboard.badges import badge_svg
from leaderboard.models import Release
from leaderboard.selectors import paper_gap as selectors
from leaderboard.selectors.declarations import FilterError, board_baselines, board_filters_from_params
from leaderboard.selectors.paper_gap import TABS, BoardQueryError
from leaderboard.selectors.visibility import viewer_is_staff

CHART_CACHE_SECONDS = 3600


def _json_error(message: str, *, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": {"code": "invalid_query", "message": message}}, status=status)


def _filename(release: Release, tab: str, extension: str) -> str:
    benchmark = release.benchmark.slug
    version = release.version
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{benchmark}-{version}-{tab}")
    return f"{safe}.{extension}"


@require_safe
def board_csv(request: HttpRequest, benchmark: str, version: str) -> HttpResponseBase:
    """The whole leaderboard view (every page) as CSV, streamed."""
    try:
        query = selectors.board_query_from_params(request.GET)
    except BoardQueryError as error:
        return _json_error(str(error))  # a download's errors are the API's JSON (docs/api.md)
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=viewer_is_staff(request.user))
    rows = selectors.board_rows_all(release=release, query=query).iterator(chunk_size=2000)
    response = StreamingHttpResponse(exports.csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(release, query.tab, "csv")}"'
    return response


@require_safe
def board_json(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    """The whole leaderboard view (every page) as JSON."""
    try:
        query = selectors.board_query_from_params(request.GET)
    except BoardQueryError as error:
        return _json_error(str(error))
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=viewer_is_staff(request.user))
    rows = [exports.standing_record(row) for row in selectors.board_rows_all(release=release, query=query)]
    payload = {
        "benchmark": release.benchmark.slug,
        "release": release.version,
        "tab": query.tab,
        "sort": query.sort,
        "direction": "desc" if query.descending else "asc",
        "complete_only": query.complete_only,
        "filters": query.filters.params(),
        "notes": {
            "score": "dimensionless ratio to the paper target (1.0 = matched the paper, capped at the task's cap)",
            "pass_rate": "fraction of episodes completed without abort",
            "runtime_seconds_submitter_reported": "from the bundle's manifest, not signed, not checked",
            "tokens_submitter_reported": "from the bundle's manifest, not signed, not checked",
            "effort_tier_submitter_declared": "declared by the submitter, not checked",
            "cost_usd": "US dollars per run; cost_basis recorded = the submitter-reported tokens x the release's "
            "price table, declared = the agent owner's figure, not checked",
            "owner_declared": "organisation and weights are declared by the agent's owner, not checked",
            "covered": "tasks the run covers over the release's required tasks (required), whatever the tab: "
            "completeness, which decides a rank, is judged over the whole run; the board page's Coverage column "
            "on a genre tab counts that tab's tasks instead, as chart.json does",
            "verification": "validated = recomputed scores match the claimed ones (a consistency check, "
            "not proof that the runner was unmodified); attested = evaluator signatures verified; "
            "verified = official re-run",
        },
        "rows": rows,
        # Reference baselines, never ranked (leaderboard.selectors.declarations.board_baselines).
        "baselines": [
            exports.baseline_record(run, tab=query.tab)
            for run in board_baselines(release=release, tab=query.tab, filters=query.filters)
        ],
    }
    response = JsonResponse(payload, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'inline; filename="{_filename(release, query.tab, "json")}"'
    return response


@require_safe
def chart_data(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    """Top-N rows of a tab for the chart, cached per release generation (standings rewrite bumps it)."""
    tab = request.GET.get("tab") or "overall"
    if tab not in TABS:
        return _json_error(f"tab={tab!r} is not a leaderboard tab: expected one of {', '.join(TABS)}")
    raw_n = request.GET.get("n") or str(selectors.CHART_DEFAULT_N)
    n = whole_number(raw_n, minimum=1, maximum=selectors.CHART_MAX_N)
    if n is None:
        return _json_error(f"n={raw_n[:24]!r}: expected a whole number from 1 to {selectors.CHART_MAX_N}")
    try:
        filters = board_filters_from_params(request.GET)  # the board's search filters
    except FilterError as error:
        return _json_error(str(error))
    by = request.GET.get("by") or "score"
    if by not in ("score", "pass_rate"):
        return _json_error(f"by={by[:24]!r}: expected 'score' (top N by rank) or 'pass_rate' (top N by pass rate)")
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=viewer_is_staff(request.user))
    filtered = "&".join(f"{k}={v}" for k, v in sorted(filters.params().items()))
    digest = hashlib.sha256(filtered.encode()).hexdigest()[:24] if filtered else "all"
    key = f"podium:chart:{release.pk}:{release.generation}:{tab}:{n}:{by}:{digest}"
    body = cache.get(key)
    if body is None:
        rows = selectors.chart_top(release=release, tab=tab, n=n, by=by, filters=filters)
        coverage = selectors.tab_coverage(release=release, tab=tab, run_ids=[row.run_id for row in rows])
        body = json.dumps(
            {
                "tab": tab,
                "tab_label": TABS[tab],
                "n": n,
                "by": by,
                "generation": release.generation,
                "rows": [
                    {
                        "rank": row.rank,
                        "label": f"{row.agent_name} {row.version}",
                        "score": row.score,
                        "ci_low": row.ci_low,
                        "ci_high": row.ci_high,
                        "pass_rate": row.pass_rate,
                        # Coverage over the tab's tasks; "complete" is the run's (it decides the rank).
                        "covered": coverage.get(row.run_id, (row.covered, row.required))[0],
                        "required": coverage.get(row.run_id, (row.covered, row.required))[1],
                        "complete": row.complete,
                        "run_id": row.run_id,
                    }
                    for row in rows
                ],
            },
            ensure_ascii=False,
        )
        cache.set(key, body, CHART_CACHE_SECONDS)
    return HttpResponse(body, content_type="application/json")


@require_safe
def agent_badge(request: HttpRequest, benchmark: str, version: str, agent: str) -> HttpResponse:
    """An SVG badge with the agent's best Overall rank and score on a release."""
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=False)
    standing = selectors.agent_best_standing(release=release, agent_slug=agent)
    label = f"{release.benchmark.slug} {release.version}"
    if standing is None:
        svg = badge_svg(label=label, value="not ranked", ok=False)
    else:
        score = "—" if standing.score is None else f"{standing.score:.2f}"
        svg = badge_svg(label=label, value=f"#{standing.rank} · {score}")
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    return response

"""Per-task rankings, run downloads, run comparison and history charts.

Views parse the request and delegate: visibility is the run page's (run_get) and what of a
run is shown is leaderboard.disclosure's, so every download says exactly what the page says
to the same viewer.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard import run_exports
from leaderboard.api_query import whole_number
from leaderboard.disclosure import WITHHELD_SCORE_REASON, run_disclosure
from leaderboard.selectors import history as history_selectors
from leaderboard.selectors import paper_gap as selectors
from leaderboard.selectors import race as race_selectors
from leaderboard.selectors.task_ranking import task_ranking
from leaderboard.selectors.visibility import viewer_is_staff
from leaderboard.views.paper_gap import bad_request

TASK_RANKING_COLUMNS: tuple[str, ...] = (
    "rank",
    "agent",
    "agent_slug",
    "version",
    "run_id",
    "verification",
    "measured",
    "gap",
    "penalty_factor",
    "final",
    "faithful",
    "pass_rate",
    "pass_rate_ci_low",
    "pass_rate_ci_high",
    "episodes",
    "signature",
    "verified_at",
    "withheld",
)


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _json(payload: dict[str, Any], filename: str) -> JsonResponse:
    response = JsonResponse(payload, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'inline; filename="{_safe(filename)}.json"'
    return response


def _csv(records: list[dict[str, Any]], columns: tuple[str, ...], filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(run_exports.csv_text(records, columns), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_safe(filename)}.csv"'
    return response


def _json_error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


# --- the per-task ranking --------------------------------------------------------------------


def _task_rows(request: HttpRequest, benchmark: str, version: str, task: str) -> tuple[Any, Any, list[Any]]:
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=viewer_is_staff(request.user))
    release_task = selectors.release_task_get(release=release, task_slug=task)
    return release, release_task, task_ranking(release_task=release_task, user=request.user)


@require_safe
def task_results_csv(request: HttpRequest, benchmark: str, version: str, task: str) -> HttpResponseBase:
    _, _, rows = _task_rows(request, benchmark, version, task)
    return _csv([row.record() for row in rows], TASK_RANKING_COLUMNS, f"{benchmark}-{version}-{task}")


@require_safe
def task_results_json(request: HttpRequest, benchmark: str, version: str, task: str) -> HttpResponse:
    release, release_task, rows = _task_rows(request, benchmark, version, task)
    payload = {
        "benchmark": release.benchmark.slug,
        "release": release.version,
        "task": release_task.task.slug,
        "genre": release_task.genre,
        "metric": release_task.metric_name,  # the release's snapshot, as the page shows it
        "metric_direction": release_task.metric_direction,
        "anchor": release_task.public_paper_value if release.published else None,
        "notes": {
            "rows": "each public agent version's best run on this task, ranked by final score",
            "final": "gap x penalty factors x faithfulness; a dimensionless ratio to the paper",
            "pass_rate_ci": "95% Wilson interval of the pass rate over the task's episodes",
            "withheld": WITHHELD_SCORE_REASON,
        },
        "rows": [row.record() for row in rows],
    }
    return _json(payload, f"{benchmark}-{version}-{task}")


# --- a run's per-task results ----------------------------------------------------------------


def _run_records(request: HttpRequest, run_id: int) -> tuple[Any, Any, list[dict[str, Any]]]:
    run = selectors.run_get(run_id=run_id, user=request.user)
    results = list(run.task_results.all())
    disclosure = run_disclosure(run, user=request.user, task_results=results)
    staff = viewer_is_staff(request.user)
    return (
        run,
        disclosure,
        [
            run_exports.task_record(r, disclosure=disclosure, staff=staff, release_published=run.release.published)
            for r in results
        ],
    )


@require_safe
def run_results_csv(request: HttpRequest, run_id: int) -> HttpResponseBase:
    run, _, records = _run_records(request, run_id)
    return _csv(records, run_exports.TASK_COLUMNS, f"run-{run.pk}-tasks")


@require_safe
def run_results_json(request: HttpRequest, run_id: int) -> HttpResponse:
    run, disclosure, records = _run_records(request, run_id)
    confidence = disclosure.confidence(run.confidence)
    payload = {
        "run": run.pk,
        "benchmark": run.release.benchmark.slug,
        "release": run.release.version,
        "agent": run.agent_version.agent.slug,
        "agent_name": run.agent_version.agent.name,
        "version": run.agent_version.version,
        "verification": run.level,
        "aggregates": {
            key: {
                "score": disclosure.aggregate(key, getattr(run, key)),
                "interval": confidence.get(key),
                "withheld": key in disclosure.aggregates_hidden,
            }
            for key in ("overall", "reproduction", "open")
        },
        "pass_rate": run.pass_rate,
        "covered": run.covered,
        "required": run.required,
        "complete": run.complete,
        "tasks": records,
    }
    return _json(payload, f"run-{run.pk}-tasks")


# --- comparing two runs ----------------------------------------------------------------------


# --- history ---------------------------------------------------------------------------------


def _history_n(request: HttpRequest) -> int | None:
    raw = request.GET.get("n") or str(history_selectors.HISTORY_DEFAULT_N)
    return whole_number(raw, minimum=1, maximum=history_selectors.HISTORY_MAX_N)


def _bad_n(request: HttpRequest) -> str:
    raw = request.GET.get("n") or ""
    return f"n={raw[:24]!r}: expected a whole number from 1 to {history_selectors.HISTORY_MAX_N}"


@require_safe
def release_history_page(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    n = _history_n(request)
    if n is None:
        return bad_request(request, _bad_n(request))
    staff = viewer_is_staff(request.user)
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=staff)
    history = history_selectors.release_history(release=release, n=n)
    return render(
        request,
        "leaderboard/history.html",
        {
            "release": release,
            "benchmark": release.benchmark,
            "releases": selectors.release_siblings(release=release, staff=staff),
            "history": history,
            "n": n,
            "n_choices": (3, 5, 10, 20),
        },
    )


@require_safe
def release_history_json(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    n = _history_n(request)
    if n is None:
        return _json_error("invalid_query", _bad_n(request), 400)
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=viewer_is_staff(request.user))
    history = history_selectors.release_history(release=release, n=n)
    payload = {"benchmark": release.benchmark.slug, "release": release.version, "n": n, **history.record()}
    return _json(payload, f"{benchmark}-{version}-history")


@require_safe
def race_history_page(request: HttpRequest, benchmark: str) -> HttpResponse:
    n = _history_n(request)
    if n is None:
        return bad_request(request, _bad_n(request))
    race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
    history = history_selectors.race_overall_history(benchmark=race_benchmark, n=n)
    return render(
        request,
        "races/history.html",
        {
            "benchmark": race_benchmark,
            "races": race_selectors.races_of(benchmark=race_benchmark),
            "history": history,
            "n": n,
            "n_choices": (3, 5, 10, 20),
        },
    )


@require_safe
def race_history_json(request: HttpRequest, benchmark: str) -> HttpResponse:
    n = _history_n(request)
    if n is None:
        return _json_error("invalid_query", _bad_n(request), 400)
    race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
    history = history_selectors.race_overall_history(benchmark=race_benchmark, n=n)
    return _json({"benchmark": race_benchmark.slug, "n": n, **history.record()}, f"{benchmark}-overall-history")

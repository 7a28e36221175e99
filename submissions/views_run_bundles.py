"""A run's per-episode results and its artifacts, read from its stored bundle
(submissions.selectors.run_bundle states who may see what)."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard.disclosure import WITHHELD_SCORE_REASON, run_disclosure
from leaderboard.run_exports import EPISODE_COLUMNS
from leaderboard.selectors import paper_gap as selectors
from leaderboard.views.insights import _csv, _json, _json_error
from leaderboard.views.paper_gap import bad_request
from submissions.selectors import run_bundle
from submissions.selectors.run_compare import CompareQueryError, compare_ids_from_params, run_compare


def _unavailable(message: str, *, as_json: bool) -> HttpResponse:
    if as_json:
        return JsonResponse({"error": {"code": "bundle_unavailable", "message": message}}, status=503)
    return HttpResponse(f"{message}\n", status=503, content_type="text/plain; charset=utf-8")


def _run(request: HttpRequest, run_id: int) -> tuple[Any, Any]:
    run = selectors.run_get(run_id=run_id, user=request.user)
    return run, run_disclosure(run, user=request.user, task_results=list(run.task_results.all()))


def _episodes(request: HttpRequest, run_id: int) -> tuple[Any, list[dict[str, Any]]]:
    run, disclosure = _run(request, run_id)
    summary = run_bundle.bundle_summary(run=run)
    return run, run_bundle.episode_records(run=run, summary=summary, disclosure=disclosure, user=request.user)


@require_safe
def run_episodes_csv(request: HttpRequest, run_id: int) -> HttpResponseBase:
    try:
        run, records = _episodes(request, run_id)
    except run_bundle.BundleUnavailable as error:
        return _unavailable(str(error), as_json=False)
    return _csv(records, EPISODE_COLUMNS, f"run-{run.pk}-episodes")


@require_safe
def run_episodes_json(request: HttpRequest, run_id: int) -> HttpResponse:
    try:
        run, records = _episodes(request, run_id)
    except run_bundle.BundleUnavailable as error:
        return _unavailable(str(error), as_json=True)
    payload = {
        "run": run.pk,
        "notes": {
            "metric": "the evaluator's headline metric in the episode; withheld where the task's measured value is",
            "seed": "null: a bundle carries no hidden seed; an older evaluator's bundle may name one, "
            "shown to the run's submitter and staff only",
            "aborted": "true when the episode was reset mid-way or the session torn down (a fail for the pass rate)",
        },
        "episodes": records,
    }
    return _json(payload, f"run-{run.pk}-episodes")


@require_safe
def run_artifacts(request: HttpRequest, run_id: int) -> HttpResponse:
    """The artifacts listed in the run's bundle, with download links for those allowed."""
    run, disclosure = _run(request, run_id)
    try:
        summary = run_bundle.bundle_summary(run=run)
        error = ""
    except run_bundle.BundleUnavailable as exc:
        summary, error = None, str(exc)
    allowed = run_bundle.artifacts_allowed(run=run, disclosure=disclosure, user=request.user)
    response = render(
        request,
        "leaderboard/run_artifacts.html",
        {
            "run": run,
            "release": run.release,
            "benchmark": run.release.benchmark,
            "artifacts": summary.artifacts if summary else [],
            "allowed": allowed,
            "error": error,
            "withheld_reason": run_bundle.ARTIFACTS_WITHHELD_REASON,
        },
    )
    if error:
        response.status_code = 503
    return response


@require_safe
def run_artifact_download(request: HttpRequest, run_id: int, name: str) -> HttpResponseBase:
    run, disclosure = _run(request, run_id)
    if not run_bundle.artifacts_allowed(run=run, disclosure=disclosure, user=request.user):
        return JsonResponse(
            {"error": {"code": "artifacts_withheld", "message": run_bundle.ARTIFACTS_WITHHELD_REASON}}, status=403
        )
    try:
        summary = run_bundle.bundle_summary(run=run)
    except run_bundle.BundleUnavailable as error:
        return _unavailable(str(error), as_json=True)
    artifact = next((a for a in summary.artifacts if a.name == name), None)
    if artifact is None:
        raise Http404("No such artifact in this run's bundle")
    try:
        with run_bundle.artifact_file(run=run, artifact=artifact) as path:
            # Opened before the temporary directory is removed: the open handle keeps the data.
            handle = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    except run_bundle.BundleUnavailable as error:
        return _unavailable(str(error), as_json=True)
    filename = artifact.name.rsplit("/", 1)[-1]
    # Opaque bytes the submitter wrote: always a download, never rendered by the browser.
    response = FileResponse(handle, as_attachment=True, filename=filename, content_type="application/octet-stream")
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@require_safe
def run_compare_page(request: HttpRequest) -> HttpResponse:
    """Two runs side by side: ``?a=<run id>&b=<run id>`` (a shareable URL)."""
    if not request.GET.get("a") and not request.GET.get("b"):
        return render(request, "leaderboard/compare.html", {"comparison": None})
    try:
        a_id, b_id = compare_ids_from_params(request.GET)
        comparison = run_compare(a_id=a_id, b_id=b_id, user=request.user)
    except CompareQueryError as error:
        return bad_request(request, str(error))
    return render(
        request,
        "leaderboard/compare.html",
        {
            "comparison": comparison,
            "a": comparison.a,
            "b": comparison.b,
            "withheld_reason": WITHHELD_SCORE_REASON,
            "swap_query": f"a={comparison.b.pk}&b={comparison.a.pk}",
        },
    )


@require_safe
def run_compare_json(request: HttpRequest) -> HttpResponse:
    try:
        a_id, b_id = compare_ids_from_params(request.GET)
        comparison = run_compare(a_id=a_id, b_id=b_id, user=request.user)
    except CompareQueryError as error:
        return _json_error("invalid_query", str(error), 400)

    def ref(run: Any) -> dict[str, Any]:
        return {
            "id": run.pk,
            "release": run.release.version,
            "agent": run.agent_version.agent.slug,
            "version": run.agent_version.version,
            "verification": run.level,
        }

    payload = {
        "benchmark": comparison.a.release.benchmark.slug,
        "a": ref(comparison.a),
        "b": ref(comparison.b),
        "same_release": comparison.same_release,
        "notes": {
            "difference": "b - a; null when either value is withheld or absent",
            "intervals_overlap": "95% bootstrap intervals: aggregates over tasks and episodes, a task's final "
            "over its episodes (null while a bundle cannot be read)",
            "pass_rate_intervals_overlap": "95% Wilson intervals of the pass rates over the episodes",
        },
        "aggregates": [row.record() for row in comparison.aggregates],
        "tasks": [row.record() for row in comparison.tasks],
    }
    return _json(payload, f"compare-{comparison.a.pk}-{comparison.b.pk}")

"""The run page of a paper-gap run: its recomputed per-task scores, the comparison with its
claims, its official re-runs, each under the one disclosure rule (leaderboard.disclosure); a
run staff hid answers 410 with the public reason."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard.api.serializers import rerun_comparison
from leaderboard.disclosure import WITHHELD_SCORE_REASON, Disclosure, run_disclosure, shown_anchor
from leaderboard.models import Run
from leaderboard.selectors import paper_gap as selectors
from leaderboard.selectors.paper_gap import TABS
from leaderboard.selectors.visibility import release_is_visible, runs_hidden_publicly_q, viewer_is_staff


def comparison_rows(breakdown: Any, diff: list[dict[str, Any]], *, disclosure: Disclosure) -> list[dict[str, Any]]:
    """Every compared field of a run: the recomputed breakdown's leaves, each marked match or diff.

    The verifier records only the fields that differ (with both values); every other
    leaf matched its claimed value within the comparison tolerance, so its claimed
    value is shown as matching rather than repeated. Fields the viewer may not see
    (leaderboard.disclosure) are named with their values withheld.
    """
    differing = {str(item.get("path")): item for item in diff if isinstance(item, dict)}
    rows: list[dict[str, Any]] = []

    def walk(path: str, value: Any) -> None:
        if isinstance(value, dict):
            for key in value:
                walk(f"{path}.{key}" if path else str(key), value[key])
        elif path in differing:
            rows.append(differing.pop(path))
        else:
            rows.append({"path": path, "claimed": None, "recomputed": value, "status": "match"})

    walk("", breakdown or {})
    rows.extend(differing.values())  # missing/unexpected fields outside the breakdown
    return disclosure.redact_diff(rows)


@require_safe
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    try:
        run = selectors.run_get(run_id=run_id, user=request.user)
    except Http404:
        # A run staff hid says so publicly (410 with the reason); any other refusal stays a 404.
        hidden = run_hidden_response(request, run_id)
        if hidden is not None:
            return hidden
        raise
    task_results = list(run.task_results.all())
    # One rule (leaderboard.disclosure, shared with the API): a withheld anchor's measured value
    # only for the submitter and staff; the scores of a result whose measured value the submitter
    # chose (unsigned) and of every aggregate including it, for staff only; a draft's anchors, staff.
    disclosure = run_disclosure(run, user=request.user, task_results=task_results)
    shown = {"release_published": run.release.published, "staff": viewer_is_staff(request.user)}
    for result in task_results:
        slug = result.release_task.task.slug
        # Display-only attributes the template reads beside the row's own fields.
        result.anchor = shown_anchor(result.release_task, **shown)  # type: ignore[attr-defined]
        result.measured_withheld = slug in disclosure.measured_hidden  # type: ignore[attr-defined]
        result.scores_withheld = disclosure.task_scores_hidden(slug)  # type: ignore[attr-defined]
    # A carried run's claims were made for (and compared on) its source release, not this one.
    diff = (
        [] if run.carried_from_id else comparison_rows(run.breakdown, run.submission.diff or [], disclosure=disclosure)
    )
    confidence = disclosure.confidence(run.confidence)
    aggregates = [
        {
            "key": key,
            "label": label,
            "value": disclosure.aggregate(key, getattr(run, key)),
            "withheld": key in disclosure.aggregates_hidden,
            "ci": confidence.get(key),
        }
        for key, label in (("overall", "Overall score"), ("reproduction", "Reproduction"), ("open", "Open-ended"))
    ]
    # Ranks and the leader come from the release's standings: a draft's are staff's, though a run
    # carried onto the draft is its submitter's (the leader is another account's run there).
    board_visible = release_is_visible(run.release, user=request.user)
    ranks = (
        {tab: rank for tab, rank in selectors.run_rank(run=run).items() if tab not in disclosure.aggregates_hidden}
        if board_visible
        else {}
    )
    leader = selectors.release_leader(release_id=run.release_id) if board_visible else None
    # Official re-runs under the same rule (leaderboard.api.serializers.rerun_comparison).
    reruns = [
        {"rerun": rerun, "rows": rerun_comparison(rerun, disclosure=disclosure, run=run, user=request.user)}
        for rerun in run.reruns.all()
    ]
    signers = selectors.run_signatures(run=run)
    return render(
        request,
        "leaderboard/run.html",
        {
            "run": run,
            "release": run.release,
            "benchmark": run.release.benchmark,
            "task_results": task_results,
            "aggregates": aggregates,
            "scores_withheld": bool(disclosure.aggregates_hidden),
            # Some task's values are withheld from this viewer (said in a sentence, not a tooltip
            # alone: touch and keyboard users cannot reach a title attribute).
            "tasks_withheld": any(
                result.measured_withheld or result.scores_withheld or result.anchor is None  # type: ignore[attr-defined]
                for result in task_results
            ),
            "withheld_reason": WITHHELD_SCORE_REASON,
            "ranks": ranks,
            # Offered only beside another run: comparing the leader with itself is a 400.
            "leader": leader if leader is not None and leader.run_id != run.pk else None,
            "tab_labels": TABS,
            "diff": diff,
            "diff_mismatches": sum(1 for d in diff if d.get("status") != "match"),
            "signatures": signers,
            "has_evaluator_signer": any(signer.kind == "evaluator" for signer in signers),
            "has_judge_signer": any(signer.kind == "judge" for signer in signers),
            "reruns": reruns,
        },
    )


def run_hidden_response(request: HttpRequest, run_id: int) -> HttpResponse | None:
    """410 Gone with the public reason when staff hid a run that would otherwise be public
    (``runs_hidden_publicly_q``); None otherwise. Called only after the run page refused the
    viewer (owner and staff never get here): a visitor sees that a run was there and why it went.
    """
    run = Run.objects.filter(runs_hidden_publicly_q(), pk=run_id).only("pk", "hidden_at", "hidden_reason").first()
    if run is None:
        return None
    return render(request, "leaderboard/run_hidden.html", {"run": run}, status=410)

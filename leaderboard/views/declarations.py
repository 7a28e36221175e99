"""Pages and data for agent declarations, costs and baselines.

``cost_cell`` and ``declared_line`` format the board's extra cells (leaderboard.views.paper_gap);
the declaration page is the owner's form; ``cost_chart_data`` feeds the cost-versus-score
chart, cached per release generation like the top-N chart.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_http_methods, require_safe

from leaderboard.declaration_forms import AgentVersionMetaForm
from leaderboard.models import Standing
from leaderboard.selectors import declarations as declared
from leaderboard.selectors import paper_gap as selectors
from leaderboard.selectors.paper_gap import TABS, BoardQueryError
from leaderboard.selectors.visibility import viewer_is_staff
from leaderboard.services.declarations import agent_meta_may_declare, agent_version_meta_declare
from scoring.pareto import pareto_frontier

COST_CHART_CACHE_SECONDS = 3600
# The basis value "recorded" is kept (the API's cost_basis, the stored RunCost.basis), but the
# tokens it prices are the submitter's (manifest.json, unsigned), so it is shown as "reported".
COST_BASIS_NOTE = {
    "recorded": "priced from submitter-reported tokens with the release's price table; the tokens are not checked",
    "declared": "declared by the agent's owner, not checked",
}
COST_BASIS_LABEL = {"recorded": "reported", "declared": "declared"}


def usd(value: float | None) -> str:
    if value is None:
        return "\u2014"
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def cost_cell(standing: Standing) -> SafeString:
    """The board's cost cell: the amount and whether it was priced from reported tokens or declared."""
    value = getattr(standing, "cost_usd", None)
    if value is None:
        return mark_safe("\u2014")
    basis = getattr(standing, "cost_basis", "") or ""
    return format_html(
        '{}<span class="cost-basis cost-basis--{}" title="{}">{}</span>',
        usd(value),
        basis,
        COST_BASIS_NOTE.get(basis, ""),
        COST_BASIS_LABEL.get(basis, basis),
    )


def declared_line(standing: Standing) -> SafeString:
    """Organisation, weights and base model under the agent's name, marked as declared."""
    parts = [
        getattr(standing, "declared_org", "") or "",
        {"open": "open weights", "closed": "closed weights"}.get(getattr(standing, "declared_weights", "") or "", ""),
        ", ".join(str(m) for m in (getattr(standing, "declared_models", None) or [])[:2]),
        getattr(standing, "declared_scaffold", "") or "",
    ]
    text = " · ".join(part for part in parts if part)
    if not text:
        return mark_safe("")
    return format_html(
        '<span class="declared" title="Declared by the agent\'s owner, not checked">{} '
        '<span class="declared__mark">declared</span></span>',
        text,
    )


@login_required
@require_http_methods(["GET", "POST"])
def agent_version_declare(request: HttpRequest, agent: str, version: str) -> HttpResponse:
    """The owner's form. Anonymous: sign in first; another account or staff: 403; an agent
    version they may not even see: 404 (a refusal never confirms a private name)."""
    agent_version = declared.agent_version_get(agent_slug=agent, version=version, user=request.user)
    if not agent_meta_may_declare(user=request.user, agent_version=agent_version):
        raise PermissionDenied("Only the account that owns this agent declares its metadata.")
    meta = getattr(agent_version, "meta", None)
    form = AgentVersionMetaForm(request.POST or None, instance=meta)
    if request.method == "POST" and form.is_valid():
        agent_version_meta_declare(user=request.user, agent_version=agent_version, data=form.declaration())
        messages.success(request, f"Declared metadata saved for {agent_version.agent.name} {agent_version.version}.")
        return redirect("agent_detail", agent=agent_version.agent.slug)
    return render(
        request,
        "leaderboard/declare.html",
        {"agent_version": agent_version, "agent": agent_version.agent, "form": form},
        status=400 if request.method == "POST" else 200,
    )


def _json_error(message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": "invalid_query", "message": message}}, status=400)


def cost_chart_payload(*, release: Any, tab: str, filters: declared.BoardFilters) -> dict[str, Any]:
    """Cost-versus-score points of a tab, the Pareto frontier flagged, and the baselines apart."""
    points = declared.cost_points(release=release, tab=tab, filters=filters)
    frontier = set(pareto_frontier([(p["cost_usd"], p["score"]) for p in points]))
    for index, point in enumerate(points):
        point["frontier"] = index in frontier
    baselines = [
        {
            "label": f"{run.agent_version.agent.name} {run.agent_version.version}",
            "kind": run.agent_version.baseline.kind,
            "score": run.tab_score,  # type: ignore[attr-defined]  # annotated onto the queryset by the selector
            "cost_usd": run.cost.usd,
            "cost_basis": run.cost.basis,
            "run_id": run.pk,
        }
        for run in declared.board_baselines(release=release, tab=tab, filters=filters)
        if getattr(run, "cost", None) is not None
    ]
    return {
        "tab": tab,
        "tab_label": TABS[tab],
        "generation": release.generation,
        "notes": {
            "cost_usd": "recorded = the submitter-reported tokens x the release's price table; "
            "declared = the owner's USD",
            "frontier": "no other ranked run costs less and scores more",
        },
        "points": points,
        "baselines": baselines,
    }


@require_safe
def cost_chart_data(request: HttpRequest, benchmark: str, version: str) -> HttpResponse:
    """Cost versus score for the chart: the board's tab and filters, cached per release generation."""
    try:
        query = selectors.board_query_from_params(request.GET)
    except BoardQueryError as error:
        return _json_error(str(error))
    release = selectors.release_get(benchmark_slug=benchmark, version=version, staff=viewer_is_staff(request.user))
    digest = hashlib.sha256(json.dumps(query.filters.params(), sort_keys=True).encode()).hexdigest()[:24]
    key = f"podium:cost-chart:{release.pk}:{release.generation}:{query.tab}:{digest}"
    body = cache.get(key)
    if body is None:
        body = json.dumps(cost_chart_payload(release=release, tab=query.tab, filters=query.filters), ensure_ascii=False)
        cache.set(key, body, COST_CHART_CACHE_SECONDS)
    return HttpResponse(body, content_type="application/json")

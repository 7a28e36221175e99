"""Reads for agent declarations, costs, baselines and the board's search filters.

Board filters are part of the board's querystring (so every view is a shareable URL)
and apply to the precomputed Standing rows with joins only: a filtered or
cost-annotated page costs the same number of queries as a plain one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Exists, F, OuterRef, QuerySet
from django.http import Http404, QueryDict

from leaderboard.disclosure import EVALUATOR_SIGNED, published_bounds, published_score
from leaderboard.models import Agent, AgentVersion, AgentVersionMeta, Release, Run, Standing, TaskResult
from leaderboard.selectors.agents import PUBLIC_RUN_LEVELS, agent_versions_public
from leaderboard.selectors.standing_ranks import RANK_ORDER, with_rank
from leaderboard.services.paper_gap_standings import standing_sort_key, tab_withheld_exists
from leaderboard.users import Viewer

LEVELS = PUBLIC_RUN_LEVELS
WEIGHTS = tuple(AgentVersionMeta.Weights.values)
MAX_TEXT_FILTER = 100  # longer than any agent or organisation name


class FilterError(ValueError):
    """A filter value the board does not offer (the message names the parameter)."""


@dataclass(frozen=True)
class BoardFilters:
    q: str = ""  # agent name contains
    org: str = ""  # declared organisation contains
    model: str = ""  # one of the declared base models contains
    weights: str = ""  # "open" | "closed"
    level: str = ""  # verification level
    since: dt.date | None = None  # verified on or after
    until: dt.date | None = None  # verified on or before

    @property
    def active(self) -> bool:
        return any((self.q, self.org, self.model, self.weights, self.level, self.since, self.until))

    def params(self) -> dict[str, str]:
        values = {
            "q": self.q,
            "org": self.org,
            "model": self.model,
            "weights": self.weights,
            "level": self.level,
            "since": self.since.isoformat() if self.since else "",
            "until": self.until.isoformat() if self.until else "",
        }
        return {k: v for k, v in values.items() if v}

    def apply(
        self, rows: QuerySet[Any], *, name: str = "agent_name", level: str = "verification", when: str = "verified_at"
    ) -> QuerySet[Any]:
        """These filters on Standing rows (the defaults) or on Run rows (their own field names)."""
        if self.q:
            rows = rows.filter(**{f"{name}__icontains": self.q})
        if self.org:
            rows = rows.filter(agent_version__meta__organisation__icontains=self.org)
        if self.model:
            rows = rows.filter(agent_version__meta__base_models__icontains=_json_text(self.model))
        if self.weights:
            rows = rows.filter(agent_version__meta__weights=self.weights)
        if self.level:
            rows = rows.filter(**{level: self.level})
        if self.since:
            rows = rows.filter(**{f"{when}__date__gte": self.since})
        if self.until:
            rows = rows.filter(**{f"{when}__date__lte": self.until})
        return rows


def _json_text(value: str) -> str:
    """``value`` as it appears inside a string in the JSON text of a list of names.

    The base-model filter matches the text of the declared JSON list (one condition on the join
    the other filters use). Escaped like a JSON string, a value cannot match across two names
    (its quotes become \\"), and non-ASCII matches as each database writes it back as text:
    PostgreSQL's jsonb as the characters, SQLite as the \\u escapes Django stored."""
    return json.dumps(value, ensure_ascii=connection.vendor != "postgresql")[1:-1]


def _date(params: QueryDict, name: str) -> dt.date | None:
    raw = params.get(name) or ""
    if not raw:
        return None
    try:
        return dt.date.fromisoformat(raw[:10]) if len(raw) == 10 else dt.date.fromisoformat(raw)
    except ValueError:
        raise FilterError(f"{name}={raw[:24]!r}: expected a date as YYYY-MM-DD") from None


def board_filters_from_params(params: QueryDict) -> BoardFilters:
    """Parse q, org, model, weights, level, since and until; raise FilterError naming the bad one."""
    text = {}
    for name in ("q", "org", "model"):
        value = (params.get(name) or "").strip()
        if len(value) > MAX_TEXT_FILTER:
            raise FilterError(f"{name}: at most {MAX_TEXT_FILTER} characters")
        if "\x00" in value:
            raise FilterError(f"{name}: contains a NUL character")
        text[name] = value
    model = text["model"]
    # Matched inside the JSON text of the declared list (_json_text): a comma (never in a name:
    # the declaration refuses it) or only brackets would match the list's own punctuation.
    if "," in model or (model and not model.strip("[] ")):
        raise FilterError(f"model={model[:24]!r}: expected part of a base model name (no commas)")
    weights = params.get("weights") or ""
    if weights and weights not in WEIGHTS:
        raise FilterError(f"weights={weights[:24]!r}: expected one of {', '.join(WEIGHTS)}")
    level = params.get("level") or ""
    if level and level not in LEVELS:
        raise FilterError(f"level={level[:24]!r}: expected one of {', '.join(LEVELS)}")
    since, until = _date(params, "since"), _date(params, "until")
    if since and until and since > until:
        raise FilterError(f"since={since} is after until={until}")
    return BoardFilters(
        q=text["q"], org=text["org"], model=text["model"], weights=weights, level=level, since=since, until=until
    )


# Each Standing attribute the board and its exports read, and where it comes from.
DECLARED_FIELDS = {
    "cost_usd": F("run__cost__usd"),
    "cost_basis": F("run__cost__basis"),
    "declared_org": F("agent_version__meta__organisation"),
    "declared_weights": F("agent_version__meta__weights"),
    "declared_models": F("agent_version__meta__base_models"),
    "declared_scaffold": F("agent_version__meta__scaffold_name"),
}


def with_declarations(rows: QuerySet[Standing]) -> QuerySet[Standing]:
    """Standing rows annotated with their run's precomputed cost and the version's declaration
    (joins in the same query; LEFT joins, so rows without either stay)."""
    return rows.annotate(**{name: expression.copy() for name, expression in DECLARED_FIELDS.items()})


def declarations_attach(rows: Sequence[Standing]) -> None:
    """Set on each of ``rows`` what :func:`with_declarations` annotates, in one query over those
    rows only. For a page of a big board: joined in the page's own query, the four joins ran
    over every row of the tab before its sort and limit (about 60 of a cold page's 120 ms at
    10,000 runs against 25 without them)."""
    if not rows:
        return
    values = (
        with_declarations(Standing.objects.filter(pk__in=[row.pk for row in rows]))
        .values_list("pk", *DECLARED_FIELDS)
        .order_by()
    )
    by_pk = {pk: found for pk, *found in values}
    # A row deleted since the page was read (its run withdrawn, hidden or re-ranked meanwhile:
    # two statements, no shared snapshot) shows nothing declared rather than failing the page.
    nothing = [None] * len(DECLARED_FIELDS)
    for row in rows:
        for name, value in zip(DECLARED_FIELDS, by_pk.get(row.pk, nothing), strict=True):
            setattr(row, name, value)


# --- baselines ----------------------------------------------------------------------------------

TAB_FIELDS = {"overall": "overall", "reproduction": "reproduction", "open": "open"}


def board_baselines(*, release: Release, tab: str, filters: BoardFilters | None = None) -> list[Run]:
    """The best public run of each reference baseline on a release's tab (one query).

    The same public rule as the standings (leaderboard.services.paper_gap_standings): validated,
    attested or verified, neither the run nor its submission private, a score in the tab,
    and no unsigned result on a withheld-anchor task (leaderboard.disclosure).
    """
    score_field = TAB_FIELDS[tab]
    leaking = TaskResult.objects.filter(run=OuterRef("pk"), release_task__anchor_published=False).exclude(
        signature=EVALUATOR_SIGNED
    )
    runs = (
        Run.objects.filter(
            release=release,
            agent_version__baseline__isnull=False,
            level__in=LEVELS,
            is_private=False,
            submission__is_private=False,
            **{f"{score_field}__isnull": False},
        )
        .exclude(Exists(leaking))
        # Whether the tab has a withheld anchor (release_lock_withheld_tabs), on every row: no query of its own.
        .annotate(tab_withheld=tab_withheld_exists(release, tab))
        .select_related("agent_version__agent", "agent_version__baseline", "agent_version__meta", "cost")
        .defer("breakdown", "agent_version__meta__description_md")
    )
    if filters is not None:
        runs = filters.apply(runs, name="agent_version__agent__name", level="level", when="created_at")
    rows: list[Run] = list(runs)
    # A tab with a withheld anchor shows (and picks by) published scores, as its board does.
    rounded = any(getattr(run, "tab_withheld", False) for run in rows)  # the annotation above
    best: dict[int, Run] = {}
    for run in sorted(rows, key=lambda r: standing_sort_key(r, tab, rounded=rounded)):
        best.setdefault(run.agent_version_id, run)
    for run in best.values():
        # Display-only attributes the cost chart reads beside the row's own fields.
        score, ci = getattr(run, score_field), (run.confidence or {}).get(tab)
        run.tab_score = published_score(score) if rounded else score  # type: ignore[attr-defined]
        run.tab_ci = published_bounds(ci) if rounded else ci  # type: ignore[attr-defined]
    return list(best.values())


# --- agent pages and the declaration form -------------------------------------------------------


def agent_versions_declared(*, agent: Agent, user: Viewer | None) -> list[AgentVersion]:
    """The agent's versions a viewer may see (public ones; every one for its owner and staff),
    each with its declaration and baseline mark: one query."""
    owner = user is not None and user.is_authenticated and agent.owner_id == user.pk
    versions = AgentVersion.objects.all() if owner else agent_versions_public(user=user)
    return list(versions.filter(agent=agent).select_related("meta", "baseline").order_by("-created_at", "-pk"))


def agent_version_get(*, agent_slug: str, version: str, user: Viewer | None) -> AgentVersion:
    """An agent version its owner, staff, or (when public) anyone may read; else 404.

    A version named only by private or rejected submissions does not exist for anyone
    but its owner and staff (leaderboard.selectors.agents), so a refusal never confirms it.
    """
    row = (
        AgentVersion.objects.select_related("agent", "meta", "baseline")
        .filter(agent__slug=agent_slug, version=version)
        .first()
    )
    if row is None:
        raise Http404("No such agent version")
    if user is not None and user.is_authenticated and row.agent.owner_id == user.pk:
        return row
    if not agent_versions_public(user=user).filter(pk=row.pk).exists():
        raise Http404("No such agent version")
    return row


# --- cost versus score ---------------------------------------------------------------------------


def cost_points(*, release: Release, tab: str, filters: BoardFilters) -> list[dict[str, Any]]:
    """Every ranked row of the tab with a cost (filters applied), cheapest first: one query."""
    rows = filters.apply(
        Standing.objects.filter(release=release, tab=tab, run__cost__isnull=False, score__isnull=False)
    )
    rows = with_rank(rows, whole_tab=False)  # the filters and the cost narrow the rows: ranks by count
    rows = rows.annotate(cost_usd=F("run__cost__usd"), cost_basis=F("run__cost__basis")).order_by(
        "cost_usd", *RANK_ORDER
    )
    return [
        {
            "rank": row.rank,
            "label": f"{row.agent_name} {row.version}",
            "score": row.score,
            "cost_usd": row.cost_usd,
            "cost_basis": row.cost_basis,
            "run_id": row.run_id,
        }
        for row in rows.only(
            "release_id", "tab", "complete", "pass_rate", "verified_at", "agent_name", "version", "score", "run_id"
        )
    ]

"""CSV and JSON exports of a leaderboard view (tab, sort and filter as on the page).

Scores are ratios and pass rates fractions, both as plain numbers; runtime and
tokens are submitter-reported (manifest.json, which no evaluator signs: docs/scoring.md
"Runtime and tokens"), the effort tier submitter-declared, and the column names say so.
Anchors are not part of a Standing row, so no export can carry one.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any

from leaderboard.models import Standing

COLUMNS: tuple[str, ...] = (
    "rank",
    "agent",
    "agent_slug",
    "version",
    "score",
    "ci_low",
    "ci_high",
    "pass_rate",
    "covered",
    "required",
    "complete",
    "runtime_seconds_submitter_reported",
    "tokens_submitter_reported",
    "effort_tier_submitter_declared",
    "cost_usd",
    "cost_basis",
    "organisation_owner_declared",
    "weights_owner_declared",
    "verification",
    "verified_at",
    "run_id",
)


def standing_record(row: Standing) -> dict[str, Any]:
    return {
        "rank": row.rank,
        "agent": row.agent_name,
        "agent_slug": row.agent_slug,
        "version": row.version,
        "score": row.score,
        "ci_low": row.ci_low,
        "ci_high": row.ci_high,
        "pass_rate": row.pass_rate,
        "covered": row.covered,
        "required": row.required,
        "complete": row.complete,
        "runtime_seconds_submitter_reported": row.runtime_seconds,
        "tokens_submitter_reported": row.tokens,
        "effort_tier_submitter_declared": row.effort_tier,
        # Annotated by leaderboard.selectors.declarations.with_declarations (None when absent).
        "cost_usd": getattr(row, "cost_usd", None),
        "cost_basis": getattr(row, "cost_basis", None),
        "organisation_owner_declared": getattr(row, "declared_org", None),
        "weights_owner_declared": getattr(row, "declared_weights", None),
        "verification": row.verification,
        "verified_at": row.verified_at.isoformat() if row.verified_at else None,
        "run_id": row.run_id,
    }


def baseline_record(run: Any, *, tab: str) -> dict[str, Any]:
    """A reference baseline's best run on the tab (board_baselines' rows): no rank, by design."""
    cost = getattr(run, "cost", None)
    ci = run.tab_ci if run.tab_ci and len(run.tab_ci) == 2 else (None, None)
    return {
        "agent": run.agent_version.agent.name,
        "agent_slug": run.agent_version.agent.slug,
        "version": run.agent_version.version,
        "baseline_kind": run.agent_version.baseline.kind,
        "baseline_note": run.agent_version.baseline.note,
        "score": run.tab_score,
        "ci_low": ci[0],
        "ci_high": ci[1],
        "pass_rate": run.pass_rate,
        "covered": run.covered,
        "required": run.required,
        "complete": run.complete,
        "cost_usd": cost.usd if cost is not None else None,
        "cost_basis": cost.basis if cost is not None else None,
        "verification": run.level,
        "run_id": run.pk,
    }


class _Echo:
    """A file-like object whose write returns the line, for streaming csv.writer output."""

    def write(self, value: str) -> str:
        return value


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        # Spreadsheets execute cells starting with these; agent names are user-supplied.
        return "'" + value
    return value


def csv_lines(rows: Iterable[Standing]) -> Iterator[str]:
    """The CSV text of ``rows``, a header first, line by line (for StreamingHttpResponse)."""
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    for row in rows:
        record = standing_record(row)
        yield writer.writerow([_cell(record[name]) for name in COLUMNS])

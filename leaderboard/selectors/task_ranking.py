"""The per-task view of a paper-gap release: every public agent version on one task.

One query (the task's results with their runs, agent versions and submissions) whatever
the number of runs. What each row shows follows leaderboard.disclosure, the rule of the
run page: a withheld anchor's measured value is shown to the run's submitter and staff
only, and the scores of a result whose measured value the submitter chose (unsigned, on
a withheld anchor) to staff only. Whether a task's fields are hidden depends on that
task's result alone, so the disclosure is computed from the one result this page reads.

Ranking uses only values the viewer may see: a row whose scores are hidden takes no rank
and is listed after the ranked ones (a rank among others would place the hidden score).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from leaderboard.disclosure import run_disclosure
from leaderboard.models import ReleaseTask, TaskResult
from leaderboard.selectors.agents import PUBLIC_RUN_LEVELS
from leaderboard.users import Viewer
from scoring.proportion import wilson_interval

# Heavy columns the ranking never reads (a breakdown or a diff can be many kilobytes per run).
_DEFERRED = ("run__breakdown", "run__submission__diff", "run__submission__error_message", "run__confidence")


@dataclass(frozen=True)
class TaskRankingRow:
    """One agent version's best public run on the task, as one viewer may see it."""

    rank: int | None  # None: the scores are hidden from this viewer, so the row is not ranked
    agent_name: str
    agent_slug: str
    version: str
    run_id: int
    level: str
    measured: float | None
    measured_hidden: bool
    final: float | None
    gap: float | None
    factor: float
    scores_hidden: bool
    faithful: bool | None
    pass_rate: float | None
    pass_rate_ci: tuple[float, float] | None
    episodes: int
    signature: str
    verified_at: Any

    def record(self) -> dict[str, Any]:
        """The row for CSV/JSON exports (hidden values are None and named in ``withheld``)."""
        withheld = (["measured"] if self.measured_hidden else []) + (
            ["final", "gap", "score"] if self.scores_hidden else []
        )
        return {
            "rank": self.rank,
            "agent": self.agent_name,
            "agent_slug": self.agent_slug,
            "version": self.version,
            "run_id": self.run_id,
            "verification": self.level,
            "measured": self.measured,
            "gap": self.gap,
            "penalty_factor": self.factor,
            "final": self.final,
            "faithful": self.faithful,
            "pass_rate": self.pass_rate,
            "pass_rate_ci_low": self.pass_rate_ci[0] if self.pass_rate_ci else None,
            "pass_rate_ci_high": self.pass_rate_ci[1] if self.pass_rate_ci else None,
            "episodes": self.episodes,
            "signature": self.signature,
            "verified_at": self.verified_at.isoformat() if self.verified_at else None,
            "withheld": sorted(withheld),
        }


def _task_results(release_task: ReleaseTask) -> Iterable[TaskResult]:
    return (
        TaskResult.objects.filter(
            release_task=release_task,
            run__level__in=PUBLIC_RUN_LEVELS,
            run__is_private=False,
            run__submission__is_private=False,
        )
        .select_related("run__submission", "run__agent_version__agent", "run__release")
        .defer(*_DEFERRED)
        .order_by("run_id")
    )


def _row(result: TaskResult, release_task: ReleaseTask, user: Viewer | None) -> TaskRankingRow:
    run = result.run
    # The page's release_task carries the task; the per-task rule needs only this one result.
    result.release_task = release_task
    disclosure = run_disclosure(run, user=user, task_results=[result])
    slug = release_task.task.slug
    measured_hidden = slug in disclosure.measured_hidden
    scores_hidden = disclosure.task_scores_hidden(slug)
    return TaskRankingRow(
        rank=None,
        agent_name=run.agent_version.agent.name,
        agent_slug=run.agent_version.agent.slug,
        version=run.agent_version.version,
        run_id=run.pk,
        level=run.level,
        measured=None if measured_hidden else result.measured,
        measured_hidden=measured_hidden,
        final=None if scores_hidden else result.final,
        gap=None if scores_hidden else result.gap,
        factor=result.factor,
        scores_hidden=scores_hidden,
        faithful=result.faithful,
        pass_rate=result.pass_rate,
        pass_rate_ci=wilson_interval(result.pass_rate, result.episodes),
        episodes=result.episodes,
        signature=result.signature,
        verified_at=run.created_at,
    )


def _order_key(row: TaskRankingRow) -> tuple[Any, ...]:
    # Visible final descending, then pass rate descending, then name (stable and total).
    return (
        row.final is None,
        -(row.final or 0.0),
        -(row.pass_rate or 0.0),
        row.agent_name.casefold(),
        row.version,
        row.run_id,
    )


def task_ranking(*, release_task: ReleaseTask, user: Viewer | None) -> list[TaskRankingRow]:
    """Every public agent version on ``release_task`` (its best run on this task), ranked by
    the final score the viewer may see; one query."""
    best: dict[int, TaskRankingRow] = {}
    for result in _task_results(release_task):
        row = _row(result, release_task, user)
        version_id = result.run.agent_version_id
        current = best.get(version_id)
        if current is None or _order_key(row) < _order_key(current):
            best[version_id] = row
    ordered = sorted(best.values(), key=_order_key)
    ranked: list[TaskRankingRow] = []
    rank = 0
    for row in ordered:
        if row.final is None:
            ranked.append(row)
            continue
        rank += 1
        ranked.append(TaskRankingRow(**{**row.__dict__, "rank": rank}))
    return ranked

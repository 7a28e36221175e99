"""A run's per-task results (and per-episode results, see submissions.selectors.run_bundle)
as CSV/JSON records, through leaderboard.disclosure: the same values the run page shows
to the same viewer, withheld ones as empty cells named in a ``withheld`` column.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from leaderboard.disclosure import Disclosure, shown_anchor
from leaderboard.exports import _cell
from leaderboard.provenance import TASK_PROVENANCE_FIELDS, task_provenance
from scoring.proportion import wilson_interval

TASK_COLUMNS: tuple[str, ...] = (
    "task",
    "title",
    "genre",
    "metric",
    "metric_direction",
    "anchor",
    "measured",
    "gap",
    "penalty_factors",
    "penalty_factor",
    "score",
    "faithful",
    "final",
    "pass_rate",
    "pass_rate_ci_low",
    "pass_rate_ci_high",
    "episodes",
    *TASK_PROVENANCE_FIELDS,  # who signed the result and the verdict, and whether each key was revoked since
    "withheld",
)

EPISODE_COLUMNS: tuple[str, ...] = ("task", "episode", "seed", "metric", "aborted", "rates", "withheld")


def task_record(result: Any, *, disclosure: Disclosure, staff: bool, release_published: bool) -> dict[str, Any]:
    """One TaskResult (with release_task__task) of a run on a release (published or not) as its
    viewer may see it."""
    release_task = result.release_task
    slug = release_task.task.slug
    hidden = set(disclosure.hidden_task_fields(slug))
    interval = wilson_interval(result.pass_rate, result.episodes)
    return {
        "task": slug,
        # The release's own snapshot, as every page shows it: the shared Task row is the newest release's.
        "title": release_task.title,
        "genre": release_task.genre,
        "metric": release_task.metric_name,
        "metric_direction": release_task.metric_direction,
        "anchor": shown_anchor(release_task, release_published=release_published, staff=staff),
        "measured": None if "measured" in hidden else result.measured,
        "gap": None if "gap" in hidden else result.gap,
        "penalty_factors": dict(result.factors or {}),
        "penalty_factor": result.factor,
        "score": None if "score" in hidden else result.score,
        "faithful": result.faithful,
        "final": None if "final" in hidden else result.final,
        "pass_rate": result.pass_rate,
        "pass_rate_ci_low": interval[0] if interval else None,
        "pass_rate_ci_high": interval[1] if interval else None,
        "episodes": result.episodes,
        **task_provenance(result),
        "withheld": sorted(hidden),
    }


def _flat(value: Any) -> Any:
    if isinstance(value, dict):
        return ";".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, list):
        return ";".join(str(item) for item in value)
    return _cell(value)


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_text(records: Iterable[dict[str, Any]], columns: Sequence[str]) -> Iterator[str]:
    """CSV lines of ``records`` (header first); dicts and lists are flattened to ``k=v;...``."""
    writer = csv.writer(_Echo())
    yield writer.writerow(columns)
    for record in records:
        yield writer.writerow([_flat(record.get(name)) for name in columns])

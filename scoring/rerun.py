"""Comparing an official re-run with the submitted run. Pure: no Django.

``verified`` means an official re-run reproduced the run: every task the submitted run
covers is re-run and its final score lies within ``tolerance`` of the submitted one.
The tolerance is absolute on the normalised final score (a dimensionless ratio around 1):
0.05 means the re-run may land 0.05 above or below, e.g. 0.90 against 0.87. Absolute,
not relative, so a task near 0 (a fail-closed safety factor, an unfaithful verdict) is
not held to a vanishing band. The re-run may cover more tasks than the submission; those
are shown but do not decide.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from scoring.errors import ScoringError

DEFAULT_RERUN_TOLERANCE = 0.05


@dataclass(frozen=True)
class TaskComparison:
    task: str
    submitted_final: float | None
    rerun_final: float | None
    difference: float | None
    within: bool
    decides: bool  # a task of the submitted run (only these decide the outcome)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def compare_finals(
    submitted: Mapping[str, float | None], rerun: Mapping[str, float | None], *, tolerance: float
) -> tuple[list[TaskComparison], bool]:
    """Per-task comparison (sorted by task) and whether the re-run confirms the run.

    ``submitted`` and ``rerun`` map task slug -> final score (None: not covered).
    Confirmed when the submitted run covers at least one task and each of its covered
    tasks is covered by the re-run within ``tolerance``.
    """
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance >= 0):
        raise ScoringError(f"rerun tolerance: expected a finite number >= 0, got {tolerance!r}")
    rows: list[TaskComparison] = []
    for task in sorted(set(submitted) | set(rerun)):
        mine, theirs = submitted.get(task), rerun.get(task)
        decides = mine is not None
        if mine is None or theirs is None:
            rows.append(TaskComparison(task, mine, theirs, None, within=not decides, decides=decides))
            continue
        difference = theirs - mine
        rows.append(TaskComparison(task, mine, theirs, difference, abs(difference) <= tolerance + 1e-12, decides))
    deciding = [row for row in rows if row.decides]
    return rows, bool(deciding) and all(row.within for row in deciding)

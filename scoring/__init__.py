"""Podium's authoritative score recomputation (standard library; numpy in ``uncertainty``).

Modules, one concept each:

* :mod:`scoring.gap` -- paper-gap task scores, penalties, faithfulness gate,
  macro mean, coverage, episodes, whole runs (seeds 000 and 003);
* :mod:`scoring.scorecard` -- episode scorecards and their ranking (seed 001);
* :mod:`scoring.sokoban` -- the Sokoban puzzle the server hosts for them: engine,
  corner deadlock test, BFS solver, level generator (seed 001);
* :mod:`scoring.race` -- race rewards, runs, field baselines, Overall (seed 002);
* :mod:`scoring.uncertainty` -- seeded bootstrap confidence intervals;
* :mod:`scoring.compare` -- claimed vs recomputed breakdowns;
* :mod:`scoring.leaderboard` -- streaming ranking of scored runs;
* :mod:`scoring.validate` -- the number checks behind every rule;
* :mod:`scoring.errors` -- :class:`ScoringError`.

No Django, no third-party imports, deterministic, no rounding (display only).
"""

from __future__ import annotations

from scoring import compare, errors, gap, leaderboard, race, scorecard, uncertainty, validate
from scoring.compare import FieldDiff, compare_claims, has_mismatch
from scoring.errors import ScoringError
from scoring.gap import (
    Episode,
    ReleaseSpec,
    RunBreakdown,
    TaskResult,
    TaskSpec,
    required_task_set_hash,
    score_run,
)

__all__ = [
    "Episode",
    "FieldDiff",
    "ReleaseSpec",
    "RunBreakdown",
    "ScoringError",
    "TaskResult",
    "TaskSpec",
    "compare",
    "compare_claims",
    "errors",
    "gap",
    "has_mismatch",
    "leaderboard",
    "race",
    "required_task_set_hash",
    "score_run",
    "scorecard",
    "uncertainty",
    "validate",
]

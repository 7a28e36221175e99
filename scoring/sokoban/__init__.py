"""Sokoban as Podium hosts it for scorecard benchmarks (seed 001).

* :mod:`scoring.sokoban.engine` -- XSB levels, the four moves, solved, the corner deadlock test;
* :mod:`scoring.sokoban.solver` -- BFS optimal move counts with a node budget;
* :mod:`scoring.sokoban.generator` -- the deterministic difficulty-ramp level generator.

Standard library only and no Django, like the rest of :mod:`scoring`.
"""

from __future__ import annotations

from scoring.sokoban.engine import (
    ACTIONS,
    Level,
    LevelError,
    MoveResult,
    State,
    apply,
    is_deadlocked,
    is_solved,
    parse_xsb,
    render_xsb,
)
from scoring.sokoban.solver import OVER_BUDGET, SOLVED, UNSOLVABLE, Solution, solve

__all__ = [
    "ACTIONS",
    "OVER_BUDGET",
    "SOLVED",
    "UNSOLVABLE",
    "Level",
    "LevelError",
    "MoveResult",
    "Solution",
    "State",
    "apply",
    "is_deadlocked",
    "is_solved",
    "parse_xsb",
    "render_xsb",
    "solve",
]

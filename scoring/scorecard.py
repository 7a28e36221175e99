"""Episode scorecards (seed 001 "Scoring").

A scorecard summarises up to ``pad_to`` episodes over a hidden level set.
Unplayed levels are padded as unsolved, a solve that blew its step budget is
unsolved, and the optimal lengths always come from the server's level data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

from scoring.proportion import wilson_bounds
from scoring.validate import fail, non_negative_int, positive, positive_int, unit_interval

__all__ = [
    "STEP_BUDGET_FLOOR",
    "STEP_BUDGET_MULTIPLIER",
    "Scorecard",
    "ScorecardEpisode",
    "best_per_entrant",
    "rank_key",
    "step_budget",
    "success_rate_interval",
    "summarize",
]

STEP_BUDGET_FLOOR = 30
STEP_BUDGET_MULTIPLIER = 3

Entrant = TypeVar("Entrant", bound=str)


def success_rate_interval(solved: int, episodes: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a card's success rate (``solved`` of ``episodes``).

    Wilson, not the normal approximation: a card of 100 levels with 0 or 100 solved still gets a
    real interval (the normal one collapses to a point), and the bounds stay inside [0, 1]. Every
    episode is one hidden level played once, so the binomial model is the card's own."""
    n = positive_int("scorecard", "episodes", episodes)
    x = non_negative_int("scorecard", "solved", solved)
    if x > n:
        raise fail("scorecard", "solved", f"at most episodes ({n})", x)
    return wilson_bounds(x, n)


def step_budget(optimal_len: int) -> int:
    """A level's step budget: ``max(30, 3 * optimal_len)`` (seed 001)."""
    length = positive_int("level", "optimal_len", optimal_len)
    return max(STEP_BUDGET_FLOOR, STEP_BUDGET_MULTIPLIER * length)


@dataclass(frozen=True)
class ScorecardEpisode:
    """One played episode as the server recorded it."""

    level_id: str
    steps: int
    solved: bool
    deadlocked: bool
    actions: int


@dataclass(frozen=True)
class Scorecard:
    """A closed scorecard.  Rates use the full padded set as denominator."""

    episodes: int
    solved: int
    success_rate: float
    move_efficiency: float | None
    avg_steps_solved: float | None
    deadlock_rate: float
    total_actions: int

    def to_dict(self) -> dict[str, Any]:
        """The seed's JSON keys, in the seed's order; no rounding."""
        return {
            "episodes": self.episodes,
            "solved": self.solved,
            "success_rate": self.success_rate,
            "move_efficiency": self.move_efficiency,
            "avg_steps_solved": self.avg_steps_solved,
            "deadlock_rate": self.deadlock_rate,
            "total_actions": self.total_actions,
        }


def _check_episode(index: int, episode: ScorecardEpisode, optimal: Mapping[str, int]) -> tuple[int, bool]:
    """Validate one episode; return (optimal length, counts-as-solved)."""
    where = f"scorecard episode {index} (level {episode.level_id!r})"
    if episode.level_id not in optimal:
        raise fail(where, "level_id", "a level of the hidden set", episode.level_id)
    best = positive_int(f"level {episode.level_id!r}", "optimal_len", optimal[episode.level_id])
    steps = non_negative_int(where, "steps", episode.steps)
    non_negative_int(where, "actions", episode.actions)
    for name in ("solved", "deadlocked"):
        if not isinstance(getattr(episode, name), bool):
            raise fail(where, name, "a bool", getattr(episode, name))
    if episode.solved and episode.deadlocked:
        raise fail(where, "deadlocked", "False for a solved episode (a deadlock can never be solved)", True)
    if episode.solved and steps < best:
        raise fail(where, "steps", f"at least the optimal length {best} for a solved episode", steps)
    within_budget = steps <= step_budget(best)
    return best, episode.solved and within_budget


def summarize(
    episodes: Iterable[ScorecardEpisode],
    pad_to: int,
    optimal: Mapping[str, int],
) -> Scorecard:
    """Close a scorecard (seed 001 "The metrics").

    ``optimal`` is the server's BFS optimal length per level id (never the
    submitter's).  Errors: more episodes than ``pad_to``, an unknown or a
    repeated level, a solve shorter than optimal, a solved-and-deadlocked
    episode.  Unplayed episodes up to ``pad_to`` are unsolved, not
    deadlocked and took no actions.  ``move_efficiency`` and
    ``avg_steps_solved`` are None when nothing was solved.
    """
    size = positive_int("scorecard", "pad_to", pad_to)
    seen: set[str] = set()
    solved = 0
    deadlocked = 0
    total_actions = 0
    # Exact: equal efficiencies (23/25 from 23/25 + 23/25 or from 18/18 + 21/25) must be equal
    # floats, or float noise would rank them and the deadlock tiebreak would never be reached.
    ratios: list[Fraction] = []
    solved_steps = 0
    for index, episode in enumerate(episodes):
        if index >= size:
            raise fail("scorecard", "episode count", f"at most pad_to={size}", index + 1)
        if episode.level_id in seen:
            raise fail(f"scorecard episode {index}", "level_id", "a level not already played", episode.level_id)
        seen.add(episode.level_id)
        best, counts = _check_episode(index, episode, optimal)
        total_actions += episode.actions
        if episode.deadlocked:
            deadlocked += 1
        if counts:
            solved += 1
            ratios.append(Fraction(best, episode.steps))
            solved_steps += episode.steps
    return Scorecard(
        episodes=size,
        solved=solved,
        success_rate=solved / size,
        move_efficiency=float(sum(ratios, Fraction(0)) / solved) if solved else None,
        avg_steps_solved=solved_steps / solved if solved else None,
        deadlock_rate=deadlocked / size,
        total_actions=total_actions,
    )


def rank_key(card: Scorecard) -> tuple[float, int, float, float, int, float, int]:
    """Sort key (ascending = better) giving a total order over scorecards.

    success_rate desc, move_efficiency desc (None -- nothing solved -- sorts
    after every number), deadlock_rate asc; then the documented tiebreak:
    total_actions asc (only among cards that solved something), avg_steps_solved
    asc (None last), episodes desc.
    Cards with equal keys are equal in every ranked field; callers that need
    a strict order over entrants break those ties by entrant id.  A card
    with a NaN, out-of-range or negative field is rejected, so every key is
    comparable.
    """
    where = "scorecard"
    success = unit_interval(where, "success_rate", card.success_rate)
    deadlocks = unit_interval(where, "deadlock_rate", card.deadlock_rate)
    efficiency = None if card.move_efficiency is None else positive(where, "move_efficiency", card.move_efficiency)
    steps = None if card.avg_steps_solved is None else positive(where, "avg_steps_solved", card.avg_steps_solved)
    non_negative_int(where, "total_actions", card.total_actions)
    positive_int(where, "episodes", card.episodes)
    return (
        -success,
        0 if efficiency is not None else 1,
        -(efficiency if efficiency is not None else 0.0),
        deadlocks,
        # Fewer actions is leaner play only where something was solved; among cards that solved
        # nothing it is less play, and ranked a one-move card above one that tried and failed.
        card.total_actions if efficiency is not None else 0,
        steps if steps is not None else math.inf,
        -card.episodes,
    )


def best_per_entrant(cards: Iterable[tuple[Entrant, Scorecard]]) -> list[tuple[Entrant, Scorecard]]:
    """Each entrant's best scorecard, ranked (seed 001 "Ranking").

    Streams ``cards`` (memory grows with entrants, not cards).  Among an
    entrant's cards with equal keys the first one seen is kept.  The result
    is ordered by :func:`rank_key`, then entrant id.
    """
    best: dict[Entrant, tuple[tuple[float, int, float, float, int, float, int], Scorecard]] = {}
    for entrant, card in cards:
        key = rank_key(card)
        current = best.get(entrant)
        if current is None or key < current[0]:
            best[entrant] = (key, card)
    ordered = sorted(best.items(), key=lambda item: (item[1][0], item[0]))
    return [(entrant, entry[1]) for entrant, entry in ordered]

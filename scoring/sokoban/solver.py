"""Breadth-first search for a level's optimal number of moves (seed 001's ``optimal``).

Every action costs one move (steps and pushes alike), so BFS over
(player, crates) states finds a shortest solution. ``max_nodes`` bounds the
states expanded: manifest sync refuses a level the search cannot settle
within it, and the reference client uses a small budget before it guesses.

Pruning: a state whose crate sits in a dead corner (engine.is_dead_corner) is
never expanded. That is exact, not a heuristic: such a crate can never move
again (see engine.is_deadlocked), so no solution passes through the state.
``prune=False`` turns it off, which the property tests use to check the
corner test against a search that does not rely on it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from scoring.sokoban.engine import ACTIONS, Level, State, is_dead_corner, is_solved

__all__ = ["DEFAULT_MAX_NODES", "OVER_BUDGET", "SOLVED", "UNSOLVABLE", "Solution", "solve"]

# Enough for every level of the demo set many times over (the largest needs a few
# thousand states); a level that needs more is too big to serve and is refused.
DEFAULT_MAX_NODES = 200_000

SOLVED = "solved"
UNSOLVABLE = "unsolvable"
OVER_BUDGET = "over_budget"


@dataclass(frozen=True)
class Solution:
    """``status`` is SOLVED (``moves`` is a shortest solution), UNSOLVABLE (the whole
    reachable space was searched) or OVER_BUDGET (``max_nodes`` ran out first)."""

    status: str
    moves: tuple[str, ...]
    nodes: int

    @property
    def length(self) -> int | None:
        return len(self.moves) if self.status == SOLVED else None


def solve(
    level: Level, start: State | None = None, *, max_nodes: int = DEFAULT_MAX_NODES, prune: bool = True
) -> Solution:
    """A shortest move sequence from ``start`` (the level's own start by default).

    The search applies engine.apply's rules on plain tuples (a precomputed
    neighbour table, crates as a sorted tuple): the same moves, several times
    faster, which is what keeps syncing a 100-level set to about a second. The
    property tests replay every solution through engine.apply."""
    origin = level.start if start is None else start
    if is_solved(level, origin):
        return Solution(SOLVED, (), 0)
    cells = level.width * level.height
    names = tuple(ACTIONS)
    # step[a][cell]: the cell one move ``names[a]`` away, or -1 for a wall or the board's edge.
    step = [
        [-1 if (n := level.neighbour(cell, name)) is None or n in level.walls else n for cell in range(cells)]
        for name in names
    ]
    dead = [prune and is_dead_corner(level, cell) for cell in range(cells)]
    goals = level.goals
    root = (origin.player, origin.crates)
    parent: dict[tuple[int, tuple[int, ...]], tuple[tuple[int, tuple[int, ...]], int] | None] = {root: None}
    frontier: deque[tuple[int, tuple[int, ...]]] = deque([root])
    nodes = 0
    while frontier:
        if nodes >= max_nodes:
            return Solution(OVER_BUDGET, (), nodes)
        node = frontier.popleft()
        player, crates = node
        nodes += 1
        for index, table in enumerate(step):
            target = table[player]
            if target < 0:
                continue
            if target in crates:
                beyond = table[target]
                if beyond < 0 or beyond in crates or dead[beyond]:
                    continue
                moved = tuple(sorted(beyond if crate == target else crate for crate in crates))
                nxt = (target, moved)
            else:
                nxt = (target, crates)
            if nxt in parent:
                continue
            parent[nxt] = (node, index)
            if nxt[1] is not crates and all(crate in goals for crate in nxt[1]):
                return Solution(SOLVED, _path(parent, nxt, names), nodes)
            frontier.append(nxt)
    return Solution(UNSOLVABLE, (), nodes)


def _path(
    parent: dict[tuple[int, tuple[int, ...]], tuple[tuple[int, tuple[int, ...]], int] | None],
    end: tuple[int, tuple[int, ...]],
    names: tuple[str, ...],
) -> tuple[str, ...]:
    moves: list[str] = []
    link = parent[end]
    while link is not None:
        previous, index = link
        moves.append(names[index])
        link = parent[previous]
    return tuple(reversed(moves))

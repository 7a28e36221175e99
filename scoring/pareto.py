"""The cost-versus-score Pareto frontier (HAL's headline view). Pure: no Django."""

from __future__ import annotations

from collections.abc import Sequence


def pareto_frontier(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates, cheapest first.

    A point (cost, score) is dominated when another costs no more and scores at least
    as much, and is strictly better on one of the two. Equal points are all kept (neither
    dominates the other). Lower cost is better, higher score is better.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    frontier: list[int] = []
    best_score = float("-inf")
    best_cost: float | None = None
    for i in order:
        cost, score = points[i]
        if score > best_score:
            frontier.append(i)
            best_score, best_cost = score, cost
        elif score == best_score and cost == best_cost:
            frontier.append(i)
    return frontier

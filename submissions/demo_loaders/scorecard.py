"""Demo scorecard benchmark (seed 001): 100 hidden levels and scripted agents that play them.

Every card is played move by move through submissions.services.cards, the same
services the API calls: the server applies each move, detects deadlocks,
enforces the step budgets and closes the card. Nothing is claimed.

The agents (deterministic, from the level set and BFS):

* "Crate Whisperer 1.0" reproduces seed 001's worked example exactly: 31 of 100
  solved, move efficiency 0.874 (about 1.14x the optimal path), 23.4 steps per
  solve, deadlock rate 8%, 4120 actions. It solves 31 mid-ramp levels with a few
  wasted steps (bumps into a wall), wedges a crate in a corner on 8 levels,
  runs out of steps on others and leaves one unfinished to make up the actions.
* "Cherry Picker 0.1" solves 10 levels perfectly and stops: 10%, not 100%.
* "Deep Planner" plays twice (1.0 then a better 1.1): only its best card shows.
* "Greedy Pusher 2.3" solves the short levels and wedges crates on the rest.

Idempotent: an agent version that already has a closed demo card is not played again.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from leaderboard.models import Release
from leaderboard.services.release_sync import release_sync
from scoring import scorecard as scorecard_scoring
from scoring.sokoban import ACTIONS, Level, State, apply, is_deadlocked, is_solved, parse_xsb, solve
from submissions.models import Card
from submissions.services.cards import card_close, card_episode_play, card_episode_reset, card_open

BENCHMARK_SLUG = "sokoban-hidden"
BENCHMARK_NAME = "Sokoban hidden set"
RELEASE_VERSION = "2026.1"
EPISODE_SET_SIZE = 100
DEMO_USERNAME = "demo-scorecards"
# The release manifest (docs/manifest.md) with the hidden level set in levels.yaml.
EXAMPLE_DIR = Path(settings.BASE_DIR) / "examples" / "demo-scorecard"

# Seed 001's worked example ("Reading a scorecard").
SEED_SOLVED, SEED_STEPS_SOLVED, SEED_EFFICIENCY, SEED_DEADLOCKS, SEED_ACTIONS = 31, 725, 0.874, 8, 4120


@dataclass(frozen=True)
class DemoLevel:
    level_id: str
    level: Level
    optimal: int

    @property
    def budget(self) -> int:
        return scorecard_scoring.step_budget(self.optimal)


@dataclass(frozen=True)
class Plan:
    """One episode to play: the actions to send, in order (a reset comes first)."""

    level_id: str
    actions: tuple[str, ...]


# ------------------------------------------------------------------ scripted moves


OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}


def waste_actions(level: Level, count: int) -> tuple[str, ...]:
    """``count`` wasted steps from the level's start that move no crate: bumps into a
    wall beside the player, else a step onto free floor and back, repeated."""
    for action in ACTIONS:
        if apply(level, level.start, action).outcome == "blocked":
            return (action,) * count
    for action in ACTIONS:
        if apply(level, level.start, action).outcome == "moved":
            pair = (action, OPPOSITE[action])
            return tuple(pair[index % 2] for index in range(count))
    raise ValueError("the player cannot move at the start")


def optimal_moves(level: Level) -> tuple[str, ...]:
    return solve(level).moves


def deadlock_moves(level: Level, max_nodes: int = 50_000) -> tuple[str, ...] | None:
    """A shortest move sequence to a corner deadlock, or None when none is near."""
    parent: dict[State, tuple[State, str] | None] = {level.start: None}
    frontier = deque([level.start])
    while frontier and len(parent) < max_nodes:
        state = frontier.popleft()
        for action in ACTIONS:
            result = apply(level, state, action)
            if result.outcome == "blocked" or result.state in parent or is_solved(level, result.state):
                continue  # (a path through a solved state would end the episode solved)
            parent[result.state] = (state, action)
            if is_deadlocked(level, result.state):
                moves: list[str] = []
                link: tuple[State, str] | None = parent[result.state]
                while link is not None:
                    moves.append(link[1])
                    link = parent[link[0]]
                return tuple(reversed(moves))
            frontier.append(result.state)
    return None


def _bumps(level: DemoLevel, count: int) -> tuple[str, ...]:
    # An even number of steps onto floor and back ends where it started, so the solve
    # that follows still works; bumps end there after any count.
    return waste_actions(level.level, count)


def solved_with_waste(level: DemoLevel, waste: int) -> Plan:
    if not _has_bump(level.level):
        waste -= waste % 2  # floor-and-back steps come in pairs, so the solve starts where it should
    return Plan(level.level_id, _bumps(level, waste) + optimal_moves(level.level))


def out_of_steps(level: DemoLevel) -> Plan:
    return Plan(level.level_id, _bumps(level, level.budget))


def wedged(level: DemoLevel) -> Plan | None:
    moves = deadlock_moves(level.level)
    return None if moves is None or len(moves) >= level.budget else Plan(level.level_id, moves)


# ------------------------------------------------------------------ seed 001's card


def _seed_solves(levels: list[DemoLevel]) -> list[tuple[DemoLevel, int]] | None:
    """31 levels and wasted steps per solve giving 725 steps and efficiency 0.874 (3 d.p.)."""
    # Solves waste steps by bumping into a wall (any count leaves the player in place).
    usable = [lvl for lvl in levels if _has_bump(lvl.level)]
    usable.sort(key=lambda lvl: (lvl.optimal, lvl.level_id))
    for start in range(len(usable) - SEED_SOLVED + 1):
        chosen = usable[start : start + SEED_SOLVED]
        waste_total = SEED_STEPS_SOLVED - sum(lvl.optimal for lvl in chosen)
        if waste_total < 0:
            break
        # Spread the waste in proportion to the optimal length (equal slack ratio), then
        # nudge single steps between levels until the efficiency rounds to 0.874.
        share = waste_total / sum(lvl.optimal for lvl in chosen)
        waste = [math.floor(lvl.optimal * share) for lvl in chosen]
        for index in range(waste_total - sum(waste)):
            waste[index % SEED_SOLVED] += 1
        by_length = sorted(range(SEED_SOLVED), key=lambda i: (chosen[i].optimal, i))
        for _ in range(2000):
            efficiency = math.fsum(lvl.optimal / (lvl.optimal + w) for lvl, w in zip(chosen, waste, strict=True))
            efficiency /= SEED_SOLVED
            if round(efficiency, 3) == SEED_EFFICIENCY:
                if all(lvl.optimal + w <= lvl.budget for lvl, w in zip(chosen, waste, strict=True)):
                    return list(zip(chosen, waste, strict=True))
                break
            # A wasted step costs a short level more efficiency than a long one: moving one
            # from short to long raises the mean, the other way lowers it.
            order = by_length if efficiency < SEED_EFFICIENCY else by_length[::-1]
            source = next((i for i in order if waste[i] > 0), None)
            if source is None:
                break
            waste[source] -= 1
            waste[order[-1]] += 1
    return None


def _has_bump(level: Level) -> bool:
    return any(apply(level, level.start, action).outcome == "blocked" for action in ACTIONS)


def seed_example_plans(levels: list[DemoLevel]) -> list[Plan]:
    """Plans whose closed card is seed 001's worked example, field for field."""
    solves = _seed_solves(levels)
    if solves is None:
        raise ValueError("the level set has no 31 levels that reproduce the seed's example")
    plans = [solved_with_waste(level, waste) for level, waste in solves]
    used = {level.level_id for level, _ in solves}
    rest = [lvl for lvl in levels if lvl.level_id not in used]
    wedges: list[Plan] = []
    for level in rest:
        plan = wedged(level)
        if plan is not None:
            wedges.append(plan)
        if len(wedges) == SEED_DEADLOCKS:
            break
    plans += wedges
    used |= {plan.level_id for plan in wedges}
    remaining = SEED_ACTIONS - sum(len(plan.actions) for plan in plans)
    for level in rest:
        if level.level_id in used or remaining <= 0:
            continue
        # Out of steps while the budget fits what is left, else one unfinished episode with the rest.
        spend = min(level.budget, remaining)
        plans.append(Plan(level.level_id, _bumps(level, spend)))
        used.add(level.level_id)
        remaining -= spend
    if remaining:
        raise ValueError(f"the level set cannot absorb {remaining} more actions")
    return plans


def ten_of_ten_plans(levels: list[DemoLevel]) -> list[Plan]:
    return [Plan(level.level_id, optimal_moves(level.level)) for level in levels[:10]]


def planner_plans(levels: list[DemoLevel], *, solved: int, waste: int, deadlocks: int) -> list[Plan]:
    """Solves the first ``solved`` levels with ``waste`` extra steps each, wedges ``deadlocks`` more."""
    plans = [solved_with_waste(level, min(waste, level.budget - level.optimal)) for level in levels[:solved]]
    for level in levels[solved:]:
        if deadlocks <= 0:
            break
        plan = wedged(level)
        if plan is not None:
            plans.append(plan)
            deadlocks -= 1
    return plans


def demo_cards(levels: list[DemoLevel]) -> Iterator[tuple[str, str, list[Plan]]]:
    """(agent, version, plans) of every demo card, in play order (built lazily: BFS work)."""
    yield "Crate Whisperer", "1.0", seed_example_plans(levels)
    yield "Cherry Picker", "0.1", ten_of_ten_plans(levels)
    yield "Deep Planner", "1.0", planner_plans(levels, solved=40, waste=6, deadlocks=4)
    yield "Deep Planner", "1.1", planner_plans(levels, solved=52, waste=3, deadlocks=2)
    yield "Greedy Pusher", "2.3", planner_plans(levels, solved=31, waste=0, deadlocks=20)


# ------------------------------------------------------------------ loading


def demo_levels(release: Release) -> list[DemoLevel]:
    rows = release.scorecard_levels.order_by("level_id").values_list("level_id", "xsb", "optimal_len")
    return [DemoLevel(level_id, parse_xsb(xsb), optimal) for level_id, xsb, optimal in rows]


def scorecard_release_ensure() -> Release:
    """The demo benchmark, its published release and hidden level set, synced from
    examples/demo-scorecard through the registry's release_sync (idempotent)."""

    return release_sync(manifest=EXAMPLE_DIR).release


def demo_user(username: str) -> Any:
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def play_card(*, user: Any, agent: str, version: str, plans: list[Plan]) -> int:
    """Open a card, play ``plans`` through the services, close it; returns the card id."""
    card = card_open(user=user, api_key=None, benchmark_slug=BENCHMARK_SLUG, agent_name=agent, agent_version=version)
    for plan in plans:
        card_episode_reset(card_id=card.pk, user=user, level_id=plan.level_id)
        if plan.actions:
            card_episode_play(card_id=card.pk, user=user, level_id=plan.level_id, actions=plan.actions)
    card_close(card_id=card.pk, user=user)
    return card.pk


def load_scorecard_demo(*, stdout: Any) -> None:
    """Sync the demo release and play every demo card that is not played yet."""
    release = scorecard_release_ensure()
    user = demo_user(DEMO_USERNAME)
    levels = demo_levels(release)
    played = set(
        Card.objects.filter(owner=user, release=release, status=Card.Status.CLOSED).values_list(
            "agent_version__agent__name", "agent_version__version"
        )
    )
    for agent, version, plans in demo_cards(levels):
        if (agent, version) in played:
            continue
        card_id = play_card(user=user, agent=agent, version=version, plans=plans)
        stdout.write(f"scorecard {agent} {version}: card {card_id} played and closed\n")
    stdout.write(f"scorecard demo: {release} with {release.scorecard_levels.count()} hidden levels\n")

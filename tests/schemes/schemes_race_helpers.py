"""Helpers of the race tests: outcomes, signed race_run bundles, whole races."""

from __future__ import annotations

from scoring.race import TaskOutcome
from submissions.demo_loaders.scheme_bundles import race_run_members

RACE_TASKS = [f"t{index:02d}" for index in range(10)]


def accepted(task_id: str, reward: float = 1.0) -> TaskOutcome:
    return TaskOutcome(task_id=task_id, order_placed=True, verdict_status="accepted", reward=reward)


def rejected(task_id: str) -> TaskOutcome:
    return TaskOutcome(task_id=task_id, order_placed=True, verdict_status="rejected", reward=0.0)


def env_error(task_id: str) -> TaskOutcome:
    return TaskOutcome(task_id=task_id, order_placed=False, env_error=True)


def scoring_outcomes(score: float, tasks: list[str] = RACE_TASKS) -> list[TaskOutcome]:
    """Full reward on the first round(score * n) tasks, a rejected order on the rest."""
    wins = round(score * len(tasks))
    return [accepted(task) if index < wins else rejected(task) for index, task in enumerate(tasks)]


def members(
    *, validator, key, agent: str, version: str, outcomes, race: int | None, tasks=RACE_TASKS, claimed=None
) -> dict[str, bytes]:
    return race_run_members(
        benchmark="shop-race",
        release="q1",
        race=race,
        validator=validator.slug,
        agent=agent,
        version=version,
        outcomes=outcomes,
        expected_task_ids=tasks,
        key=key,
        claimed=claimed,
    )

"""Race scoring (seed 002 "Scoring").

Four layers, each a named function:

1. task rewards -- :func:`failure_category`, :func:`paid_reward`;
2. validator runs and the raw race score -- :func:`run_score`,
   :func:`is_infrastructure_failure`, :func:`race_score`;
3. the per-race difficulty adjustment -- :func:`field_baseline`,
   :func:`race_delta`;
4. the three-race Overall -- :func:`overall`, :func:`top_agent`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scoring.validate import fail, finite, non_negative, positive_int, unit_interval

__all__ = [
    "ACCEPTED",
    "AGENT_ERROR",
    "DID_NOT_FINISH",
    "ENVIRONMENT_ERROR",
    "FAILURE_CATEGORIES",
    "INFRASTRUCTURE_FAILURE_SHARE",
    "MARGIN_TOLERANCE",
    "NO_ORDER",
    "OVERALL_WINDOW",
    "PARTIAL_ORDER",
    "REJECTED",
    "REJECTED_ORDER",
    "RUN_FAILED",
    "RUN_INFRASTRUCTURE_FAILURE",
    "RUN_OK",
    "TIE_DECIMALS",
    "TIME_LIMIT",
    "VERIFIER_ERROR",
    "FailureCategory",
    "RaceEntry",
    "RunScore",
    "TaskOutcome",
    "competition_ranks",
    "failure_category",
    "field_baseline",
    "is_infrastructure_failure",
    "overall",
    "paid_reward",
    "race_delta",
    "race_score",
    "run_score",
    "tie_key",
    "top_agent",
]

ACCEPTED = "accepted"
REJECTED = "rejected"
VERDICT_STATUSES = (ACCEPTED, REJECTED)

#: "more than 30% of a run's tasks" ended in an environment or verifier error
INFRASTRUCTURE_FAILURE_SHARE = 0.3
#: Overall averages the three most recent races
OVERALL_WINDOW = 3
#: float-noise guard for the challenge margin (0.8 - 0.7 > 0.1 in binary)
MARGIN_TOLERANCE = 1e-12
# Scores equal to this many decimals are equal: a mean's binary rounding must not split a tie
# (runs 0.1 and 0.2 average 0.15000000000000002, runs 0.0 and 0.3 exactly 0.15). Rewards lie
# in [0, 1], so twelve decimals is far finer than any difference a race can make, and far
# coarser than a mean's float noise (about 1e-16): the margin's guard above, as a rounding.
TIE_DECIMALS = 12

RUN_OK = "ok"
RUN_FAILED = "failed"
RUN_INFRASTRUCTURE_FAILURE = "infrastructure_failure"


@dataclass(frozen=True)
class FailureCategory:
    """A failure category: a stable code, a fixed message, and whether it pays 0."""

    code: str
    message: str
    zero_reward: bool


ENVIRONMENT_ERROR = FailureCategory(
    "environment_error", "The environment failed during this episode, so it scores 0 in this run.", True
)
VERIFIER_ERROR = FailureCategory(
    "verifier_error", "The verifier failed while grading this episode, so it scores 0 in this run.", True
)
AGENT_ERROR = FailureCategory("agent_error", "The agent crashed or raised an error, so the episode scores 0.", True)
DID_NOT_FINISH = FailureCategory(
    "did_not_finish", "The step limit ended the episode before an order was placed, so it scores 0.", True
)
TIME_LIMIT = FailureCategory(
    "time_limit", "The run's time or inference budget ran out before this task finished, so it scores 0.", True
)
NO_ORDER = FailureCategory("no_order", "The episode ended without an order, so it scores 0.", True)
REJECTED_ORDER = FailureCategory("rejected_order", "The verifier rejected the order, so it scores 0.", True)
PARTIAL_ORDER = FailureCategory(
    "partial_order", "The order was accepted but did not fully satisfy the request, so it earns partial reward.", False
)

#: The fixed, ordered list: an episode's category is the first that applies.
FAILURE_CATEGORIES: tuple[FailureCategory, ...] = (
    ENVIRONMENT_ERROR,
    VERIFIER_ERROR,
    AGENT_ERROR,
    DID_NOT_FINISH,
    TIME_LIMIT,
    NO_ORDER,
    REJECTED_ORDER,
    PARTIAL_ORDER,
)


@dataclass(frozen=True)
class TaskOutcome:
    """The runtime receipt of one task episode in one validator run.

    ``verdict_status`` is the verifier's verdict on the order ("accepted",
    "rejected", or None when no order was graded); ``reward`` the verifier's
    reward in [0, 1] for an accepted order.  ``step_limit_hit``: the step
    limit ended the episode; ``time_limit_hit``: the run's time or inference
    budget ran out before this episode finished.  The paid reward and the
    failure category are derived (:func:`paid_reward`,
    :func:`failure_category`), never taken from the agent.
    """

    task_id: str
    order_placed: bool
    verdict_status: str | None = None
    reward: float | None = None
    agent_error: bool = False
    step_limit_hit: bool = False
    time_limit_hit: bool = False
    env_error: bool = False
    verifier_error: bool = False

    @property
    def failure(self) -> FailureCategory | None:
        """Shortcut for :func:`failure_category`."""
        return failure_category(self)

    @property
    def paid_reward(self) -> float:
        """Shortcut for :func:`paid_reward`."""
        return paid_reward(self)


def _check_outcome(outcome: TaskOutcome) -> float | None:
    """Validate an outcome's fields; return its reward."""
    where = f"race task {outcome.task_id!r}"
    for name in ("order_placed", "agent_error", "step_limit_hit", "time_limit_hit", "env_error", "verifier_error"):
        if not isinstance(getattr(outcome, name), bool):
            raise fail(where, name, "a bool", getattr(outcome, name))
    status = outcome.verdict_status
    if status is not None and status not in VERDICT_STATUSES:
        raise fail(where, "verdict_status", "'accepted', 'rejected' or None", status)
    reward = None if outcome.reward is None else unit_interval(where, "reward", outcome.reward)
    if status is not None and not outcome.order_placed:
        raise fail(where, "verdict_status", "None when no order was placed", status)
    if status == ACCEPTED and reward is None:
        raise fail(where, "reward", "a finite number in [0, 1] for an accepted order", None)
    return reward


def failure_category(outcome: TaskOutcome) -> FailureCategory | None:
    """The first category of :data:`FAILURE_CATEGORIES` that applies.

    None when the order was accepted with full reward (1.0).  An order that
    was placed, raised no error and still has no verdict is inconsistent and
    rejected.
    """
    reward = _check_outcome(outcome)
    if outcome.env_error:
        return ENVIRONMENT_ERROR
    if outcome.verifier_error:
        return VERIFIER_ERROR
    if outcome.agent_error:
        return AGENT_ERROR
    if outcome.step_limit_hit and not outcome.order_placed:
        return DID_NOT_FINISH
    # Seed 002: "finished episodes keep their rewards and unfinished tasks score 0". A graded
    # order is a finished episode: a budget that ran out afterwards takes nothing from it.
    if outcome.time_limit_hit and not (outcome.order_placed and outcome.verdict_status is not None):
        return TIME_LIMIT
    if not outcome.order_placed:
        return NO_ORDER
    if outcome.verdict_status == REJECTED:
        return REJECTED_ORDER
    if outcome.verdict_status is None:
        raise fail(
            f"race task {outcome.task_id!r}", "verdict_status", "'accepted' or 'rejected' for a graded order", None
        )
    if reward is not None and reward < 1.0:
        return PARTIAL_ORDER
    return None


def paid_reward(outcome: TaskOutcome) -> float:
    """The reward the run is paid for a task: 0 for every zeroing category."""
    category = failure_category(outcome)
    if category is not None and category.zero_reward:
        return 0.0
    return outcome.reward if outcome.reward is not None else 0.0


# ------------------------------------------------------------ validator runs


@dataclass(frozen=True)
class RunScore:
    """A validator run's result: status and (for "ok" runs) its score."""

    status: str
    score: float | None
    expected: int
    infrastructure_errors: int


def _index_outcomes(
    outcomes: Iterable[TaskOutcome], expected_task_ids: Iterable[str], run_id: str
) -> tuple[list[str], dict[str, TaskOutcome]]:
    where = f"race run {run_id!r}"
    expected: list[str] = []
    for task_id in expected_task_ids:
        if not isinstance(task_id, str) or not task_id:
            raise fail(where, "expected task id", "a non-empty string", task_id)
        if task_id in expected:
            raise fail(where, "expected task id", "unique", task_id)
        expected.append(task_id)
    if not expected:
        raise fail(where, "expected task set", "non-empty", [])
    wanted = set(expected)
    by_task: dict[str, TaskOutcome] = {}
    for outcome in outcomes:
        if outcome.task_id not in wanted:
            raise fail(where, "outcome task_id", "a task of the run's expected task set", outcome.task_id)
        if outcome.task_id in by_task:
            raise fail(where, "outcome task_id", "reported once", outcome.task_id)
        by_task[outcome.task_id] = outcome
    return expected, by_task


def _infrastructure_errors(by_task: Mapping[str, TaskOutcome]) -> int:
    return sum(1 for outcome in by_task.values() if outcome.env_error or outcome.verifier_error)


def _over_share(errors: int, total: int) -> bool:
    # errors / total > 0.3, in exact integer arithmetic
    return 10 * errors > 3 * total


def is_infrastructure_failure(
    outcomes: Iterable[TaskOutcome], expected_task_ids: Iterable[str], *, run_id: str = "run"
) -> bool:
    """True when MORE than 30% of the expected tasks ended in an environment
    or verifier error (exactly 30% is not a failure)."""
    expected, by_task = _index_outcomes(outcomes, expected_task_ids, run_id)
    return _over_share(_infrastructure_errors(by_task), len(expected))


def run_score(
    outcomes: Iterable[TaskOutcome] | None,
    expected_task_ids: Iterable[str],
    *,
    run_id: str = "run",
) -> RunScore:
    """A validator run's score: mean paid reward over the whole expected set.

    Missing (unfinished, never reported) tasks count 0.  No output at all
    (None or no outcome) is a failed run without a score; more than 30%
    infrastructure errors is an infrastructure failure without a score.
    """
    expected, by_task = _index_outcomes(outcomes or (), expected_task_ids, run_id)
    errors = _infrastructure_errors(by_task)
    if not by_task:
        return RunScore(status=RUN_FAILED, score=None, expected=len(expected), infrastructure_errors=0)
    if _over_share(errors, len(expected)):
        return RunScore(
            status=RUN_INFRASTRUCTURE_FAILURE, score=None, expected=len(expected), infrastructure_errors=errors
        )
    paid = [paid_reward(by_task[task_id]) for task_id in expected if task_id in by_task]
    return RunScore(
        status=RUN_OK, score=math.fsum(paid) / len(expected), expected=len(expected), infrastructure_errors=errors
    )


def race_score(runs: Iterable[RunScore]) -> float | None:
    """Raw race (or qualifying) score: mean of the included successful runs.

    Failed and infrastructure-failed runs are left out; None if none is left.
    """
    scores: list[float] = []
    for index, run in enumerate(runs):
        if run.status == RUN_OK:
            scores.append(unit_interval(f"validator run {index}", "score", run.score))
        elif run.status not in (RUN_FAILED, RUN_INFRASTRUCTURE_FAILURE):
            raise fail(f"validator run {index}", "status", "'ok', 'failed' or 'infrastructure_failure'", run.status)
    return math.fsum(scores) / len(scores) if scores else None


# ------------------------------------------------------- difficulty and Overall


def field_baseline(scores: Iterable[float]) -> float | None:
    """A race's field baseline: the top-half average of the agents' raw scores.

    The top half of ``n`` scores is the ``ceil(n / 2)`` highest (odd fields
    include the median; one agent is its own baseline).  Ties at the cut do
    not matter because only values are averaged.  None for an empty field.
    """
    values = sorted(
        (unit_interval("race field", f"scores[{index}]", score) for index, score in enumerate(scores)), reverse=True
    )
    if not values:
        return None
    top = values[: math.ceil(len(values) / 2)]
    return math.fsum(top) / len(top)


def race_delta(raw_score: float, baseline: float) -> float:
    """The "vs Field" result of one race: ``raw_score - baseline``."""
    return unit_interval("race", "raw_score", raw_score) - unit_interval("race", "baseline", baseline)


@dataclass(frozen=True)
class RaceEntry:
    """One race an agent version ran: the race number, raw score and baseline."""

    race: int
    raw_score: float
    baseline: float

    @property
    def delta(self) -> float:
        """:func:`race_delta` of this entry."""
        return race_delta(self.raw_score, self.baseline)


def overall(
    history: Iterable[RaceEntry],
    *,
    current_race: int,
    launch_race: int = 1,
    window: int = OVERALL_WINDOW,
) -> float | None:
    """An agent version's Overall score after race ``current_race``.

    The window is the last ``W`` races *held*, ``W = min(window,
    current_race - launch_race + 1)`` (the launch ramp: 1, 2, then 3
    races).  Overall = sum of the version's deltas in that window / ``W``;
    window races it did not run count as delta 0 (the damping of new
    versions, and the decay of versions that stop racing).  Races before
    launch are ignored (no back-filling).  None when the version ran no race
    in the window (it is off the Overall board).
    """
    now = positive_int("overall", "current_race", current_race)
    start = positive_int("overall", "launch_race", launch_race)
    size = positive_int("overall", "window", window)
    if now < start:
        raise fail("overall", "current_race", f"at least launch_race={start}", now)
    span = min(size, now - start + 1)
    first = now - span + 1
    seen: set[int] = set()
    recent: list[float] = []
    for entry in history:
        race = positive_int("overall", "race", entry.race)
        if race > now:
            raise fail(f"overall race {race}", "race", f"at most current_race={now}", race)
        if race in seen:
            raise fail(f"overall race {race}", "race", "listed once", race)
        seen.add(race)
        delta = entry.delta
        if race >= first:
            recent.append(delta)
    if not recent:
        return None
    return math.fsum(recent) / span


def tie_key(score: float) -> float:
    """The value two scores are compared by when ranking: equal keys share a rank (TIE_DECIMALS).
    Sort by it too, so that equals are listed by their tie-break (a name) and not by float noise."""
    return round(score, TIE_DECIMALS)


def competition_ranks(scores: Sequence[float]) -> list[int]:
    """The rank of each of ``scores`` (sorted best first by :func:`tie_key`): 1 plus how many
    score strictly better, so equal scores share a rank and the next one skips ("1, 2, 2, 4").
    Seed 002 ranks by score and names no tie-break; any order among equals (by name, by id)
    would be one the scores do not make. Equal means equal to TIE_DECIMALS decimals."""
    keys = [tie_key(score) for score in scores]
    ranks: list[int] = []
    for position, key in enumerate(keys):
        if position and key > keys[position - 1]:
            raise ValueError("competition_ranks: scores must be sorted best (highest) first")
        ranks.append(ranks[-1] if position and key == keys[position - 1] else position + 1)
    return ranks


def top_agent(
    overalls: Mapping[str, float | None],
    holder: str | None,
    margin: float,
) -> str | None:
    """Who holds the top spot (seed 002 "the challenge margin").

    The best challenger (highest Overall, ties to the smallest id) takes the
    spot only when its Overall beats the holder's by MORE than ``margin``
    (plus :data:`MARGIN_TOLERANCE` against binary float noise).  With no
    holder, or a holder without an Overall, the best agent takes it.  None
    when nobody has an Overall.
    """
    gap = non_negative("top_agent", "margin", margin)
    scored = {
        agent: finite("top_agent", f"overalls[{agent!r}]", value)
        for agent, value in overalls.items()
        if value is not None
    }
    if not scored:
        return None
    ranked = sorted(scored, key=lambda agent: (-tie_key(scored[agent]), agent))
    if holder is None or holder not in scored:
        return ranked[0]
    challengers = [agent for agent in ranked if agent != holder]
    if not challengers:
        return holder
    best = challengers[0]
    if scored[best] - scored[holder] > gap + MARGIN_TOLERANCE:
        return best
    return holder

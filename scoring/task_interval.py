"""A seeded bootstrap interval of one task's final score (pure; no Django).

The run intervals (scoring.uncertainty) resample tasks and episodes for the aggregates;
comparing two runs task by task needs each task's own interval: its episodes resampled
with replacement and re-scored by the same rule as the verifier
(scoring.gap.aggregate_episodes, then scoring.gap.task_score), so the interval can never
disagree with how the final score itself was computed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from scoring.gap import TaskSpec, aggregate_episodes, task_score
from scoring.uncertainty import DEFAULT_LEVEL, percentile_interval

# Fewer than a run's 1,000: this one is computed when a page asks for it, and a task's
# interval is one level of resampling, not two.
TASK_RESAMPLES = 400
TASK_SEED = 0


def task_final_interval(
    spec: TaskSpec,
    episodes: Sequence[Any],
    faithful: bool | None,
    *,
    resamples: int = TASK_RESAMPLES,
    seed: int = TASK_SEED,
    level: float = DEFAULT_LEVEL,
) -> tuple[float, float] | None:
    """The percentile interval of the task's final score over ``resamples`` episode
    resamples (``episodes`` carry ``metric``, ``rates`` and ``aborted``); None when the task
    has no episode, or no resample reports a metric."""
    count = len(episodes)
    if count == 0 or resamples <= 0:
        return None
    rng = random.Random(seed)
    finals: list[float] = []
    for _ in range(resamples):
        drawn = [episodes[i] for i in rng.choices(range(count), k=count)]
        aggregate = aggregate_episodes(drawn, spec.penalties, slug=spec.slug)
        if aggregate.measured is None:
            continue  # the task would be missing in this replicate, as in scoring.gap.score_run
        score = task_score(
            measured=aggregate.measured,
            paper_value=spec.paper_value,
            direction=spec.direction,
            cap=spec.cap,
            penalties=spec.penalties,
            rates=aggregate.rates,
            genre=spec.genre,
            faithful=faithful,
            slug=spec.slug,
        )
        finals.append(score.final)
    interval = percentile_interval(finals, level)
    return None if interval is None else (interval.low, interval.high)

"""scoring.task_interval: one task's final-score bootstrap interval, by the verifier's rule."""

from __future__ import annotations

import random

import pytest

from scoring.gap import Episode, TaskSpec, aggregate_episodes, task_score
from scoring.proportion import intervals_overlap, wilson_interval
from scoring.task_interval import task_final_interval

SPEC = TaskSpec(
    slug="lift",
    genre="reproduction",
    direction="higher_is_better",
    paper_value=0.7,
    cap=1.5,
    penalties={"collision_rate": 0.05},
)


def _episodes(seed: int, mean: float, count: int = 100) -> list[Episode]:
    rng = random.Random(seed)
    return [
        Episode(
            metric=min(1.0, max(0.0, rng.gauss(mean, 0.1))),
            rates={"collision_rate": rng.random() * 0.02},
            aborted=False,
        )
        for _ in range(count)
    ]


def _final(episodes: list[Episode], faithful: bool | None) -> float:
    aggregate = aggregate_episodes(episodes, SPEC.penalties)
    return task_score(
        measured=aggregate.measured,
        paper_value=SPEC.paper_value,
        direction=SPEC.direction,
        cap=SPEC.cap,
        penalties=SPEC.penalties,
        rates=aggregate.rates,
        genre=SPEC.genre,
        faithful=faithful,
    ).final


def test_the_interval_contains_the_final_score_and_is_the_same_for_the_same_seed():
    episodes = _episodes(1, 0.6)
    low, high = task_final_interval(SPEC, episodes, True)
    assert low < _final(episodes, True) < high
    assert task_final_interval(SPEC, episodes, True) == (low, high)


def test_identical_episodes_give_a_point_interval_at_the_final_score():
    episodes = [Episode(metric=0.63, rates={"collision_rate": 0.02}, aborted=False)] * 20
    final = _final(episodes, True)
    assert task_final_interval(SPEC, episodes, True) == pytest.approx((final, final))


def test_an_unfaithful_reproduction_is_zero_in_every_resample():
    assert task_final_interval(SPEC, _episodes(2, 0.6), False) == (0.0, 0.0)


def test_no_episodes_or_no_metric_gives_no_interval():
    assert task_final_interval(SPEC, [], True) is None
    assert task_final_interval(SPEC, [Episode(metric=None, rates={}, aborted=True)] * 5, True) is None


def test_two_clearly_different_runs_intervals_do_not_overlap():
    assert (
        intervals_overlap(
            task_final_interval(SPEC, _episodes(3, 0.3), True), task_final_interval(SPEC, _episodes(4, 0.65), True)
        )
        is False
    )


def test_the_wilson_interval_stays_inside_0_1_and_keeps_a_width_at_100_percent():
    low, high = wilson_interval(1.0, 100)
    assert 0.95 < low < 1.0 and high == 1.0
    assert wilson_interval(0.0, 10)[0] == 0.0
    assert wilson_interval(None, 10) is None and wilson_interval(0.5, 0) is None
    # 50 of 100: the textbook Wilson interval.
    assert wilson_interval(0.5, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)


def test_the_wilson_interval_is_exactly_0_and_1_at_its_edges():
    assert wilson_interval(0.0, 100)[0] == 0.0
    assert wilson_interval(1.0, 10)[1] == 1.0
    low, high = wilson_interval(1.0, 100)
    assert (low, high) == (1.0 - wilson_interval(0.0, 100)[1], 1.0)

"""Seeded bootstrap confidence intervals."""

from __future__ import annotations

import random

import pytest

from scoring.errors import ScoringError
from scoring.gap import (
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    OPEN,
    REPRODUCTION,
    Episode,
    ReleaseSpec,
    TaskResult,
    TaskSpec,
    score_run,
)
from scoring.scorecard import Scorecard
from scoring.uncertainty import percentile_interval, run_intervals, success_rate_interval


def release(policy: str = "exclude") -> ReleaseSpec:
    specs = [
        TaskSpec("a", REPRODUCTION, HIGHER_IS_BETTER, 0.7, penalties={"collision_rate": 0.05}),
        TaskSpec("b", OPEN, LOWER_IS_BETTER, 2.0),
        TaskSpec("c", OPEN, HIGHER_IS_BETTER, 0.5),
        TaskSpec("d", REPRODUCTION, HIGHER_IS_BETTER, 0.5),
    ]
    return ReleaseSpec({spec.slug: spec for spec in specs}, missing_task_policy=policy)


def results(seed: int = 1) -> dict[str, TaskResult]:
    rng = random.Random(seed)
    return {
        "a": TaskResult([Episode(rng.random(), {"collision_rate": rng.random() * 0.04}) for _ in range(50)], True),
        "b": TaskResult([Episode(1.0 + rng.random() * 3) for _ in range(30)], None),
        "c": TaskResult([Episode(rng.random() if i % 3 else None) for i in range(300)], None),
    }


def card(solved: int, episodes: int = 100) -> Scorecard:
    return Scorecard(episodes, solved, solved / episodes, None, None, 0.0, 0)


def test_the_same_seed_gives_identical_intervals() -> None:
    assert run_intervals(release(), results(), seed=7) == run_intervals(release(), results(), seed=7)


def test_a_different_seed_gives_different_intervals() -> None:
    assert run_intervals(release(), results(), seed=7) != run_intervals(release(), results(), seed=8)


def test_the_run_interval_brackets_the_point_estimate() -> None:
    breakdown = score_run(release(), results())
    intervals = run_intervals(release(), results())
    for name, estimate in [("overall", breakdown.overall), ("open", breakdown.open)]:
        interval = getattr(intervals, name)
        assert estimate is not None
        assert interval.low <= estimate <= interval.high, name


def test_a_run_interval_defaults_to_a_thousand_resamples_at_95_percent() -> None:
    interval = run_intervals(release(), results()).overall
    assert interval is not None
    assert (interval.level, interval.resamples) == (0.95, 1000)


def test_a_single_covered_reproduction_task_still_gets_an_interval_from_its_episodes() -> None:
    interval = run_intervals(release(), results()).reproduction
    assert interval is not None
    assert interval.low < interval.high


def test_an_unfaithful_reproduction_has_a_zero_width_interval_at_zero() -> None:
    unfaithful = results() | {"a": TaskResult(results()["a"].episodes, faithful=False)}
    interval = run_intervals(release(), unfaithful).reproduction
    assert interval is not None
    assert (interval.low, interval.high) == (0.0, 0.0)


def test_a_category_without_covered_tasks_has_no_interval_under_the_exclude_policy() -> None:
    only_open = {slug: result for slug, result in results().items() if slug != "a"}
    assert run_intervals(release(), only_open).reproduction is None


def test_the_zero_policy_resamples_missing_tasks_as_zeros() -> None:
    only_open = {slug: result for slug, result in results().items() if slug != "a"}
    interval = run_intervals(release("zero"), only_open).reproduction
    assert interval is not None
    assert (interval.low, interval.high) == (0.0, 0.0)


def test_an_empty_run_has_no_intervals() -> None:
    intervals = run_intervals(release(), {})
    assert intervals.to_dict() == {"overall": None, "reproduction": None, "open": None}


def test_run_intervals_reject_bad_numbers_like_score_run() -> None:
    bad = {"b": TaskResult([Episode(float("nan"))], None)}
    with pytest.raises(ScoringError) as error:
        run_intervals(release(), bad)
    assert str(error.value) == "task 'b': episodes[0].metric must be a finite number, got nan"


def test_run_intervals_reject_an_unknown_task() -> None:
    with pytest.raises(ScoringError) as error:
        run_intervals(release(), {"zzz": TaskResult([Episode(1.0)], None)})
    assert str(error.value) == "run: task must be a slug of the release's required task set, got 'zzz'"


def test_a_success_rate_interval_brackets_the_success_rate() -> None:
    interval = success_rate_interval(card(31))
    assert interval.low < 0.31 < interval.high
    assert interval.low >= 0.2 and interval.high <= 0.42


def test_a_success_rate_interval_is_deterministic_for_a_seed() -> None:
    assert success_rate_interval(card(31), seed=3) == success_rate_interval(card(31), seed=3)


def test_a_card_with_no_solves_has_a_zero_interval() -> None:
    interval = success_rate_interval(card(0))
    assert (interval.low, interval.high) == (0.0, 0.0)


def test_a_large_hidden_set_uses_the_general_sampler() -> None:
    interval = success_rate_interval(card(500, episodes=1000), resamples=200)
    assert interval.low < 0.5 < interval.high


def test_percentiles_use_nearest_ranks() -> None:
    interval = percentile_interval([float(i) for i in range(1000)])
    assert interval is not None
    assert (interval.low, interval.high) == (25.0, 974.0)


def test_a_level_outside_zero_and_one_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        success_rate_interval(card(1), level=1.0)
    assert str(error.value) == "bootstrap: level must be a number strictly between 0 and 1, got 1.0"


def test_zero_resamples_are_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        success_rate_interval(card(1), resamples=0)
    assert str(error.value) == "bootstrap: resamples must be an integer >= 1, got 0"


def _float_by_float(column: list[float], draws: bytes, n: int) -> list[float]:
    return [sum(column[i] for i in draws[start : start + n]) for start in range(0, len(draws), n)]


@pytest.mark.parametrize("values", [[0.0, 1.0], [0.0, 1.0, 2.0, 255.0], [0.0]])
def test_whole_number_columns_sum_exactly_as_adding_the_floats_in_draw_order(values: list[float]) -> None:
    from scoring.uncertainty import _chunk_sums, _small_whole_numbers

    rng = random.Random(7)
    column = [rng.choice(values) for _ in range(97)]
    draws = bytes(rng.randrange(97) for _ in range(97 * 50))
    assert _small_whole_numbers(column) is not None
    sums = _chunk_sums(column, draws, 97)
    assert sums == _float_by_float(column, draws, 97)
    assert all(type(total) is float for total in sums)


@pytest.mark.parametrize("column", [[0.0, 0.5], [1.0, 256.0], [-1.0, 1.0], [0.013, 0.0]])
def test_columns_that_are_not_small_whole_numbers_are_added_as_floats(column: list[float]) -> None:
    from scoring.uncertainty import _chunk_sums, _small_whole_numbers

    draws = bytes([0, 1, 1, 0, 1, 1])
    assert _small_whole_numbers(column) is None
    assert _chunk_sums(column, draws, 2) == _float_by_float(column, draws, 2)


def test_run_intervals_are_the_same_with_and_without_the_whole_number_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import scoring.uncertainty as uncertainty

    rng = random.Random(3)
    release = ReleaseSpec(
        tasks={
            "binary": TaskSpec("binary", REPRODUCTION, HIGHER_IS_BETTER, 0.7, 1.5, {"collision_rate": 0.05}),
            "graded": TaskSpec("graded", OPEN, HIGHER_IS_BETTER, 2.0, 1.5, {}),
        },
        missing_task_policy="exclude",
    )
    results = {
        "binary": TaskResult(
            [Episode(float(rng.random() < 0.6), {"collision_rate": 0.0}, False) for _ in range(100)], True
        ),
        "graded": TaskResult([Episode(rng.random() * 3, {}, rng.random() < 0.1) for _ in range(60)], None),
    }
    fast = run_intervals(release, results, resamples=300, seed=5)
    monkeypatch.setattr(uncertainty, "_small_whole_numbers", lambda column: None)
    assert run_intervals(release, results, resamples=300, seed=5) == fast

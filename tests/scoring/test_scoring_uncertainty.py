"""Seeded bootstrap confidence intervals."""

from __future__ import annotations

import math
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
from scoring.uncertainty import (
    pack_run_columns,
    percentile_interval,
    run_intervals,
    run_intervals_from_columns,
    task_columns,
    unpack_run_columns,
)


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


def test_percentiles_use_nearest_ranks() -> None:
    interval = percentile_interval([float(i) for i in range(1000)])
    assert interval is not None
    assert (interval.low, interval.high) == (25.0, 974.0)


def test_a_level_outside_zero_and_one_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        run_intervals(release(), results(), level=1.0)
    assert str(error.value) == "bootstrap: level must be a number strictly between 0 and 1, got 1.0"


def test_zero_resamples_are_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        run_intervals(release(), results(), resamples=0)
    assert str(error.value) == "bootstrap: resamples must be an integer >= 1, got 0"


def _replicate_final(task, episodes: list, result: TaskResult) -> float | None:
    """One episode resample of a task scored by score_run's own functions; None if nothing was measured."""
    from scoring.gap import aggregate_episodes, task_score

    aggregate = aggregate_episodes(episodes, task.penalties)
    if aggregate.measured is None:
        return None
    return task_score(
        measured=aggregate.measured,
        paper_value=task.paper_value,
        direction=task.direction,
        cap=task.cap,
        penalties=task.penalties,
        rates=aggregate.rates,
        genre=task.genre,
        faithful=result.faithful,
    ).final


def _reference_intervals(spec: ReleaseSpec, run: dict[str, TaskResult], resamples: int, seed: int) -> dict:
    """The documented estimator written the slow, obvious way, replaying the same random stream:
    every task-level resample, and every drawn task's episode resample, scored by score_run's
    own functions (aggregate_episodes, task_score) one at a time."""
    import numpy as np

    from scoring.gap import EXCLUDE, aggregate_episodes

    rng = np.random.default_rng(seed)
    covered = sorted(slug for slug in run if aggregate_episodes(run[slug].episodes, {}).measured is not None)
    zero = spec.missing_task_policy != EXCLUDE
    overall = sorted(spec.tasks) if zero else covered
    pools = {"overall": overall}
    for genre in (REPRODUCTION, OPEN):
        pools[genre] = [slug for slug in overall if spec.tasks[slug].genre == genre]
    draws = {name: rng.integers(0, len(pool), size=resamples * len(pool)) for name, pool in pools.items() if pool}
    usage = {
        slug: max(list(draws[name]).count(pool.index(slug)) for name, pool in pools.items() if pool and slug in pool)
        for slug in covered
    }
    replicates: dict[str, list[float | None]] = {}
    for slug in covered:
        episodes = run[slug].episodes
        picks = rng.integers(0, len(episodes), size=(usage[slug], len(episodes)), dtype=np.uint16)
        replicates[slug] = [_replicate_final(spec.tasks[slug], [episodes[i] for i in row], run[slug]) for row in picks]
    intervals = {}
    for name, pool in pools.items():
        if not pool:
            intervals[name] = None
            continue
        used = dict.fromkeys(pool, 0)
        stats = []
        for start in range(0, resamples * len(pool), len(pool)):
            block = []
            for position in draws[name][start : start + len(pool)]:
                slug = pool[position]
                block.append(replicates[slug][used[slug]] if slug in replicates else None)
                used[slug] += 1
            present = [value for value in block if value is not None]
            if zero:
                stats.append(sum(present) / len(pool))
            elif present:
                stats.append(sum(present) / len(present))
        intervals[name] = percentile_interval(stats)
    return intervals


@pytest.mark.parametrize("policy", ["exclude", "zero"])
def test_the_vectorised_intervals_equal_the_estimator_written_out_resample_by_resample(policy: str) -> None:
    spec = release(policy)
    run = results(4)
    fast = run_intervals(spec, run, resamples=200, seed=9)
    slow = _reference_intervals(spec, run, 200, 9)
    for name, interval in (("overall", fast.overall), ("reproduction", fast.reproduction), ("open", fast.open)):
        expected = slow[name]
        assert (interval is None) == (expected is None), name
        if interval is not None:
            assert interval.low == pytest.approx(expected.low, rel=1e-12, abs=1e-12), name
            assert interval.high == pytest.approx(expected.high, rel=1e-12, abs=1e-12), name


def stored_columns(spec: ReleaseSpec, run: dict[str, TaskResult]) -> dict:
    """The run's episodes as verification stores them, read back."""
    packed = pack_run_columns({slug: task_columns(run[slug], sorted(spec.tasks[slug].penalties)) for slug in run})
    columns = unpack_run_columns(packed)
    assert columns is not None
    return columns


@pytest.mark.parametrize("policy", ["exclude", "zero"])
def test_intervals_from_stored_episode_columns_equal_those_from_the_episodes(policy: str) -> None:
    spec = release(policy)
    run = results(6)
    from_columns = run_intervals_from_columns(spec, stored_columns(spec, run), resamples=300, seed=3)
    assert from_columns == run_intervals(spec, run, resamples=300, seed=3)


def test_stored_episode_columns_keep_missing_metrics_rates_and_the_faithfulness_verdict() -> None:
    spec = release()
    run = results(2)
    columns = stored_columns(spec, run)
    assert columns["a"].metrics == ("collision_rate",) and columns["a"].faithful is True
    assert columns["b"].faithful is None
    c = columns["c"].values[0].tolist()
    assert [value != value for value in c] == [episode.metric is None for episode in run["c"].episodes]
    assert columns["a"].values[1].tolist() == [episode.rates["collision_rate"] for episode in run["a"].episodes]


@pytest.mark.parametrize(
    "blob", [b"", b"no header", b'{"v": 2, "tasks": []}\n', b'{"v": 1, "tasks": [["a", 3, [], true]]}\n12']
)
def test_bytes_that_are_not_a_packing_unpack_to_none(blob: bytes) -> None:
    assert unpack_run_columns(blob) is None


def test_stored_columns_whose_metrics_differ_from_the_release_are_rejected() -> None:
    spec = release()
    run = results(2)
    columns = stored_columns(spec, run)
    changed = ReleaseSpec(
        {**spec.tasks, "a": TaskSpec("a", REPRODUCTION, HIGHER_IS_BETTER, 0.7, penalties={"jerk": 0.1})},
        missing_task_policy="exclude",
    )
    with pytest.raises(ScoringError):
        run_intervals_from_columns(changed, columns, resamples=50)


def test_episode_metrics_summing_past_the_largest_double_give_finite_intervals_without_a_warning() -> None:
    """Replicates whose sums overflow clamp to the cap (or to 0, lower-is-better), as the run's
    own score does; nothing is raised or warned. Anchors below 1 make the gap's division overflow too."""
    import warnings

    spec = release()
    big = {
        slug: TaskResult(
            [Episode(1.7e308, dict.fromkeys(spec.tasks[slug].penalties, 0.0))] * 40
            + [Episode(0.5, dict.fromkeys(spec.tasks[slug].penalties, 0.0))] * 40,
            True,
        )
        for slug in spec.tasks
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        intervals = run_intervals(spec, big, resamples=200)
        scored = score_run(spec, big)
    for interval in (intervals.overall, intervals.reproduction, intervals.open):
        assert interval is not None and math.isfinite(interval.low) and math.isfinite(interval.high)
    assert math.isfinite(scored.overall)

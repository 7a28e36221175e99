"""Hypothesis properties of the scoring rules."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.compare import compare_claims, has_mismatch
from scoring.gap import (
    DIRECTIONS,
    GENRES,
    HIGHER_IS_BETTER,
    Episode,
    ReleaseSpec,
    TaskResult,
    TaskSpec,
    gap_score,
    macro_mean,
    score_run,
    task_score,
)
from scoring.race import RaceEntry, overall
from scoring.scorecard import Scorecard, ScorecardEpisode, rank_key, summarize

PROPERTY = settings(max_examples=200, deadline=None, database=None, derandomize=True)

measured_values = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
anchors = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False)
caps = st.floats(min_value=1.0, max_value=10.0, allow_nan=False)
rates = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)
limits = st.floats(min_value=1e-6, max_value=10.0, allow_nan=False)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
scores = st.floats(min_value=0.0, max_value=1.5, allow_nan=False)


@PROPERTY
@given(
    measured=measured_values,
    anchor=anchors,
    direction=st.sampled_from(DIRECTIONS),
    cap=caps,
    penalty=st.dictionaries(st.sampled_from(["collision", "torque"]), st.tuples(limits, st.none() | rates)),
    genre=st.sampled_from(GENRES),
    faithful=st.none() | st.booleans(),
)
def test_a_task_score_is_always_between_zero_and_the_cap(
    measured: float,
    anchor: float,
    direction: str,
    cap: float,
    penalty: dict[str, tuple[float, float | None]],
    genre: str,
    faithful: bool | None,
) -> None:
    result = task_score(
        measured=abs(measured),
        paper_value=anchor,
        direction=direction,
        cap=cap,
        penalties={metric: limit for metric, (limit, _) in penalty.items()},
        rates={metric: rate for metric, (_, rate) in penalty.items()},
        genre=genre,
        faithful=faithful,
    )
    for value in (result.gap, result.score, result.final):
        assert 0.0 <= value <= cap


@PROPERTY
@given(low=measured_values, high=measured_values, anchor=anchors, cap=caps)
def test_the_gap_score_never_drops_as_a_higher_is_better_metric_rises(
    low: float, high: float, anchor: float, cap: float
) -> None:
    low, high = sorted((low, high))
    assert gap_score(low, anchor, HIGHER_IS_BETTER, cap) <= gap_score(high, anchor, HIGHER_IS_BETTER, cap)


@PROPERTY
@given(low=st.floats(0.0, 1e6), high=st.floats(0.0, 1e6), anchor=anchors, cap=caps)
def test_the_gap_score_never_rises_as_a_lower_is_better_metric_rises(
    low: float, high: float, anchor: float, cap: float
) -> None:
    low, high = sorted((low, high))
    assert gap_score(low, anchor, "lower_is_better", cap) >= gap_score(high, anchor, "lower_is_better", cap)


@PROPERTY
@given(
    measured=st.floats(0.0, 1e3),
    anchor=anchors,
    direction=st.sampled_from(DIRECTIONS),
    limit=limits,
    rate=st.none() | rates,
)
def test_penalties_only_ever_lower_a_score(
    measured: float, anchor: float, direction: str, limit: float, rate: float | None
) -> None:
    common = {"measured": measured, "paper_value": anchor, "direction": direction, "genre": "open", "faithful": None}
    clean = task_score(penalties={}, rates={}, **common)  # type: ignore[arg-type]
    penalised = task_score(penalties={"collision": limit}, rates={"collision": rate}, **common)  # type: ignore[arg-type]
    assert penalised.final <= clean.final


@PROPERTY
@given(values=st.lists(st.none() | scores, max_size=30), data=st.data())
def test_macro_mean_does_not_depend_on_task_order(values: list[float | None], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(values))
    for policy in ("exclude", "zero"):
        assert macro_mean(shuffled, policy=policy) == macro_mean(values, policy=policy)


@PROPERTY
@given(values=st.lists(scores, min_size=1, max_size=30), gaps=st.lists(st.integers(0, 30), max_size=10))
def test_macro_mean_ignores_missing_tasks_under_the_exclude_policy(values: list[float], gaps: list[int]) -> None:
    with_missing: list[float | None] = list(values)
    for position in gaps:
        with_missing.insert(min(position, len(with_missing)), None)
    assert macro_mean(with_missing) == macro_mean(values)


@PROPERTY
@given(
    played=st.lists(st.tuples(st.integers(1, 40), st.integers(0, 150), st.booleans(), st.booleans()), max_size=30),
    extra=st.integers(0, 50),
)
def test_padding_never_raises_the_success_rate(played: list[tuple[int, int, bool, bool]], extra: int) -> None:
    optimal: dict[str, int] = {}
    episodes = []
    for index, (best, steps, solved, deadlocked) in enumerate(played):
        level = f"L{index}"
        optimal[level] = best
        is_solved = solved and steps >= best
        episodes.append(ScorecardEpisode(level, steps, is_solved, deadlocked and not is_solved, steps))
    pad_to = max(1, len(episodes))
    tight = summarize(episodes, pad_to, optimal)
    padded = summarize(episodes, pad_to + extra, optimal)
    assert padded.success_rate <= tight.success_rate
    assert padded.deadlock_rate <= tight.deadlock_rate


@PROPERTY
@given(
    raws=st.lists(st.tuples(unit, unit), min_size=1, max_size=2),
    current=st.integers(3, 50),
)
def test_an_overall_with_fewer_than_three_races_is_damped_toward_zero(
    raws: list[tuple[float, float]], current: int
) -> None:
    history = [RaceEntry(current - offset, raw, base) for offset, (raw, base) in enumerate(raws)]
    deltas = [entry.delta for entry in history]
    result = overall(history, current_race=current)
    assert result is not None
    assert result == math.fsum(deltas) / 3
    assert abs(result) <= abs(math.fsum(deltas) / len(deltas)) + 1e-15


cards = st.builds(
    Scorecard,
    episodes=st.integers(1, 100),
    solved=st.integers(0, 100),
    success_rate=unit,
    move_efficiency=st.none() | st.floats(0.01, 1.0),
    avg_steps_solved=st.none() | st.floats(1.0, 200.0),
    deadlock_rate=unit,
    total_actions=st.integers(0, 10_000),
)


@PROPERTY
@given(a=cards, b=cards, c=cards)
def test_scorecard_ranking_is_a_total_order(a: Scorecard, b: Scorecard, c: Scorecard) -> None:
    ka, kb, kc = rank_key(a), rank_key(b), rank_key(c)
    assert sum([ka < kb, ka == kb, kb < ka]) == 1
    if ka <= kb and kb <= kc:
        assert ka <= kc
    if ka == kb:
        ranked = ("success_rate", "move_efficiency", "deadlock_rate")
        assert [getattr(a, name) for name in ranked] == [getattr(b, name) for name in ranked]
        # Total actions break ties only among cards that solved something.
        assert a.move_efficiency is None or a.total_actions == b.total_actions


@PROPERTY
@given(
    metrics=st.lists(st.none() | st.floats(0.0, 5.0), min_size=1, max_size=20),
    anchor=st.floats(0.1, 5.0),
    direction=st.sampled_from(DIRECTIONS),
)
def test_a_recomputed_breakdown_always_matches_itself_as_a_claim(
    metrics: list[float | None], anchor: float, direction: str
) -> None:
    spec = TaskSpec("t", "open", direction, anchor)
    breakdown = score_run(ReleaseSpec({"t": spec}), {"t": TaskResult([Episode(m) for m in metrics])}).to_dict()
    assert not has_mismatch(compare_claims(breakdown, breakdown))

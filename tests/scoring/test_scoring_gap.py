"""Task-level paper-gap rules: gap score, penalties, faithfulness gate (seeds 000, 003)."""

from __future__ import annotations

import math

import pytest

from scoring.errors import ScoringError
from scoring.gap import (
    DEFAULT_CAP,
    EPS,
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    OPEN,
    REPRODUCTION,
    gap_score,
    penalty_factor,
    task_score,
)


def reproduction_task(**overrides: object) -> dict[str, object]:
    arguments: dict[str, object] = {
        "measured": 0.63,
        "paper_value": 0.70,
        "direction": HIGHER_IS_BETTER,
        "cap": DEFAULT_CAP,
        "penalties": {"collision_rate": 0.05},
        "rates": {"collision_rate": 0.02},
        "genre": REPRODUCTION,
        "faithful": True,
        "slug": "lift",
    }
    arguments.update(overrides)
    return arguments


# ------------------------------------------------------------- worked example


def test_the_seed_worked_example_gap_is_0_90() -> None:
    assert gap_score(0.63, 0.70, HIGHER_IS_BETTER) == pytest.approx(0.90, abs=1e-12)


def test_the_seed_worked_example_penalty_factor_is_0_60() -> None:
    assert penalty_factor(0.02, 0.05) == pytest.approx(0.60, abs=1e-12)


def test_the_seed_worked_example_score_and_final_are_0_54() -> None:
    result = task_score(**reproduction_task())  # type: ignore[arg-type]
    assert result.gap == pytest.approx(0.90, abs=1e-12)
    assert result.factors == {"collision_rate": pytest.approx(0.60, abs=1e-12)}
    assert result.factor == pytest.approx(0.60, abs=1e-12)
    assert result.score == pytest.approx(0.54, abs=1e-12)
    assert result.final == pytest.approx(0.54, abs=1e-12)


def test_the_worked_example_prints_the_seed_digits_when_rounded_for_display() -> None:
    result = task_score(**reproduction_task())  # type: ignore[arg-type]
    assert f"{result.gap:.2f} {result.factor:.2f} {result.score:.2f} {result.final:.2f}" == "0.90 0.60 0.54 0.54"


# ------------------------------------------------------------------ gap score


def test_matching_the_paper_scores_exactly_one() -> None:
    assert gap_score(0.7, 0.7, HIGHER_IS_BETTER) == 1.0


def test_beating_the_paper_scores_above_one() -> None:
    assert gap_score(0.6, 0.5, HIGHER_IS_BETTER) == pytest.approx(1.2)


def test_a_higher_is_better_score_is_capped_at_1_5_by_default() -> None:
    assert gap_score(10.0, 1.0, HIGHER_IS_BETTER) == 1.5


def test_a_custom_cap_from_the_manifest_is_honoured() -> None:
    assert gap_score(10.0, 1.0, HIGHER_IS_BETTER, cap=2.0) == 2.0


def test_a_negative_measured_value_clamps_to_zero_when_higher_is_better() -> None:
    assert gap_score(-3.0, 1.0, HIGHER_IS_BETTER) == 0.0


def test_lower_is_better_divides_the_paper_value_by_the_measured_value() -> None:
    assert gap_score(2.0, 1.0, LOWER_IS_BETTER) == 0.5


def test_a_zero_measured_value_uses_eps_and_hits_the_cap_when_lower_is_better() -> None:
    assert EPS == 1e-9
    assert gap_score(0.0, 1.0, LOWER_IS_BETTER) == 1.5


def test_a_lower_is_better_score_is_capped() -> None:
    assert gap_score(0.1, 1.0, LOWER_IS_BETTER, cap=3.0) == 3.0


def test_a_tiny_anchor_overflowing_the_ratio_still_clamps_to_the_cap() -> None:
    assert gap_score(1e308, 1e-308, HIGHER_IS_BETTER) == 1.5


# -------------------------------------------------------------- penalty factor


def test_a_clean_safety_rate_keeps_the_full_score() -> None:
    assert penalty_factor(0.0, 0.05) == 1.0


def test_a_rate_at_the_limit_zeroes_the_factor() -> None:
    assert penalty_factor(0.05, 0.05) == 0.0


def test_a_rate_over_the_limit_zeroes_the_factor() -> None:
    assert penalty_factor(0.5, 0.05) == 0.0


def test_it_fails_closed_when_a_declared_safety_rate_is_missing() -> None:
    assert penalty_factor(None, 0.05) == 0.0


def test_a_declared_safety_metric_absent_from_the_rates_zeroes_the_task() -> None:
    result = task_score(**reproduction_task(rates={}))  # type: ignore[arg-type]
    assert result.factors == {"collision_rate": 0.0}
    assert result.final == 0.0


def test_a_safety_rate_reported_as_none_zeroes_the_task() -> None:
    result = task_score(**reproduction_task(rates={"collision_rate": None}))  # type: ignore[arg-type]
    assert result.final == 0.0


def test_multiple_penalties_multiply_together() -> None:
    result = task_score(
        **reproduction_task(  # type: ignore[arg-type]
            penalties={"collision_rate": 0.05, "joint_limit_rate": 0.1},
            rates={"collision_rate": 0.02, "joint_limit_rate": 0.05},
        )
    )
    assert result.factor == pytest.approx(0.6 * 0.5)
    assert result.score == pytest.approx(0.9 * 0.3)


def test_rates_of_undeclared_metrics_are_ignored() -> None:
    result = task_score(**reproduction_task(rates={"collision_rate": 0.02, "other": 9.0}))  # type: ignore[arg-type]
    assert set(result.factors) == {"collision_rate"}


def test_a_task_without_penalties_has_factor_one() -> None:
    result = task_score(**reproduction_task(penalties={}, rates={}))  # type: ignore[arg-type]
    assert result.factor == 1.0
    assert result.score == result.gap


# ----------------------------------------------------------- faithfulness gate


def test_an_unfaithful_reproduction_scores_zero() -> None:
    result = task_score(**reproduction_task(faithful=False))  # type: ignore[arg-type]
    assert result.score == pytest.approx(0.54)
    assert result.final == 0.0


def test_a_reproduction_without_a_faithfulness_verdict_fails_closed() -> None:
    result = task_score(**reproduction_task(faithful=None))  # type: ignore[arg-type]
    assert result.final == 0.0


def test_an_open_task_skips_the_faithfulness_gate() -> None:
    result = task_score(**reproduction_task(genre=OPEN, faithful=None))  # type: ignore[arg-type]
    assert result.final == pytest.approx(0.54)


def test_an_open_task_judged_unfaithful_still_skips_the_gate() -> None:
    result = task_score(**reproduction_task(genre=OPEN, faithful=False))  # type: ignore[arg-type]
    assert result.final == pytest.approx(0.54)


# ------------------------------------------------------------------ bad numbers


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"measured": math.nan}, "task 'lift': measured must be a finite number, got nan"),
        ({"measured": math.inf}, "task 'lift': measured must be a finite number, got inf"),
        ({"measured": -math.inf}, "task 'lift': measured must be a finite number, got -inf"),
        ({"measured": True}, "task 'lift': measured must be a finite number, got True"),
        ({"measured": "0.6"}, "task 'lift': measured must be a finite number, got '0.6'"),
        ({"paper_value": 0.0}, "task 'lift': paper_value must be a finite number > 0, got 0.0"),
        ({"paper_value": -0.7}, "task 'lift': paper_value must be a finite number > 0, got -0.7"),
        ({"paper_value": math.nan}, "task 'lift': paper_value must be a finite number > 0, got nan"),
        ({"cap": 0.9}, "task 'lift': cap must be a finite number >= 1, got 0.9"),
        ({"cap": math.inf}, "task 'lift': cap must be a finite number >= 1, got inf"),
        (
            {"direction": "sideways"},
            "task 'lift': direction must be one of 'higher_is_better', 'lower_is_better', got 'sideways'",
        ),
        ({"genre": "remix"}, "task 'lift': genre must be one of 'reproduction', 'open', got 'remix'"),
        ({"faithful": "yes"}, "task 'lift': faithful must be True, False or None, got 'yes'"),
        (
            {"rates": {"collision_rate": -0.01}},
            "task 'lift': rates['collision_rate'] must be a finite number >= 0, got -0.01",
        ),
        (
            {"rates": {"collision_rate": math.nan}},
            "task 'lift': rates['collision_rate'] must be a finite number >= 0, got nan",
        ),
        (
            {"penalties": {"collision_rate": 0.0}},
            "task 'lift': penalties['collision_rate'].limit must be a finite number > 0, got 0.0",
        ),
        (
            {"penalties": {"collision_rate": -1.0}},
            "task 'lift': penalties['collision_rate'].limit must be a finite number > 0, got -1.0",
        ),
    ],
)
def test_every_bad_task_number_raises_a_scoring_error_naming_task_field_and_expectation(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ScoringError) as error:
        task_score(**reproduction_task(**overrides))  # type: ignore[arg-type]
    assert str(error.value) == message


def test_a_negative_measured_value_is_rejected_when_lower_is_better() -> None:
    with pytest.raises(ScoringError) as error:
        gap_score(-1.0, 1.0, LOWER_IS_BETTER, slug="plan")
    assert str(error.value) == (
        "task 'plan': measured must be a finite number >= 0 for a lower_is_better metric, got -1.0"
    )


def test_a_scoring_error_is_a_value_error() -> None:
    assert issubclass(ScoringError, ValueError)


def test_errors_without_a_slug_name_the_task_generically() -> None:
    with pytest.raises(ScoringError) as error:
        penalty_factor(0.1, 0.0)
    assert str(error.value) == "task: penalties['rate'].limit must be a finite number > 0, got 0.0"

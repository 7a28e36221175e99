"""Claimed vs recomputed score breakdowns."""

from __future__ import annotations

import math

import pytest

from scoring.compare import FieldDiff, compare_claims, has_mismatch
from scoring.errors import ScoringError

LIFT: dict[str, object] = {"gap": 0.9, "penalties": {"collision_rate": 0.6}, "pass_rate": None}
RECOMPUTED: dict[str, object] = {
    "tasks": {"lift": LIFT},
    "aggregates": {"overall": 0.54, "coverage": {"covered": 1, "required": 1, "complete": True}},
}


def claim(**changes: object) -> dict[str, object]:
    claimed: dict[str, object] = {
        "tasks": {"lift": {"gap": 0.9, "penalties": {"collision_rate": 0.6}, "pass_rate": None}},
        "aggregates": {"overall": 0.54, "coverage": {"covered": 1, "required": 1, "complete": True}},
    }
    for path, value in changes.items():
        node: dict[str, object] = claimed
        *parents, leaf = path.split("__")
        for part in parents:
            node = node[part]  # type: ignore[assignment]
        node[leaf] = value
    return claimed


def statuses(diffs: list[FieldDiff]) -> dict[str, str]:
    return {diff.path: diff.status for diff in diffs}


def test_an_identical_claim_matches_every_leaf() -> None:
    diffs = compare_claims(claim(), RECOMPUTED)
    assert set(statuses(diffs).values()) == {"match"}
    assert not has_mismatch(diffs)


def test_leaf_paths_are_dotted_and_sorted() -> None:
    assert [diff.path for diff in compare_claims(claim(), RECOMPUTED)] == [
        "aggregates.coverage.complete",
        "aggregates.coverage.covered",
        "aggregates.coverage.required",
        "aggregates.overall",
        "tasks.lift.gap",
        "tasks.lift.pass_rate",
        "tasks.lift.penalties.collision_rate",
    ]


def test_a_float_within_the_absolute_tolerance_matches() -> None:
    assert not has_mismatch(compare_claims(claim(tasks__lift__gap=0.9 + 9e-7), RECOMPUTED))


def test_a_float_beyond_the_tolerance_is_a_diff() -> None:
    diffs = compare_claims(claim(tasks__lift__gap=0.9 + 2e-6), RECOMPUTED)
    assert FieldDiff("tasks.lift.gap", 0.9 + 2e-6, 0.9, "diff") in diffs


def test_a_claimed_nan_is_a_diff() -> None:
    assert statuses(compare_claims(claim(tasks__lift__gap=math.nan), RECOMPUTED))["tasks.lift.gap"] == "diff"


def test_a_claimed_infinity_is_a_diff() -> None:
    assert statuses(compare_claims(claim(tasks__lift__gap=math.inf), RECOMPUTED))["tasks.lift.gap"] == "diff"


def test_a_field_only_the_server_computed_is_missing() -> None:
    claimed = claim()
    del claimed["aggregates"]["overall"]  # type: ignore[attr-defined]
    diffs = compare_claims(claimed, RECOMPUTED)
    assert FieldDiff("aggregates.overall", None, 0.54, "missing") in diffs


def test_a_field_only_the_claim_has_is_unexpected() -> None:
    diffs = compare_claims(claim(tasks__lift__bonus=1.0), RECOMPUTED)
    assert FieldDiff("tasks.lift.bonus", 1.0, None, "unexpected") in diffs


def test_a_claimed_string_for_a_number_is_a_diff() -> None:
    assert statuses(compare_claims(claim(aggregates__overall="0.54"), RECOMPUTED))["aggregates.overall"] == "diff"


def test_a_claimed_bool_never_equals_a_number() -> None:
    diffs = compare_claims(claim(aggregates__coverage__covered=True), RECOMPUTED)
    assert statuses(diffs)["aggregates.coverage.covered"] == "diff"


def test_a_claimed_number_for_a_null_is_a_diff() -> None:
    assert statuses(compare_claims(claim(tasks__lift__pass_rate=0.0), RECOMPUTED))["tasks.lift.pass_rate"] == "diff"


def test_an_integer_claim_matches_an_equal_float() -> None:
    assert not has_mismatch(compare_claims({"x": 1}, {"x": 1.0}))


def test_a_scalar_claimed_where_an_object_is_expected_is_a_diff() -> None:
    diffs = compare_claims(claim(tasks__lift=0.54), RECOMPUTED)
    assert diffs[-1] == FieldDiff("tasks.lift", 0.54, LIFT, "diff")


def test_lists_are_compared_item_by_item() -> None:
    diffs = compare_claims({"xs": [1.0, 2.0, 3.0]}, {"xs": [1.0, 2.5]})
    assert statuses(diffs) == {"xs.0": "match", "xs.1": "diff", "xs.2": "unexpected"}


def test_a_negative_tolerance_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        compare_claims({}, {}, tol=-1.0)
    assert str(error.value) == "compare_claims: tol must be a finite number >= 0, got -1.0"

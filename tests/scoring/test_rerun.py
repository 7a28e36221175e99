"""scoring.rerun: comparing an official re-run with the submitted run, task by task."""

from __future__ import annotations

import pytest

from scoring.errors import ScoringError
from scoring.rerun import compare_finals


def test_the_comparison_confirms_only_when_every_submitted_task_is_within_tolerance() -> None:
    rows, confirmed = compare_finals({"a": 0.90, "b": 0.50}, {"a": 0.93, "b": 0.46, "c": 1.0}, tolerance=0.05)
    assert confirmed is True
    assert [(row.task, row.within, row.decides) for row in rows] == [
        ("a", True, True),
        ("b", True, True),
        ("c", True, False),
    ]
    assert compare_finals({"a": 0.90}, {"a": 0.96}, tolerance=0.05)[1] is False
    assert compare_finals({"a": 0.90, "b": 0.5}, {"a": 0.90}, tolerance=0.05)[1] is False  # b not re-run
    assert compare_finals({}, {"a": 0.90}, tolerance=0.05)[1] is False  # nothing to confirm
    with pytest.raises(ScoringError):
        compare_finals({"a": 1.0}, {"a": 1.0}, tolerance=float("nan"))


def test_a_task_the_submitted_run_did_not_cover_never_decides() -> None:
    rows, confirmed = compare_finals({"a": 0.9, "b": None}, {"a": 0.9, "b": 0.1}, tolerance=0.05)
    assert confirmed is True
    assert [(row.task, row.decides) for row in rows] == [("a", True), ("b", False)]


def test_exactly_the_tolerance_is_within() -> None:
    assert compare_finals({"a": 0.5}, {"a": 0.55}, tolerance=0.05)[1] is True

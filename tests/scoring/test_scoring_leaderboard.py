"""Streaming leaderboard ranking of scored paper-gap runs."""

from __future__ import annotations

import pytest

from scoring.errors import ScoringError
from scoring.gap import HIGHER_IS_BETTER, OPEN, REPRODUCTION, ReleaseSpec, TaskSpec
from scoring.leaderboard import RunRow, rank_runs

RELEASE = ReleaseSpec(
    {
        "a": TaskSpec("a", REPRODUCTION, HIGHER_IS_BETTER, 1.0),
        "b": TaskSpec("b", OPEN, HIGHER_IS_BETTER, 1.0),
    }
)


def test_each_entrant_keeps_only_its_best_run() -> None:
    rows = [RunRow("amy", "r1", {"a": 0.2, "b": 0.2}), RunRow("amy", "r2", {"a": 0.9, "b": 0.9})]
    assert [entry.run_id for entry in rank_runs(iter(rows), RELEASE)] == ["r2"]


def test_rows_are_ranked_by_the_requested_tab() -> None:
    rows = [RunRow("amy", "r1", {"a": 1.0, "b": 0.0}), RunRow("bob", "r2", {"a": 0.0, "b": 0.8})]
    assert [entry.entrant for entry in rank_runs(rows, RELEASE, tab="open")] == ["bob", "amy"]
    assert [entry.entrant for entry in rank_runs(rows, RELEASE, tab="reproduction")] == ["amy", "bob"]


def test_a_run_without_a_score_on_a_tab_is_left_off_that_tab() -> None:
    assert rank_runs([RunRow("amy", "r1", {"b": 0.5})], RELEASE, tab="reproduction") == []


def test_pass_rate_breaks_a_score_tie_then_entrant_id() -> None:
    rows = [
        RunRow("cat", "r3", {"a": 0.5}, pass_rate=0.5),
        RunRow("bob", "r2", {"a": 0.5}, pass_rate=0.9),
        RunRow("amy", "r1", {"a": 0.5}, pass_rate=0.5),
    ]
    assert [entry.entrant for entry in rank_runs(rows, RELEASE)] == ["bob", "amy", "cat"]


def test_an_unknown_tab_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        rank_runs([], RELEASE, tab="best")
    assert str(error.value) == "leaderboard: tab must be one of 'overall', 'reproduction', 'open', got 'best'"

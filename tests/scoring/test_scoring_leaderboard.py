"""Streaming leaderboard ranking of scored paper-gap runs."""

from __future__ import annotations

import pytest

from scoring.errors import ScoringError
from scoring.gap import HIGHER_IS_BETTER, OPEN, REPRODUCTION, ReleaseSpec, TaskSpec
from scoring.leaderboard import RunRow, rank_key, rank_runs

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


def test_pass_rate_breaks_a_score_tie_then_the_earlier_verification() -> None:
    rows = [
        RunRow("amy", "r1", {"a": 0.5}, pass_rate=0.5, verified_at=3),
        RunRow("bob", "r2", {"a": 0.5}, pass_rate=0.9, verified_at=2),
        RunRow("cat", "r3", {"a": 0.5}, pass_rate=0.5, verified_at=1),
    ]
    assert [entry.entrant for entry in rank_runs(rows, RELEASE)] == ["bob", "cat", "amy"]


def test_a_run_without_a_pass_rate_ranks_after_one_with_it_at_equal_score() -> None:
    rows = [RunRow("amy", "r1", {"a": 0.5}, verified_at=1), RunRow("bob", "r2", {"a": 0.5}, pass_rate=0.0)]
    assert [entry.entrant for entry in rank_runs(rows, RELEASE)] == ["bob", "amy"]


def test_every_complete_run_ranks_above_every_partial_one() -> None:
    rows = [
        RunRow("amy", "r1", {"a": 1.0, "b": 1.0}, complete=False),
        RunRow("bob", "r2", {"a": 0.1, "b": 0.1}, complete=True),
    ]
    assert [entry.entrant for entry in rank_runs(rows, RELEASE)] == ["bob", "amy"]


def test_an_entrants_complete_run_is_its_best_even_with_a_lower_score() -> None:
    rows = [
        RunRow("amy", "r1", {"a": 1.0, "b": 1.0}, complete=False),
        RunRow("amy", "r2", {"a": 0.2, "b": 0.2}, complete=True),
    ]
    assert [entry.run_id for entry in rank_runs(rows, RELEASE)] == ["r2"]


def test_the_run_id_makes_the_order_total() -> None:
    same = {"complete": True, "score": 0.5, "pass_rate": 0.5, "verified_at": 7}
    assert rank_key(**same, run_id=1) < rank_key(**same, run_id=2)


def test_an_unknown_tab_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        rank_runs([], RELEASE, tab="best")
    assert str(error.value) == "leaderboard: tab must be one of 'overall', 'reproduction', 'open', got 'best'"

"""Race scoring (seed 002)."""

from __future__ import annotations

import math

import pytest

from scoring.errors import ScoringError
from scoring.race import (
    AGENT_ERROR,
    DID_NOT_FINISH,
    ENVIRONMENT_ERROR,
    FAILURE_CATEGORIES,
    NO_ORDER,
    PARTIAL_ORDER,
    REJECTED_ORDER,
    RUN_FAILED,
    RUN_INFRASTRUCTURE_FAILURE,
    RUN_OK,
    TIME_LIMIT,
    VERIFIER_ERROR,
    RaceEntry,
    RunScore,
    TaskOutcome,
    competition_ranks,
    failure_category,
    field_baseline,
    is_infrastructure_failure,
    overall,
    paid_reward,
    race_score,
    run_score,
    tie_key,
    top_agent,
)

TASKS = [f"t{i}" for i in range(10)]


def accepted(task_id: str, reward: float = 1.0) -> TaskOutcome:
    return TaskOutcome(task_id, order_placed=True, verdict_status="accepted", reward=reward)


def env_failure(task_id: str) -> TaskOutcome:
    return TaskOutcome(task_id, order_placed=False, env_error=True)


# ------------------------------------------------------------ failure categories


def test_the_failure_categories_are_a_fixed_ordered_list_with_fixed_messages() -> None:
    assert [category.code for category in FAILURE_CATEGORIES] == [
        "environment_error",
        "verifier_error",
        "agent_error",
        "did_not_finish",
        "time_limit",
        "no_order",
        "rejected_order",
        "partial_order",
    ]
    assert all(category.message.endswith(".") for category in FAILURE_CATEGORIES)


def test_a_fully_rewarded_accepted_order_has_no_failure_category() -> None:
    assert failure_category(accepted("t0")) is None


def test_the_first_applicable_category_wins() -> None:
    outcome = TaskOutcome("t0", order_placed=False, agent_error=True, env_error=True, step_limit_hit=True)
    assert failure_category(outcome) is ENVIRONMENT_ERROR


def test_a_verifier_error_outranks_an_agent_crash() -> None:
    assert failure_category(TaskOutcome("t0", False, agent_error=True, verifier_error=True)) is VERIFIER_ERROR


def test_an_agent_crash_is_an_agent_error() -> None:
    assert failure_category(TaskOutcome("t0", False, agent_error=True, step_limit_hit=True)) is AGENT_ERROR


def test_a_step_limit_before_any_order_is_did_not_finish() -> None:
    assert failure_category(TaskOutcome("t0", False, step_limit_hit=True, time_limit_hit=True)) is DID_NOT_FINISH


def test_an_order_placed_within_the_step_limit_is_graded_normally() -> None:
    outcome = TaskOutcome("t0", True, verdict_status="accepted", reward=0.8, step_limit_hit=True)
    assert failure_category(outcome) is PARTIAL_ORDER
    assert paid_reward(outcome) == 0.8


def test_an_unfinished_task_when_the_run_budget_ran_out_is_a_time_limit() -> None:
    assert failure_category(TaskOutcome("t0", False, time_limit_hit=True)) is TIME_LIMIT


def test_a_graded_order_keeps_its_reward_when_the_time_budget_ran_out_afterwards():
    # Seed 002: finished episodes keep their rewards; only an unfinished task scores 0.
    graded = TaskOutcome("t0", True, verdict_status="accepted", reward=1.0, time_limit_hit=True)
    assert (failure_category(graded), paid_reward(graded)) == (None, 1.0)
    partial = TaskOutcome("t0", True, verdict_status="accepted", reward=0.5, time_limit_hit=True)
    assert (failure_category(partial), paid_reward(partial)) == (PARTIAL_ORDER, 0.5)
    rejected = TaskOutcome("t0", True, verdict_status="rejected", reward=0.0, time_limit_hit=True)
    assert failure_category(rejected) is REJECTED_ORDER
    ungraded = TaskOutcome("t0", True, time_limit_hit=True)
    assert (failure_category(ungraded), paid_reward(ungraded)) == (TIME_LIMIT, 0.0)


def test_an_episode_ending_without_an_order_is_no_order() -> None:
    assert failure_category(TaskOutcome("t0", False)) is NO_ORDER


def test_a_rejected_order_scores_zero_whatever_reward_was_reported() -> None:
    outcome = TaskOutcome("t0", True, verdict_status="rejected", reward=0.9)
    assert failure_category(outcome) is REJECTED_ORDER
    assert paid_reward(outcome) == 0.0


def test_a_completed_order_can_still_earn_zero_reward() -> None:
    outcome = accepted("t0", 0.0)
    assert outcome.failure is PARTIAL_ORDER
    assert outcome.paid_reward == 0.0


@pytest.mark.parametrize("flag", ["env_error", "verifier_error", "agent_error"])
def test_every_error_pays_zero_even_with_an_accepted_reward(flag: str) -> None:
    outcome = TaskOutcome("t0", True, verdict_status="accepted", reward=1.0, **{flag: True})
    assert paid_reward(outcome) == 0.0


@pytest.mark.parametrize(
    ("reward", "message"),
    [
        (1.5, "race task 't0': reward must be a finite number in [0, 1], got 1.5"),
        (-0.1, "race task 't0': reward must be a finite number in [0, 1], got -0.1"),
        (math.nan, "race task 't0': reward must be a finite number in [0, 1], got nan"),
        (math.inf, "race task 't0': reward must be a finite number in [0, 1], got inf"),
    ],
)
def test_a_reward_outside_zero_to_one_is_rejected(reward: float, message: str) -> None:
    with pytest.raises(ScoringError) as error:
        paid_reward(accepted("t0", reward))
    assert str(error.value) == message


def test_an_accepted_order_without_a_reward_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        paid_reward(TaskOutcome("t0", True, verdict_status="accepted"))
    assert str(error.value) == (
        "race task 't0': reward must be a finite number in [0, 1] for an accepted order, got None"
    )


def test_an_unknown_verdict_status_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        paid_reward(TaskOutcome("t0", True, verdict_status="maybe", reward=1.0))
    assert str(error.value) == "race task 't0': verdict_status must be 'accepted', 'rejected' or None, got 'maybe'"


def test_a_placed_order_without_verdict_or_error_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        paid_reward(TaskOutcome("t0", True))
    assert str(error.value) == (
        "race task 't0': verdict_status must be 'accepted' or 'rejected' for a graded order, got None"
    )


# ------------------------------------------------------------------ run scores


def test_a_run_score_is_the_mean_paid_reward_over_the_whole_expected_set() -> None:
    outcomes = [accepted("t0"), accepted("t1", 0.5), TaskOutcome("t2", False, agent_error=True)]
    result = run_score(outcomes, TASKS)
    assert result.status == RUN_OK
    assert result.score == pytest.approx(1.5 / 10)


def test_unreported_tasks_count_zero() -> None:
    assert run_score([accepted("t0")], TASKS).score == pytest.approx(0.1)


def test_a_run_with_no_output_at_all_fails_without_a_score() -> None:
    assert run_score(None, TASKS) == RunScore(RUN_FAILED, None, 10, 0)
    assert run_score([], TASKS).status == RUN_FAILED


def test_more_than_thirty_percent_infrastructure_errors_fail_the_run() -> None:
    outcomes = [env_failure("t0"), env_failure("t1"), env_failure("t2"), TaskOutcome("t3", True, verifier_error=True)]
    assert is_infrastructure_failure([*outcomes, accepted("t4")], TASKS) is True
    result = run_score([*outcomes, accepted("t4")], TASKS)
    assert (result.status, result.score, result.infrastructure_errors) == (RUN_INFRASTRUCTURE_FAILURE, None, 4)


def test_exactly_thirty_percent_infrastructure_errors_is_not_a_failure() -> None:
    outcomes = [env_failure("t0"), env_failure("t1"), env_failure("t2"), accepted("t3")]
    assert is_infrastructure_failure(outcomes, TASKS) is False
    assert run_score(outcomes, TASKS).score == pytest.approx(0.1)


def test_an_outcome_for_an_unexpected_task_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        run_score([accepted("t99")], TASKS, run_id="v1")
    assert str(error.value) == "race run 'v1': outcome task_id must be a task of the run's expected task set, got 't99'"


def test_a_task_reported_twice_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        run_score([accepted("t0"), accepted("t0")], TASKS)
    assert str(error.value) == "race run 'run': outcome task_id must be reported once, got 't0'"


def test_an_empty_expected_task_set_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        run_score([], [])
    assert str(error.value) == "race run 'run': expected task set must be non-empty, got []"


def test_the_race_score_averages_only_successful_runs() -> None:
    runs = [
        RunScore(RUN_OK, 0.4, 10, 0),
        RunScore(RUN_FAILED, None, 10, 0),
        RunScore(RUN_INFRASTRUCTURE_FAILURE, None, 10, 5),
        RunScore(RUN_OK, 0.6, 10, 1),
    ]
    assert race_score(runs) == pytest.approx(0.5)


def test_the_race_score_is_none_without_a_successful_run() -> None:
    assert race_score([RunScore(RUN_FAILED, None, 10, 0)]) is None


def test_a_successful_run_score_outside_zero_to_one_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        race_score([RunScore(RUN_OK, 1.2, 10, 0)])
    assert str(error.value) == "validator run 0: score must be a finite number in [0, 1], got 1.2"


# -------------------------------------------------------------- field baseline


def test_the_field_baseline_is_the_top_half_average() -> None:
    assert field_baseline([0.1, 0.9, 0.5, 0.7]) == pytest.approx(0.8)


def test_an_odd_field_includes_the_median_in_its_top_half() -> None:
    assert field_baseline([0.2, 0.4, 0.6]) == pytest.approx(0.5)


def test_a_single_agent_is_its_own_baseline() -> None:
    assert field_baseline([0.3]) == 0.3


def test_ties_at_the_cut_do_not_change_the_baseline() -> None:
    assert field_baseline([0.5, 0.5, 0.5, 0.1]) == 0.5


def test_an_empty_field_has_no_baseline() -> None:
    assert field_baseline([]) is None


def test_a_negative_race_score_is_rejected_by_the_baseline() -> None:
    with pytest.raises(ScoringError) as error:
        field_baseline([0.5, -0.2])
    assert str(error.value) == "race field: scores[1] must be a finite number in [0, 1], got -0.2"


# --------------------------------------------------------------------- Overall


def entry(race: int, raw: float, baseline: float = 0.5) -> RaceEntry:
    return RaceEntry(race, raw, baseline)


def test_the_launch_race_averages_only_itself() -> None:
    assert overall([entry(1, 0.7)], current_race=1) == pytest.approx(0.2)


def test_the_second_race_after_launch_averages_two() -> None:
    assert overall([entry(1, 0.7), entry(2, 0.9)], current_race=2) == pytest.approx(0.3)


def test_the_third_race_after_launch_averages_three() -> None:
    history = [entry(1, 0.7), entry(2, 0.9), entry(3, 0.3)]
    assert overall(history, current_race=3) == pytest.approx((0.2 + 0.4 - 0.2) / 3)


def test_from_the_fourth_race_the_window_rolls() -> None:
    history = [entry(1, 1.0), entry(2, 0.9), entry(3, 0.3), entry(4, 0.6)]
    assert overall(history, current_race=4) == pytest.approx((0.4 - 0.2 + 0.1) / 3)


def test_a_new_version_is_damped_by_its_missing_races() -> None:
    assert overall([entry(7, 0.8)], current_race=7) == pytest.approx(0.3 / 3)


def test_a_new_version_two_races_in_is_still_damped() -> None:
    assert overall([entry(6, 0.8), entry(7, 0.8)], current_race=7) == pytest.approx(0.6 / 3)


def test_a_reset_version_cannot_rise_above_zero_without_beating_the_field() -> None:
    fresh = overall([entry(7, 0.45)], current_race=7)
    assert fresh == pytest.approx(-0.05 / 3)
    assert fresh is not None and fresh < 0


def test_races_before_launch_are_not_back_filled() -> None:
    assert overall([entry(1, 1.0), entry(3, 0.6)], current_race=3, launch_race=3) == pytest.approx(0.1)


def test_a_version_that_stops_racing_decays_toward_zero() -> None:
    history = [entry(1, 0.8), entry(2, 0.8)]
    assert overall(history, current_race=3) == pytest.approx(0.6 / 3)
    assert overall(history, current_race=4) == pytest.approx(0.3 / 3)


def test_a_version_without_a_race_in_the_window_leaves_the_overall_board() -> None:
    assert overall([entry(1, 0.8)], current_race=4) is None


def test_a_version_without_a_race_since_launch_has_no_overall() -> None:
    assert overall([], current_race=4) is None


def test_a_race_listed_twice_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        overall([entry(2, 0.5), entry(2, 0.6)], current_race=3)
    assert str(error.value) == "overall race 2: race must be listed once, got 2"


def test_a_race_after_the_current_race_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        overall([entry(5, 0.5)], current_race=3)
    assert str(error.value) == "overall race 5: race must be at most current_race=3, got 5"


def test_a_current_race_before_launch_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        overall([], current_race=2, launch_race=3)
    assert str(error.value) == "overall: current_race must be at least launch_race=3, got 2"


def test_a_nan_raw_score_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        overall([entry(1, math.nan)], current_race=1)
    assert str(error.value) == "race: raw_score must be a finite number in [0, 1], got nan"


# ----------------------------------------------------------- challenge margin


def test_a_challenger_within_the_margin_does_not_take_the_top_spot() -> None:
    assert top_agent({"holder": 0.20, "challenger": 0.24}, "holder", 0.05) == "holder"


def test_a_challenger_beating_the_holder_by_exactly_the_margin_does_not_win() -> None:
    assert top_agent({"holder": 0.7, "challenger": 0.8}, "holder", 0.1) == "holder"


def test_a_challenger_beating_the_holder_by_more_than_the_margin_wins() -> None:
    assert top_agent({"holder": 0.20, "challenger": 0.26}, "holder", 0.05) == "challenger"


def test_without_a_holder_the_highest_overall_takes_the_spot() -> None:
    assert top_agent({"b": 0.1, "a": 0.3}, None, 0.05) == "a"


def test_a_tie_without_a_holder_goes_to_the_smallest_id() -> None:
    assert top_agent({"b": 0.3, "a": 0.3}, None, 0.0) == "a"


def test_a_holder_without_an_overall_is_replaced() -> None:
    assert top_agent({"old": None, "new": 0.01}, "old", 0.05) == "new"


def test_nobody_holds_the_spot_without_any_overall() -> None:
    assert top_agent({}, None, 0.05) is None


def test_a_negative_margin_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        top_agent({"a": 0.1}, None, -0.01)
    assert str(error.value) == "top_agent: margin must be a finite number >= 0, got -0.01"


def test_equal_scores_share_a_rank_and_the_next_rank_skips():
    assert competition_ranks([0.9, 0.6, 0.6, 0.5, 0.5, 0.5, 0.1]) == [1, 2, 2, 4, 4, 4, 7]
    assert competition_ranks([]) == []


def test_scores_apart_only_by_float_rounding_share_a_rank():
    # Runs 0.1 and 0.2 average 0.15000000000000002; runs 0.0 and 0.3 average 0.15: the same score.
    noisy, exact = math.fsum([0.1, 0.2]) / 2, math.fsum([0.0, 0.3]) / 2
    assert noisy != exact
    assert competition_ranks([noisy, exact, 0.1]) == [1, 1, 3]
    assert competition_ranks([exact, noisy]) == [1, 1]  # either listing order of equals is sorted
    assert tie_key(noisy) == tie_key(exact) != tie_key(exact + 1e-9)


def test_scores_apart_by_more_than_float_rounding_do_not_share_a_rank():
    assert competition_ranks([0.15 + 1e-10, 0.15]) == [1, 2]


def test_the_best_challenger_among_equal_overalls_is_the_smallest_id_whatever_the_float_noise():
    noisy, exact = math.fsum([0.1, 0.2]) / 2, math.fsum([0.0, 0.3]) / 2
    assert top_agent({"b": noisy, "a": exact}, None, 0.05) == "a"


def test_competition_ranks_refuse_scores_not_sorted_best_first():
    with pytest.raises(ValueError, match="sorted best"):
        competition_ranks([0.5, 0.6])

"""Episode scorecards (seed 001)."""

from __future__ import annotations

import pytest

from scoring.errors import ScoringError
from scoring.scorecard import (
    Scorecard,
    ScorecardEpisode,
    best_per_entrant,
    rank_key,
    step_budget,
    summarize,
)

LEVELS = [f"L{i:03d}" for i in range(100)]


def seed_card_inputs() -> tuple[list[ScorecardEpisode], dict[str, int]]:
    """60 played episodes padded to 100 that close to exactly the seed's card.

    31 solves: 17 x (23 steps, optimal 20), 12 x (24, 21), 2 x (23, 21):
    725 steps (23.387 per solve) and mean optimal/steps 0.87447.  One more
    "solve" blew its 30-step budget and is unsolved; 8 unsolved episodes
    deadlocked.  Actions: 725 on solves, 35 on the over-budget one and
    28 x 120 on the other failures = 4120.
    """
    optimal: dict[str, int] = dict.fromkeys(LEVELS, 40)
    episodes: list[ScorecardEpisode] = []
    solves = [(23, 20)] * 17 + [(24, 21)] * 12 + [(23, 21)] * 2
    for level, (steps, best) in zip(LEVELS, solves, strict=False):
        optimal[level] = best
        episodes.append(ScorecardEpisode(level, steps, solved=True, deadlocked=False, actions=steps))
    optimal[LEVELS[31]] = 5
    episodes.append(ScorecardEpisode(LEVELS[31], 31, solved=True, deadlocked=False, actions=35))
    for index, level in enumerate(LEVELS[32:60]):
        episodes.append(ScorecardEpisode(level, 120, solved=False, deadlocked=index < 8, actions=120))
    return episodes, optimal


def test_the_seed_scorecard_is_reproduced_to_the_printed_digit() -> None:
    episodes, optimal = seed_card_inputs()
    card = summarize(episodes, 100, optimal)
    assert card.episodes == 100
    assert card.solved == 31
    assert card.success_rate == 0.31
    assert card.move_efficiency is not None and round(card.move_efficiency, 3) == 0.874
    assert card.avg_steps_solved is not None and round(card.avg_steps_solved, 1) == 23.4
    assert card.deadlock_rate == 0.08
    assert card.total_actions == 4120


def test_the_seed_scorecard_serialises_with_the_seed_keys_in_order() -> None:
    episodes, optimal = seed_card_inputs()
    document = summarize(episodes, 100, optimal).to_dict()
    assert list(document) == [
        "episodes",
        "solved",
        "success_rate",
        "move_efficiency",
        "avg_steps_solved",
        "deadlock_rate",
        "total_actions",
    ]


def test_ten_perfect_solves_padded_to_a_hundred_score_ten_percent() -> None:
    optimal = dict.fromkeys(LEVELS, 10)
    episodes = [ScorecardEpisode(level, 10, True, False, 10) for level in LEVELS[:10]]
    card = summarize(episodes, 100, optimal)
    assert card.success_rate == 0.10
    assert card.move_efficiency == 1.0


def test_the_step_budget_is_three_times_optimal_with_a_floor_of_thirty() -> None:
    assert [step_budget(n) for n in (1, 10, 11, 40)] == [30, 30, 33, 120]


def test_a_solve_that_exceeds_its_step_budget_is_unsolved() -> None:
    card = summarize([ScorecardEpisode("L000", 34, True, False, 34)], 1, {"L000": 11})
    assert card.solved == 0
    assert card.move_efficiency is None


def test_a_solve_exactly_at_its_step_budget_counts() -> None:
    card = summarize([ScorecardEpisode("L000", 33, True, False, 33)], 1, {"L000": 11})
    assert card.solved == 1


def test_efficiency_and_average_steps_are_none_when_nothing_is_solved() -> None:
    card = summarize([ScorecardEpisode("L000", 5, False, True, 5)], 10, {"L000": 3})
    assert (card.move_efficiency, card.avg_steps_solved) == (None, None)
    assert card.deadlock_rate == 0.1


def test_efficiency_ignores_failed_episodes() -> None:
    optimal = {"a": 10, "b": 10}
    episodes = [ScorecardEpisode("a", 20, True, False, 20), ScorecardEpisode("b", 1, False, False, 1)]
    assert summarize(episodes, 2, optimal).move_efficiency == 0.5


def test_deadlock_rate_counts_padded_episodes_in_the_denominator() -> None:
    episodes = [ScorecardEpisode("L000", 5, False, True, 5)]
    assert summarize(episodes, 4, {"L000": 3}).deadlock_rate == 0.25


def test_more_episodes_than_the_hidden_set_is_an_error() -> None:
    optimal = dict.fromkeys(LEVELS[:3], 5)
    episodes = [ScorecardEpisode(level, 5, True, False, 5) for level in LEVELS[:3]]
    with pytest.raises(ScoringError) as error:
        summarize(episodes, 2, optimal)
    assert str(error.value) == "scorecard: episode count must be at most pad_to=2, got 3"


def test_an_unknown_level_is_an_error() -> None:
    with pytest.raises(ScoringError) as error:
        summarize([ScorecardEpisode("X", 5, True, False, 5)], 2, {"L000": 5})
    assert str(error.value) == "scorecard episode 0 (level 'X'): level_id must be a level of the hidden set, got 'X'"


def test_a_repeated_level_is_an_error() -> None:
    episodes = [ScorecardEpisode("L000", 5, True, False, 5)] * 2
    with pytest.raises(ScoringError) as error:
        summarize(episodes, 2, {"L000": 5})
    assert str(error.value) == "scorecard episode 1: level_id must be a level not already played, got 'L000'"


def test_a_solve_shorter_than_the_optimal_solution_is_an_error() -> None:
    with pytest.raises(ScoringError) as error:
        summarize([ScorecardEpisode("L000", 4, True, False, 4)], 1, {"L000": 5})
    assert str(error.value) == (
        "scorecard episode 0 (level 'L000'): steps must be at least the optimal length 5 for a solved episode, got 4"
    )


def test_a_solved_and_deadlocked_episode_is_an_error() -> None:
    with pytest.raises(ScoringError) as error:
        summarize([ScorecardEpisode("L000", 5, True, True, 5)], 1, {"L000": 5})
    assert str(error.value) == (
        "scorecard episode 0 (level 'L000'): deadlocked must be False for a solved episode "
        "(a deadlock can never be solved), got True"
    )


def test_negative_steps_are_an_error() -> None:
    with pytest.raises(ScoringError) as error:
        summarize([ScorecardEpisode("L000", -1, False, False, 0)], 1, {"L000": 5})
    assert str(error.value) == "scorecard episode 0 (level 'L000'): steps must be an integer >= 0, got -1"


def test_a_zero_optimal_length_in_the_level_data_is_an_error() -> None:
    with pytest.raises(ScoringError) as error:
        summarize([ScorecardEpisode("L000", 3, True, False, 3)], 1, {"L000": 0})
    assert str(error.value) == "level 'L000': optimal_len must be an integer >= 1, got 0"


def test_a_pad_to_of_zero_is_an_error() -> None:
    with pytest.raises(ScoringError) as error:
        summarize([], 0, {})
    assert str(error.value) == "scorecard: pad_to must be an integer >= 1, got 0"


def card(success: float, efficiency: float | None, deadlock: float, actions: int = 100) -> Scorecard:
    steps = None if efficiency is None else 20.0
    solved = round(success * 100) if success == success else 0
    return Scorecard(100, solved, success, efficiency, steps, deadlock, actions)


def test_ranking_orders_by_success_then_efficiency_then_deadlocks() -> None:
    cards = [card(0.3, 0.9, 0.0), card(0.4, 0.5, 0.5), card(0.3, 0.9, 0.1), card(0.3, 0.95, 0.9)]
    ranked = sorted(cards, key=rank_key)
    assert ranked == [cards[1], cards[3], cards[0], cards[2]]


def test_a_card_with_no_solves_ranks_after_any_efficiency_at_equal_success() -> None:
    assert rank_key(card(0.0, 0.01, 0.0)) < rank_key(card(0.0, None, 0.0))


def test_fewer_total_actions_breaks_a_tie_on_the_three_ranking_metrics() -> None:
    assert rank_key(card(0.3, 0.9, 0.1, actions=50)) < rank_key(card(0.3, 0.9, 0.1, actions=60))


def test_total_actions_do_not_rank_cards_that_solved_nothing() -> None:
    # A one-move card would otherwise rank above one that played and failed: less play, not leaner.
    one_move, tried = card(0.0, None, 0.0, actions=1), card(0.0, None, 0.0, actions=20)
    assert rank_key(one_move) == rank_key(tried)
    assert [name for name, _ in best_per_entrant([("b-one-move", one_move), ("a-tried", tried)])] == [
        "a-tried",
        "b-one-move",
    ]


def test_equal_move_efficiencies_are_equal_numbers_so_the_deadlock_rate_decides() -> None:
    # 23/25 twice, and 18/18 with 21/25: both means are exactly 23/25. Summed as floats they
    # differed in the last bit and ranked the card with a deadlock first.
    optimal = {"a": 23, "b": 23, "c": 5, "d": 18, "e": 21}
    with_deadlock = summarize(
        [
            ScorecardEpisode("a", 25, solved=True, deadlocked=False, actions=25),
            ScorecardEpisode("b", 25, solved=True, deadlocked=False, actions=25),
            ScorecardEpisode("c", 9, solved=False, deadlocked=True, actions=9),
        ],
        100,
        optimal,
    )
    without = summarize(
        [
            ScorecardEpisode("d", 18, solved=True, deadlocked=False, actions=18),
            ScorecardEpisode("e", 25, solved=True, deadlocked=False, actions=25),
        ],
        100,
        optimal,
    )
    assert with_deadlock.move_efficiency == without.move_efficiency == 0.92
    assert rank_key(without) < rank_key(with_deadlock)


def test_only_each_entrants_best_card_is_shown() -> None:
    good, bad, other = card(0.5, 0.9, 0.0), card(0.1, 0.9, 0.0), card(0.3, 0.8, 0.0)
    ranked = best_per_entrant([("alice", bad), ("bob", other), ("alice", good)])
    assert ranked == [("alice", good), ("bob", other)]


def test_entrants_with_identical_best_cards_are_ordered_by_id() -> None:
    same = card(0.5, 0.9, 0.0)
    assert [name for name, _ in best_per_entrant([("zed", same), ("amy", same)])] == ["amy", "zed"]


def test_a_card_with_a_nan_success_rate_cannot_be_ranked() -> None:
    with pytest.raises(ScoringError) as error:
        rank_key(card(float("nan"), 0.9, 0.0))
    assert str(error.value) == "scorecard: success_rate must be a finite number in [0, 1], got nan"


def test_the_success_rate_interval_is_wilsons_with_real_bounds_at_zero_and_all_solved():
    from scoring.scorecard import success_rate_interval

    z2 = 1.959963984540054**2
    # Closed forms at the edges: (0, z2 / (n + z2)) and (n / (n + z2), 1).
    assert success_rate_interval(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert success_rate_interval(10, 10) == pytest.approx((10 / (10 + z2), 1.0))
    # The edges themselves are exact, not 3.5e-18 and 0.9999999999999999.
    assert success_rate_interval(0, 100)[0] == 0.0
    assert success_rate_interval(10, 10)[1] == 1.0
    assert success_rate_interval(100, 100)[0] == pytest.approx(1 - success_rate_interval(0, 100)[1])
    # 38 of 100 by hand: centre (0.38 + z2/200) / (1 + z2/100) = 0.38444, half-width
    # z * sqrt(0.38 * 0.62 / 100 + z2 / 40000) / (1 + z2/100) = 0.09347.
    low, high = success_rate_interval(38, 100)
    assert (round(low, 4), round(high, 4)) == (0.2910, 0.4779)


def test_the_success_rate_interval_refuses_more_solved_than_played():
    from scoring.errors import ScoringError
    from scoring.scorecard import success_rate_interval

    with pytest.raises(ScoringError):
        success_rate_interval(11, 10)

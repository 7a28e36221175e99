"""Scorecard benchmarks (seed 001) through the whole pipeline: sealed bundle in, page out."""

# ruff: noqa: RUF001 - the pages print the multiplication and division signs of the seed

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard.models.races import ScorecardStanding
from scoring import scorecard as scorecard_scoring
from submissions.demo_loaders.scheme_bundles import scorecard_members
from submissions.demo_loaders.scorecard import (
    RELEASE_VERSION,
    seed_example_episodes,
    ten_of_ten_episodes,
)
from submissions.models import ScorecardRun

Episode = scorecard_scoring.ScorecardEpisode


def card_members(episodes, levels, *, agent="Crate Whisperer", version="1.0", claimed=None, release=RELEASE_VERSION):
    if claimed is None:
        claimed = scorecard_scoring.summarize(episodes, 100, levels).to_dict()
    return scorecard_members(
        benchmark="sokoban-hidden", release=release, agent=agent, version=version, episodes=episodes, claimed=claimed
    )


def test_the_seed_example_card_is_validated_with_the_seed_figures(submitter, scorecard_release, levels, submit):
    submission = submit(submitter, card_members(seed_example_episodes(levels), levels))
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "validated", "")
    card = ScorecardRun.objects.get(submission=submission)
    assert (card.episodes, card.solved, card.success_rate) == (100, 31, 0.31)
    assert round(card.move_efficiency, 3) == 0.874
    assert round(card.avg_steps_solved, 1) == 23.4
    assert (card.deadlock_rate, card.total_actions) == (0.08, 4120)


def test_the_scorecard_page_reads_like_the_seed_example(client, submitter, scorecard_release, levels, submit):
    submission = submit(submitter, card_members(seed_example_episodes(levels), levels))
    card = ScorecardRun.objects.get(submission=submission)
    page = client.get(reverse("scorecard_detail", args=[card.pk])).content.decode()
    assert (
        "This agent solved 31 of 100. When it solved a level it took about 1.14× the optimal path (1 ÷ 0.874), "
        "and it wedged a crate unrecoverably in at least 8% of episodes." in page
    )
    assert "The deadlock rate is a lower bound" in page


def test_a_card_that_stops_after_ten_solved_levels_scores_ten_percent(submitter, scorecard_release, levels, submit):
    submission = submit(submitter, card_members(ten_of_ten_episodes(levels), levels, agent="Cherry Picker"))
    card = ScorecardRun.objects.get(submission=submission)
    assert (submission.verdict, card.episodes, card.solved, card.success_rate) == ("validated", 100, 10, 0.1)
    assert card.move_efficiency == 1.0


def test_a_card_claiming_ten_of_ten_as_full_success_is_a_mismatch(submitter, scorecard_release, levels, submit):
    episodes = ten_of_ten_episodes(levels)
    honest = scorecard_scoring.summarize(episodes, 100, levels).to_dict()
    claimed = {**honest, "episodes": 10, "success_rate": 1.0}
    submission = submit(submitter, card_members(episodes, levels, claimed=claimed))
    assert (submission.verdict, submission.error_code) == ("mismatch", "scorecard_mismatch")
    assert submission.error_message == (
        "the claimed scorecard differs from the server's recomputation in: episodes, success_rate"
    )
    wrong = {row["path"]: (row["claimed"], row["recomputed"]) for row in submission.diff if row["status"] != "match"}
    assert wrong == {"episodes": (10, 100), "success_rate": (1.0, 0.1)}
    assert not ScorecardRun.objects.exists()


@pytest.mark.parametrize(("steps", "solved"), [(30, 1), (31, 0)])
def test_a_short_level_is_held_to_the_thirty_step_floor(submitter, scorecard_release, levels, submit, steps, solved):
    level_id = next(level for level, optimal in sorted(levels.items()) if optimal * 3 < 30)
    episodes = [Episode(level_id, steps, True, False, steps)]
    submission = submit(submitter, card_members(episodes, levels))
    assert ScorecardRun.objects.get(submission=submission).solved == solved


@pytest.mark.parametrize(("extra", "solved"), [(0, 1), (1, 0)])
def test_a_long_level_is_held_to_three_times_its_optimal(submitter, scorecard_release, levels, submit, extra, solved):
    level_id = next(level for level, optimal in sorted(levels.items()) if optimal * 3 > 30)
    budget = 3 * levels[level_id]
    episodes = [Episode(level_id, budget + extra, True, False, budget + extra)]
    submission = submit(submitter, card_members(episodes, levels))
    assert ScorecardRun.objects.get(submission=submission).solved == solved


def test_an_unknown_level_is_rejected_with_nothing_written(submitter, scorecard_release, levels, submit):
    episodes = [Episode("level-999", 25, True, False, 25)]
    claimed = {"episodes": 100}
    submission = submit(submitter, card_members(episodes, levels, claimed=claimed))
    assert (submission.verdict, submission.error_code) == ("rejected", "scorecard_unknown_level")
    assert submission.error_message == (
        "scorecard episode 0: level_id 'level-999' is not a level of the hidden set of release '2026.1'"
    )
    assert not ScorecardRun.objects.exists()


def test_more_episodes_than_the_hidden_set_are_rejected(submitter, scorecard_release, levels, submit):
    episodes = [Episode(f"extra-{index}", 25, False, False, 25) for index in range(101)]
    submission = submit(submitter, card_members(episodes, levels, claimed={"episodes": 100}))
    assert (submission.verdict, submission.error_code) == ("rejected", "scorecard_too_many_episodes")
    assert submission.error_message == (
        "scorecard: 101 episodes, but the hidden set of release '2026.1' has only 100; "
        "a card holds at most one episode per hidden level"
    )


def test_an_unknown_release_is_rejected(submitter, scorecard_release, levels, submit):
    episodes = ten_of_ten_episodes(levels)
    submission = submit(submitter, card_members(episodes, levels, release="1999.9"))
    assert (submission.verdict, submission.error_code) == ("rejected", "unknown_release")
    assert (
        submission.error_message
        == "manifest: benchmark 'sokoban-hidden' has no published release '1999.9' on this server"
    )


def test_the_board_shows_each_agents_best_card_only_in_rank_order(client, submitter, scorecard_release, levels, submit):
    from submissions.demo_loaders.scorecard import strong_planner_episodes

    submit(submitter, card_members(seed_example_episodes(levels), levels), name="a")
    submit(submitter, card_members(ten_of_ten_episodes(levels), levels, agent="Cherry Picker"), name="b")
    worse = strong_planner_episodes(levels, solved=40, slack=1.3, deadlocks=5)
    better = strong_planner_episodes(levels, solved=57, slack=1.2, deadlocks=3)
    submit(submitter, card_members(better, levels, agent="Deep Planner", version="1.1"), name="c")
    submit(submitter, card_members(worse, levels, agent="Deep Planner", version="1.0"), name="d")
    # Same success as Crate Whisperer (31%) but more efficient: ranks above it.
    tie = strong_planner_episodes(levels, solved=31, slack=1.0, deadlocks=20)
    submit(submitter, card_members(tie, levels, agent="Greedy Pusher"), name="e")
    rows = list(ScorecardStanding.objects.filter(release=scorecard_release).order_by("rank"))
    assert [(row.agent.name, row.scorecard.agent_version.version) for row in rows] == [
        ("Deep Planner", "1.1"),
        ("Greedy Pusher", "1.0"),
        ("Crate Whisperer", "1.0"),
        ("Cherry Picker", "1.0"),
    ]
    page = client.get(reverse("scorecard_board", args=["sokoban-hidden", RELEASE_VERSION])).content.decode()
    assert page.count("Deep Planner") == 1
    assert page.index("Greedy Pusher") < page.index("Crate Whisperer") < page.index("Cherry Picker")
    assert "1.14× optimal" in page
    assert "lower bound" in page


def test_equal_success_and_efficiency_rank_the_fewer_deadlocks_first(submitter, scorecard_release, levels, submit):
    from submissions.demo_loaders.scorecard import strong_planner_episodes

    submit(
        submitter,
        card_members(strong_planner_episodes(levels, solved=30, slack=1.0, deadlocks=9), levels, agent="Wedger"),
        name="a",
    )
    submit(
        submitter,
        card_members(strong_planner_episodes(levels, solved=30, slack=1.0, deadlocks=2), levels, agent="Careful"),
        name="b",
    )
    ranked = list(ScorecardStanding.objects.order_by("rank").values_list("agent__name", flat=True))
    assert ranked == ["Careful", "Wedger"]


def test_verifying_a_card_twice_changes_nothing(submitter, scorecard_release, levels, submit):
    from submissions.services.verification import submission_verify

    submission = submit(submitter, card_members(seed_example_episodes(levels), levels))
    submission_verify(submission_id=submission.pk)
    assert ScorecardRun.objects.count() == 1
    assert ScorecardStanding.objects.count() == 1


def test_cards_over_the_daily_limit_are_rejected(submitter, scorecard_release, levels, submit):
    benchmark = scorecard_release.benchmark
    benchmark.daily_submission_limit = 1
    benchmark.save()
    submit(submitter, card_members(ten_of_ten_episodes(levels), levels), name="first")
    second = submit(submitter, card_members(seed_example_episodes(levels), levels), name="second")
    assert (second.verdict, second.error_code) == ("rejected", "daily_limit_exceeded")
    assert second.error_message.startswith("Daily submission limit reached: 1 per day for scorecard:sokoban-hidden.")
    assert ScorecardRun.objects.count() == 1


def test_a_private_card_stays_off_the_board_but_its_submitter_sees_it(
    client, make_user, submitter, scorecard_release, levels, submit
):
    submission = submit(submitter, card_members(seed_example_episodes(levels), levels))
    submission.is_private = True
    submission.save()
    from leaderboard.services.scheme_standings import scorecard_standings_refresh

    scorecard_standings_refresh(release=scorecard_release)
    assert not ScorecardStanding.objects.exists()
    card = ScorecardRun.objects.get(submission=submission)
    url = reverse("scorecard_detail", args=[card.pk])
    assert client.get(url).status_code == 404
    client.force_login(make_user("stranger"))
    assert client.get(url).status_code == 404
    client.force_login(submitter)
    assert client.get(url).status_code == 200


def test_a_solve_shorter_than_the_optimal_path_is_rejected(submitter, scorecard_release, levels, submit):
    episodes = [Episode("level-001", 5, True, False, 5)]
    submission = submit(submitter, card_members(episodes, levels, claimed={"episodes": 100}))
    assert (submission.verdict, submission.error_code) == ("rejected", "scorecard_invalid")
    # The message never states the level's optimal length (hidden server data).
    assert submission.error_message == (
        "scorecard episode 0: level 'level-001' is marked solved in 5 steps, fewer than its shortest solution; "
        "the episode record is inconsistent"
    )
    assert not ScorecardRun.objects.exists()


def test_a_closed_card_updates_only_its_agents_place_and_lands_where_the_rebuild_does(scorecard_release, submitter):
    import random

    from leaderboard.models import Agent, AgentVersion
    from leaderboard.models.races import ScorecardStanding
    from leaderboard.services.scheme_standings import scorecard_standing_update, scorecard_standings_refresh
    from submissions.models import Submission

    def board():
        return list(
            ScorecardStanding.objects.filter(release=scorecard_release)
            .order_by("rank")
            .values_list("rank", "agent_id", "scorecard_id")
        )

    rng = random.Random(3)
    for n in range(40):
        agent, _ = Agent.objects.get_or_create(slug=f"agent-{rng.randrange(8)}", defaults={"name": "A"})
        version, _ = AgentVersion.objects.get_or_create(agent=agent, version=str(rng.randrange(2)))
        solved = rng.randrange(0, 11)
        submission = Submission.objects.create(
            submitter=submitter, sha256=f"{n:064x}", size=1, file=f"b/{n}.age", status="done",
            is_private=rng.random() < 0.1,
        )  # fmt: skip
        ScorecardRun.objects.create(
            submission=submission, release=scorecard_release, agent_version=version,
            level=rng.choice(["validated", "mismatch"]), episodes=10, solved=solved, success_rate=solved / 10,
            move_efficiency=rng.choice([0.5, 0.8, 1.0]) if solved else None,
            avg_steps_solved=40.0 if solved else None, deadlock_rate=rng.choice([0.0, 0.1]), total_actions=400,
        )  # fmt: skip
        scorecard_standing_update(release=scorecard_release, agent_id=agent.pk)
        incremental = board()
        scorecard_standings_refresh(release=scorecard_release)
        assert board() == incremental, f"card {n}"

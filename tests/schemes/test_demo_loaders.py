"""The scheme demo loaders go through the real play and verification paths and are idempotent."""

# ruff: noqa: RUF001 - the pages print the multiplication and division signs of the seed

from __future__ import annotations

import io

from django.urls import reverse

from leaderboard.models import Race, RaceRun, ScorecardRun
from leaderboard.models.races import OverallStanding, ScorecardStanding
from submissions.demo_loaders.race import load_race_demo
from submissions.demo_loaders.scorecard import load_scorecard_demo
from submissions.models import Card, CardMove, Submission


def test_the_scorecard_demo_plays_the_seed_example_once(db, client):
    load_scorecard_demo(stdout=io.StringIO())
    load_scorecard_demo(stdout=io.StringIO())
    assert Card.objects.filter(status="closed").count() == 5
    assert not Submission.objects.exists()
    example = ScorecardRun.objects.get(agent_version__agent__name="Crate Whisperer")
    # Seed 001's worked example, measured move by move by the server.
    assert (example.solved, example.episodes, example.deadlock_rate, example.total_actions) == (31, 100, 0.08, 4120)
    assert (round(example.move_efficiency, 3), round(example.avg_steps_solved, 1)) == (0.874, 23.4)
    assert CardMove.objects.filter(episode__card=example.card).exclude(action="reset").count() == 4120
    assert ScorecardStanding.objects.count() == 4
    page = client.get(reverse("scorecard_detail", args=[example.card_id])).content.decode()
    assert (
        "This agent solved 31 of 100. When it solved a level it took about 1.14× the optimal path (1 ÷ 0.874), "
        "and it wedged a crate unrecoverably in at least 8% of episodes." in page
    )
    board = client.get(reverse("scorecard_board", args=["sokoban-hidden", "2026.1"])).content.decode()
    assert board.count("Deep Planner") == 1 and "1.14× optimal" in board


def test_the_race_demo_loads_four_or_more_races_with_one_live(db, client):
    load_race_demo(stdout=io.StringIO())
    runs = RaceRun.objects.count()
    load_race_demo(stdout=io.StringIO())
    assert RaceRun.objects.count() == runs
    statuses = dict(Race.objects.values_list("number", "status"))
    assert statuses == {1: "released", 2: "released", 3: "released", 4: "embargoed", 5: "running", 6: "scheduled"}
    assert set(Submission.objects.filter(kind="race_run").values_list("verdict", flat=True)) == {"attested"}
    assert RaceRun.objects.filter(infrastructure_failure=True).count() == 1
    assert OverallStanding.objects.filter(race__number=5).exists()
    page = client.get(reverse("race_overall", args=["shopping-race"])).content.decode()
    assert "race 5" in page and "running" in page


def test_the_example_manifests_list_the_demo_level_set_and_qualifying_tasks():
    from leaderboard.manifest import load_manifest
    from submissions.demo_loaders import race, scorecard

    levels = load_manifest(scorecard.EXAMPLE_DIR).episode_set.levels
    assert len(levels) == scorecard.EPISODE_SET_SIZE
    assert list(load_manifest(race.EXAMPLE_DIR).qualifying_task_ids) == race.QUALIFYING_TASKS

"""A closed card moves only its agent's row of the scorecard board, and lands where the rebuild would."""

from __future__ import annotations

import random

from leaderboard.models import Agent, AgentVersion, Run, ScorecardRun
from leaderboard.models.races import ScorecardStanding
from leaderboard.services.scorecard_standings import scorecard_standing_update, scorecard_standings_refresh
from submissions.models.scorecards import Card


def _board(release):
    return list(
        ScorecardStanding.objects.filter(release=release)
        .order_by("rank")
        .values_list("rank", "agent_id", "scorecard_id")
    )


def test_a_closed_card_updates_only_its_agents_place_and_lands_where_the_rebuild_does(play_release, make_user):
    owner = make_user("card-owner")
    rng = random.Random(3)
    for n in range(40):
        agent, _ = Agent.objects.get_or_create(slug=f"agent-{rng.randrange(8)}", defaults={"name": "A"})
        version, _ = AgentVersion.objects.get_or_create(agent=agent, version=str(rng.randrange(2)))
        card = Card.objects.create(release=play_release, agent_version=version, owner=owner, status=Card.Status.CLOSED)
        solved = rng.randrange(0, 11)
        linked = ScorecardRun.objects.create(
            release=play_release, agent_version=version, level=Run.Level.VERIFIED,
            episodes=10, solved=solved, success_rate=solved / 10,
            move_efficiency=rng.choice([0.5, 0.8, 1.0]) if solved else None,
            avg_steps_solved=40.0 if solved else None, deadlock_rate=rng.choice([0.0, 0.1]), total_actions=400,
        )  # fmt: skip
        card.run = linked
        card.save(update_fields=["run"])
        scorecard_standing_update(release=play_release, agent_id=agent.pk)
        incremental = _board(play_release)
        scorecard_standings_refresh(release=play_release)
        assert _board(play_release) == incremental, f"card {n}"
    assert len(_board(play_release)) == 8


def test_a_worse_card_leaves_the_board_untouched(play_release, make_user):
    owner = make_user("card-owner")
    agent = Agent.objects.create(slug="steady", name="Steady")
    version = AgentVersion.objects.create(agent=agent, version="1")

    def close(solved):
        card = Card.objects.create(release=play_release, agent_version=version, owner=owner, status=Card.Status.CLOSED)
        linked = ScorecardRun.objects.create(
            release=play_release, agent_version=version, level=Run.Level.VERIFIED, episodes=10,
            solved=solved, success_rate=solved / 10, move_efficiency=1.0 if solved else None,
            avg_steps_solved=10.0 if solved else None, deadlock_rate=0.0, total_actions=100,
        )  # fmt: skip
        card.run = linked
        card.save(update_fields=["run"])
        return linked

    best = close(7)
    assert scorecard_standing_update(release=play_release, agent_id=agent.pk) == 1
    generation = type(play_release).objects.get(pk=play_release.pk).generation
    close(3)
    assert scorecard_standing_update(release=play_release, agent_id=agent.pk) == 0
    assert _board(play_release) == [(1, agent.pk, best.pk)]
    assert type(play_release).objects.get(pk=play_release.pk).generation == generation

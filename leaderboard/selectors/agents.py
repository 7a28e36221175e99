"""Which agents (and versions) are public: the one rule behind /api/v1/agents/, the agent
pages and anything else that lists agent names.

An Agent row is written the first time a bundle names it, whatever becomes of that
bundle (a private run, or a rejected race bundle written before its rejection). Its
name is public only once something public stands behind it: an accepted paper-gap
run that is not private on a published release, a closed scorecard played on a published
release, or a race run on a published release whose submission is not private. Private and rejected
submissions never make a name public; staff see every agent.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from leaderboard.models import Agent, AgentVersion, RaceRun, Run, ScorecardRun
from leaderboard.selectors.visibility import viewer_is_staff as _is_staff
from leaderboard.users import Viewer

# Run levels that are public (rejected and mismatched bundles write no run at all).
PUBLIC_RUN_LEVELS = ("validated", "attested", "verified")


def agent_versions_public(*, user: Viewer | None = None) -> QuerySet[AgentVersion]:
    """Agent versions with at least one public run (every version for staff)."""
    versions = AgentVersion.objects.all()
    if _is_staff(user):
        return versions
    run = Run.objects.filter(
        agent_version=OuterRef("pk"),
        level__in=PUBLIC_RUN_LEVELS,
        is_private=False,
        submission__is_private=False,
        release__published=True,
    )
    # A closed card played on the server (scorecards are never private; a card is
    # closed by construction when it has a ScorecardRun).
    card = ScorecardRun.objects.filter(agent_version=OuterRef("pk"), card__isnull=False, release__published=True)
    race_run = RaceRun.objects.filter(
        agent_version=OuterRef("pk"), submission__is_private=False, release__published=True
    )
    return versions.filter(Exists(run) | Exists(card) | Exists(race_run))


def agents_public(*, user: Viewer | None = None) -> QuerySet[Agent]:
    """Agents with at least one public version (every agent for staff)."""
    if _is_staff(user):
        return Agent.objects.all()
    return Agent.objects.filter(Exists(agent_versions_public(user=user).filter(agent=OuterRef("pk"))))

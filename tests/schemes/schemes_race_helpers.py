"""Helpers of the race tests: outcomes, signed race_run bundles, whole races."""

from __future__ import annotations

from scoring.race import TaskOutcome
from submissions.demo_loaders.scheme_bundles import race_run_members

RACE_TASKS = [f"t{index:02d}" for index in range(10)]
# The race release's public frozen qualifying set (the race_release fixture syncs it).
QUALIFYING = [f"q{index:02d}" for index in range(10)]


def accepted(task_id: str, reward: float = 1.0) -> TaskOutcome:
    return TaskOutcome(task_id=task_id, order_placed=True, verdict_status="accepted", reward=reward)


def rejected(task_id: str) -> TaskOutcome:
    return TaskOutcome(task_id=task_id, order_placed=True, verdict_status="rejected", reward=0.0)


def env_error(task_id: str) -> TaskOutcome:
    return TaskOutcome(task_id=task_id, order_placed=False, env_error=True)


def scoring_outcomes(score: float, tasks: list[str] = RACE_TASKS) -> list[TaskOutcome]:
    """Full reward on the first round(score * n) tasks, a rejected order on the rest."""
    wins = round(score * len(tasks))
    return [accepted(task) if index < wins else rejected(task) for index, task in enumerate(tasks)]


def entrant():
    """The account that owns the test agents and enters them in races."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get_or_create(username="entrant")[0]


def enter(agent: str, version: str, race: int | None, benchmark: str = "shop-race"):
    """Enter ``agent`` ``version`` in race ``race`` of ``benchmark`` as its owner (any race state),
    or with ``race`` None register it for the benchmark's qualifying runs."""
    from leaderboard.models import Benchmark, QualifyingEntry, Race, RaceEntry
    from submissions.services.agents import agent_version_claim

    agent_version = agent_version_claim(name=agent, version=version, account=entrant())
    if race is None:
        QualifyingEntry.objects.get_or_create(
            benchmark=Benchmark.objects.get(slug=benchmark),
            agent_version=agent_version,
            defaults={"entered_by": entrant()},
        )
        return agent_version
    race_row = Race.objects.filter(benchmark__slug=benchmark, number=race).first()
    if race_row is not None:
        RaceEntry.objects.get_or_create(race=race_row, agent_version=agent_version, defaults={"entered_by": entrant()})
    return agent_version


def challenge_for(agent: str, version: str, race: int | None, *, user=None, release: str = "q1") -> str | None:
    """A challenge of ``user`` (default: the validators' ``submitter`` account) for the run, or
    None when the server would not issue one (then the bundle is the retired podium-bundle/1)."""
    from django.contrib.auth import get_user_model

    from submissions.bundle.errors import BundleError
    from submissions.services.challenges import ChallengeRequest, challenge_issue

    user = user or get_user_model().objects.get_or_create(username="submitter")[0]
    request = ChallengeRequest(
        benchmark="shop-race", release=release, agent_name=agent, agent_version=version, race=race
    )
    try:
        return challenge_issue(user=user, request=request).token
    except BundleError:
        return None


def members(
    *,
    validator,
    key,
    agent: str,
    version: str,
    outcomes,
    race: int | None,
    tasks=RACE_TASKS,
    claimed=None,
    entered: bool = True,
    challenge: str | None = "issue",
) -> dict[str, bytes]:
    """A signed podium-bundle/2 race run; by default the version is entered by its owner and
    the challenge issued to the ``submitter`` account (``challenge=None``: podium-bundle/1)."""
    if entered:
        enter(agent, version, race)
    if challenge == "issue":
        challenge = challenge_for(agent, version, race)
    return race_run_members(
        challenge=challenge,
        benchmark="shop-race",
        release="q1",
        race=race,
        validator=validator.slug,
        agent=agent,
        version=version,
        outcomes=outcomes,
        expected_task_ids=tasks,
        key=key,
        claimed=claimed,
    )

"""Demo race benchmark (seed 002): validators, agents and versions, six races.

Races 1-3 are released (race 1 is the launch race), race 4 is under its
reveal embargo, race 5 is running with results landing, race 6 is
scheduled. One version joins late (damped by the races it missed), one
run in race 2 is an infrastructure failure re-run by its validator, and
every version also has qualifying runs on the public frozen task set.
Every run is a signed, sealed race_run bundle pushed through
submission_create + submission_verify. Idempotent: bundles already
submitted (same original name by the demo user) are skipped, and a race
is only moved forward in its lifecycle, never back.

The validators' signing keys are derived from fixed demo seeds so the
loader can sign again on every machine: they are for demo data only.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.db import transaction

from leaderboard.models import Benchmark, Race, Release, Validator
from leaderboard.services.races import race_close, race_release, race_schedule, race_start
from leaderboard.services.release_sync import release_sync
from scoring.race import TaskOutcome
from submissions.bundle.signatures import public_key_b64
from submissions.demo_loaders.scheme_bundles import race_run_members, seal_members, submit_sealed
from submissions.demo_loaders.scorecard import demo_user
from submissions.models import Submission
from submissions.services.challenges import ChallengeRequest, challenge_issue
from submissions.services.races import race_entry_create
from submissions.services.signing_keys import signing_key_register
from submissions.site_keys import current_public_key

BENCHMARK_SLUG = "shopping-race"
BENCHMARK_NAME = "Shopping race"
RELEASE_VERSION = "q-2026.1"
DEMO_USERNAME = "demo-validators"
# The account that owns the demo race agents and enters them in races (seed 002).
DEMO_ENTRANT = "demo-entrants"
# examples/demo-race/release.yaml lists the same public frozen set (a test keeps them equal).
QUALIFYING_TASKS = [f"public-{index:02d}" for index in range(12)]
EXAMPLE_DIR = Path(settings.BASE_DIR) / "examples" / "demo-race"
VALIDATORS = (("validator-north", "Validator North"), ("validator-south", "Validator South"))
TASKS_PER_RACE = 10

# (agent, version): skill per race number (None = did not race). Late Bloomer joins at race 3;
# Cartographer 2.0 replaces 1.0 from race 4 on.
ENTRANTS: dict[tuple[str, str], dict[int, float]] = {
    ("Cartographer", "1.0"): {1: 0.72, 2: 0.65, 3: 0.70},
    ("Cartographer", "2.0"): {4: 0.86, 5: 0.84},
    ("Bargain Hunter", "3.1"): {1: 0.80, 2: 0.52, 3: 0.75, 4: 0.70, 5: 0.66},
    ("Checkout Bot", "0.9"): {1: 0.55, 2: 0.45, 3: 0.50, 4: 0.48, 5: 0.52},
    ("Window Shopper", "1.2"): {1: 0.35, 2: 0.30, 3: 0.42, 4: 0.38, 5: 0.30},
    ("Late Bloomer", "1.0"): {3: 0.90, 4: 0.82, 5: 0.88},
}
RACES = {1: "released", 2: "released", 3: "released", 4: "embargoed", 5: "running", 6: "scheduled"}
# Race 5 is live: only these versions have reported so far.
RUNNING_REPORTED = {("Bargain Hunter", "3.1"), ("Cartographer", "2.0"), ("Late Bloomer", "1.0")}
ORDER = ["scheduled", "running", "embargoed", "released"]


def validator_key(slug: str) -> Ed25519PrivateKey:
    """A demo validator's signing key, derived from a fixed seed (demo data only)."""
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"podium demo {slug}".encode()).digest())


def race_tasks(number: int) -> list[str]:
    return [f"race{number}-task-{index:02d}" for index in range(TASKS_PER_RACE)]


def demo_outcomes(tasks: list[str], skill: float, *, salt: str) -> list[TaskOutcome]:
    """Deterministic episodes whose mean paid reward is near ``skill``, with a mix of categories."""
    rng = random.Random(salt)
    outcomes = []
    for task in tasks:
        roll = rng.random()
        if roll < skill:
            outcomes.append(TaskOutcome(task, order_placed=True, verdict_status="accepted", reward=1.0))
            continue
        kind = rng.choice(["partial", "rejected", "no_order", "did_not_finish", "agent_error", "time_limit"])
        if kind == "partial":
            outcomes.append(TaskOutcome(task, order_placed=True, verdict_status="accepted", reward=0.5))
        elif kind == "rejected":
            outcomes.append(TaskOutcome(task, order_placed=True, verdict_status="rejected", reward=0.0))
        elif kind == "no_order":
            outcomes.append(TaskOutcome(task, order_placed=False))
        elif kind == "did_not_finish":
            outcomes.append(TaskOutcome(task, order_placed=False, step_limit_hit=True))
        elif kind == "agent_error":
            outcomes.append(TaskOutcome(task, order_placed=False, agent_error=True))
        else:
            outcomes.append(TaskOutcome(task, order_placed=False, time_limit_hit=True))
    return outcomes


def infrastructure_failure(tasks: list[str]) -> list[TaskOutcome]:
    """Half the tasks lost to environment errors: the run will not count and is re-run."""
    return [
        TaskOutcome(task, order_placed=False, env_error=True)
        if index % 2 == 0
        else TaskOutcome(task, order_placed=True, verdict_status="accepted", reward=1.0)
        for index, task in enumerate(tasks)
    ]


@transaction.atomic
def race_benchmark_ensure(*, user: Any) -> tuple[Benchmark, Release, dict[str, Validator]]:
    """The benchmark, its qualifying release, its validators and their registered keys."""
    release = release_sync(manifest=EXAMPLE_DIR).release
    benchmark = release.benchmark
    validators = {}
    for slug, name in VALIDATORS:
        validator, _ = Validator.objects.get_or_create(slug=slug, defaults={"name": name})
        # Registered by the loader itself (a script: user None), not the demo account, which
        # holds no staff permission.
        signing_key_register(
            validator=validator, benchmark=benchmark, public_key_b64=public_key_b64(validator_key(slug)), user=None
        )
        # The demo user files the validators' runs: it acts for them (and sees the runs they owe).
        validator.accounts.add(user)
        validators[slug] = validator
    return benchmark, release, validators


def _advance(race: Race, target: str) -> Race:
    """Move a race forward through the lifecycle services up to ``target`` (never back)."""
    steps = {"running": race_start, "embargoed": race_close, "released": race_release}
    while ORDER.index(race.status) < ORDER.index(target):
        following = ORDER[ORDER.index(race.status) + 1]
        race = steps[following](race=race)
    return race


def _submit_race_runs(number: int, target: str, submit: Callable[..., None]) -> None:
    """Every validator's run of every entrant in race ``number`` (only the early reporters
    while the race is still running), plus one infrastructure failure to re-run."""
    tasks = race_tasks(number)
    for (agent, version), skills in ENTRANTS.items():
        if number not in skills or (target == "running" and (agent, version) not in RUNNING_REPORTED):
            continue
        for slug, _ in VALIDATORS:
            base = f"race{number}-{agent}-{version}-{slug}"
            if number == 2 and agent == "Checkout Bot" and slug == "validator-south":
                submit(
                    f"{base}-infra.age",
                    validator=slug,
                    agent=agent,
                    version=version,
                    race=number,
                    outcomes=infrastructure_failure(tasks),
                    tasks=tasks,
                )
            submit(
                f"{base}.age",
                validator=slug,
                agent=agent,
                version=version,
                race=number,
                outcomes=demo_outcomes(tasks, skills[number], salt=base),
                tasks=tasks,
            )


def load_race_demo(*, stdout: Any) -> None:
    """Load the demo race benchmark through the real verification path."""
    user = demo_user(DEMO_USERNAME)
    # The agents belong to an entrant account, which enters them; validators run them.
    entrant = demo_user(DEMO_ENTRANT)
    benchmark, release, _ = race_benchmark_ensure(user=user)
    _, recipient = current_public_key()
    done = set(Submission.objects.filter(submitter=user).values_list("original_name", flat=True))

    def submit(name: str, *, validator: str, agent: str, version: str, race: int | None, outcomes, tasks) -> None:
        if name in done:
            return
        race_entry_create(
            user=entrant, benchmark_slug=BENCHMARK_SLUG, race_number=race, agent_name=agent, agent_version=version
        )
        challenge = challenge_issue(
            user=user,
            request=ChallengeRequest(
                benchmark=BENCHMARK_SLUG, release=RELEASE_VERSION, agent_name=agent, agent_version=version, race=race
            ),
        )
        members = race_run_members(
            challenge=challenge.token,
            benchmark=BENCHMARK_SLUG,
            release=RELEASE_VERSION,
            race=race,
            validator=validator,
            agent=agent,
            version=version,
            outcomes=outcomes,
            expected_task_ids=tasks,
            key=validator_key(validator),
        )
        submission = submit_sealed(user=user, sealed=seal_members(members, recipient), name=name)
        stdout.write(f"race run {name}: {submission.verdict or submission.status} {submission.error_code}\n")

    for (agent, version), skills in ENTRANTS.items():
        skill = sum(skills.values()) / len(skills)
        for slug, _ in VALIDATORS:
            submit(
                f"qualifying-{agent}-{version}-{slug}.age",
                validator=slug,
                agent=agent,
                version=version,
                race=None,
                outcomes=demo_outcomes(QUALIFYING_TASKS, skill, salt=f"q{agent}{version}{slug}"),
                tasks=QUALIFYING_TASKS,
            )
    for number, target in RACES.items():
        race = Race.objects.filter(benchmark=benchmark, number=number).first()
        if race is None:
            race = race_schedule(
                benchmark=benchmark,
                number=number,
                task_ids=race_tasks(number),
                name=f"Week {number}",
                is_launch=number == 1,
                challenge_margin=0.02,
                release=release,
                user=None,  # scheduled by the loader (a script), not the demo account
            )
        if target == "scheduled":
            continue
        if race.status == "scheduled":
            race = _advance(race, "running")
        _submit_race_runs(number, target, submit)
        race.refresh_from_db()
        _advance(race, target)
    stdout.write(f"race demo: {benchmark.name} with {benchmark.races.count()} races\n")

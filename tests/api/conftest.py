"""A small world for the API tests: one benchmark with a published and a draft
release, anchors both published and withheld (distinctive values the leak test
searches for), an owner with a public and a private run, another user, staff,
and an embargoed race with a failure category."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import (
    Agent,
    AgentVersion,
    Benchmark,
    Evaluator,
    Race,
    RaceRun,
    RaceTaskOutcome,
    Release,
    ReleaseTask,
    Run,
    Standing,
    Task,
    TaskResult,
    Validator,
    VerificationEvent,
)
from submissions.api_keys import api_key_create
from submissions.models import Submission
from tests.staff import staff_grant

# Anchors that must never leave the server, and an embargoed failure category.
WITHHELD_ANCHOR = 0.4132587
DRAFT_ANCHOR = 0.6619473
PUBLISHED_ANCHOR = 0.7123456
WITHHELD_MEASURED = 0.2950931
EMBARGOED_CATEGORY = "embargoed-wrong-tool-7731"
WITHHELD_VALUES = [str(WITHHELD_ANCHOR), str(DRAFT_ANCHOR), str(WITHHELD_MEASURED), EMBARGOED_CATEGORY]


@pytest.fixture(autouse=True)
def _fresh_cache(settings: Any) -> None:
    # Quota counters, throttles and key-failure counters live in the cache. A fresh key
    # prefix per test isolates them without cache.clear(), which on Redis would flush
    # the database the Celery broker shares.
    settings.CACHES = {
        name: {**config, "KEY_PREFIX": f"test-{uuid.uuid4().hex}"} for name, config in settings.CACHES.items()
    }
    # The world creates three users per test; a deliberately slow hasher only slows the suite.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class World:
    owner: Any
    other: Any
    staff: Any
    benchmark: Benchmark
    release: Release
    draft: Release
    public_run: Run
    private_run: Run
    draft_run: Run
    submission: Submission
    race: Race
    evaluator: Evaluator
    validator: Validator


def _task(benchmark: Benchmark, evaluator: Evaluator, slug: str, genre: str) -> Task:
    return Task.objects.create(
        benchmark=benchmark,
        slug=slug,
        title=slug.replace("-", " ").title(),
        platform="manipulation",
        direction="learning",
        simulator=evaluator,
        genre=genre,
        mode="batch",
        metric_name="success_rate",
        metric_direction="higher_is_better",
        paper_md="# Paper",
        brief_md="# Brief",
        contract={"slug": slug, "metric_name": "success_rate", "genre": genre},
        anchor_provenance=f"Table 2 of the paper: {WITHHELD_ANCHOR}",
    )


def _submission(user: Any, n: int, **extra: Any) -> Submission:
    fields: dict[str, Any] = {
        "kind": Submission.Kind.PAPER_GAP,
        "status": Submission.Status.DONE,
        "verdict": Submission.Verdict.VALIDATED,
        **extra,
    }
    submission = Submission(submitter=user, sha256=f"{n:064x}", size=100, **fields)
    submission.file.name = f"bundles/{n:064x}.age"
    submission.save()
    return submission


def _run(submission: Submission, release: Release, version: AgentVersion, *, private: bool = False) -> Run:
    submission.release = release
    submission.save(update_fields=["release"])
    linked = Run.objects.create(
        release=release,
        agent_version=version,
        level=Run.Level.VALIDATED,
        overall=0.9,
        reproduction=1.0,
        open=0.8,
        pass_rate=1.0,
        covered=2,
        required=2,
        complete=True,
        breakdown={"tasks": {"withheld": {"measured": WITHHELD_MEASURED}}},
        is_private=private,
    )
    submission.run = linked
    submission.save(update_fields=["run"])
    return linked


def _results(run: Run, published: ReleaseTask, withheld: ReleaseTask) -> None:
    TaskResult.objects.create(
        run=run, release_task=published, measured=0.7, gap=0.98, factor=1, score=0.98, final=0.98, episodes=100
    )
    TaskResult.objects.create(
        run=run, release_task=withheld, measured=WITHHELD_MEASURED, gap=0.71, factor=1, score=0.71, final=0.71,
        episodes=100, signature="valid",  # evaluator-signed: its scores may be shown (leaderboard.disclosure)
    )  # fmt: skip


def _standing(release: Release, run: Run, **extra: Any) -> Standing:
    """A Standing row (its rank is computed when read, from these columns)."""
    fields: dict[str, Any] = {
        "release": release,
        "tab": "overall",
        "run": run,
        "agent_version": run.agent_version,
        "score": 0.9,
        "pass_rate": 1.0,
        "covered": 2,
        "required": 2,
        "complete": True,
        "agent_name": run.agent_version.agent.name,
        "agent_slug": run.agent_version.agent.slug,
        "version": run.agent_version.version,
        "verification": "validated",
        "verified_at": timezone.now(),
    }
    fields.update(extra)
    return Standing.objects.create(**fields)


@pytest.fixture
def world(db: Any) -> World:
    user_model = get_user_model()
    owner = user_model.objects.create_user("owner", password="pw-owner-1234")
    other = user_model.objects.create_user("other", password="pw-other-1234")
    # A maintainer: staff with every staff-write permission (tests/api/test_staff_permissions.py
    # has the helper without them).
    staff = staff_grant(user_model.objects.create_user("staff", password="pw-staff-1234", is_staff=True))
    evaluator = Evaluator.objects.create(simulator="robosuite+robomimic")
    validator = Validator.objects.create(slug="val-one", name="Validator One")
    benchmark = Benchmark.objects.create(
        slug="ale-robotics", name="ALE Robotics", scheme="paper_gap", daily_submission_limit=2
    )
    t1 = _task(benchmark, evaluator, "pick-cube", "reproduction")
    t2 = _task(benchmark, evaluator, "stack-blocks", "open")
    t3 = _task(benchmark, evaluator, "draft-only-task", "open")
    release = Release.objects.create(
        benchmark=benchmark,
        version="v0.5",
        required_task_set_hash="a" * 64,
        manifest={"tasks": {"stack-blocks": {"paper_value": WITHHELD_ANCHOR}}},
        manifest_sha256="b" * 64,
        published=True,
        published_at=timezone.now() - dt.timedelta(days=1),
        budgets={"secret_budget": WITHHELD_ANCHOR},
    )
    published = ReleaseTask.objects.create(
        release=release, task=t1, position=0, genre="reproduction", metric_direction="higher_is_better",
        paper_value=PUBLISHED_ANCHOR, anchor_published=True,
    )  # fmt: skip
    withheld = ReleaseTask.objects.create(
        release=release, task=t2, position=1, genre="open", metric_direction="higher_is_better",
        paper_value=WITHHELD_ANCHOR, anchor_published=False,
    )  # fmt: skip
    draft = Release.objects.create(
        benchmark=benchmark, version="v0.6-draft", required_task_set_hash="c" * 64, manifest_sha256="d" * 64
    )
    draft_task = ReleaseTask.objects.create(
        release=draft, task=t3, position=0, genre="open", metric_direction="higher_is_better",
        paper_value=DRAFT_ANCHOR, anchor_published=True,
    )  # fmt: skip
    agent = Agent.objects.create(slug="robo-agent", name="Robo Agent", owner=owner)
    version = AgentVersion.objects.create(agent=agent, version="1.0")
    submission = _submission(owner, 1)
    public_run = _run(submission, release, version)
    _results(public_run, published, withheld)
    VerificationEvent.objects.create(run=public_run, level="validated", method="recomputed from evaluator results")
    private_run = _run(_submission(owner, 2, is_private=True), release, version, private=True)
    _results(private_run, published, withheld)
    draft_run = _run(_submission(owner, 3), draft, version)
    TaskResult.objects.create(
        run=draft_run, release_task=draft_task, measured=0.5, gap=0.75, factor=1, score=0.75, final=0.75, episodes=100
    )
    _standing(release, public_run)
    _standing(release, private_run, complete=False, covered=1)
    race = Race.objects.create(benchmark=benchmark, release=release, number=1, status=Race.Status.EMBARGOED)
    race_submission = _submission(owner, 4, kind=Submission.Kind.RACE_RUN)
    race_run = RaceRun.objects.create(validator=validator, agent_version=version, release=release, race=race, score=0.5)
    race_submission.race_run = race_run
    race_submission.save(update_fields=["race_run"])
    RaceTaskOutcome.objects.create(
        run=race_run, task_id="t-1", reward=1, paid_reward=1, verdict_status="rejected",
        failure_category=EMBARGOED_CATEGORY,
    )  # fmt: skip
    return World(
        owner=owner,
        other=other,
        staff=staff,
        benchmark=benchmark,
        release=release,
        draft=draft,
        public_run=public_run,
        private_run=private_run,
        draft_run=draft_run,
        submission=submission,
        race=race,
        evaluator=evaluator,
        validator=validator,
    )


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def owner_key(world: World) -> str:
    return api_key_create(user=world.owner, name="ci").plaintext


@pytest.fixture
def client_for() -> Any:
    def make(user: Any) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def media(settings: Any, tmp_path: Any) -> Any:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def withheld_values() -> list[str]:
    """Strings no response may contain: withheld and draft anchors, a hidden measurement, an embargoed category."""
    return list(WITHHELD_VALUES)

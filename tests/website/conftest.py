"""Factories for the website tests: a paper-gap release with tasks (some anchors
withheld), runs with task results, and precomputed Standing rows, built directly
with the ORM so page tests do not depend on the verification pipeline."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.text import slugify

from leaderboard.models import (
    Agent,
    AgentVersion,
    Benchmark,
    Evaluator,
    Release,
    ReleaseTask,
    Run,
    Standing,
    Task,
    TaskResult,
)
from submissions.models import Submission
from tests.staff import staff_grant

_counter = itertools.count(1)

# Anchors the tests look for in every page body: they must never appear.
WITHHELD_ANCHORS = (0.7331, 12.345, 0.0417)
PUBLISHED_ANCHOR = 0.62


def make_user(username: str | None = None, **extra: Any) -> Any:
    """A user; a staff one is a maintainer, with every staff-write permission (leaderboard.permissions)."""
    username = username or f"user{next(_counter)}"
    user = get_user_model().objects.create_user(username=username, password="a-long-test-password-1", **extra)
    return staff_grant(user) if extra.get("is_staff") else user


def make_benchmark(slug: str = "ale-robotics", name: str = "ALE Robotics") -> Benchmark:
    return Benchmark.objects.create(
        slug=slug, name=name, scheme=Benchmark.Scheme.PAPER_GAP, description="Agents reproduce robotics papers."
    )


def make_task(benchmark: Benchmark, slug: str, *, genre: str = "reproduction", **extra: Any) -> Task:
    simulator, _ = Evaluator.objects.get_or_create(simulator="robosuite+robomimic")
    contract = {
        "slug": slug,
        "title": f"Task {slug}",
        "platform": "manipulation",
        "simulator": "robosuite+robomimic",
        "genre": genre,
        "mode": "interactive",
        "metric": {"name": "success_rate", "direction": "higher_is_better", "score_cap": 1.5},
    }
    values: dict[str, Any] = {
        "benchmark": benchmark,
        "slug": slug,
        "title": f"Task {slug}",
        "platform": "manipulation",
        "direction": "learning",
        "simulator": simulator,
        "genre": genre,
        "mode": "interactive",
        "metric_name": "success_rate",
        "metric_direction": "higher_is_better",
        "paper_md": f"# Paper for {slug}\n\nSee **Table 2**.",
        "brief_md": f"Reach the paper's success rate on `{slug}`.",
        "contract": contract,
    }
    values.update(extra)
    return Task.objects.create(**values)


def make_release(
    benchmark: Benchmark,
    version: str = "v0.5",
    *,
    tasks: list[tuple[str, str, float | None, bool]] | None = None,
    published_at: dt.datetime | None = None,
) -> Release:
    """A published release; tasks are (slug, genre, anchor, anchor_published)."""
    release = Release.objects.create(
        benchmark=benchmark,
        version=version,
        title=f"{benchmark.name} {version}",
        required_task_set_hash=hashlib.sha256(version.encode()).hexdigest(),
        manifest={},
        manifest_sha256=hashlib.sha256(b"m" + version.encode()).hexdigest(),
        published=True,
        published_at=published_at or timezone.now(),
    )
    if tasks is None:
        tasks = [
            ("grasp", "reproduction", WITHHELD_ANCHORS[0], False),
            ("plan", "reproduction", WITHHELD_ANCHORS[1], False),
            ("fly", "open", WITHHELD_ANCHORS[2], False),
            ("walk", "open", PUBLISHED_ANCHOR, True),
        ]
    for position, (slug, genre, anchor, published) in enumerate(tasks):
        task = Task.objects.filter(benchmark=benchmark, slug=slug).first() or make_task(benchmark, slug, genre=genre)
        ReleaseTask.objects.create(
            release=release,
            task=task,
            position=position,
            genre=genre,
            metric_direction="higher_is_better",
            paper_value=anchor,
            anchor_published=published,
            penalties=[{"metric": "collision_rate", "limit": 0.05}] if slug == "grasp" else [],
        )
    return release


def make_run(
    release: Release,
    *,
    agent_name: str | None = None,
    version: str = "1.0",
    submitter: Any = None,
    score: float = 0.8,
    pass_rate: float = 0.95,
    covered: int | None = None,
    level: str = "validated",
    is_private: bool = False,
    with_standings: bool = True,
    ci: float = 0.05,
    tabs: tuple[str, ...] = ("overall", "reproduction", "open"),
    signature: str = "valid",
) -> Run:
    """A verified run with one TaskResult per covered task and its Standing rows.

    Results carry ``signature`` ("valid" by default: an evaluator-signed result, the only kind
    whose scores may be shown for a withheld anchor; see leaderboard.disclosure)."""
    n = next(_counter)
    agent_name = agent_name or f"Agent {n}"
    slug = slugify(agent_name)[:90] or f"agent-{n}"
    agent, _ = Agent.objects.get_or_create(slug=slug, defaults={"name": agent_name})
    agent_version, _ = AgentVersion.objects.get_or_create(agent=agent, version=version)
    submitter = submitter or make_user()
    release_tasks = list(release.release_tasks.select_related("task").order_by("position"))
    covered = len(release_tasks) if covered is None else covered
    submission = Submission.objects.create(
        submitter=submitter,
        kind=Submission.Kind.PAPER_GAP,
        release=release,
        file="bundles/x.age",
        original_name=f"run-{n}.age",
        sha256=hashlib.sha256(f"bundle-{n}".encode()).hexdigest(),
        size=1234,
        status=Submission.Status.DONE,
        verdict=level if level in ("validated", "attested") else "attested",
        diff=[
            {"path": "tasks.grasp.final", "claimed": score, "recomputed": score, "status": "match"},
            {"path": "aggregates.overall", "claimed": score, "recomputed": score, "status": "match"},
        ],
        is_private=is_private,
        finished_at=timezone.now(),
    )
    run = Run.objects.create(
        release=release,
        agent_version=agent_version,
        level=level,
        overall=score,
        reproduction=score,
        open=score,
        pass_rate=pass_rate,
        confidence={"overall": [score - ci, score + ci]},
        covered=covered,
        required=len(release_tasks),
        complete=covered == len(release_tasks),
        runtime_seconds=3725,
        tokens_in=1_200_000,
        tokens_out=34_000,
        effort_tier="high",
        is_private=is_private,
    )
    submission.run = run
    submission.save(update_fields=["run"])
    for rt in release_tasks[:covered]:
        TaskResult.objects.create(
            run=run,
            release_task=rt,
            measured=0.5,
            gap=score,
            factors={"collision_rate": 1.0} if rt.penalties else {},
            factor=1.0,
            score=score,
            final=score,
            pass_rate=pass_rate,
            episodes=100,
            faithful=True if rt.genre == "reproduction" else None,
            signature=signature,
        )
    if with_standings and not is_private:
        for tab in tabs:
            Standing.objects.create(
                release=release,
                tab=tab,
                run=run,
                agent_version=agent_version,
                score=score,
                ci_low=score - ci,
                ci_high=score + ci,
                pass_rate=pass_rate,
                covered=covered,
                required=len(release_tasks),
                complete=covered == len(release_tasks),
                agent_name=agent_name,
                agent_slug=slug,
                version=version,
                runtime_seconds=3725,
                tokens=1_234_000,
                effort_tier="high",
                verification=level,
                verified_at=timezone.now(),
            )
    return run


@pytest.fixture
def benchmark(db: Any) -> Benchmark:
    return make_benchmark()


@pytest.fixture
def release(benchmark: Benchmark) -> Release:
    return make_release(benchmark)


@pytest.fixture
def board(release: Release) -> Release:
    """A release with three runs: ranks 1-3, the third covering only 2 of 4 tasks."""
    make_run(release, agent_name="Alpha", score=1.12, pass_rate=0.99)
    make_run(release, agent_name="Bravo", score=0.83, pass_rate=0.9, ci=0.3)
    make_run(release, agent_name="Charlie", score=0.54, pass_rate=0.5, covered=2)
    return release


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    # Tests create many users; the real hasher is slow by design.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def private_cache(settings: Any) -> None:
    # Chart data, board pages and daily quota counters live in the cache. Each test gets
    # its own empty process-local cache, never clearing the shared Redis (the broker's too).
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": f"website-{next(_counter)}"}
    }

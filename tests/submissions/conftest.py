"""Fixtures of the submissions area. The site key, media root and users come from
tests/conftest.py; every test here stores bundles in a media folder of its own."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_media(media_root):
    return media_root


@pytest.fixture
def owner(make_user):
    return make_user("owner")


@pytest.fixture
def stranger(make_user):
    return make_user("stranger")


@pytest.fixture
def make_release(db):
    """A published paper-gap release built row by row: make(["slug:genre", ...], version="1.0")."""
    from leaderboard.models import Benchmark, Evaluator, Release, ReleaseTask, Task
    from scoring.gap import required_task_set_hash

    def make(
        tasks: list[str],
        *,
        version: str = "1.0",
        slug: str = "ale-robotics",
        published: bool = True,
        withheld: frozenset[str] = frozenset(),
    ):
        benchmark, _ = Benchmark.objects.get_or_create(slug=slug, defaults={"name": slug, "scheme": "paper_gap"})
        evaluator, _ = Evaluator.objects.get_or_create(simulator="robosuite")
        slugs = [entry.split(":")[0] for entry in tasks]
        release = Release.objects.create(
            benchmark=benchmark,
            version=version,
            required_task_set_hash=required_task_set_hash(slugs),
            manifest_sha256="0" * 64,
            published=published,
        )
        for position, entry in enumerate(tasks):
            task_slug, genre = entry.split(":")
            task, _ = Task.objects.get_or_create(
                benchmark=benchmark,
                slug=task_slug,
                defaults={
                    "title": task_slug,
                    "platform": "manipulation",
                    "direction": "learning",
                    "simulator": evaluator,
                    "genre": genre,
                    "mode": "batch",
                    "metric_name": "success_rate",
                    "metric_direction": "higher_is_better",
                    "paper_md": "paper",
                    "brief_md": "brief",
                },
            )
            ReleaseTask.objects.create(
                release=release,
                task=task,
                position=position,
                genre=genre,
                metric_direction="higher_is_better",
                paper_value=0.7,
                anchor_published=task_slug not in withheld,
                penalties=[{"metric": "collision_rate", "limit": 0.05}],
            )
        return release

    return make


@pytest.fixture
def release_from_spec(db):
    """Published release rows (benchmark, evaluator, tasks, release tasks) for a scoring.gap.ReleaseSpec.

    Anchors are published unless ``anchors_published=False`` or the task is listed in
    ``withheld``: verification refuses an unsigned result on a withheld anchor, and most of
    these tests are about other rules (the tests of that one say so)."""
    from leaderboard.models import Benchmark, Evaluator, Release, ReleaseTask, Task

    def make(
        spec,
        *,
        benchmark: str,
        version: str,
        published: bool = True,
        anchors_published: bool = True,
        withheld=frozenset(),
    ):
        bench, _ = Benchmark.objects.get_or_create(slug=benchmark, defaults={"name": benchmark, "scheme": "paper_gap"})
        evaluator, _ = Evaluator.objects.get_or_create(simulator="demo-sim")
        release = Release.objects.create(
            benchmark=bench,
            version=version,
            required_task_set_hash=spec.required_task_set_hash,
            missing_task_policy=spec.missing_task_policy,
            manifest_sha256="0" * 64,
            published=published,
        )
        for position, slug in enumerate(sorted(spec.tasks)):
            task_spec = spec.tasks[slug]
            task, _ = Task.objects.get_or_create(
                benchmark=bench,
                slug=slug,
                defaults={
                    "title": slug,
                    "platform": "manipulation",
                    "direction": "learning",
                    "simulator": evaluator,
                    "genre": task_spec.genre,
                    "mode": "batch",
                    "metric_name": "metric",
                    "metric_direction": task_spec.direction,
                    "paper_md": "paper",
                    "brief_md": "brief",
                },
            )
            ReleaseTask.objects.create(
                release=release,
                task=task,
                position=position,
                genre=task_spec.genre,
                metric_direction=task_spec.direction,
                paper_value=task_spec.paper_value,
                anchor_published=anchors_published and slug not in withheld,
                score_cap=task_spec.cap,
                penalties=[{"metric": metric, "limit": limit} for metric, limit in sorted(task_spec.penalties.items())],
            )
        return release

    return make


@pytest.fixture
def demo_release(release_from_spec):
    """The bundle package's built-in 11-task demo release (ale-robotics v0.5), as rows."""
    from submissions.bundle.demo import DEMO_BENCHMARK, DEMO_RELEASE, demo_release_spec

    spec, _ = demo_release_spec()
    return release_from_spec(spec, benchmark=DEMO_BENCHMARK, version=DEMO_RELEASE)


@pytest.fixture
def issue_challenge(db):
    """issue_challenge(user, agent_name="demo-agent", agent_version="1.0.0", benchmark=..., release=...) -> token."""
    from submissions.bundle.demo import DEMO_BENCHMARK, DEMO_RELEASE
    from submissions.services.challenges import ChallengeRequest, challenge_issue

    def issue(
        user,
        agent_name: str = "demo-agent",
        agent_version: str = "1.0.0",
        *,
        benchmark: str = DEMO_BENCHMARK,
        release: str = DEMO_RELEASE,
    ) -> str:
        request = ChallengeRequest(
            benchmark=benchmark, release=release, agent_name=agent_name, agent_version=agent_version
        )
        return challenge_issue(user=user, request=request).token

    return issue


@pytest.fixture
def seal(tmp_path, site_identity):
    """seal(**write_paper_gap_bundle_dir kwargs) -> bytes of a bundle sealed to the site key."""
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

    counter = iter(range(10_000))

    def make(**kwargs) -> bytes:
        directory = tmp_path / f"bundle-{next(counter)}"
        write_paper_gap_bundle_dir(directory, **kwargs)
        return seal_dir(directory, str(site_identity.to_public())).read_bytes()

    return make


@pytest.fixture(autouse=True)
def _fewer_bootstrap_resamples(settings):
    """CIs are computed after every recorded run; 50 resamples keep these tests fast (the value is not asserted)."""
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 50

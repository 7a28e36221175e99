"""Fixtures of the scorecard and race schemes: a site key, a private media root,
the demo level set, validators with registered Ed25519 keys, and helpers that
push real sealed bundles through submission_create + submission_verify."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from schemes_race_helpers import QUALIFYING, RACE_TASKS

from leaderboard.models import Benchmark, Release, SigningKey, Validator
from leaderboard.services.races import race_schedule, race_start
from submissions.bundle.signatures import generate_signing_key, key_id_for, public_key_b64
from submissions.demo_loaders import scheme_bundles


@pytest.fixture(autouse=True)
def _site_key_and_private_media(site_identity, media_root):
    return site_identity


@pytest.fixture(autouse=True)
def fresh_quotas():
    # Daily counters live in the database (rolled back per test); this clears throttles.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def submitter(make_user):
    return make_user("submitter")


@pytest.fixture
def submit(site_identity):
    """submit(user, members, name) -> Submission after verification (the real path)."""
    recipient = str(site_identity.to_public())

    def run(user, members, name="bundle.age"):
        return scheme_bundles.submit_sealed(
            user=user, sealed=scheme_bundles.seal_members(members, recipient), name=name
        )

    return run


@pytest.fixture
def race_benchmark(db) -> Benchmark:
    benchmark, _ = Benchmark.objects.get_or_create(
        slug="shop-race", defaults={"name": "Shop race", "scheme": Benchmark.Scheme.RACE}
    )
    return benchmark


@pytest.fixture
def race_release(race_benchmark) -> Release:
    return Release.objects.create(
        benchmark=race_benchmark,
        version="q1",
        required_task_set_hash="0" * 64,
        qualifying_task_ids=QUALIFYING,
        manifest_sha256="0" * 64,
        published=True,
    )


@pytest.fixture
def make_validator(db):
    """make_validator(slug) -> (Validator, private key) with the key registered for the
    shop-race benchmark and the ``submitter`` account acting for the validator."""

    def make(slug: str, *, benchmark_slug: str = "shop-race"):
        from django.contrib.auth import get_user_model

        benchmark, _ = Benchmark.objects.get_or_create(
            slug=benchmark_slug, defaults={"name": benchmark_slug, "scheme": Benchmark.Scheme.RACE}
        )
        validator = Validator.objects.create(slug=slug, name=slug.replace("-", " ").title())
        account, _ = get_user_model().objects.get_or_create(username="submitter")
        validator.accounts.add(account)
        key = generate_signing_key()
        public = public_key_b64(key)
        SigningKey.objects.create(
            owner_kind=SigningKey.Owner.VALIDATOR,
            validator=validator,
            benchmark=benchmark,
            key_id=key_id_for(public),
            public_key=public,
        )
        return validator, key

    return make


# ------------------------------------------------------------------ played scorecards

# A small hidden set for the play API tests (BFS optimal lengths checked at sync).
PLAY_LEVELS = {
    # A corridor: optimal 3 (right, right, right).
    "corridor": "#######\n#@ $ .#\n#######",
    # Open room: the crate can be pushed into the top-left corner (a deadlock).
    "room": "######\n#    #\n# $@ #\n#   .#\n######",
    "room-b": "######\n#.   #\n# $  #\n#  @ #\n######",
    "room-c": "#######\n#  .  #\n#  $  #\n#  @  #\n#######",
    "room-d": "######\n# @  #\n# $$ #\n# .. #\n######",
}


def write_play_manifest(directory, *, version="p1", levels=PLAY_LEVELS, published=True) -> None:
    import yaml

    directory.mkdir(parents=True, exist_ok=True)
    release = {
        "format": 1,
        "benchmark": {"slug": "sokoban-play", "name": "Sokoban play", "scheme": "scorecard"},
        "version": version,
        "title": "Play set",
        "published": published,
        "published_at": "2026-06-01T00:00:00Z",
        "tasks": [],
        "episode_set": {"size": len(levels), "levels": [{"id": key, "xsb": text} for key, text in levels.items()]},
    }
    (directory / "release.yaml").write_text(yaml.safe_dump(release, sort_keys=False))


@pytest.fixture
def play_release(db, tmp_path) -> Release:
    from leaderboard.services.release_sync import release_sync

    write_play_manifest(tmp_path / "play")
    return release_sync(manifest=tmp_path / "play").release


@pytest.fixture
def running(race_benchmark, race_release):
    """Race 1 of the shop race, started, over the hidden tasks RACE_TASKS."""
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    return race_start(race=race)

"""Fixtures of the scorecard and race schemes: a site key, a private media root,
the demo level set, validators with registered Ed25519 keys, and helpers that
push real sealed bundles through submission_create + submission_verify."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from leaderboard.models import Benchmark, Release, Validator
from submissions.bundle.signatures import generate_signing_key, key_id_for, public_key_b64
from submissions.demo_loaders import scheme_bundles
from submissions.demo_loaders.scorecard import demo_level_set, scorecard_release_ensure
from submissions.models import SigningKey


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
def levels() -> dict[str, int]:
    return demo_level_set()


@pytest.fixture
def scorecard_release(db) -> Release:
    return scorecard_release_ensure()


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
    return Benchmark.objects.create(slug="shop-race", name="Shop race", scheme=Benchmark.Scheme.RACE)


QUALIFYING_TASKS = [f"q{index:02d}" for index in range(10)]


@pytest.fixture
def race_release(race_benchmark) -> Release:
    return Release.objects.create(
        benchmark=race_benchmark,
        version="q1",
        required_task_set_hash="0" * 64,
        qualifying_task_ids=QUALIFYING_TASKS,
        manifest_sha256="0" * 64,
        published=True,
    )


@pytest.fixture
def make_validator(db):
    """make_validator(slug) -> (Validator, private key) with the key registered."""

    def make(slug: str):
        validator = Validator.objects.create(slug=slug, name=slug.replace("-", " ").title())
        key = generate_signing_key()
        public = public_key_b64(key)
        SigningKey.objects.create(
            owner_kind=SigningKey.Owner.VALIDATOR, validator=validator, key_id=key_id_for(public), public_key=public
        )
        return validator, key

    return make

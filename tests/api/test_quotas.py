from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Benchmark
from submissions.api_keys import api_key_create
from submissions.models import Submission
from submissions.quotas import QuotaExceeded, next_reset, quota_consume, quota_peek, quota_refund


def test_the_quota_resets_at_the_next_utc_midnight() -> None:
    now = dt.datetime(2026, 3, 4, 23, 59, 30, tzinfo=dt.UTC)
    assert next_reset(now) == dt.datetime(2026, 3, 5, tzinfo=dt.UTC)


@pytest.mark.django_db
def test_quota_consume_counts_until_the_limit_then_raises(world: Any) -> None:
    first = quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=2)
    second = quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=2)
    assert (first.used, first.remaining, second.used, second.remaining) == (1, 1, 2, 0)
    with pytest.raises(QuotaExceeded) as caught:
        quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=2)
    assert caught.value.resets_at == next_reset()
    assert caught.value.message.startswith("Daily submission limit reached: 2 per day for benchmark:x.")
    # A refused attempt does not move the counter.
    assert quota_peek(user=world.owner, api_key=None, scope="benchmark:x", limit=2).used == 2


@pytest.mark.django_db
def test_each_key_scope_and_user_has_its_own_allowance(world: Any) -> None:
    key = api_key_create(user=world.owner, name="k").api_key
    quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=1)
    quota_consume(user=world.owner, api_key=key, scope="benchmark:x", limit=1)
    quota_consume(user=world.owner, api_key=None, scope="benchmark:y", limit=1)
    quota_consume(user=world.other, api_key=None, scope="benchmark:x", limit=1)
    with pytest.raises(QuotaExceeded):
        quota_consume(user=world.owner, api_key=key, scope="benchmark:x", limit=1)


@pytest.mark.django_db
def test_a_refund_gives_one_unit_back(world: Any) -> None:
    quota_consume(user=world.owner, api_key=None, scope="s", limit=1)
    quota_refund(user=world.owner, api_key=None, scope="s")
    assert quota_consume(user=world.owner, api_key=None, scope="s", limit=1).used == 1


@pytest.mark.django_db
def test_a_zero_limit_blocks_every_submission(world: Any) -> None:
    with pytest.raises(QuotaExceeded):
        quota_consume(user=world.owner, api_key=None, scope="s", limit=0)


@pytest.mark.django_db
def test_concurrent_consumers_never_exceed_the_limit(world: Any) -> None:
    barrier = threading.Barrier(8)

    def attempt(_: int) -> bool:
        barrier.wait()
        try:
            quota_consume(user=world.owner, api_key=None, scope="race", limit=3)
        except QuotaExceeded:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(attempt, range(8)))
    assert results.count(True) == 3


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_simultaneous_uploads_at_the_limit_let_exactly_one_through(
    settings: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    from django.db import connection

    import submissions.services.submissions as submission_services

    assert settings.CACHES["default"]["BACKEND"].endswith("RedisCache")
    settings.MEDIA_ROOT = tmp_path / "media"
    # Nothing to verify here: keep the real broker's queue clean.
    monkeypatch.setattr(submission_services, "_enqueue", lambda submission_id: None)
    user = get_user_model().objects.create_user("racer", password="pw-racer-1234")
    Benchmark.objects.create(slug="limited", name="Limited", scheme="paper_gap", daily_submission_limit=1)
    key = api_key_create(user=user, name="ci").plaintext
    barrier = threading.Barrier(2)

    def upload(n: int) -> int:
        client = APIClient()
        barrier.wait()
        try:
            response = client.post(
                "/api/v1/submissions/",
                {"bundle": SimpleUploadedFile("b.age", f"bundle {n}".encode()), "benchmark": "limited"},
                format="multipart",
                HTTP_AUTHORIZATION=f"Api-Key {key}",
            )
        finally:
            connection.close()  # each thread has its own connection; let the test database go
        return response.status_code

    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = sorted(pool.map(upload, range(2)))
    assert codes == [201, 429]
    assert Submission.objects.filter(submitter=user).count() == 1

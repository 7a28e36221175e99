"""Daily limits per account (issue 11 item 8): all keys and the browser share one counter
per benchmark and UTC day, held in the database so neither key churn nor a cache flush
resets it; validator keys have their own staff-set limit."""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import Benchmark, SigningKey
from submissions.api_keys import api_key_create, api_key_revoke
from submissions.models import DailyCount, Submission
from submissions.quotas import (
    QuotaExceeded,
    next_reset,
    quota_consume,
    quota_peek,
    quota_refund,
    utc_day,
    validator_quota_consume,
)


@pytest.fixture
def no_verification(monkeypatch: Any) -> None:
    """Uploads are stored but not verified: these tests are about counting them."""
    import submissions.services.submissions as submission_services

    monkeypatch.setattr(submission_services, "_enqueue", lambda submission_id: None)


def api_upload(key: str, content: bytes, benchmark: str = "ale-robotics") -> Any:
    return APIClient().post(
        "/api/v1/submissions/",
        {"bundle": SimpleUploadedFile("b.age", content), "benchmark": benchmark},
        format="multipart",
        HTTP_AUTHORIZATION=f"Api-Key {key}",
    )


def test_the_quota_resets_at_the_next_utc_midnight() -> None:
    now = dt.datetime(2026, 3, 4, 23, 59, 30, tzinfo=dt.UTC)
    assert next_reset(now) == dt.datetime(2026, 3, 5, tzinfo=dt.UTC)


@pytest.mark.django_db
def test_quota_consume_counts_in_the_database_until_the_limit_then_raises(world: Any) -> None:
    first = quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=2)
    second = quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=2)
    assert (first.used, first.remaining, second.used, second.remaining) == (1, 1, 2, 0)
    with pytest.raises(QuotaExceeded) as caught:
        quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=2)
    assert caught.value.resets_at == next_reset()
    assert caught.value.message.startswith("Daily submission limit reached: 2 per day for benchmark:x.")
    # A refused attempt does not move the counter.
    row = DailyCount.objects.get()
    assert (row.subject, row.scope, row.day, row.used) == (f"user:{world.owner.pk}", "benchmark:x", utc_day(), 2)


@pytest.mark.django_db
def test_every_key_and_the_browser_share_the_accounts_allowance(world: Any) -> None:
    key_a = api_key_create(user=world.owner, name="a").api_key
    key_b = api_key_create(user=world.owner, name="b").api_key
    quota_consume(user=world.owner, api_key=key_a, scope="benchmark:x", limit=3)
    quota_consume(user=world.owner, api_key=key_b, scope="benchmark:x", limit=3)
    quota_consume(user=world.owner, api_key=None, scope="benchmark:x", limit=3)
    with pytest.raises(QuotaExceeded):
        quota_consume(user=world.owner, api_key=key_b, scope="benchmark:x", limit=3)
    # Another benchmark and another account have their own counters.
    assert quota_consume(user=world.owner, api_key=key_a, scope="benchmark:y", limit=3).used == 1
    assert quota_consume(user=world.other, api_key=None, scope="benchmark:x", limit=3).used == 1


@pytest.mark.django_db
def test_a_refund_gives_one_unit_back_and_never_goes_below_zero(world: Any) -> None:
    quota_consume(user=world.owner, api_key=None, scope="s", limit=1)
    quota_refund(user=world.owner, api_key=None, scope="s")
    quota_refund(user=world.owner, api_key=None, scope="s")
    assert DailyCount.objects.get().used == 0
    assert quota_consume(user=world.owner, api_key=None, scope="s", limit=1).used == 1


@pytest.mark.django_db
def test_a_refund_for_an_earlier_day_leaves_today_alone(world: Any) -> None:
    quota_consume(user=world.owner, api_key=None, scope="s", limit=5)
    quota_refund(user=world.owner, api_key=None, scope="s", day=utc_day() - dt.timedelta(days=1))
    assert quota_peek(user=world.owner, api_key=None, scope="s", limit=5).used == 1


@pytest.mark.django_db
def test_a_zero_limit_blocks_every_submission_and_writes_nothing(world: Any) -> None:
    with pytest.raises(QuotaExceeded):
        quota_consume(user=world.owner, api_key=None, scope="s", limit=0)
    assert DailyCount.objects.count() == 0


@pytest.mark.django_db
def test_revoking_and_creating_keys_does_not_reset_the_limit(world: Any, no_verification: None) -> None:
    first = api_key_create(user=world.owner, name="first")
    assert [api_upload(first.plaintext, f"bundle {n}".encode()).status_code for n in range(2)] == [201, 201]
    api_key_revoke(user=world.owner, key_id=first.api_key.pk)
    second = api_key_create(user=world.owner, name="second")
    response = api_upload(second.plaintext, b"bundle 3")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "daily_limit_reached"
    assert Submission.objects.filter(submitter=world.owner, api_key__isnull=False).count() == 2
    assert DailyCount.objects.get(subject=f"user:{world.owner.pk}").used == 2


@pytest.mark.django_db
def test_a_browser_upload_counts_against_the_same_allowance_as_the_keys(
    client: Any, world: Any, no_verification: None
) -> None:
    key = api_key_create(user=world.owner, name="ci")
    assert [api_upload(key.plaintext, f"bundle {n}".encode()).status_code for n in range(2)] == [201, 201]
    client.force_login(world.owner)
    response = client.post(
        "/submit/",
        {"benchmark": "ale-robotics", "bundle": SimpleUploadedFile("b.age", b"browser bundle")},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "daily_limit_reached"
    assert not Submission.objects.filter(submitter=world.owner, original_name="b.age", api_key__isnull=True).exists()


@pytest.mark.django_db
def test_flushing_the_cache_does_not_reset_the_limit(settings: Any, world: Any, no_verification: None) -> None:
    key = api_key_create(user=world.owner, name="ci")
    assert [api_upload(key.plaintext, f"bundle {n}".encode()).status_code for n in range(2)] == [201, 201]
    # A brand-new, empty cache: what a Redis FLUSHALL or restart without persistence leaves.
    settings.CACHES = {
        name: {**config, "KEY_PREFIX": f"flushed-{uuid.uuid4().hex}"} for name, config in settings.CACHES.items()
    }
    assert api_upload(key.plaintext, b"bundle 3").status_code == 429


@pytest.mark.django_db
def test_an_identical_upload_refused_the_last_unit_by_its_own_copy_in_flight_gets_that_copy(
    world: Any, no_verification: None, monkeypatch: Any
) -> None:
    # Identical uploads at once each take a unit until the losers' inserts fail: one arriving at
    # the limit answered 429 although the bytes were accepted (a retry "costs no quota").
    from submissions.services import submissions as service

    key = api_key_create(user=world.owner, name="ci")
    assert api_upload(key.plaintext, b"bundle 1").status_code == 201
    before = Submission.objects.filter(submitter=world.owner).count()
    consume = service.quota_consume

    def copy_commits_first(**kwargs: Any) -> Any:
        # The concurrent copy of these bytes takes the last unit and commits first.
        monkeypatch.setattr(service, "quota_consume", consume)
        assert api_upload(key.plaintext, b"bundle 2").status_code == 201
        return consume(**kwargs)

    monkeypatch.setattr(service, "quota_consume", copy_commits_first)
    response = api_upload(key.plaintext, b"bundle 2")
    assert response.status_code == 200, response.json()
    assert Submission.objects.filter(submitter=world.owner).count() == before + 1  # the copy's, once
    assert DailyCount.objects.get(subject=f"user:{world.owner.pk}").used == 2
    # A distinct bundle is still over the limit.
    assert api_upload(key.plaintext, b"bundle 3").status_code == 429


@pytest.mark.django_db
def test_a_refused_upload_gives_its_unit_back(world: Any, no_verification: None) -> None:
    key = api_key_create(user=world.owner, name="ci")
    response = APIClient().post(
        "/api/v1/submissions/",
        {"bundle": SimpleUploadedFile("b.age", b""), "benchmark": "ale-robotics"},
        format="multipart",
        HTTP_AUTHORIZATION=f"Api-Key {key.plaintext}",
    )
    assert response.status_code == 400
    assert quota_peek(user=world.owner, api_key=None, scope="benchmark:ale-robotics", limit=2).used == 0


@pytest.mark.django_db
def test_a_validator_key_has_its_own_limit_set_by_staff(world: Any) -> None:
    key = SigningKey.objects.create(
        owner_kind=SigningKey.Owner.VALIDATOR, validator=world.validator, key_id="f" * 16, public_key="x", daily_limit=2
    )
    assert [validator_quota_consume(signing_key=key).used for _ in range(2)] == [1, 2]
    with pytest.raises(QuotaExceeded) as caught:
        validator_quota_consume(signing_key=key)
    assert "validator key ffffffffffffffff" in caught.value.message
    # The account's own per-benchmark allowance is untouched.
    assert quota_peek(user=world.owner, api_key=None, scope="benchmark:ale-robotics", limit=2).used == 0


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["/submit/", "/accounts/api-keys/"])
def test_the_upload_and_api_keys_pages_show_each_limit_with_what_remains_today(
    client: Any, world: Any, page: str
) -> None:
    quota_consume(user=world.owner, api_key=None, scope="benchmark:ale-robotics", limit=2)
    client.force_login(world.owner)
    body = client.get(page).content.decode()
    assert '<tr data-limit="ale-robotics">' in body
    row = body.split('<tr data-limit="ale-robotics">', 1)[1].split("</tr>", 1)[0]
    cells = [cell.split(">", 1)[1].split("<", 1)[0] for cell in row.split("<td")[1:]]
    assert cells == ["", "1", "2"]  # left today (in <strong>), used, per day
    assert "<strong>1</strong>" in row
    assert "reset at 00:00 UTC" in body


@pytest.mark.django_db
def test_the_limits_endpoint_shows_the_accounts_allowance_to_its_keys_only(world: Any) -> None:
    key = api_key_create(user=world.owner, name="ci").plaintext
    quota_consume(user=world.owner, api_key=None, scope="benchmark:ale-robotics", limit=2)
    assert APIClient().get("/api/v1/limits/").status_code in (401, 403)
    response = APIClient().get("/api/v1/limits/", HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert response.status_code == 200
    body = response.json()
    assert body["benchmarks"] == [{"benchmark": "ale-robotics", "limit": 2, "used": 1, "remaining": 1}]
    assert body["resets_at"] == next_reset().isoformat()
    other = APIClient()
    other.force_authenticate(world.other)
    assert other.get("/api/v1/limits/").json()["benchmarks"][0]["used"] == 0


# ------------------------------------------------------------------ PostgreSQL


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_concurrent_consumers_on_postgresql_get_exactly_the_limit() -> None:
    from django.db import connection

    user = get_user_model().objects.create_user("threads", password="pw-threads-1234")
    barrier = threading.Barrier(12)

    def attempt(_: int) -> bool:
        barrier.wait()
        try:
            quota_consume(user=user, api_key=None, scope="benchmark:race", limit=5)
        except QuotaExceeded:
            return False
        finally:
            connection.close()
        return True

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(attempt, range(12)))
    assert results.count(True) == 5
    assert DailyCount.objects.get(subject=f"user:{user.pk}").used == 5


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_simultaneous_uploads_with_different_keys_let_exactly_the_limit_through(
    settings: Any, tmp_path: Any, no_verification: None
) -> None:
    from django.db import connection

    settings.MEDIA_ROOT = tmp_path / "media"
    user = get_user_model().objects.create_user("racer", password="pw-racer-1234")
    benchmark = Benchmark.objects.create(slug="limited", name="Limited", scheme="paper_gap", daily_submission_limit=2)
    benchmark.releases.create(version="1.0", published=True)  # uploads go to public benchmarks only
    keys = [api_key_create(user=user, name=f"ci-{n}").plaintext for n in range(6)]
    barrier = threading.Barrier(6)

    def upload(n: int) -> int:
        barrier.wait()
        try:
            return api_upload(keys[n], f"bundle {n}".encode(), benchmark="limited").status_code
        finally:
            connection.close()  # each thread has its own connection; let the test database go

    with ThreadPoolExecutor(max_workers=6) as pool:
        codes = sorted(pool.map(upload, range(6)))
    assert codes == [201, 201, 429, 429, 429, 429]
    assert Submission.objects.filter(submitter=user).count() == 2

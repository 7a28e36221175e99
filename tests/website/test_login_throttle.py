"""The sign-in throttle (leaderboard.services.login_throttle): failures per (username, client
address) counted in the database; the limit-th failure locks the pair, and until the lock ends
even the right password does not sign in."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import LoginFailureCounter
from leaderboard.services.login_throttle import login_failure_record, login_scope
from tests.concurrency import committed_meanwhile, on_postgresql_committing
from tests.website.conftest import make_user

PASSWORD = "a-long-test-password-1"
ATTACKER = "198.51.100.23"


@pytest.fixture
def limits(settings):
    settings.PODIUM_LOGIN_FAILURE_LIMIT = 10
    settings.PODIUM_LOGIN_FAILURE_WINDOW = 900
    settings.PODIUM_LOGIN_LOCKOUT_SECONDS = 900
    return settings


def _sign_in(client, username: str, password: str, address: str = ATTACKER):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def _signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_forty_wrong_passwords_then_the_right_one_does_not_sign_in(client, db, limits):
    make_user("alice")
    statuses = [_sign_in(client, "alice", f"guess-{n}").status_code for n in range(40)]
    assert statuses[:9] == [200] * 9  # the ordinary "wrong password" page
    assert set(statuses[9:]) == {429}  # the tenth failure locks the pair
    response = _sign_in(client, "alice", PASSWORD)
    assert response.status_code == 429
    assert not _signed_in(client)
    body = response.content.decode()
    assert "Too many failed sign-in attempts for this account from your address" in body
    assert "15 more minute(s)" in body
    counter = LoginFailureCounter.objects.get(scope=login_scope(username="alice", address=ATTACKER))
    # Failures during the lock are refused before the password is checked, so they are not counted.
    assert counter.failures == 10
    assert counter.locked_until > timezone.now() + timedelta(seconds=890)


def test_the_lock_holds_for_case_variants_of_the_username(client, db, limits):
    make_user("alice")
    for n in range(10):
        _sign_in(client, "alice" if n % 2 else "ALICE", f"guess-{n}")
    assert _sign_in(client, "Alice", PASSWORD).status_code == 429
    assert not _signed_in(client)


def test_the_user_at_another_address_still_signs_in(client, db, limits):
    make_user("alice")
    for n in range(12):
        _sign_in(client, "alice", f"guess-{n}")
    response = _sign_in(client, "alice", PASSWORD, address="192.0.2.44")
    assert response.status_code == 302
    assert _signed_in(client)


def test_after_the_lock_ends_the_right_password_signs_in_and_clears_the_count(client, db, limits):
    make_user("alice")
    for n in range(10):
        _sign_in(client, "alice", f"guess-{n}")
    scope = login_scope(username="alice", address=ATTACKER)
    past = timezone.now() - timedelta(seconds=1)
    LoginFailureCounter.objects.filter(scope=scope).update(
        locked_until=past, window_started_at=past - timedelta(seconds=900)
    )
    assert _sign_in(client, "alice", PASSWORD).status_code == 302
    assert _signed_in(client)
    assert not LoginFailureCounter.objects.filter(scope=scope).exists()


def test_failures_older_than_the_window_start_a_new_count(client, db, limits):
    make_user("alice")
    for n in range(9):
        _sign_in(client, "alice", f"guess-{n}")
    scope = login_scope(username="alice", address=ATTACKER)
    LoginFailureCounter.objects.filter(scope=scope).update(window_started_at=timezone.now() - timedelta(seconds=901))
    assert _sign_in(client, "alice", "one-more-guess").status_code == 200
    assert LoginFailureCounter.objects.get(scope=scope).failures == 1


def test_the_throttle_counts_in_the_database_so_it_holds_while_redis_is_down(client, db, limits, settings):
    # Every cache operation fails (nothing listens on port 1): a cache-based count would fail
    # open (or error). The database count locks the pair all the same.
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    make_user("alice")
    for n in range(10):
        _sign_in(client, "alice", f"guess-{n}")
    assert _sign_in(client, "alice", PASSWORD).status_code == 429
    assert not _signed_in(client)


def test_the_usernames_tried_are_not_stored_in_clear(client, db, limits):
    _sign_in(client, "my-password-typed-as-username", "x")
    counter = LoginFailureCounter.objects.get()
    assert "password" not in counter.scope
    assert counter.scope == login_scope(username="my-password-typed-as-username", address=ATTACKER)


def test_the_admin_sign_in_is_throttled_the_same_way(client, db, limits):
    make_user("root", is_staff=True, is_superuser=True)
    for n in range(10):
        client.post(reverse("admin:login"), {"username": "root", "password": f"guess-{n}"}, REMOTE_ADDR=ATTACKER)
    response = client.post(reverse("admin:login"), {"username": "root", "password": PASSWORD}, REMOTE_ADDR=ATTACKER)
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert not _signed_in(client)
    # The site's form shares the count: the pair is locked there too.
    assert _sign_in(client, "root", PASSWORD).status_code == 429


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_first_failed_sign_ins_of_one_pair_at_once_count_both_and_are_not_a_500() -> None:
    get_user_model().objects.create_user("alice", password=PASSWORD)
    scope = login_scope(username="alice", address="127.0.0.1")

    def first_failure() -> None:
        login_failure_record(scope=scope)

    client = Client(raise_request_exception=False)
    with committed_meanwhile(first_failure):
        response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200, response.status_code
    assert "correct username and password" in response.content.decode()
    assert LoginFailureCounter.objects.get(scope=scope).failures == 2

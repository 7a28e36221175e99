"""The admin's user pages (leaderboard/admin_users.py): a username is unique whatever its case."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.urls import reverse

from tests.concurrency import committed_meanwhile
from tests.leaderboard.conftest import account_created_meanwhile

PASSWORD = "a-long-test-password-1"
TAKEN = "A user with that username already exists."


def add_user(client, username: str):
    """POST the admin's add-user form for ``username``."""
    return client.post(
        reverse("admin:auth_user_add"),
        {"username": username, "password1": PASSWORD, "password2": PASSWORD, "usable_password": "true"},
    )


def usernames() -> list[str]:
    return sorted(get_user_model().objects.values_list("username", flat=True))


def test_adding_a_username_another_account_holds_in_another_case_is_a_form_error(client, db) -> None:
    users = get_user_model()
    client.force_login(users.objects.create_superuser("root", password=PASSWORD))
    users.objects.create_user("bob", password=PASSWORD)
    response = add_user(client, "BOB")
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [TAKEN]}
    assert usernames() == ["bob", "root"]


def test_renaming_an_account_to_another_accounts_username_in_another_case_is_a_form_error(client, db) -> None:
    users = get_user_model()
    client.force_login(users.objects.create_superuser("root", password=PASSWORD))
    users.objects.create_user("bob", password=PASSWORD)
    carol = users.objects.create_user("carol", password=PASSWORD)
    response = client.post(
        reverse("admin:auth_user_change", args=[carol.pk]),
        {"username": "BOB", "is_active": "on", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"},
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [TAKEN]}
    assert usernames() == ["bob", "carol", "root"]


def test_renaming_an_account_to_its_own_username_in_another_case_is_saved(client, db) -> None:
    users = get_user_model()
    client.force_login(users.objects.create_superuser("root", password=PASSWORD))
    carol = users.objects.create_user("carol", password=PASSWORD)
    response = client.post(
        reverse("admin:auth_user_change", args=[carol.pk]),
        {"username": "Carol", "is_active": "on", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"},
    )
    assert response.status_code == 302
    assert usernames() == ["Carol", "root"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writing transaction at a time")
@pytest.mark.django_db(transaction=True)
def test_adding_a_username_another_admin_is_adding_in_another_case_at_that_moment_is_a_form_error(client) -> None:
    client.force_login(get_user_model().objects.create_superuser("root", password=PASSWORD))
    with account_created_meanwhile("bob"):
        # Without the lock the form saw no "bob" yet and its INSERT failed on the unique index: a 500.
        response = add_user(client, "BOB")
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [TAKEN]}
    assert usernames() == ["bob", "root"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writing transaction at a time")
@pytest.mark.django_db(transaction=True)
def test_renaming_to_a_username_another_admin_is_adding_at_that_moment_is_a_form_error(client) -> None:
    users = get_user_model()
    client.force_login(users.objects.create_superuser("root", password=PASSWORD))
    carol = users.objects.create_user("carol", password=PASSWORD)
    with account_created_meanwhile("bob"):
        response = client.post(
            reverse("admin:auth_user_change", args=[carol.pk]),
            {"username": "Bob", "is_active": "on", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"},
        )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [TAKEN]}
    assert usernames() == ["bob", "carol", "root"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite's lower() folds ASCII letters only")
def test_adding_a_username_that_differs_only_in_a_letter_postgresqls_lower_folds_is_a_form_error(client, db) -> None:
    # "İa" and "ia" differ in upper case (Django's iexact), not in lower case (the unique index):
    # the form passed it and the INSERT failed, a 500.
    users = get_user_model()
    client.force_login(users.objects.create_superuser("root", password=PASSWORD))
    users.objects.create_user("ia", password=PASSWORD)
    response = add_user(client, "\u0130a")
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [TAKEN]}
    assert usernames() == ["ia", "root"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writing transaction at a time")
@pytest.mark.django_db(transaction=True)
def test_adding_a_username_a_visitor_is_signing_up_with_at_that_moment_is_a_form_error(client) -> None:
    from leaderboard.views.accounts import SignUpForm

    def sign_up() -> None:  # what the sign-up view runs, in its transaction
        form = SignUpForm({"username": "bob", "password1": PASSWORD, "password2": PASSWORD})
        assert form.is_valid(), form.errors
        assert form.create_user() is not None

    client.force_login(get_user_model().objects.create_superuser("root", password=PASSWORD))
    with committed_meanwhile(sign_up, hold_seconds=1.0):
        # Sign-up took no lock: the admin's form saw no "bob" yet and its INSERT failed, a 500.
        response = add_user(client, "BOB")
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [TAKEN]}
    assert usernames() == ["bob", "root"]

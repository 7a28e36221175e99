"""Sign-up, sign-in and sign-out with Django's auth."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.concurrency import committed_meanwhile, on_postgresql_committing
from tests.website.conftest import make_user


def test_signing_up_creates_the_account_and_signs_in(client, db):
    response = client.post(
        reverse("signup"),
        {"username": "newcomer", "password1": "a-long-test-password-1", "password2": "a-long-test-password-1"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("my_submissions")
    assert get_user_model().objects.filter(username="newcomer").exists()
    assert client.get(reverse("my_submissions")).status_code == 200


def test_signing_up_with_an_email_stores_it_for_verdict_emails_and_without_one_is_fine(client, db):
    password = {"password1": "a-long-test-password-1", "password2": "a-long-test-password-1"}
    page = client.get(reverse("signup")).content.decode()
    assert 'name="email"' in page and "never shown publicly" in page
    assert (
        client.post(reverse("signup"), {"username": "mailer", "email": "m@example.org", **password}).status_code == 302
    )
    assert get_user_model().objects.get(username="mailer").email == "m@example.org"
    client.logout()
    refused = client.post(reverse("signup"), {"username": "typo", "email": "not-an-address", **password})
    assert refused.status_code == 400 and not get_user_model().objects.filter(username="typo").exists()


def test_sign_up_shows_what_is_wrong_with_the_form(client, db):
    response = client.post(reverse("signup"), {"username": "x", "password1": "a-long-pass-1", "password2": "other"})
    assert response.status_code == 400
    assert "The two password fields didn\u2019t match." in response.content.decode()
    assert not get_user_model().objects.filter(username="x").exists()


def test_signing_in_and_out(client, db):
    make_user("alice")
    response = client.post(reverse("login"), {"username": "alice", "password": "a-long-test-password-1"})
    assert response.status_code == 302
    assert "Sign out" in client.get(reverse("home")).content.decode()
    assert client.post(reverse("logout")).status_code == 302
    assert "Sign in" in client.get(reverse("home")).content.decode()


def test_a_wrong_password_is_refused_with_a_message(client, db):
    make_user("alice")
    response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password." in response.content.decode()


def test_a_username_that_passes_for_another_accounts_is_refused_at_sign_up(client, db):
    """Usernames are public ("Submitted by" on every run page, actors in the logs): a
    Cyrillic "a" (U+0430) in "alice" shows as "alice" while Django's case-insensitive check sees a
    different name."""
    make_user("alice")
    for lookalike in ("\u0430lice", "al\u0456ce", "ALICE"):
        response = client.post(
            reverse("signup"),
            {"username": lookalike, "password1": "a-long-test-password-1", "password2": "a-long-test-password-1"},
        )
        assert response.status_code == 400, lookalike
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["alice"]


PASSWORD = "a-long-test-password-1"


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_sign_ups_of_one_username_at_once_refuse_the_second_with_a_form_error() -> None:
    def first_sign_up() -> None:
        get_user_model().objects.create_user("bob", password=PASSWORD)

    client = Client(raise_request_exception=False)
    with committed_meanwhile(first_sign_up):
        response = client.post("/accounts/signup/", {"username": "bob", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 400, response.status_code
    assert "A user with that username already exists." in response.content.decode()
    assert get_user_model().objects.filter(username="bob").count() == 1
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_sign_ups_of_one_username_in_different_case_at_once_refuse_the_second_with_a_form_error() -> None:
    """Both read before either wrote, so Django's case-insensitive check passed twice; the unique
    index on lower(username) (leaderboard/migrations/0004) refuses the second insert, and the
    form answers as for a taken name, not a 500."""

    def first_sign_up() -> None:
        get_user_model().objects.create_user("Bob", password=PASSWORD)

    client = Client(raise_request_exception=False)
    with committed_meanwhile(first_sign_up):
        response = client.post("/accounts/signup/", {"username": "bob", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 400, response.status_code
    assert "A user with that username already exists." in response.content.decode()
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["Bob"]
    assert "_auth_user_id" not in client.session

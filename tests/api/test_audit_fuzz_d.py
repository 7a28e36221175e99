"""Audit D: server errors found by fuzzing the site and racing its forms.

A page form's body Django cannot read (multipart without a boundary, more fields than
DATA_UPLOAD_MAX_NUMBER_FIELDS, more text than DATA_UPLOAD_MAX_MEMORY_SIZE) was Django's bare
"Bad Request (400)" page, saying nothing of what was wrong; it is the site's 400 page (JSON
under /api/) naming the problem.

Two requests at once (a double click, two CI jobs, a script retrying in parallel) that both
create the same unique row: the second one's existence check ran before the first one
committed, so its INSERT met the unique index and the IntegrityError was a 500. Each test
makes that interleaving deterministic: another connection runs the first request's service
call and holds its transaction open a moment, while the request under test reads (finds
nothing yet) and then writes.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client

from leaderboard.models import Evaluator, LoginFailureCounter, SigningKey
from leaderboard.services.login_throttle import login_failure_record, login_scope
from submissions.models import WebhookEndpoint
from submissions.services import notifications
from submissions.services.signing_keys import signing_key_register
from tests.api_clients import api_for
from tests.staff import staff_grant

on_postgresql_committing = pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
    reason="two connections writing at once: PostgreSQL's row locks (SQLite locks the whole file)",
)

PASSWORD = "a-long-test-password-1"


@contextmanager
def committed_meanwhile(write: Callable[[], Any], *, hold_seconds: float = 0.6) -> Iterator[None]:
    """Run ``write`` in another connection's transaction, committed ``hold_seconds`` after the
    body starts: the body's read does not see the row yet, its insert of the same key waits
    for the commit and then meets the row (what two simultaneous requests do)."""
    written = threading.Event()
    failure: list[BaseException] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                write()
                written.set()
                time.sleep(hold_seconds)
        except BaseException as exc:  # pragma: no cover - reported by the assertion below
            failure.append(exc)
            written.set()
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert written.wait(10)
    try:
        yield
    finally:
        thread.join()
    assert not failure, failure


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
def test_two_first_webhook_urls_at_once_keep_one_endpoint_and_are_not_a_500() -> None:
    owner = get_user_model().objects.create_user("carol", password=PASSWORD)
    api = api_for(owner)
    api.raise_request_exception = False
    first_secret: list[str | None] = []

    def first_url() -> None:
        first_secret.append(notifications.webhook_set(user=owner, url="https://93.184.216.34/first")[1])

    with committed_meanwhile(first_url):
        response = api.put("/api/v1/account/webhook/", {"url": "https://93.184.216.34/second"}, format="json")
    assert response.status_code == 200, (response.status_code, response.content)
    assert "secret" not in response.json()  # the first request's secret stands; it was shown once, to it
    endpoint = WebhookEndpoint.objects.get(user=owner)
    assert (endpoint.url, endpoint.secret) == ("https://93.184.216.34/second", first_secret[0])


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_first_webhook_forms_at_once_keep_one_endpoint_and_are_not_a_500() -> None:
    owner = get_user_model().objects.create_user("dave", password=PASSWORD)
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    first_secret: list[str | None] = []

    def first_url() -> None:
        first_secret.append(notifications.webhook_set(user=owner, url="https://93.184.216.34/first")[1])

    with committed_meanwhile(first_url):
        response = client.post("/accounts/api-keys/webhook/", {"url": "https://93.184.216.34/second"})
    assert response.status_code == 302, response.status_code
    assert WebhookEndpoint.objects.get(user=owner).url == "https://93.184.216.34/second"


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_registrations_of_one_signing_key_at_once_keep_one_row_and_are_not_a_500() -> None:
    staff = staff_grant(get_user_model().objects.create_user("erin", password=PASSWORD, is_staff=True))
    evaluator = Evaluator.objects.create(simulator="robosuite+robomimic")
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    public_key = base64.b64encode(raw).decode()
    api = api_for(staff)
    api.raise_request_exception = False

    def first_registration() -> None:
        signing_key_register(evaluator=evaluator, public_key_b64=public_key, user=None)

    with committed_meanwhile(first_registration):
        response = api.post(
            "/api/v1/admin/signing-keys/",
            {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "public_key": public_key},
            format="json",
        )
    assert response.status_code in (200, 201), (response.status_code, response.content)
    assert SigningKey.objects.filter(public_key=public_key).count() == 1


MULTIPART_WITHOUT_BOUNDARY = "multipart/form-data"


@pytest.mark.django_db
def test_a_multipart_form_without_a_boundary_is_a_400_page_saying_so_and_creates_no_key() -> None:
    owner = get_user_model().objects.create_user("frank", password=PASSWORD)
    client = Client()
    client.force_login(owner)
    response = client.post("/accounts/api-keys/", b"name=ci", content_type=MULTIPART_WITHOUT_BOUNDARY)
    assert response.status_code == 400
    body = response.content.decode()
    assert "not valid multipart/form-data" in body and "<title>Bad Request (400)</title>" not in body
    assert "Traceback" not in body and "settings." not in body
    assert not owner.api_keys.exists()


@pytest.mark.django_db
def test_a_form_with_too_many_fields_is_a_400_page_naming_the_limit() -> None:
    owner = get_user_model().objects.create_user("grace", password=PASSWORD)
    client = Client()
    client.force_login(owner)
    fields = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    response = client.post(
        "/submit/challenge/", fields + "&benchmark=x", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields" in response.content.decode()


@pytest.mark.django_db
def test_a_form_body_over_the_text_limit_is_a_400_page_saying_where_a_bundle_goes() -> None:
    response = Client().post(
        "/accounts/login/",
        "username=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    assert "a bundle goes in the upload form&#x27;s file field" in response.content.decode()


@pytest.mark.django_db
def test_an_unknown_host_is_a_400_that_names_the_host_header_as_json_under_the_api() -> None:
    response = Client().get("/api/v1/", HTTP_HOST="not-this-site.example")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_request"
    assert "Host header" in response.json()["error"]["message"]
    page = Client().get("/", HTTP_HOST="not-this-site.example")
    assert page.status_code == 400 and "Host header" in page.content.decode()
    assert "not-this-site.example" not in page.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("accept", ["*/*", "application/json", "text/html"])
@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain"])
def test_a_signed_in_post_to_the_api_docs_is_not_a_500(accept: str, content_type: str) -> None:
    # CSRF enforced as for a browser: DRF's session check then reads the form body to find a token.
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(get_user_model().objects.create_user("heidi", password=PASSWORD))
    response = client.post("/api/v1/docs/", "a=1", content_type=content_type, HTTP_ACCEPT=accept)
    # Was a 500: the refusal is rendered through the docs template, whose context processors
    # authenticated the session, whose CSRF check raised again while rendering.
    assert response.status_code == (405 if accept != "application/json" else 406), response.status_code

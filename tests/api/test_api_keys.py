from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from submissions.api_keys import api_key_create, api_key_hash, api_key_parse, api_key_revoke
from submissions.models import ApiKey

pytestmark = pytest.mark.django_db


def test_a_created_key_is_stored_only_as_a_hash(world: Any) -> None:
    issued = api_key_create(user=world.owner, name="runner")
    row = ApiKey.objects.get(pk=issued.api_key.pk)
    prefix, secret = api_key_parse(issued.plaintext)  # type: ignore[misc]
    assert prefix == row.prefix
    assert issued.plaintext.startswith(f"pdm_{row.prefix}_")
    assert row.key_hash == api_key_hash(secret)
    assert secret not in row.key_hash and secret not in str(row.__dict__)


def test_a_key_needs_a_name(world: Any) -> None:
    with pytest.raises(ValueError, match="name: expected a non-empty name"):
        api_key_create(user=world.owner, name="   ")


def test_an_api_key_authenticates_its_user_and_records_last_use(world: Any, api: Any, owner_key: str) -> None:
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}")
    assert response.status_code == 200
    assert {item["id"] for item in response.json()["results"]} == {str(s.pk) for s in world.owner.submissions.all()}
    assert ApiKey.objects.get(user=world.owner).last_used_at is not None


def test_a_wrong_secret_is_refused_with_a_json_error(world: Any, api: Any, owner_key: str) -> None:
    tampered = owner_key[:-4] + ("AAAA" if not owner_key.endswith("AAAA") else "BBBB")
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {tampered}")
    assert response.status_code == 401
    assert response.json() == {"error": {"code": "authentication_failed", "message": "Invalid or revoked API key."}}
    assert response["WWW-Authenticate"] == "Api-Key"


def test_a_key_sent_under_another_scheme_is_told_the_scheme_this_api_reads(
    world: Any, api: Any, owner_key: str
) -> None:
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Bearer {owner_key}")
    assert response.status_code == 401
    assert response.json() == {
        "error": {
            "code": "not_authenticated",
            "message": "Authorization: this API reads 'Api-Key <key>' (or a signed-in session), not 'Bearer' "
            "credentials.",
        }
    }
    assert response["WWW-Authenticate"] == "Api-Key"
    # A public read still serves the request anonymously, whatever header came with it.
    assert api.get("/api/v1/benchmarks/", HTTP_AUTHORIZATION=f"Bearer {owner_key}").status_code == 200


def test_a_key_sent_without_a_scheme_is_told_so_and_none_of_it_is_echoed(world: Any, api: Any, owner_key: str) -> None:
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=owner_key)
    assert response.status_code == 401
    message = response.json()["error"]["message"]
    assert message == (
        "Authorization: this API reads 'Api-Key <key>' (or a signed-in session); this header names no scheme: "
        "send 'Api-Key ' before the key."
    )
    assert owner_key[:8] not in message


def test_a_revoked_key_no_longer_authenticates(world: Any, api: Any, owner_key: str) -> None:
    api_key_revoke(user=world.owner, key_id=ApiKey.objects.get(user=world.owner).pk)
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}")
    assert response.status_code == 401


def test_a_key_of_an_inactive_user_does_not_authenticate(world: Any, api: Any, owner_key: str) -> None:
    world.owner.is_active = False
    world.owner.save()
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}")
    assert response.status_code == 401


def test_failed_attempts_at_one_key_from_one_address_are_throttled(
    world: Any, api: Any, owner_key: str, settings: Any
) -> None:
    settings.PODIUM_API_KEY_FAILURE_LIMIT = 5
    settings.PODIUM_API_KEY_FAILURE_WINDOW = 300
    prefix = owner_key.split("_")[1]
    for n in range(5):
        guess = f"pdm_{prefix}_{'x' * 40}{n}"
        assert api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {guess}").status_code == 401
    # Past the limit even the right secret for that prefix is refused from that address: guessing cannot continue.
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "api_key_attempts_throttled"
    assert response["Retry-After"] == "300"
    # Another address is unaffected.
    other = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}", REMOTE_ADDR="10.9.9.9")
    assert other.status_code == 200


def test_a_locked_prefix_is_told_the_time_left_in_its_window_not_the_whole_window(
    world: Any, api: Any, owner_key: str, settings: Any, monkeypatch: Any
) -> None:
    import time

    settings.PODIUM_API_KEY_FAILURE_LIMIT = 3
    settings.PODIUM_API_KEY_FAILURE_WINDOW = 60
    prefix = owner_key.split("_")[1]
    for _ in range(3):
        api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key pdm_{prefix}_{'x' * 43}")
    started = time.time()
    monkeypatch.setattr(time, "time", lambda: started + 30)
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}")
    assert response.status_code == 429
    assert 29 <= int(response["Retry-After"]) <= 31


def test_one_client_behind_a_shared_proxy_cannot_lock_out_the_other_key_users(
    world: Any, api: Any, owner_key: str, settings: Any
) -> None:
    # PODIUM_NUM_PROXIES unset (0): every request arrives from the proxy's one address.
    settings.PODIUM_API_KEY_FAILURE_LIMIT = 5
    proxy = {"REMOTE_ADDR": "10.0.0.1"}
    for n in range(20):  # guesses at other prefixes (five at prefix 0), and malformed headers
        prefix = 0 if n < 5 else n
        for header in (f"Api-Key pdm_{prefix:012x}_{'x' * 42}{n % 10}", "Api-Key x", "Api-Key a b"):
            assert api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=header, **proxy).status_code in (401, 429)
    response = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}", **proxy)
    assert response.status_code == 200
    # The attacker's own buckets are locked: a further guess at that prefix is refused unchecked.
    locked = api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key pdm_{0:012x}_{'y' * 43}", **proxy)
    assert (locked.status_code, locked.json()["error"]["code"]) == (429, "api_key_attempts_throttled")


def test_the_failure_count_is_keyed_on_the_key_prefix_and_the_address(world: Any, api: Any) -> None:
    from rest_framework.test import APIRequestFactory

    from submissions.api_keys import failure_ident

    request = APIRequestFactory().get("/", REMOTE_ADDR="192.0.2.7")
    assert failure_ident(request, f"pdm_{'ab' * 6}_{'s' * 43}") == f"{'ab' * 6}@192.0.2.7"
    assert failure_ident(request, "garbage") == "-@192.0.2.7"


def test_key_comparison_is_constant_time(monkeypatch: Any, world: Any, api: Any, owner_key: str) -> None:
    import submissions.api_keys as module

    calls: list[tuple[str, str]] = []
    real = module.hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(module.hmac, "compare_digest", spy)
    api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}")
    api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key pdm_{'f' * 12}_{'y' * 43}")
    assert len(calls) == 2  # both the existing and the unknown prefix went through compare_digest


def test_the_key_page_requires_sign_in(client: Any, world: Any) -> None:
    response = client.get(reverse("api_keys"))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_the_key_page_shows_a_new_key_once(client: Any, world: Any) -> None:
    client.force_login(world.owner)
    response = client.post(reverse("api_keys"), {"name": "laptop"})
    assert response.status_code == 200
    key = ApiKey.objects.get(user=world.owner, name="laptop")
    body = response.content.decode()
    start = body.index(f"pdm_{key.prefix}_")
    plaintext = body[start:].split("<", 1)[0]
    assert api_key_parse(plaintext) is not None
    assert "no-store" in response["Cache-Control"]
    again = client.get(reverse("api_keys")).content.decode()
    assert plaintext not in again
    assert f"pdm_{key.prefix}_…" in again


def test_the_key_page_refuses_an_empty_name(client: Any, world: Any) -> None:
    client.force_login(world.owner)
    response = client.post(reverse("api_keys"), {"name": ""})
    assert response.status_code == 400
    assert "Key name: expected a non-empty name" in response.content.decode()
    assert not ApiKey.objects.filter(user=world.owner).exists()


def test_a_user_can_revoke_their_key_but_not_someone_elses(client: Any, world: Any) -> None:
    key = api_key_create(user=world.owner, name="ci").api_key
    client.force_login(world.other)
    assert client.post(reverse("api_key_revoke", args=[key.pk])).status_code == 404
    key.refresh_from_db()
    assert key.revoked_at is None
    client.force_login(world.owner)
    assert client.post(reverse("api_key_revoke", args=[key.pk])).status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None and key.revoked_at <= timezone.now()


def test_session_posts_without_a_csrf_token_are_refused_csrf_failed(world: Any) -> None:
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(world.owner)
    response = client.post("/api/v1/submissions/", {"benchmark": "ale-robotics"}, format="multipart")
    assert response.status_code == 403
    # The code the Errors table lists, and the site's own sentence (it was permission_denied).
    from leaderboard.error_pages import CSRF_MESSAGE

    assert response.json()["error"] == {"code": "csrf_failed", "message": CSRF_MESSAGE}


def test_a_forged_forwarded_for_header_does_not_reset_the_failure_count(
    world: Any, api: Any, owner_key: str, settings: Any
) -> None:
    settings.PODIUM_API_KEY_FAILURE_LIMIT = 3
    prefix = owner_key.split("_")[1]  # guesses at the owner's key: the failures counted against it
    for n in range(3):
        guess = f"pdm_{prefix}_{'x' * 40}{n}"
        api.get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {guess}", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
    response = api.get(
        "/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {owner_key}", HTTP_X_FORWARDED_FOR="198.51.100.7"
    )
    assert response.status_code == 429

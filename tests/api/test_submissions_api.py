from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from submissions.models import Submission

pytestmark = pytest.mark.django_db


def _upload(client: APIClient, data: bytes, *, key: str | None = None, name: str = "run.age", **extra: Any) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Api-Key {key}"} if key else {}
    form = {"bundle": SimpleUploadedFile(name, data, content_type="image/png"), "benchmark": "ale-robotics", **extra}
    return client.post("/api/v1/submissions/", form, format="multipart", **headers)


def test_an_upload_creates_a_submission_and_answers_201(world: Any, api: Any, owner_key: str, media: Any) -> None:
    response = _upload(api, b"age-encryption.org/v1 pretend bundle 1", key=owner_key, name="../../etc/passwd")
    assert response.status_code == 201, response.json()
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert body["status"] == "received" and body["verdict"] == ""
    assert submission.submitter == world.owner and submission.api_key.name == "ci"
    # The client's file name is display text only, never a path.
    assert submission.original_name == "passwd"
    assert ".." not in submission.file.name
    assert response["X-RateLimit-Limit"] == "2" and response["X-RateLimit-Remaining"] == "1"


def test_an_identical_retry_answers_200_with_the_same_submission(world: Any, api: Any, owner_key: str, media: Any):
    first = _upload(api, b"same bytes", key=owner_key)
    second = _upload(api, b"same bytes", key=owner_key)
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert Submission.objects.filter(sha256=second.json()["sha256"]).count() == 1
    # The retry cost no quota: a second distinct bundle still fits the limit of 2.
    assert _upload(api, b"other bytes", key=owner_key).status_code == 201


def test_a_retry_of_the_same_bytes_asking_for_other_privacy_is_refused_and_changes_nothing(
    world: Any, api: Any, owner_key: str, media: Any
) -> None:
    first = _upload(api, b"same bytes", key=owner_key)
    retry = _upload(api, b"same bytes", key=owner_key, private="true")
    assert retry.status_code == 409
    assert retry.json()["error"] == {
        "code": "upload_differs",
        "message": f"bundle: you already uploaded these bytes as submission {first.json()['id']} (public); a retry "
        "sends the same benchmark and privacy (a public run is taken off the boards by withdrawing it on its page).",
    }
    assert not Submission.objects.get(pk=first.json()["id"]).is_private
    assert Submission.objects.filter(sha256=first.json()["sha256"]).count() == 1


def test_the_daily_limit_answers_429_with_retry_after(world: Any, api: Any, owner_key: str, media: Any) -> None:
    assert _upload(api, b"bundle one", key=owner_key).status_code == 201
    assert _upload(api, b"bundle two", key=owner_key).status_code == 201
    response = _upload(api, b"bundle three", key=owner_key)
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "daily_limit_reached"
    assert error["message"].startswith("Daily submission limit reached: 2 per day for benchmark:ale-robotics.")
    assert "The quota resets at" in error["message"] and "UTC" in error["message"]
    assert 0 < int(response["Retry-After"]) <= 86400
    assert Submission.objects.filter(submitter=world.owner).count() == 4 + 2  # fixtures + two uploads


def test_a_rejected_upload_does_not_use_quota(world: Any, api: Any, owner_key: str, media: Any) -> None:
    response = _upload(api, b"", key=owner_key)
    assert response.status_code == 400
    assert response.json()["error"]["code"] in {"empty_file", "bundle_missing"}
    assert _upload(api, b"bundle one", key=owner_key).status_code == 201
    assert _upload(api, b"bundle two", key=owner_key).status_code == 201


def test_another_users_identical_bundle_is_a_new_submission_of_theirs(world: Any, client_for: Any, media: Any) -> None:
    first = _upload(client_for(world.owner), b"shared bytes")
    response = _upload(client_for(world.other), b"shared bytes")
    assert (first.status_code, response.status_code) == (201, 201)
    assert response.json()["id"] != first.json()["id"]


def test_an_upload_without_a_benchmark_is_refused(world: Any, api: Any, owner_key: str, media: Any) -> None:
    response = api.post(
        "/api/v1/submissions/",
        {"bundle": SimpleUploadedFile("b.age", b"x")},
        format="multipart",
        HTTP_AUTHORIZATION=f"Api-Key {owner_key}",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "benchmark_missing",
        "message": "benchmark: expected the slug of the benchmark this bundle is for (e.g. 'ale-robotics').",
    }


def test_an_upload_for_an_unknown_benchmark_is_refused(world: Any, api: Any, owner_key: str, media: Any) -> None:
    response = _upload(api, b"x", key=owner_key, benchmark="nope")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "benchmark: no benchmark with slug 'nope'."


def test_an_oversized_upload_is_stopped_while_streaming(
    world: Any, api: Any, owner_key: str, media: Any, settings: Any
) -> None:
    settings.PODIUM_MAX_BUNDLE_BYTES = 100 * 1024
    # Declared length within the slack, body over the limit: the handler stops it mid-stream.
    response = _upload(api, b"z" * (120 * 1024), key=owner_key)
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "too_large",
        "message": "the bundle is larger than the limit of 102400 bytes; split the run or ask the site's maintainers",
    }
    assert not Submission.objects.filter(size=120 * 1024).exists()
    assert not list(media.rglob("*.age"))


def test_an_upload_declaring_a_huge_length_is_refused_unread(world: Any, owner_key: str, settings: Any) -> None:
    from django.test import Client

    settings.PODIUM_MAX_BUNDLE_BYTES = 1024
    body = io.BytesIO(b'--b\r\nContent-Disposition: form-data; name="bundle"; filename="a"\r\n\r\nxx\r\n--b--\r\n')
    response = Client().generic(
        "POST",
        "/api/v1/submissions/",
        body.getvalue(),
        content_type="multipart/form-data; boundary=b",
        HTTP_AUTHORIZATION=f"Api-Key {owner_key}",
        CONTENT_LENGTH=str(10 * 1024 * 1024),
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"


def test_anonymous_uploads_are_refused(world: Any, api: Any, media: Any) -> None:
    response = _upload(api, b"x")
    assert response.status_code in (401, 403)
    assert response.json()["error"]["code"] == "not_authenticated"


def test_a_submitter_sees_status_verdict_error_and_diff(world: Any, client_for: Any) -> None:
    world.submission.error_code = "score_mismatch"
    world.submission.error_message = "tasks.pick-cube.final: claimed 0.99, recomputed 0.98"
    world.submission.verdict = "mismatch"
    world.submission.diff = [{"path": "tasks.pick-cube.final", "claimed": 0.99, "recomputed": 0.98, "status": "x"}]
    world.submission.save()
    body = client_for(world.owner).get(f"/api/v1/submissions/{world.submission.pk}/").json()
    assert body["verdict"] == "mismatch"
    assert body["error_code"] == "score_mismatch"
    assert body["message"] == "tasks.pick-cube.final: claimed 0.99, recomputed 0.98"
    assert body["diff"][0]["path"] == "tasks.pick-cube.final"
    assert body["run"] == world.public_run.pk


def test_the_site_key_endpoint_gives_the_current_public_key(db: Any, api: Any, settings: Any) -> None:
    import pyrage

    identity = pyrage.x25519.Identity.generate()
    settings.PODIUM_SITE_KEYS = str(identity)
    body = api.get("/api/v1/site-key/").json()
    assert body["public_key"] == str(identity.to_public())
    assert len(body["key_id"]) == 16


def test_a_missing_site_key_is_a_503_without_paths(db: Any, api: Any, settings: Any, tmp_path: Any) -> None:
    settings.PODIUM_SITE_KEYS = ""
    settings.PODIUM_SITE_KEYS_FILE = tmp_path / "missing" / "site-keys.txt"
    response = api.get("/api/v1/site-key/")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "site_key_unavailable"
    assert str(tmp_path) not in response.content.decode()


def test_submissions_can_be_filtered_by_verdict(world: Any, client_for: Any) -> None:
    world.submission.verdict = "mismatch"
    world.submission.save()
    body = client_for(world.owner).get("/api/v1/submissions/", {"verdict": "mismatch"}).json()
    assert [item["id"] for item in body["results"]] == [str(world.submission.pk)]
    response = client_for(world.owner).get("/api/v1/submissions/", {"verdict": "maybe"})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "verdict: expected one of rejected, mismatch, validated, attested, got 'maybe'."
    )


@pytest.mark.django_db
def test_an_empty_verdict_filter_is_refused_not_ignored(world):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(world.owner)
    response = client.get("/api/v1/submissions/?verdict=")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_query"
    assert response.json()["error"]["message"] == ("verdict: a query parameter that is given needs a value.")


def test_an_upload_marked_private_is_a_private_submission(world: Any, api: Any, owner_key: str, media: Any) -> None:
    response = _upload(api, b"private bytes", key=owner_key, private="true")
    assert response.status_code == 201
    assert Submission.objects.get(pk=response.json()["id"]).is_private is True
    public = _upload(api, b"public bytes", key=owner_key)
    assert Submission.objects.get(pk=public.json()["id"]).is_private is False


def test_an_unknown_upload_field_is_refused_by_name_and_nothing_is_stored(
    world: Any, api: Any, owner_key: str, media: Any
) -> None:
    before = Submission.objects.count()
    response = _upload(api, b"some bytes", key=owner_key, is_private="1")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid",
        "message": "is_private: unknown field; expected bundle, benchmark, private.",
        "fields": {"is_private": ["Unknown field."]},
    }
    bad = _upload(api, b"some bytes", key=owner_key, private="maybe")
    assert bad.json()["error"] == {"code": "invalid", "message": "private: expected true or false, got 'maybe'."}
    assert Submission.objects.count() == before


@pytest.mark.parametrize("field", ["benchmark", "private"])
def test_a_nul_in_an_upload_field_is_400_invalid_text_naming_it_and_nothing_is_stored(
    world: Any, api: Any, owner_key: str, media: Any, field: str
) -> None:
    # On PostgreSQL the benchmark's NUL reached the slug lookup: a DataError, a 500.
    before = Submission.objects.count()
    response = _upload(api, b"some bytes", key=owner_key, **{field: "ale\x00robotics"})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_text",
        "message": f"form field '{field}': contains a NUL character (U+0000), which no text can hold; leave it out.",
    }
    assert Submission.objects.count() == before


def test_a_nul_in_the_bundles_file_name_is_kept_out_of_the_stored_name(
    world: Any, api: Any, owner_key: str, media: Any
) -> None:
    # The file name is display text only (never a path): its NUL is dropped, not a 500.
    response = _upload(api, b"named bytes", key=owner_key, name="run\x00.age")
    assert response.status_code == 201, response.content
    assert Submission.objects.get(pk=response.json()["id"]).original_name == "run.age"


def test_posting_json_to_the_upload_is_415_naming_multipart_alone(world: Any, api: Any, owner_key: str) -> None:
    response = api.post(
        "/api/v1/submissions/", {"benchmark": "ale-robotics"}, format="json", HTTP_AUTHORIZATION=f"Api-Key {owner_key}"
    )
    assert response.status_code == 415
    assert response.json()["error"]["message"] == (
        'Unsupported media type "application/json" in request. This endpoint reads multipart/form-data.'
    )


@pytest.mark.parametrize("field", ["private", "bundle"])
def test_an_upload_field_given_twice_is_refused_and_nothing_is_stored(
    world: Any, api: Any, owner_key: str, media: Any, field: str
) -> None:
    twice = (
        ["false", "true"]
        if field == "private"
        else [SimpleUploadedFile("a.age", b"first bytes"), SimpleUploadedFile("b.age", b"second bytes")]
    )
    form = {"bundle": SimpleUploadedFile("run.age", b"only bytes"), "benchmark": "ale-robotics", field: twice}
    before = Submission.objects.count()
    response = api.post("/api/v1/submissions/", form, format="multipart", HTTP_AUTHORIZATION=f"Api-Key {owner_key}")
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "invalid", "message": f"{field}: given 2 times; send it once."}
    assert Submission.objects.count() == before

"""The website's upload form and the API's upload endpoint are one service (submission_upload):
the same size limit, refusal and quota accounting, and the file is read once."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from submissions.models import DailyCount, Submission

pytestmark = pytest.mark.django_db


def _api_upload(world: Any, key: str, data: bytes) -> Any:
    form = {"bundle": SimpleUploadedFile("run.age", data), "benchmark": "ale-robotics"}
    return APIClient().post("/api/v1/submissions/", form, format="multipart", HTTP_AUTHORIZATION=f"Api-Key {key}")


def _web_upload(world: Any, data: bytes) -> Any:
    client = Client()
    client.force_login(world.owner)
    form = {"bundle": SimpleUploadedFile("run.age", data), "benchmark": "ale-robotics"}
    return client.post("/submit/", form, HTTP_ACCEPT="application/json")


def _counted() -> list[tuple[str, str, str, int]]:
    return list(DailyCount.objects.values_list("subject", "scope", "day", "used").order_by("subject", "scope", "day"))


def test_both_paths_refuse_an_oversized_bundle_with_the_same_code_and_words_and_write_nothing(
    world: Any, owner_key: str, media: Any, settings: Any
) -> None:
    settings.PODIUM_MAX_BUNDLE_BYTES = 4096
    submissions_before, counted_before = Submission.objects.count(), _counted()
    # Inside the multipart slack, so neither path can refuse by the declared length alone.
    oversized = b"y" * 5000
    api_response = _api_upload(world, owner_key, oversized)
    web_response = _web_upload(world, oversized)
    expected = {
        "code": "too_large",
        "message": "the bundle is larger than the limit of 4096 bytes; split the run or ask the site's maintainers",
    }
    assert (api_response.status_code, api_response.json()["error"]) == (413, expected)
    assert (web_response.status_code, web_response.json()["error"]) == (413, expected)
    assert (Submission.objects.count(), _counted()) == (submissions_before, counted_before)
    assert not list(media.rglob("*.age"))


def test_both_paths_refuse_a_declared_oversized_body_with_the_same_code_and_words(
    world: Any, owner_key: str, settings: Any
) -> None:
    settings.PODIUM_MAX_BUNDLE_BYTES = 1024 * 1024
    body = b'--b\r\nContent-Disposition: form-data; name="bundle"; filename="a"\r\n\r\nxx\r\n--b--\r\n'
    declared = {"content_type": "multipart/form-data; boundary=b", "CONTENT_LENGTH": str(5 * 1024 * 1024)}
    api_response = Client().generic(
        "POST", "/api/v1/submissions/", body, HTTP_AUTHORIZATION=f"Api-Key {owner_key}", **declared
    )
    web = Client()
    web.force_login(world.owner)
    web_response = web.generic("POST", "/submit/", body, HTTP_ACCEPT="application/json", **declared)
    expected = {
        "code": "too_large",
        "message": "the bundle is larger than the limit of 1048576 bytes (1 MiB); "
        "split the run or ask the site's maintainers",
    }
    assert (api_response.status_code, api_response.json()["error"]) == (413, expected)
    assert (web_response.status_code, web_response.json()["error"]) == (413, expected)
    assert not DailyCount.objects.exists()


@pytest.mark.parametrize("path", ["api", "web"])
def test_an_accepted_upload_consumes_the_daily_quota_once(world: Any, owner_key: str, media: Any, path: str) -> None:
    data = f"bundle through the {path}".encode()
    response = _api_upload(world, owner_key, data) if path == "api" else _web_upload(world, data)
    assert response.status_code == 201
    assert [(subject, scope, used) for subject, scope, _day, used in _counted()] == [
        (f"user:{world.owner.pk}", "benchmark:ale-robotics", 1)
    ]


@pytest.mark.parametrize("path", ["api", "web"])
def test_an_identical_retry_consumes_no_quota_on_either_path(world: Any, owner_key: str, media: Any, path: str) -> None:
    upload = (
        (lambda data: _api_upload(world, owner_key, data)) if path == "api" else (lambda data: _web_upload(world, data))
    )
    assert upload(b"the same bytes").status_code == 201
    retry = upload(b"the same bytes")
    assert retry.status_code == 200
    assert [row[3] for row in _counted()] == [1]


def test_the_api_reads_and_hashes_the_upload_once(
    world: Any, owner_key: str, media: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(300 * 1024)
    hashed: list[int] = []
    real_sha256 = hashlib.sha256

    class Counting:
        """hashlib.sha256 that records how many bytes of the bundle pass through it."""

        def __init__(self, initial: bytes = b"") -> None:
            self._hash = real_sha256()
            self.update(initial)

        def update(self, chunk: bytes) -> None:
            if len(chunk) > 64 and bytes(chunk) in data:
                hashed.append(len(chunk))
            self._hash.update(chunk)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._hash, name)

    monkeypatch.setattr(hashlib, "sha256", Counting)
    response = _api_upload(world, owner_key, data)
    assert response.status_code == 201, response.json()
    assert sum(hashed) == len(data)
    assert Submission.objects.get(pk=response.json()["id"]).sha256 == real_sha256(data).hexdigest()

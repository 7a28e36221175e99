"""Website upload, live status JSON and "my submissions": owner, teammate-like
other user and stranger."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from submissions.models import Submission
from tests.website.conftest import make_run, make_user

pytestmark = pytest.mark.django_db


def upload(client, content: bytes = b"age-encryption.org/v1 fake", headers=None, **extra):
    data = {"benchmark": "ale-robotics", "bundle": SimpleUploadedFile("run.age", content), **extra}
    return client.post(reverse("submission_upload"), data, HTTP_ACCEPT="application/json", **(headers or {}))


def test_the_upload_page_requires_signing_in(client, benchmark):
    response = client.get(reverse("submission_upload"))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/submit/")


def test_the_upload_page_shows_the_site_key(client, benchmark, monkeypatch):
    monkeypatch.setattr("submissions.views._site_key", lambda: ("abcd1234abcd1234", "age1examplerecipient"))
    client.force_login(make_user())
    html = client.get(reverse("submission_upload")).content.decode()
    assert "age1examplerecipient" in html and "abcd1234abcd1234" in html


def test_uploading_a_bundle_creates_a_submission_and_returns_its_status_url(client, release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    user = make_user()
    client.force_login(user)
    content = b"age-encryption.org/v1 not really a bundle"
    response = upload(client, content)
    assert response.status_code == 201
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert submission.submitter == user
    assert submission.sha256 == hashlib.sha256(content).hexdigest()
    assert submission.original_name == "run.age"
    assert body["status_url"] == reverse("submission_status", args=[submission.pk])
    assert body["created"] is True


def test_an_upload_without_a_file_says_what_is_missing(client, benchmark):
    client.force_login(make_user())
    response = client.post(reverse("submission_upload"), {"benchmark": "ale-robotics"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "bundle_missing", "message": "Choose a bundle file (.age) to upload."}}
    assert Submission.objects.count() == 0


def test_an_upload_for_an_unknown_benchmark_is_refused(client, benchmark):
    client.force_login(make_user())
    response = upload(client, benchmark="nope")
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "benchmark_unknown", "message": "No benchmark with slug 'nope'."}


def test_an_empty_upload_shows_the_services_message_on_the_form(client, release):
    client.force_login(make_user())
    response = client.post(
        reverse("submission_upload"), {"benchmark": "ale-robotics", "bundle": SimpleUploadedFile("e.age", b"")}
    )
    assert response.status_code == 400
    assert "The uploaded file is empty (0 bytes)" in response.content.decode()
    assert Submission.objects.count() == 0


def test_the_daily_limit_applies_to_browser_uploads(client, benchmark, release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    benchmark.daily_submission_limit = 1
    benchmark.save()
    client.force_login(make_user())
    assert upload(client, b"first bundle").status_code == 201
    response = upload(client, b"second bundle")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "daily_limit_reached"


def test_the_status_json_is_the_owners_only(client, release):
    owner = make_user()
    run = make_run(release, submitter=owner)
    url = reverse("submission_status", args=[run.submission.pk])
    assert client.get(url).status_code == 404
    client.force_login(make_user())
    assert client.get(url).status_code == 404
    client.force_login(owner)
    data = client.get(url).json()
    assert (data["status"], data["verdict"], data["done"]) == ("done", "validated", True)
    assert data["run_url"] == reverse("run_detail", args=[run.pk])


def test_the_status_json_carries_the_error_and_diff_of_a_mismatch(client, release):
    owner = make_user()
    run = make_run(release, submitter=owner)
    submission = run.submission
    # A task whose anchor is published: its values are shown (withheld ones: tests/website/test_derivable_leaks.py).
    diff = [{"path": "tasks.walk.final", "claimed": 0.9, "recomputed": 0.8, "status": "diff"}]
    Submission.objects.filter(pk=submission.pk).update(
        verdict="mismatch", error_code="score_mismatch", error_message="1 field differs", diff=diff
    )
    client.force_login(owner)
    data = client.get(reverse("submission_status", args=[submission.pk])).json()
    assert (data["error_code"], data["error_message"], data["diff"]) == ("score_mismatch", "1 field differs", diff)
    assert data["run_url"] is None


def test_the_submission_page_is_a_404_for_others(client, release):
    owner = make_user()
    run = make_run(release, submitter=owner)
    url = reverse("submission_detail", args=[run.submission.pk])
    client.force_login(make_user())
    assert client.get(url).status_code == 404
    client.force_login(owner)
    assert run.submission.sha256 in client.get(url).content.decode()


def test_my_submissions_lists_own_private_and_failed_ones_and_nobody_elses(client, release):
    owner = make_user()
    make_run(release, agent_name="Public", submitter=owner)
    private = make_run(release, agent_name="Hidden", submitter=owner, is_private=True)
    failed = make_run(release, agent_name="Failed", submitter=owner)
    Submission.objects.filter(pk=failed.submission.pk).update(verdict="rejected", error_code="bad_signature")
    theirs = make_run(release, agent_name="Theirs")
    client.force_login(owner)
    html = client.get(reverse("my_submissions")).content.decode()
    assert html.count('<th scope="row"><a href="/submissions/') == 3
    assert private.submission.original_name in html
    assert "bad_signature" in html
    assert theirs.submission.original_name not in html


def test_an_upload_declared_larger_than_the_limit_is_refused_before_reading_it(client, benchmark, settings):
    settings.PODIUM_MAX_BUNDLE_BYTES = 1024 * 1024
    client.force_login(make_user())
    response = client.generic(
        "POST",
        reverse("submission_upload"),
        data=b"",
        content_type="multipart/form-data; boundary=x",
        HTTP_ACCEPT="application/json",
        CONTENT_LENGTH=str(5 * 1024 * 1024),
    )
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "too_large",
        "message": "the bundle is larger than the limit of 1048576 bytes (1 MiB); "
        "split the run or ask the site's maintainers",
    }
    assert Submission.objects.count() == 0


def test_an_upload_without_a_csrf_token_is_refused(benchmark, settings, tmp_path):
    from django.test import Client

    settings.MEDIA_ROOT = tmp_path
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user())
    response = upload(client)
    assert response.status_code == 403
    assert Submission.objects.count() == 0


def test_an_upload_with_the_csrf_token_from_the_form_is_accepted(release, settings, tmp_path):
    from django.test import Client

    settings.MEDIA_ROOT = tmp_path
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user())
    client.get(reverse("submission_upload"))
    token = client.cookies["csrftoken"].value
    response = upload(client, headers={"HTTP_X_CSRFTOKEN": token})
    assert response.status_code == 201
    assert Submission.objects.count() == 1


def test_without_javascript_an_upload_redirects_to_the_submission_page(client, release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())
    response = client.post(
        reverse("submission_upload"),
        {"benchmark": "ale-robotics", "bundle": SimpleUploadedFile("plain.age", b"sealed bytes"), "private": "1"},
    )
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("submission_detail", args=[submission.pk])
    assert submission.is_private is True


@pytest.mark.parametrize(("private", "expected"), [("1", True), ("true", True), ("yes", True), ("0", False)])
def test_the_upload_form_reads_private_as_the_api_does(client, release, settings, tmp_path, private, expected):
    # Only "1" was read as private: a script posting private=true published its run.
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())
    response = upload(client, f"bytes {private}".encode(), private=private)
    assert response.status_code == 201
    assert Submission.objects.get(pk=response.json()["id"]).is_private is expected


def test_the_upload_form_refuses_a_private_value_it_cannot_read_and_stores_nothing(client, release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())
    response = upload(client, private="maybe")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid", "message": "private: expected true or false, got 'maybe'."}}
    assert Submission.objects.count() == 0


def test_the_upload_form_refuses_a_field_it_does_not_read_by_name_and_stores_nothing(
    client, release, settings, tmp_path
):
    # Read past, a script's "is_private" published a run meant to stay private (the API refused it).
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())
    response = upload(client, is_private="1")
    assert response.status_code == 400
    assert response.json() == {
        "error": {"code": "invalid", "message": "is_private: unknown field; expected bundle, benchmark, private."}
    }
    assert Submission.objects.count() == 0


def test_the_upload_form_refuses_a_field_given_twice_and_stores_nothing(client, release, settings, tmp_path):
    # Read as the last, private=0 then private=1 was private; the API refuses it too.
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())
    response = upload(client, private=["0", "1"])
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid", "message": "private: given 2 times; send it once."}}
    assert Submission.objects.count() == 0


def test_the_upload_form_counts_a_bundle_sent_as_a_file_and_as_text_twice(client, release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())
    response = client.post(
        reverse("submission_upload"),
        {"benchmark": "ale-robotics", "bundle": [SimpleUploadedFile("run.age", b"sealed bytes"), "text"]},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid", "message": "bundle: given 2 times; send it once."}}
    assert Submission.objects.count() == 0


def test_the_upload_page_says_an_unknown_field_on_the_page_without_javascript(client, release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())
    response = client.post(
        reverse("submission_upload"),
        {"benchmark": "ale-robotics", "bundle": SimpleUploadedFile("plain.age", b"sealed bytes"), "agent": "x"},
    )
    assert response.status_code == 400
    assert "agent: unknown field; expected bundle, benchmark, private." in response.content.decode()
    assert Submission.objects.count() == 0

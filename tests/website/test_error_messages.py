"""A refusal shown on a page leads with its sentence; its machine code follows, small
("bundle_too_large: the bundle is ..." read as an error dump, visual review). The API's JSON
keeps its code and message as they were: clients switch on the code."""

from __future__ import annotations

import html
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from submissions.models import Submission
from tests.website.conftest import make_run, make_user

pytestmark = pytest.mark.django_db

EMPTY_FILE = "the uploaded file is empty (0 bytes); expected an age-encrypted bundle"


def error_box(body: str, marker: str) -> str:
    """The text of the page's error box marked ``marker``, as a person reads it."""
    match = re.search(rf'<(div|p) class="error-box"[^>]*{marker}[^>]*>(.*?)</\1>', body, re.DOTALL)
    assert match is not None, f"no error box {marker}"
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", match.group(2)).split()).replace(" .", "."))


def empty_upload(client, **headers):
    data = {"benchmark": "ale-robotics", "bundle": SimpleUploadedFile("e.age", b"")}
    return client.post(reverse("submission_upload"), data, **headers)


def test_the_upload_form_shows_a_refusal_as_its_sentence_then_its_code(client, release):
    client.force_login(make_user())
    response = empty_upload(client)
    assert response.status_code == 400
    assert error_box(response.content.decode(), "data-server-error") == (
        "The uploaded file is empty (0 bytes); expected an age-encrypted bundle. Code empty_file"
    )


def test_the_upload_apis_json_keeps_the_code_and_the_message_as_written(client, release):
    client.force_login(make_user())
    response = empty_upload(client, HTTP_ACCEPT="application/json")
    assert response.json() == {"error": {"code": "empty_file", "message": EMPTY_FILE}}


def test_the_challenge_form_shows_a_refusal_as_its_field_and_sentence_then_its_code(client, release):
    client.force_login(make_user())
    fields = {"benchmark": "ale-robotics", "release": "9.9", "agent_name": "Robo", "agent_version": "1"}
    response = client.post(reverse("submission_challenge"), fields)
    assert response.status_code == 400
    assert error_box(response.content.decode(), "data-challenge-error") == (
        "release: benchmark 'ale-robotics' has no published release '9.9' on this server (published: v0.5)."
        " Code unknown_release"
    )


def test_the_race_entry_form_shows_a_refusal_as_its_field_and_sentence_then_its_code(client, release):
    client.force_login(make_user())
    fields = {"benchmark": "ale-robotics", "race": "1", "agent_name": "Robo", "agent_version": "1"}
    response = client.post(reverse("race_entries"), fields)
    assert response.status_code == 400
    assert error_box(response.content.decode(), "data-entry-error") == (
        "benchmark: no race benchmark with slug 'ale-robotics'. Code unknown_benchmark"
    )


def test_a_refused_submissions_status_panel_gives_the_sentence_then_the_code(client, release):
    user = make_user()
    submission = Submission.objects.create(
        submitter=user,
        release=release,
        sha256="c" * 64,
        size=1,
        file="bundles/c.age",
        status="done",
        verdict="rejected",
        error_code="release_hash_mismatch",
        error_message="manifest.json: required_task_set_hash abc does not match release v0.5's",
    )
    client.force_login(user)
    body = client.get(reverse("submission_detail", args=[submission.pk])).content.decode()
    assert error_box(body, 'data-field="error"') == (
        "manifest.json: required_task_set_hash abc does not match release v0.5's. Code release_hash_mismatch"
    )


def test_the_page_refusing_a_change_to_anothers_run_gives_its_sentence(client, release):
    run = make_run(release, agent_name="Theirs", submitter=make_user("owner"))
    client.force_login(make_user("stranger"))
    response = client.post(reverse("run_withdraw", args=[run.pk]))
    assert response.status_code == 403
    assert error_box(response.content.decode(), "data-code") == (
        f"Run {run.pk} was submitted by another account. Code not_your_run"
    )

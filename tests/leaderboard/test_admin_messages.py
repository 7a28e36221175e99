"""The admin's messages say what happened once, at the right level: a sync is one summary,
an unpublished release a warning (never a green success). (Gates are passed one task at a
time on their own forms, with their evidence and the anchor's provenance: H5's
ReleaseTaskAdmin; open-genre tasks offer no calibration form.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib import messages as levels
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.leaderboard.test_admin_sync import UPLOAD, keep_db_connection, zipped  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_db_connection")]


def upload(client, directory: Path):
    archive = SimpleUploadedFile("demo.zip", zipped(directory), content_type="application/zip")
    return client.post(reverse(UPLOAD), {"archive": archive}, follow=True)


def test_a_sync_reports_one_summary_and_not_yet_published_as_a_warning(client, admin_user, demo_04_dir: Path) -> None:
    client.force_login(admin_user)
    response = upload(client, demo_04_dir)
    (message,) = list(response.context["messages"])
    assert message.level == levels.WARNING
    text = str(message)
    assert text.startswith("ale-robotics 0.4: created (")
    assert "tasks" in text and "release tasks" in text
    assert "Not yet published: visitors cannot see it until each task's review gates pass" in text


def test_syncing_again_unchanged_is_one_info_line(client, admin_user, demo_04_dir: Path) -> None:
    client.force_login(admin_user)
    upload(client, demo_04_dir)
    response = upload(client, demo_04_dir)
    (message,) = list(response.context["messages"])
    assert message.level == levels.WARNING  # still unpublished: the warning stays
    assert str(message).startswith("ale-robotics 0.4: unchanged.")

"""Release text is a snapshot (issue 11 item 6): each release keeps its own copy of every
task's text and contract; syncing an unpublished release never changes what a published
release shows; an unpublished release's text is visible to staff only."""

from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from leaderboard.models import ReleaseTask, Task
from leaderboard.services.release_gates import release_publish, release_sign_off_all
from leaderboard.services.release_sync import release_sync

SLUG = "drones_hover_ppo"
OLD_TITLE = "Learning to Fly (IROS 2021): single-drone hover with PPO"
NEW_TITLE = "Draft title 9f3c of the unreviewed 0.6 text"
NEW_BRIEF = "Draft brief sentence 51d7 nobody has reviewed."


@pytest.fixture
def releases(demo_04_dir: Path, demo_dir: Path, edit, staff, tmp_path: Path):
    """Published 0.4 and 0.5, then an unpublished 0.6 that rewrites one task's title and brief."""
    release_sign_off_all(release=release_sync(manifest=demo_04_dir, user=staff).release, user=staff)
    release_sign_off_all(release=release_sync(manifest=demo_dir, user=staff).release, user=staff)
    edit(demo_dir, "release.yaml", 'version: "0.5"', 'version: "0.6"')
    edit(demo_dir, "release.yaml", "\npublished: true\npublished_at: 2026-06-01T00:00:00Z\n", "\npublished: false\n")
    edit(demo_dir, f"tasks/{SLUG}/task.yaml", f'title: "{OLD_TITLE}"', f'title: "{NEW_TITLE}"')
    brief = demo_dir / "tasks" / SLUG / "brief.md"
    brief.write_text(brief.read_text() + f"\n{NEW_BRIEF}\n")
    draft = release_sync(manifest=demo_dir, user=staff).release
    assert draft.published is False
    return draft


def page(client, version: str) -> str:
    response = client.get(f"/benchmarks/ale-robotics/{version}/tasks/{SLUG}/")
    assert response.status_code == 200, version
    return response.content.decode()


def test_each_release_keeps_its_own_copy_of_the_task_text(releases) -> None:
    rows = {row.release.version: row for row in ReleaseTask.objects.filter(task__slug=SLUG).select_related("release")}
    assert rows["0.5"].title == OLD_TITLE and NEW_BRIEF not in rows["0.5"].brief_md
    assert rows["0.6"].title == NEW_TITLE and NEW_BRIEF in rows["0.6"].brief_md
    assert rows["0.6"].contract["title"] == NEW_TITLE
    assert rows["0.5"].anchor_provenance.startswith("Panerati et al. 2021, Fig. 6")


def test_syncing_an_unpublished_release_changes_no_published_page(client, releases) -> None:
    for version in ("0.4", "0.5"):
        body = page(client, version)
        assert OLD_TITLE in body
        assert NEW_TITLE not in body and "9f3c" not in body and "51d7" not in body
    for url in ("/benchmarks/ale-robotics/0.5/release/", "/benchmarks/ale-robotics/0.5/"):
        response = client.get(url, follow=True)
        assert NEW_TITLE not in response.content.decode(), url


def test_the_tasks_api_shows_only_published_text(releases) -> None:
    client = APIClient()
    listed = client.get("/api/v1/tasks/?limit=500").json()["results"]
    (task,) = [item for item in listed if item["slug"] == SLUG]
    assert task["title"] == OLD_TITLE
    detail = client.get(f"/api/v1/tasks/{task['id']}/").json()
    assert NEW_BRIEF not in detail["brief_md"]
    assert Task.objects.get(slug=SLUG).title == OLD_TITLE


def test_the_unpublished_text_is_visible_to_staff_only(client, releases, staff, visitor) -> None:
    assert client.get(f"/benchmarks/ale-robotics/0.6/tasks/{SLUG}/").status_code == 404
    client.force_login(visitor)
    assert client.get(f"/benchmarks/ale-robotics/0.6/tasks/{SLUG}/").status_code == 404
    api = APIClient()
    api.force_authenticate(visitor)
    assert api.get(f"/api/v1/releases/{releases.pk}/").status_code == 404
    client.force_login(staff)
    body = page(client, "0.6")
    assert NEW_TITLE in body and "51d7" in body
    api.force_authenticate(staff)
    titles = [task["title"] for task in api.get(f"/api/v1/releases/{releases.pk}/").json()["tasks"]]
    assert NEW_TITLE in titles


def test_publishing_the_new_release_moves_the_shared_text_but_not_older_pages(client, releases, staff) -> None:
    release_sign_off_all(release=releases, user=staff)
    release_publish(release=releases, user=staff)
    assert Task.objects.get(slug=SLUG).title == NEW_TITLE
    assert NEW_TITLE in page(client, "0.6")
    body = page(client, "0.5")
    assert OLD_TITLE in body and NEW_TITLE not in body

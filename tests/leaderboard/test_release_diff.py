"""leaderboard.selectors.release_diff: the one diff the admin and the public release page both show."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from leaderboard.services.release_gates import release_sign_off_all
from leaderboard.services.release_sync import release_sync

pytestmark = pytest.mark.django_db

TASK = "tasks/a1_stairs_climb/task.yaml"
ONE_PENALTY = "penalties:\n  - metric: fall_rate\n    limit: 0.1\n"


def publish_both(old_dir: Path, new_dir: Path):
    for directory in (old_dir, new_dir):
        release = release_sign_off_all(release=release_sync(manifest=directory, user=None).release, user=None)
        assert release.published
    return release


def admin_changes(client, admin_user, release) -> list[str]:
    client.force_login(admin_user)
    page = client.get(reverse("admin:leaderboard_release_change", args=[release.pk])).content.decode()
    client.logout()
    listed = re.search(r"<ul class='release-diff'>(.*?)</ul>", page, re.DOTALL)
    assert listed is not None, "the admin page shows no diff"
    return re.findall(r"<li>(.*?)</li>", listed.group(1))


def public_changes(client, release) -> list[str]:
    page = client.get(reverse("release_detail", args=[release.benchmark.slug, release.version])).content.decode()
    listed = re.search(r'<ul class="changes">(.*?)</ul>', page, re.DOTALL)
    assert listed is not None, "the release page shows no diff"
    return [re.sub(r"<[^>]+>", "", item).strip() for item in re.findall(r"<li>(.*?)</li>", listed.group(1), re.DOTALL)]


def test_the_admin_and_the_release_page_both_report_a_changed_penalty_limit(
    client, admin_user, demo_dir: Path, demo_04_dir: Path, edit
) -> None:
    edit(demo_dir, TASK, "limit: 0.1", "limit: 0.2")
    release = publish_both(demo_04_dir, demo_dir)

    admin = admin_changes(client, admin_user, release)
    public = public_changes(client, release)

    assert [line for line in admin if "penalties" in line] == ["penalties changed: a1_stairs_climb"]
    assert [line for line in public if "penalties" in line] == [
        "changed a1_stairs_climb Stair climbing with Unitree A1 (open genre): penalties changed"
    ]


def test_penalties_listed_in_another_order_are_no_change_on_either_page(
    client, admin_user, demo_dir: Path, demo_04_dir: Path, edit
) -> None:
    first = "penalties:\n  - metric: fall_rate\n    limit: 0.1\n  - metric: collision_rate\n    limit: 0.3\n"
    swapped = "penalties:\n  - metric: collision_rate\n    limit: 0.3\n  - metric: fall_rate\n    limit: 0.1\n"
    edit(demo_04_dir, TASK, ONE_PENALTY, first)
    edit(demo_dir, TASK, ONE_PENALTY, swapped)
    release = publish_both(demo_04_dir, demo_dir)

    admin = admin_changes(client, admin_user, release)
    public = public_changes(client, release)

    assert not [line for line in admin if "a1_stairs_climb" in line]
    assert not [line for line in public if "a1_stairs_climb" in line]
    assert "task added: drones_ego_planner" in admin  # the pages did compare the two releases
    assert any(line.startswith("added drones_ego_planner") for line in public)

"""leaderboard.selectors.release_diff: the one diff the admin and the public release page both show."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from leaderboard.models import ReleaseTask
from leaderboard.services.release_gates import release_sign_off_all
from leaderboard.services.release_sync import release_sync

pytestmark = pytest.mark.django_db

TASK = "tasks/a1_stairs_climb/task.yaml"
ONE_PENALTY = "penalties:\n  - metric: fall_rate\n    limit: 0.1\n"
A1_NOT_COMPARED = (
    "withheld a1_stairs_climb Stair climbing with Unitree A1 (open genre): anchor withheld in 0.4 and 0.5; not compared"
)
DOOR = "robosuite_door_open"
DOOR_PUBLISHED = "    paper_value: 0.78\n    anchor_published: true\n"


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
        "changed a1_stairs_climb Stair climbing with Unitree A1 (open genre): "
        "anchor withheld in 0.4 and 0.5; not compared; penalties changed"
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
    assert [line for line in public if "a1_stairs_climb" in line] == [A1_NOT_COMPARED]  # its anchor, no penalties
    assert "task added: drones_ego_planner" in admin  # the pages did compare the two releases
    assert any(line.startswith("added drones_ego_planner") for line in public)


def set_anchor(release, slug: str, value: float) -> None:
    ReleaseTask.objects.filter(release=release, task__slug=slug).update(paper_value=value)


def test_a_published_anchor_that_becomes_withheld_reads_the_same_to_a_visitor_whether_or_not_it_changed(
    client, demo_dir: Path, demo_04_dir: Path, edit
) -> None:
    edit(demo_dir, "release.yaml", DOOR_PUBLISHED, "    paper_value: 0.78\n    anchor_published: false\n")
    release = publish_both(demo_04_dir, demo_dir)

    unchanged = public_changes(client, release)
    set_anchor(release, DOOR, 0.79)
    changed = public_changes(client, release)

    assert changed == unchanged
    assert [line for line in changed if DOOR in line] == [
        "withheld robosuite_door_open Door opening under a joint-limit budget (open genre): "
        "anchor withheld in 0.5; not compared"
    ]


def test_a_withheld_anchor_reads_the_same_to_a_visitor_whether_or_not_it_changed(
    client, demo_dir: Path, demo_04_dir: Path
) -> None:
    release = publish_both(demo_04_dir, demo_dir)

    unchanged = public_changes(client, release)
    set_anchor(release, "a1_stairs_climb", 0.74)
    changed = public_changes(client, release)

    assert changed == unchanged
    assert [line for line in changed if "a1_stairs_climb" in line] == [A1_NOT_COMPARED]


def test_staff_see_a_withheld_anchor_compared_with_its_values_on_the_admin_page(
    client, admin_user, demo_dir: Path, demo_04_dir: Path
) -> None:
    release = publish_both(demo_04_dir, demo_dir)
    set_anchor(release, "a1_stairs_climb", 0.74)

    admin = admin_changes(client, admin_user, release)

    assert [line for line in admin if line.startswith("anchor")] == [
        "anchor changed: a1_stairs_climb: 0.72 -&gt; 0.74",
        "anchor changed: robomimic_lift_bc_rnn: 0.94 -&gt; 0.96",
    ]


def test_a_draft_releases_published_anchor_is_not_compared_on_the_release_page(
    client, admin_user, demo_dir: Path, demo_04_dir: Path
) -> None:
    release_sign_off_all(release=release_sync(manifest=demo_04_dir, user=None).release, user=None)
    draft = release_sync(manifest=demo_dir, user=None).release
    set_anchor(draft, DOOR, 0.79)
    client.force_login(admin_user)  # only staff may see a draft's page

    public = public_changes(client, draft)

    assert [line for line in public if DOOR in line] == [
        "withheld robosuite_door_open Door opening under a joint-limit budget (open genre): "
        "anchor withheld in 0.5; not compared"
    ]

"""Release sync, gates and diff (leaderboard.services.release_*) and leaderboard.selectors.releases, on the database."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.forms.models import model_to_dict

from leaderboard.manifest import ManifestError, load_manifest
from leaderboard.models import Benchmark, Evaluator, Release, ReleaseTask, ScorecardLevel, Task
from leaderboard.permissions import PUBLISH_RELEASE
from leaderboard.selectors.release_diff import release_diff
from leaderboard.selectors.releases import (
    release_list_for_benchmark,
    release_previous,
    release_spec,
    version_key,
)
from leaderboard.services import release_sync as release_sync_module
from leaderboard.services.release_gates import (
    ReleaseGateError,
    release_publish,
    release_sign_off_all,
    release_task_calibrate_faithfulness,
    release_task_sign_off_anchor,
)
from leaderboard.services.release_sync import release_sync
from scoring.errors import ScoringError
from tests.staff import staff_grant

pytestmark = pytest.mark.django_db

WITHHELD = ["0.96", "0.86", "0.12", "9.8", "0.81", "47.3", "0.18", "0.72", "0.55"]


def sign_off(row, user):
    """An anchor sign-off with evidence that reproduces the anchor exactly (tolerance 5%)."""
    row.refresh_from_db()
    return release_task_sign_off_anchor(
        release_task=row,
        user=user,
        cited_source="Table 2",
        reproduced_value=row.paper_value if row.paper_value is not None else 0.5,
        tolerance=0.05,
    )


def calibrate(row, user):
    return release_task_calibrate_faithfulness(
        release_task=row, user=user, rubric_version="v1", dry_run_outcome="reference faithful", dry_run_passed=True
    )


def snapshot() -> dict[str, list[dict]]:
    """Every registry row, every field: equal snapshots mean nothing was written."""
    models = (Benchmark, Evaluator, Task, Release, ReleaseTask, ScorecardLevel)
    return {
        model.__name__: [
            {**model_to_dict(row), "_times": [str(getattr(row, f.name)) for f in model._meta.fields]}
            for row in model.objects.order_by("pk")
        ]
        for model in models
    }


def sync_problems(path: Path, user=None) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        release_sync(manifest=path, user=user)
    return [str(problem) for problem in caught.value.problems]


def test_a_first_sync_creates_the_benchmark_evaluators_tasks_and_release(demo_dir: Path, staff) -> None:
    result = release_sync(manifest=demo_dir, user=staff)
    assert result.status == "created"
    release = result.release
    assert Benchmark.objects.get().scheme == "paper_gap"
    assert sorted(Evaluator.objects.values_list("simulator", flat=True)) == [
        "carla",
        "isaacgym-legged",
        "pybullet-drones",
        "robosuite+robomimic",
    ]
    assert Task.objects.count() == 11
    assert release.release_tasks.count() == 11
    assert release.required_task_set_hash == load_manifest(demo_dir).required_task_set_hash
    assert release.manifest_sha256 == load_manifest(demo_dir).sha256
    assert release.synced_by == staff
    assert release.budgets == {"wall_clock_hours": 12, "gpu_hours": 8, "llm_tokens": 20000000, "llm_usd": 150}
    assert release.published is False
    lift = Task.objects.get(slug="robomimic_lift_bc_rnn")
    assert lift.simulator.simulator == "robosuite+robomimic"
    assert "paper_value" not in lift.contract["metric"]
    assert lift.sandbox_dockerfile.startswith("# Offline agent workspace")
    door = ReleaseTask.objects.get(release=release, task__slug="robosuite_door_open")
    assert (door.paper_value, door.anchor_published, door.penalties) == (
        0.78,
        True,
        [{"metric": "joint_limit_violation_rate", "limit": 0.05}],
    )


def test_a_published_manifest_syncs_unpublished_and_says_what_waits(demo_04_dir: Path, staff) -> None:
    result = release_sync(manifest=demo_04_dir, user=staff)
    assert result.release.published is False
    assert result.notes == [
        "release.yaml says published: true, but the release stays unpublished until its human gates pass: "
        "anchor sign-off missing for robomimic_lift_bc_rnn, robosuite_square_diffusion_policy, robosuite_door_open, "
        "drones_hover_ppo, drones_gate_racing, carla_transfuser_longest6, carla_lane_keeping, "
        "anymal_rough_terrain_walk, a1_stairs_climb; faithfulness calibration missing for robomimic_lift_bc_rnn, "
        "robosuite_square_diffusion_policy, drones_hover_ppo, carla_transfuser_longest6, anymal_rough_terrain_walk"
    ]


def test_syncing_the_same_manifest_twice_changes_nothing(demo_dir: Path, staff) -> None:
    release_sync(manifest=demo_dir, user=staff)
    before = snapshot()
    again = release_sync(manifest=demo_dir, user=staff)
    assert (again.status, again.changes) == ("unchanged", [])
    assert snapshot() == before


def test_the_path_or_manifest_alias_and_a_loaded_manifest_are_accepted(demo_dir: Path, staff) -> None:
    release_sync(path_or_manifest=demo_dir, user=staff)
    assert release_sync(manifest=load_manifest(demo_dir), user=staff).status == "unchanged"


def test_an_error_in_task_eleven_leaves_the_database_untouched(demo_dir: Path, edit, staff) -> None:
    release_sync(manifest=demo_dir, user=staff)
    edit(demo_dir, "release.yaml", 'version: "0.5"', 'version: "0.6"')
    edit(demo_dir, "tasks/drones_hover_ppo/brief.md", "Train a PPO", "Train a PPO (new wording)")
    edit(demo_dir, "tasks/go1_energy_efficient_gait/task.yaml", "genre: open", "genre: unknown")
    before = snapshot()
    assert sync_problems(demo_dir, staff) == [
        "tasks/go1_energy_efficient_gait/task.yaml:6: genre: expected one of reproduction, open, got 'unknown'"
    ]
    assert snapshot() == before


def test_a_nul_escape_in_a_yaml_string_is_a_problem_naming_its_line_and_writes_nothing(
    demo_dir: Path, edit, staff
) -> None:
    # PostgreSQL refuses NUL in text: the task's title reached the write, a DataError (a 500 on
    # the sync endpoint); SQLite stored a title with a hidden NUL in it.
    edit(demo_dir, "tasks/a1_stairs_climb/task.yaml", "(open genre)", "(open\\0genre)")
    before = snapshot()
    assert sync_problems(demo_dir, staff) == [
        "tasks/a1_stairs_climb/task.yaml:2: title: holds a NUL character (U+0000), which no text field can hold; "
        "leave it out"
    ]
    assert snapshot() == before


def test_a_lone_surrogate_escape_in_a_yaml_string_is_a_problem_and_writes_nothing(demo_dir: Path, edit, staff) -> None:
    # "\\ud800" is a string that cannot be encoded to UTF-8: the sync crashed storing or hashing it.
    edit(demo_dir, "tasks/a1_stairs_climb/task.yaml", "(open genre)", "(open \\ud800 genre)")
    before = snapshot()
    assert sync_problems(demo_dir, staff) == [
        "tasks/a1_stairs_climb/task.yaml:2: title: holds a lone UTF-16 surrogate (U+D800..U+DFFF), which is not "
        "a character"
    ]
    assert snapshot() == before


def test_a_nul_byte_in_a_markdown_file_is_a_problem_and_writes_nothing(demo_dir: Path, staff) -> None:
    brief = demo_dir / "tasks/a1_stairs_climb/brief.md"
    brief.write_bytes(brief.read_bytes() + b"\x00")
    before = snapshot()
    assert sync_problems(demo_dir, staff) == [
        "tasks/a1_stairs_climb/brief.md: holds a NUL character (U+0000), which no text field can hold; leave it out"
    ]
    assert snapshot() == before


def test_a_database_failure_midway_rolls_the_whole_sync_back(
    demo_dir: Path, staff, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = []
    original = ReleaseTask.objects.create

    def failing_create(**kwargs):
        created.append(kwargs["task"].slug)
        if len(created) == 11:
            raise RuntimeError("disk full")
        return original(**kwargs)

    monkeypatch.setattr(ReleaseTask.objects, "create", failing_create)
    with pytest.raises(RuntimeError):
        release_sync(manifest=demo_dir, user=staff)
    assert snapshot() == {name: [] for name in snapshot()}


def test_a_changed_manifest_for_a_published_release_is_refused(demo_dir: Path, edit, staff) -> None:
    release = release_sign_off_all(release=release_sync(manifest=demo_dir, user=staff).release, user=staff)
    assert release.published is True
    edit(demo_dir, "release.yaml", "    paper_value: 0.72\n", "    paper_value: 0.74\n")
    before = snapshot()
    problems = sync_problems(demo_dir, staff)
    assert problems == [
        "release.yaml:11: version: release ale-robotics 0.5 is published and cannot change; "
        "bump the version to release a changed manifest"
    ]
    assert snapshot() == before


def test_a_bumped_version_of_a_published_release_syncs_as_a_new_release(demo_dir: Path, edit, staff) -> None:
    release_sign_off_all(release=release_sync(manifest=demo_dir, user=staff).release, user=staff)
    edit(demo_dir, "release.yaml", 'version: "0.5"', 'version: "0.6"')
    edit(demo_dir, "release.yaml", "published: true\npublished_at: 2026-06-01T00:00:00Z\n", "published: false\n")
    result = release_sync(manifest=demo_dir, user=staff)
    assert result.status == "created"
    assert list(Release.objects.order_by("version").values_list("version", "published")) == [
        ("0.5", True),
        ("0.6", False),
    ]


def test_a_resync_of_an_unpublished_release_clears_the_sign_off_of_a_changed_anchor(
    demo_dir: Path, edit, staff
) -> None:
    release = release_sync(manifest=demo_dir, user=staff).release
    row = ReleaseTask.objects.get(release=release, task__slug="a1_stairs_climb")
    sign_off(row, staff)
    edit(demo_dir, "release.yaml", "    paper_value: 0.72\n", "    paper_value: 0.74\n")
    result = release_sync(manifest=demo_dir, user=staff)
    assert result.status == "updated"
    assert result.changes == [
        "release ale-robotics 0.5: updated (task contents)",
        "release task a1_stairs_climb: anchor changed, anchor sign-off cleared",
    ]
    row.refresh_from_db()
    assert (row.paper_value, row.anchor_signed_off_at, row.anchor_signed_off_by) == (0.74, None, None)


def test_a_resync_with_a_new_paper_clears_the_faithfulness_calibration(demo_dir: Path, edit, staff) -> None:
    release = release_sync(manifest=demo_dir, user=staff).release
    row = ReleaseTask.objects.get(release=release, task__slug="drones_hover_ppo")
    calibrate(row, staff)
    edit(demo_dir, "tasks/drones_hover_ppo/paper.md", "As a first learning result", "As its first learning result")
    result = release_sync(manifest=demo_dir, user=staff)
    assert result.changes == [
        "release ale-robotics 0.5: updated (task contents)",
        "release task drones_hover_ppo: paper_md changed, faithfulness calibration cleared",
    ]
    row.refresh_from_db()
    assert row.faithfulness_calibrated_at is None


def test_a_removed_task_leaves_the_unpublished_release(demo_dir: Path, edit, staff) -> None:
    release_sync(manifest=demo_dir, user=staff)
    edit(
        demo_dir,
        "release.yaml",
        "  - slug: go1_energy_efficient_gait\n    paper_value: 0.55\n    anchor_published: false\n",
        "",
    )
    shutil.rmtree(demo_dir / "tasks/go1_energy_efficient_gait")
    result = release_sync(manifest=demo_dir, user=staff)
    assert "release task go1_energy_efficient_gait: removed" in result.changes
    assert ReleaseTask.objects.count() == 10
    assert Task.objects.filter(slug="go1_energy_efficient_gait").exists()


def test_a_benchmark_cannot_change_its_scheme(demo_dir: Path, edit, staff) -> None:
    release_sync(manifest=demo_dir, user=staff)
    edit(demo_dir, "release.yaml", 'version: "0.5"', 'version: "0.6"')
    edit(demo_dir, "release.yaml", "scheme: paper_gap", "scheme: race")
    assert sync_problems(demo_dir, staff) == [
        "release.yaml:6: benchmark.scheme: expected paper_gap (benchmark 'ale-robotics' already uses it; "
        "a release cannot change its benchmark's scheme), got 'race'"
    ]


def test_a_simulator_neither_declared_nor_registered_is_refused(demo_dir: Path, edit, staff) -> None:
    edit(demo_dir, "tasks/a1_stairs_climb/task.yaml", "simulator: isaacgym-legged", "simulator: raisim")
    assert sync_problems(demo_dir, staff) == [
        "tasks/a1_stairs_climb/task.yaml:5: simulator: expected a registered evaluator (carla, isaacgym-legged, "
        "pybullet-drones, robosuite+robomimic), got 'raisim'; declare it under evaluators in release.yaml or "
        "register it in the admin"
    ]
    assert Benchmark.objects.count() == 0


def test_a_pre_registered_evaluator_is_accepted(demo_dir: Path, edit, staff) -> None:
    Evaluator.objects.create(simulator="raisim", name="RaiSim")
    edit(demo_dir, "tasks/a1_stairs_climb/task.yaml", "simulator: isaacgym-legged", "simulator: raisim")
    release_sync(manifest=demo_dir, user=staff)
    assert Task.objects.get(slug="a1_stairs_climb").simulator.name == "RaiSim"


def test_a_user_who_is_not_staff_cannot_sync(demo_dir: Path, visitor) -> None:
    with pytest.raises(PermissionDenied):
        release_sync(manifest=demo_dir, user=visitor)
    assert Benchmark.objects.count() == 0


def test_publish_is_refused_while_tasks_are_unsigned_naming_them(demo_04_dir: Path, staff) -> None:
    release = release_sync(manifest=demo_04_dir, user=staff).release
    for row in release.release_tasks.exclude(task__slug__in=["a1_stairs_climb", "drones_hover_ppo"]):
        sign_off(row, staff)
        if row.genre == "reproduction":
            calibrate(row, staff)
    with pytest.raises(ReleaseGateError) as caught:
        release_publish(release=release, user=staff)
    assert str(caught.value) == (
        "release ale-robotics 0.4 cannot be published: anchor sign-off missing for drones_hover_ppo, a1_stairs_climb; "
        "faithfulness calibration missing for drones_hover_ppo"
    )
    release.refresh_from_db()
    assert release.published is False


def test_sign_off_records_who_and_when_and_publish_uses_the_manifest_date(demo_04_dir: Path, staff) -> None:
    release = release_sync(manifest=demo_04_dir, user=staff).release
    row = ReleaseTask.objects.get(release=release, task__slug="drones_hover_ppo")
    signed = sign_off(row, staff)
    assert signed.anchor_signed_off_by == staff and signed.anchor_signed_off_at is not None
    published = release_sign_off_all(release=release, user=staff)
    assert published.published is True
    assert published.published_at.isoformat() == "2026-02-01T00:00:00+00:00"
    assert ReleaseTask.objects.filter(release=release, anchor_signed_off_at__isnull=True).count() == 0


def test_an_open_task_has_no_faithfulness_gate(demo_04_dir: Path, staff) -> None:
    release = release_sync(manifest=demo_04_dir, user=staff).release
    row = ReleaseTask.objects.get(release=release, task__slug="a1_stairs_climb")
    with pytest.raises(ReleaseGateError) as caught:
        calibrate(row, staff)
    assert str(caught.value) == (
        "task a1_stairs_climb is open genre: the faithfulness gate applies to reproduction tasks only"
    )


def test_a_task_without_an_anchor_cannot_be_signed_off(demo_04_dir: Path, edit, staff) -> None:
    edit(demo_04_dir, "release.yaml", "    paper_value: 0.72\n", "    paper_value: null\n")
    release = release_sync(manifest=demo_04_dir, user=staff).release
    row = ReleaseTask.objects.get(release=release, task__slug="a1_stairs_climb")
    with pytest.raises(ReleaseGateError) as caught:
        sign_off(row, staff)
    assert str(caught.value) == (
        "task a1_stairs_climb of ale-robotics 0.4 has no anchor (paper_value is null); "
        "give one in release.yaml and sync before signing off"
    )


def test_a_visitor_cannot_sign_off(demo_04_dir: Path, staff, visitor) -> None:
    release = release_sync(manifest=demo_04_dir, user=staff).release
    row = release.release_tasks.first()
    with pytest.raises(PermissionDenied):
        sign_off(row, visitor)
    row.refresh_from_db()
    assert row.anchor_signed_off_at is None


def test_staff_without_the_release_permission_cannot_sign_off(demo_04_dir: Path, staff, helper) -> None:
    release = release_sync(manifest=demo_04_dir, user=staff).release
    row = release.release_tasks.first()
    with pytest.raises(PermissionDenied):
        sign_off(row, helper)
    row.refresh_from_db()
    assert row.anchor_signed_off_at is None


def test_staff_without_the_release_permission_cannot_sync_or_publish(demo_04_dir: Path, helper) -> None:
    with pytest.raises(PermissionDenied):
        release_sync(manifest=demo_04_dir, user=helper)
    assert not Release.objects.exists()


def test_staff_given_only_the_release_permission_sync_sign_off_and_publish(demo_04_dir: Path, helper) -> None:
    maintainer = staff_grant(helper, PUBLISH_RELEASE)
    release = release_sync(manifest=demo_04_dir, user=maintainer).release
    assert release_sign_off_all(release=release, user=maintainer).published is True


def test_a_script_may_sign_off_without_a_user(demo_04_dir: Path) -> None:
    release = release_sync(manifest=demo_04_dir, user=None).release
    assert release_sign_off_all(release=release, user=None).published is True


def test_the_diff_between_versions_shows_added_tasks_and_the_changed_anchor(
    demo_dir: Path, demo_04_dir: Path, staff
) -> None:
    old = release_sync(manifest=demo_04_dir, user=staff).release
    new = release_sync(manifest=demo_dir, user=staff).release
    diff = release_diff(old, new)
    assert diff.lines(show_anchors=True) == [
        "task added: drones_ego_planner",
        "task added: go1_energy_efficient_gait",
        "anchor changed: robomimic_lift_bc_rnn: 0.94 -> 0.96",
    ]
    assert release_diff(new, old).removed == ["drones_ego_planner", "go1_energy_efficient_gait"]


def test_no_sync_output_carries_a_withheld_anchor(demo_dir: Path, demo_04_dir: Path, edit, staff) -> None:
    outputs = release_sync(manifest=demo_04_dir, user=staff).lines()
    outputs += release_sync(manifest=demo_dir, user=staff).lines()
    edit(demo_dir, "release.yaml", "    paper_value: 0.96\n", "    paper_value: 0.97\n")
    outputs += release_sync(manifest=demo_dir, user=staff).lines()
    text = "\n".join(outputs)
    for value in [*WITHHELD, "0.97", "0.94"]:
        assert value not in text


def test_release_spec_reads_the_rows_in_one_query(demo_dir: Path, staff, django_assert_num_queries) -> None:
    release = release_sync(manifest=demo_dir, user=staff).release
    with django_assert_num_queries(1):
        spec = release_spec(release)
    assert spec == load_manifest(demo_dir).to_release_spec()


def test_release_spec_refuses_a_task_without_an_anchor(demo_dir: Path, edit, staff) -> None:
    edit(demo_dir, "release.yaml", "    paper_value: 0.72\n", "    paper_value: null\n")
    release = release_sync(manifest=demo_dir, user=staff).release
    with pytest.raises(ScoringError) as caught:
        release_spec(release)
    assert str(caught.value) == f"release {release.pk}: tasks without an anchor cannot be scored: a1_stairs_climb"


def test_versions_sort_naturally() -> None:
    assert sorted(["0.10", "0.5", "1.0", "0.4", "0.5-rc1"], key=version_key) == ["0.4", "0.5", "0.5-rc1", "0.10", "1.0"]


def test_previous_release_and_the_benchmark_list_follow_version_order(
    demo_dir: Path, demo_04_dir: Path, edit, staff
) -> None:
    old = release_sync(manifest=demo_04_dir, user=staff).release
    new = release_sync(manifest=demo_dir, user=staff).release
    edit(demo_dir, "release.yaml", 'version: "0.5"', 'version: "0.10"')
    newest = release_sync(manifest=demo_dir, user=staff).release
    assert release_previous(newest) == new
    assert release_previous(new) == old
    assert release_previous(old) is None
    release_sign_off_all(release=old, user=staff)
    benchmark = old.benchmark
    assert release_list_for_benchmark(benchmark) == [old]
    assert release_list_for_benchmark(benchmark, published_only=False) == [newest, new, old]


def test_a_scorecard_release_writes_its_levels(tmp_path: Path, staff) -> None:
    (tmp_path / "release.yaml").write_text(
        "format: 1\nbenchmark: {slug: sokoban, name: Sokoban, scheme: scorecard}\nversion: '1'\npublished: true\n"
        'tasks: []\nepisode_set:\n  size: 2\n  levels:\n    - {id: l1, xsb: "#######\\n#@ $ .#\\n#######"}\n'
        '    - {id: l2, optimal_len: 1, xsb: "######\\n#@$.##\\n#    #\\n######"}\n'
    )
    result = release_sync(manifest=tmp_path, user=staff)
    assert result.release.episode_set_size == 2
    assert result.release.published is True
    assert list(ScorecardLevel.objects.values_list("level_id", "optimal_len", "xsb")) == [
        ("l1", 3, "#######\n#@ $ .#\n#######"),
        ("l2", 1, "######\n#@$.##\n#    #\n######"),
    ]
    assert "#@" not in str(result.release.manifest)


def test_a_race_release_stores_its_qualifying_task_ids(tmp_path: Path, staff) -> None:
    (tmp_path / "release.yaml").write_text(
        "format: 1\nbenchmark: {slug: oro, name: ORO Bench, scheme: race}\nversion: '1'\npublished: false\n"
        "tasks: []\nqualifying:\n  task_ids: [shop-1, shop-2]\n"
    )
    release = release_sync(manifest=tmp_path, user=staff).release
    assert release.qualifying_task_ids == ["shop-1", "shop-2"]


def test_a_qualifying_set_naming_a_task_of_a_race_not_yet_released_is_refused(tmp_path: Path, staff) -> None:
    """A qualifying set is public at once: synced while a race runs on one of its tasks, it would
    publish that race's hidden task (outside review; race_schedule and race_start refuse the same)."""
    from leaderboard.services.races import race_close, race_release, race_schedule, race_start

    def manifest(version: str, tasks: str) -> Path:
        directory = tmp_path / version
        directory.mkdir()
        (directory / "release.yaml").write_text(
            f"format: 1\nbenchmark: {{slug: oro, name: ORO Bench, scheme: race}}\nversion: '{version}'\n"
            f"published: false\ntasks: []\nqualifying:\n  task_ids: [{tasks}]\n"
        )
        return directory

    release_sync(manifest=manifest("1", "shop-1, shop-2"), user=staff)
    race = race_start(race=race_schedule(benchmark=Benchmark.objects.get(slug="oro"), number=1, task_ids=["h-1"]))
    with pytest.raises(ManifestError) as refused:
        release_sync(manifest=manifest("2", "shop-1, h-1"), user=staff)
    assert "task 'h-1' is in the hidden set of race 1 (running)" in str(refused.value)
    assert not Release.objects.filter(version="2").exists()
    race_release(race=race_close(race=race))  # released: its tasks are public, a qualifying set may name them
    assert release_sync(manifest=manifest("3", "shop-1, h-1"), user=staff).release.qualifying_task_ids == [
        "shop-1",
        "h-1",
    ]


def test_release_sync_needs_a_manifest() -> None:
    with pytest.raises(TypeError):
        release_sync_module.release_sync(user=None)


def test_a_sync_that_loses_a_race_on_a_unique_row_asks_to_sync_again(
    demo_dir: Path, staff, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import IntegrityError

    def collide(*args, **kwargs):
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(Benchmark.objects, "create", collide)
    assert sync_problems(demo_dir, staff) == [
        "release.yaml: another sync of this release ran at the same time; sync again"
    ]
    assert Evaluator.objects.count() == 0


def test_an_unpublished_release_with_runs_is_frozen_too(demo_dir: Path, edit, staff) -> None:
    from leaderboard.models import Agent, AgentVersion, Run
    from submissions.models import Submission

    release = release_sync(manifest=demo_dir, user=staff).release
    agent = Agent.objects.create(slug="a", name="A", owner=staff)
    submission = Submission.objects.create(
        submitter=staff, release=release, file="bundles/x.age", sha256="0" * 64, size=1
    )
    linked = Run.objects.create(
        release=release,
        agent_version=AgentVersion.objects.create(agent=agent, version="1"),
        level="validated",
        covered=11,
        required=11,
        complete=True,
    )
    submission.run = linked
    submission.save(update_fields=["run"])
    edit(demo_dir, "release.yaml", "    paper_value: 0.72\n", "    paper_value: 0.74\n")
    before = snapshot()
    assert sync_problems(demo_dir, staff) == [
        "release.yaml:11: version: release ale-robotics 0.5 already has runs scored against it and cannot change; "
        "bump the version to release a changed manifest"
    ]
    assert snapshot() == before


def test_a_drafts_sync_leaves_the_public_benchmark_text_and_its_publication_brings_it(
    demo_dir: Path, edit, staff
) -> None:
    release_sign_off_all(release=release_sync(manifest=demo_dir, user=staff).release, user=staff)
    edit(demo_dir, "release.yaml", 'version: "0.5"', 'version: "0.6"')
    edit(demo_dir, "release.yaml", "published: true\npublished_at: 2026-06-01T00:00:00Z\n", "published: false\n")
    edit(demo_dir, "release.yaml", "name: ALE Robotics", "name: Secret Project Zeta")
    draft = release_sync(manifest=demo_dir, user=staff)
    assert "benchmark ale-robotics: name changed (shown once this release is published)" in draft.changes
    assert Benchmark.objects.get().name == "ALE Robotics"
    release_publish(release=release_sign_off_all(release=draft.release, user=staff), user=staff)
    assert Benchmark.objects.get().name == "Secret Project Zeta"


def test_a_benchmark_whose_releases_are_all_drafts_is_listed_to_staff_only(demo_dir: Path, edit, staff, client) -> None:
    edit(demo_dir, "release.yaml", "published: true\npublished_at: 2026-06-01T00:00:00Z\n", "published: false\n")
    edit(demo_dir, "release.yaml", "name: ALE Robotics", "name: Secret Project Zeta")
    release_sync(manifest=demo_dir, user=staff)
    assert "Secret Project Zeta" not in client.get("/").content.decode()
    assert client.get("/api/v1/benchmarks/").json()["results"] == []
    assert client.get("/api/v1/benchmarks/ale-robotics/").status_code == 404
    client.force_login(staff)
    assert "Secret Project Zeta" in client.get("/").content.decode()
    assert [b["name"] for b in client.get("/api/v1/benchmarks/").json()["results"]] == ["Secret Project Zeta"]


def test_a_changed_sandbox_workspace_file_of_a_published_release_is_refused(demo_dir: Path, staff) -> None:
    # Its sandbox content changed without a version bump: the sync answered "unchanged".
    release = release_sign_off_all(release=release_sync(manifest=demo_dir, user=staff).release, user=staff)
    assert release.published is True
    readme = demo_dir / "tasks/robomimic_lift_bc_rnn/sandbox/workspace/README.md"
    readme.write_text(readme.read_text() + "One more hint.\n")
    before = snapshot()
    assert sync_problems(demo_dir, staff) == [
        "release.yaml:11: version: release ale-robotics 0.5 is published and cannot change; "
        "bump the version to release a changed manifest"
    ]
    assert snapshot() == before


def test_a_release_synced_before_sandbox_files_were_pinned_syncs_again_unchanged(demo_dir: Path, staff) -> None:
    release = release_sign_off_all(release=release_sync(manifest=demo_dir, user=staff).release, user=staff)
    manifest = load_manifest(demo_dir, known_simulators=[])
    legacy = manifest.sha256_before_sandbox_files
    assert legacy != release.manifest_sha256
    # What a site stored before: the hash and the canonical manifest without the sandbox files.
    Release.objects.filter(pk=release.pk).update(
        manifest_sha256=legacy, manifest=manifest.canonical(with_sandbox_files=False)
    )
    result = release_sync(manifest=demo_dir, user=staff)
    assert (result.status, Release.objects.get(pk=release.pk).manifest_sha256) == ("unchanged", legacy)


def test_a_release_synced_with_no_sandbox_files_refuses_one_added_later(tmp_path: Path, demo_dir: Path, staff) -> None:
    # The hash without sandbox files is that of a release with none: it is accepted only for a
    # release synced before they were pinned, or a file added under a new release would pass.
    for workspace in demo_dir.glob("tasks/*/sandbox/workspace"):
        shutil.rmtree(workspace)
    release = release_sign_off_all(release=release_sync(manifest=demo_dir, user=staff).release, user=staff)
    assert release.published is True
    added = demo_dir / "tasks/robomimic_lift_bc_rnn/sandbox/workspace/README.md"
    added.parent.mkdir()
    added.write_text("One more hint.\n")
    assert sync_problems(demo_dir, staff) == [
        "release.yaml:11: version: release ale-robotics 0.5 is published and cannot change; "
        "bump the version to release a changed manifest"
    ]


def _scorecard_manifest(root: Path, version: str, levels: list[tuple[str, str]], *, published: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    body = "".join(
        f'    - {{id: {level_id}, xsb: "{xsb.replace(chr(10), chr(92) + "n")}"}}\n' for level_id, xsb in levels
    )
    (root / "release.yaml").write_text(
        "format: 1\nbenchmark: {slug: sokoban, name: Sokoban, scheme: scorecard}\n"
        f"version: '{version}'\npublished: {str(published).lower()}\ntasks: []\nepisode_set:\n"
        f"  size: {len(levels)}\n  levels:\n{body}"
    )
    return root


CORRIDOR = "#######\n#@ $ .#\n#######"
ROOM = "######\n#@$.##\n#    #\n######"
NARROW = "#####\n#@$.#\n#####"


def test_a_scorecard_release_reusing_a_level_of_a_published_release_is_refused(tmp_path: Path, staff) -> None:
    # A "rotated" set identical to the played one was accepted and became the current board.
    release_sync(manifest=_scorecard_manifest(tmp_path / "a", "1", [("l1", CORRIDOR), ("l2", ROOM)]), user=staff)
    before = snapshot()
    # The same level under another id, with trailing blanks: still the level every card saw.
    reused = ROOM.replace("\n#    #", "\n#    #  ")
    problems = sync_problems(_scorecard_manifest(tmp_path / "b", "2", [("m1", NARROW), ("m2", reused)]), staff)
    assert problems == [
        "release.yaml:6: episode_set: 1 of its levels (first: 'm2') are levels of published release sokoban 1, "
        "which every card there could see; a new release needs a freshly generated set "
        "(python -m scoring.sokoban.generator --count N)"
    ]
    assert snapshot() == before
    fresh = release_sync(manifest=_scorecard_manifest(tmp_path / "c", "2", [("m1", NARROW)]), user=staff)
    assert fresh.status == "created"
    # The release itself synced again is unchanged, not refused for its own levels.
    again = release_sync(
        manifest=_scorecard_manifest(tmp_path / "a", "1", [("l1", CORRIDOR), ("l2", ROOM)]), user=staff
    )
    assert again.status == "unchanged"


def test_publishing_a_draft_that_reuses_a_level_of_a_release_published_since_is_refused(tmp_path: Path, staff) -> None:
    # Synced as drafts, neither reused a *published* level; the second publish must still refuse.
    first = release_sync(
        manifest=_scorecard_manifest(tmp_path / "a", "1", [("l1", CORRIDOR)], published=False), user=staff
    )
    second = release_sync(
        manifest=_scorecard_manifest(tmp_path / "b", "2", [("m1", NARROW), ("m2", CORRIDOR)], published=False),
        user=staff,
    )
    release_publish(release=first.release, user=staff)
    with pytest.raises(ReleaseGateError) as refused:
        release_publish(release=second.release, user=staff)
    assert "episode_set: 1 of its levels (first: 'm2') are levels of published release sokoban 1" in str(refused.value)
    assert Release.objects.get(pk=second.release.pk).published is False

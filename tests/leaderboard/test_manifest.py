"""leaderboard.manifest: parsing and validating release manifests (pure, no database)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from leaderboard.manifest import (
    ManifestError,
    ZipLimits,
    episode_parser,
    load_manifest,
    read_manifest_zip,
)
from leaderboard.manifest import sources as manifest_sources
from scoring.gap import ReleaseSpec, TaskSpec

TASK = "tasks/a1_stairs_climb/task.yaml"


def problems_of(path: Path | object, **kwargs: object) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, **kwargs)  # type: ignore[arg-type]
    return [str(problem) for problem in caught.value.problems]


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def test_the_demo_manifest_loads_eleven_tasks_over_four_platforms_and_both_genres(demo_dir: Path) -> None:
    manifest = load_manifest(demo_dir)
    assert manifest.benchmark.slug == "ale-robotics"
    assert manifest.benchmark.scheme == "paper_gap"
    assert manifest.version == "0.5"
    assert len(manifest.tasks) == 11
    assert {task.platform for task in manifest.tasks} == {"manipulation", "uav", "vehicle", "quadruped"}
    genres = [task.genre for task in manifest.tasks]
    assert (genres.count("reproduction"), genres.count("open")) == (6, 5)
    assert sum(1 for task in manifest.tasks if not task.anchor_published) == 9
    assert manifest.published is True
    assert manifest.published_at == "2026-06-01T00:00:00+00:00"


def test_it_reports_bad_yaml_with_its_line(demo_dir: Path, edit) -> None:
    edit(demo_dir, TASK, "  name: success_rate\n", "  name: [success_rate\n")
    assert problems_of(demo_dir) == [
        f"{TASK}:12: is not valid YAML: expected ',' or ']', but got ':' at column 12 "
        "(while parsing a flow sequence started at line 11)"
    ]


@pytest.mark.parametrize(
    ("field", "old", "new", "expected"),
    [
        ("genre", "genre: open", "genre: replication", "expected one of reproduction, open, got 'replication'"),
        (
            "mode",
            "mode: interactive",
            "mode: live",
            "expected one of interactive, batch, read_from_task_config, got 'live'",
        ),
        (
            "platform",
            "platform: quadruped",
            "platform: humanoid",
            "expected one of manipulation, uav, vehicle, quadruped, got 'humanoid'",
        ),
        (
            "direction",
            "direction: locomotion",
            "direction: walking",
            "expected one of learning, planning, control, navigation, locomotion, got 'walking'",
        ),
        (
            "metric.direction",
            "direction: higher_is_better",
            "direction: up",
            "expected one of higher_is_better, lower_is_better, got 'up'",
        ),
    ],
)
def test_it_rejects_an_unknown_enum_value_naming_file_line_and_field(
    demo_dir: Path, edit, field: str, old: str, new: str, expected: str
) -> None:
    edit(demo_dir, TASK, old, new)
    line = line_of(demo_dir / TASK, new)
    assert problems_of(demo_dir) == [f"{TASK}:{line}: {field}: {expected}"]


def test_it_rejects_a_task_without_paper_md(demo_dir: Path) -> None:
    (demo_dir / "tasks/a1_stairs_climb/paper.md").unlink()
    assert problems_of(demo_dir) == [
        "tasks/a1_stairs_climb/paper.md: file is missing; expected the paper the agent reads"
    ]


def test_it_rejects_an_empty_brief(demo_dir: Path) -> None:
    (demo_dir / "tasks/a1_stairs_climb/brief.md").write_text("  \n")
    assert problems_of(demo_dir) == [
        "tasks/a1_stairs_climb/brief.md: file is empty; expected the task brief the agent reads"
    ]


def test_it_rejects_duplicate_task_slugs(demo_dir: Path, edit) -> None:
    edit(demo_dir, "release.yaml", "  - slug: go1_energy_efficient_gait\n", "  - slug: a1_stairs_climb\n")
    assert problems_of(demo_dir) == [
        "release.yaml:71: tasks[10].slug: duplicate task slug 'a1_stairs_climb'; each task may be listed once",
        "tasks/go1_energy_efficient_gait/: directory is not listed in release.yaml tasks; list it or remove it",
    ]


@pytest.mark.parametrize("value", ["-0.72", "0", "0.0"])
def test_it_rejects_a_negative_or_zero_paper_value_without_echoing_it(demo_dir: Path, edit, value: str) -> None:
    edit(demo_dir, "release.yaml", "    paper_value: 0.72\n", f"    paper_value: {value}\n")
    problems = problems_of(demo_dir)
    assert problems == [
        "release.yaml:69: tasks[9].paper_value: expected a number > 0, or null to withhold the anchor entirely"
    ]
    assert "got" not in problems[0]


def test_it_rejects_a_task_score_cap_below_one(demo_dir: Path, edit) -> None:
    edit(demo_dir, TASK, "score_cap: 1.5", "score_cap: 0.9")
    assert problems_of(demo_dir) == [
        f"{TASK}:14: metric.score_cap: expected a number >= 1 (a cap lets beating the paper score above 1.0), got 0.9"
    ]


def test_it_rejects_a_release_default_cap_below_one(demo_dir: Path, edit) -> None:
    edit(demo_dir, "release.yaml", "default_score_cap: 1.5", "default_score_cap: 0.5")
    assert problems_of(demo_dir) == [
        "release.yaml:17: default_score_cap: expected a number >= 1 (a cap lets beating the paper score above 1.0), "
        "got 0.5"
    ]


@pytest.mark.parametrize(("limit", "shown"), [("0", "0"), ("-0.1", "-0.1")])
def test_it_rejects_a_penalty_limit_that_is_not_positive(demo_dir: Path, edit, limit: str, shown: str) -> None:
    edit(demo_dir, TASK, "limit: 0.1", f"limit: {limit}")
    assert problems_of(demo_dir) == [
        f"{TASK}:19: penalties[0].limit: expected a number > 0 (factor = 1 - min(1, rate / limit)), got {shown}"
    ]


def test_it_rejects_a_penalty_without_a_limit(demo_dir: Path, edit) -> None:
    edit(demo_dir, TASK, "    limit: 0.1\n", "")
    assert problems_of(demo_dir) == [
        f"{TASK}:18: penalties[0]: missing required field 'limit' (a number > 0 (factor = 1 - min(1, rate / limit)))"
    ]


def test_it_collects_every_problem_across_files_at_once(demo_dir: Path, edit) -> None:
    edit(demo_dir, "release.yaml", 'version: "0.5"', "version: 0.5")
    edit(demo_dir, TASK, "genre: open", "genre: closed")
    (demo_dir / "tasks/drones_hover_ppo/brief.md").unlink()
    assert problems_of(demo_dir) == [
        "release.yaml:11: version: expected a string (quote it), got 0.5",
        "tasks/drones_hover_ppo/brief.md: file is missing; expected the task brief the agent reads",
        f"{TASK}:6: genre: expected one of reproduction, open, got 'closed'",
    ]


def test_it_rejects_an_unknown_field_so_typos_do_not_pass_silently(demo_dir: Path, edit) -> None:
    edit(demo_dir, TASK, "  score_cap: 1.5\n", "  score_cap: 1.5\n  scorecap: 2\n")
    assert problems_of(demo_dir) == [
        f"{TASK}:15: metric.scorecap: unknown field; "
        "expected one of direction, name, paper_value, provenance, score_cap"
    ]


def test_it_rejects_a_duplicate_yaml_key(demo_dir: Path, edit) -> None:
    edit(demo_dir, TASK, "genre: open\n", "genre: open\ngenre: reproduction\n")
    assert problems_of(demo_dir) == [f"{TASK}:7: genre: duplicate key; each key may appear once"]


def test_it_rejects_a_task_yaml_anchor_that_differs_from_release_yaml_without_printing_either(
    demo_dir: Path, edit
) -> None:
    edit(demo_dir, TASK, "  score_cap: 1.5\n", "  score_cap: 1.5\n  paper_value: 0.75\n")
    problems = problems_of(demo_dir)
    assert problems == [
        f"{TASK}:15: metric.paper_value: does not equal the authoritative anchor in release.yaml "
        "(tasks[9].paper_value); remove it here or make the two equal"
    ]
    assert "0.75" not in problems[0] and "0.72" not in problems[0]


def test_it_accepts_a_task_yaml_anchor_equal_to_release_yaml(demo_dir: Path, edit) -> None:
    edit(demo_dir, TASK, "  score_cap: 1.5\n", "  score_cap: 1.5\n  paper_value: 0.72\n")
    assert load_manifest(demo_dir).task("a1_stairs_climb").paper_value == 0.72


def test_an_optional_text_field_may_be_null(demo_dir: Path, edit) -> None:
    edit(demo_dir, "release.yaml", 'title: "ALE Robotics v0.5"', "title: null")
    assert load_manifest(demo_dir).title == ""


def test_it_rejects_a_slug_that_differs_from_its_directory(demo_dir: Path, edit) -> None:
    edit(demo_dir, TASK, "slug: a1_stairs_climb", "slug: a1_stairs")
    assert problems_of(demo_dir) == [
        f"{TASK}:1: slug: expected 'a1_stairs_climb' (the task directory's name), got 'a1_stairs'"
    ]


def test_it_rejects_a_published_anchor_that_is_null(demo_dir: Path, edit) -> None:
    edit(demo_dir, "release.yaml", "    paper_value: 0.78\n", "    paper_value: null\n")
    assert problems_of(demo_dir) == [
        "release.yaml:49: tasks[2].anchor_published: expected false while paper_value is null (nothing to publish)"
    ]


def test_a_null_anchor_loads_but_cannot_become_a_scoring_spec(demo_dir: Path, edit) -> None:
    edit(demo_dir, "release.yaml", "    paper_value: 0.72\n", "    paper_value: null\n")
    manifest = load_manifest(demo_dir)
    assert manifest.task("a1_stairs_climb").paper_value is None
    with pytest.raises(ManifestError) as caught:
        manifest.to_release_spec()
    assert [str(p) for p in caught.value.problems] == [
        "release.yaml: tasks[9].paper_value: task 'a1_stairs_climb' has no anchor; "
        "it cannot be scored until release.yaml gives one"
    ]


def test_to_release_spec_builds_the_scoring_contract(demo_dir: Path) -> None:
    spec = load_manifest(demo_dir).to_release_spec()
    assert isinstance(spec, ReleaseSpec)
    assert spec.missing_task_policy == "exclude"
    assert spec.tasks["a1_stairs_climb"] == TaskSpec(
        slug="a1_stairs_climb",
        genre="open",
        direction="higher_is_better",
        paper_value=0.72,
        cap=1.5,
        penalties={"fall_rate": 0.1},
    )
    assert len(spec.tasks) == 11


def test_the_required_task_set_hash_is_sha256_of_sorted_slugs_joined_by_newlines(demo_dir: Path) -> None:
    manifest = load_manifest(demo_dir)
    slugs = sorted(path.name for path in (demo_dir / "tasks").iterdir())
    expected = hashlib.sha256("\n".join(slugs).encode("utf-8")).hexdigest()
    assert manifest.required_task_set_hash == expected


def test_the_task_order_in_release_yaml_does_not_change_the_required_task_set_hash(demo_dir: Path, edit) -> None:
    before = load_manifest(demo_dir).required_task_set_hash
    first = "  - slug: robomimic_lift_bc_rnn\n    paper_value: 0.96\n    anchor_published: false\n"
    edit(demo_dir, "release.yaml", first, "")
    with (demo_dir / "release.yaml").open("a") as handle:
        handle.write(first)
    assert load_manifest(demo_dir).required_task_set_hash == before


def test_the_manifest_hash_ignores_yaml_layout_but_not_content(demo_dir: Path, edit) -> None:
    before = load_manifest(demo_dir).sha256
    edit(demo_dir, "release.yaml", "format: 1\n", "# a comment\nformat:    1\n")
    assert load_manifest(demo_dir).sha256 == before
    (demo_dir / "tasks/a1_stairs_climb/brief.md").write_text("A different brief.\n")
    assert load_manifest(demo_dir).sha256 != before


def test_the_canonical_json_is_sorted_and_compact(demo_dir: Path) -> None:
    manifest = load_manifest(demo_dir)
    text = manifest.canonical_json()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert manifest.sha256 == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_reference_tree_is_never_read(demo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = demo_dir / "tasks/a1_stairs_climb/reference"
    reference.mkdir()
    (reference / "solution.py").write_bytes(b"\xff\xfe not even text" * 1000)
    (reference / "notes.md").write_text("The hidden seeds are 1, 2, 3.\n")
    opened: list[str] = []
    original = manifest_sources.DirSource.read

    def spy(self: object, relpath: str, **kwargs: int) -> bytes | None:
        opened.append(relpath)
        return original(self, relpath, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(manifest_sources.DirSource, "read", spy)
    manifest = load_manifest(demo_dir, known_simulators=[])
    assert "tasks/a1_stairs_climb/paper.md" in opened
    assert [path for path in opened if "reference" in path] == []
    assert "hidden seeds are" not in manifest.canonical_json()


SCORECARD_HEAD = (
    "format: 1\nbenchmark: {slug: sokoban, name: Sokoban, scheme: scorecard}\nversion: '1'\npublished: false\n"
    "tasks: []\nepisode_set:\n  size: 2\n  levels_file: levels.yaml\n"
)
CORRIDOR = "#######\\n#@ $ .#\\n#######"


def _levels_file(tmp_path: Path, second: str) -> None:
    (tmp_path / "release.yaml").write_text(SCORECARD_HEAD)
    (tmp_path / "levels.yaml").write_text(f'- {{id: l1, xsb: "{CORRIDOR}"}}\n{second}')


def test_a_scorecard_manifest_carries_each_levels_text_and_its_bfs_optimal_length(tmp_path: Path) -> None:
    _levels_file(tmp_path, "- id: l2\n  optimal_len: 1\n  xsb: |-\n    ######\n    #@$.##\n    #    #\n    ######\n")
    manifest = load_manifest(tmp_path)
    assert manifest.episode_set is not None
    assert [(lvl.level_id, lvl.optimal_len) for lvl in manifest.episode_set.levels] == [("l1", 3), ("l2", 1)]
    assert manifest.episode_set.levels[1].xsb == "######\n#@$.##\n#    #\n######"


@pytest.mark.parametrize(
    ("second", "problem"),
    [
        (
            '- {id: l2, xsb: "#####\\n#@$x#\\n#####"}\n',
            "levels.yaml:2: [1].xsb: level 'l2': malformed XSB: line 2, column 4: unknown character 'x'; "
            "expected one of # @ + $ * . space",
        ),
        (
            '- {id: l2, xsb: "######\\n#$  .#\\n#@   #\\n######"}\n',
            "levels.yaml:2: [1].xsb: level 'l2': has no solution (BFS searched every reachable state)",
        ),
        (
            '- {id: l2, optimal_len: 7, xsb: "#######\\n#@ $ .#\\n#######"}\n',
            "levels.yaml:2: [1].optimal_len: level 'l2': optimal_len is 7, "
            "but BFS finds a shortest solution of 3 moves",
        ),
        ("- {id: l2}\n", "levels.yaml:2: [1]: missing required field 'xsb'"),
        (
            f'- {{id: "lvl 2", xsb: "{CORRIDOR}"}}\n',
            "levels.yaml:2: [1].id: level id 'lvl 2': expected 1 to 100 of A-Z, a-z, 0-9, '.', '_' and '-' "
            "(it is a path segment of the play API)",
        ),
    ],
)
def test_a_level_that_cannot_be_served_is_refused_naming_file_line_and_level(
    tmp_path: Path, second: str, problem: str
) -> None:
    _levels_file(tmp_path, second)
    assert problems_of(tmp_path) == [problem]


def test_a_level_bfs_cannot_settle_within_its_budget_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(episode_parser, "LEVEL_SEARCH_MAX_NODES", 2)
    _levels_file(tmp_path, '- {id: l2, xsb: "#######\\n#@ $ .#\\n#######"}\n')
    assert problems_of(tmp_path) == [
        "levels.yaml:1: [0].xsb: level 'l1': not solved within the search budget of 2 states; expected a smaller level",
        "levels.yaml:2: [1].xsb: level 'l2': not solved within the search budget of 2 states; expected a smaller level",
    ]


def test_a_hidden_set_is_searched_within_one_budget_for_the_whole_sync(tmp_path: Path, monkeypatch) -> None:
    # The corridor takes 3 states to settle, the room more: a budget of 4 for the set leaves the
    # room 1, and a third level none; the same text under another id is not searched again.
    monkeypatch.setattr(episode_parser, "SET_SEARCH_MAX_NODES", 4)
    room = "######\\n#    #\\n# $@ #\\n#   .#\\n######"
    _levels_file(
        tmp_path,
        f'- {{id: l2, xsb: "{CORRIDOR}"}}\n- {{id: l3, xsb: "{room}"}}\n- {{id: l4, xsb: "#####\\n#@$.#\\n#####"}}\n',
    )
    assert problems_of(tmp_path) == [
        "levels.yaml:3: [2].xsb: level 'l3': not solved within the search budget of 1 states (what the set's sync "
        "budget had left); expected a smaller level",
        "levels.yaml:4: [3].xsb: level 'l4': not searched: the set's levels used the whole sync search budget of 4 "
        "states before it; expected fewer or smaller levels",
    ]


def test_a_scorecard_episode_set_size_must_match_its_levels(tmp_path: Path) -> None:
    (tmp_path / "release.yaml").write_text(
        "format: 1\nbenchmark: {slug: sokoban, name: Sokoban, scheme: scorecard}\nversion: '1'\npublished: false\n"
        f'tasks: []\nepisode_set:\n  size: 100\n  levels:\n    - {{id: l1, xsb: "{CORRIDOR}"}}\n'
    )
    assert problems_of(tmp_path) == [
        "release.yaml:7: episode_set.size: expected 1 (the number of levels listed), got 100"
    ]


def test_a_race_manifest_hashes_its_qualifying_task_ids(tmp_path: Path) -> None:
    (tmp_path / "release.yaml").write_text(
        "format: 1\nbenchmark: {slug: oro, name: ORO Bench, scheme: race}\nversion: '2'\npublished: false\n"
        "tasks: []\nqualifying:\n  task_ids: [shop-2, shop-1]\n"
    )
    manifest = load_manifest(tmp_path)
    assert manifest.qualifying_task_ids == ("shop-2", "shop-1")
    assert manifest.required_task_set_hash == hashlib.sha256(b"shop-1\nshop-2").hexdigest()


def test_a_paper_gap_manifest_needs_at_least_one_task(tmp_path: Path) -> None:
    (tmp_path / "release.yaml").write_text(
        "format: 1\nbenchmark: {slug: b, name: B, scheme: paper_gap}\nversion: '1'\npublished: false\ntasks: []\n"
    )
    assert problems_of(tmp_path) == ["release.yaml:5: tasks: expected at least one task for scheme paper_gap"]


def test_a_missing_directory_is_reported_not_raised(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "nope") == [
        f"{tmp_path / 'nope'}: expected a manifest directory containing release.yaml"
    ]


def test_a_missing_release_yaml_is_reported(tmp_path: Path) -> None:
    assert problems_of(tmp_path) == ["release.yaml: file is missing; expected release.yaml at the manifest root"]


# ----------------------------------------------------------------------- zip


def zip_of(root: Path, prefix: str = "", extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(root).as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_of_the_manifest_loads_like_the_directory(demo_dir: Path) -> None:
    from_dir = load_manifest(demo_dir)
    assert load_manifest(read_manifest_zip(zip_of(demo_dir))).sha256 == from_dir.sha256


def test_a_zip_of_the_directory_itself_is_accepted(demo_dir: Path) -> None:
    assert load_manifest(read_manifest_zip(zip_of(demo_dir, "demo-release/"))).version == "0.5"


def test_a_zip_skips_reference_members_without_reading_them(demo_dir: Path) -> None:
    data = zip_of(demo_dir, extra={"tasks/a1_stairs_climb/reference/solution.py": b"anchor 0.72"})
    source = read_manifest_zip(data)
    assert source.read("tasks/a1_stairs_climb/reference/solution.py") is None
    load_manifest(source)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../evil.txt", "../evil.txt: climbs out of the manifest (..); refused"),
        ("/etc/passwd", "/etc/passwd: is an absolute path; expected paths relative to the manifest"),
        ("tasks/../../x", "tasks/../../x: climbs out of the manifest (..); refused"),
    ],
)
def test_a_zip_with_a_path_traversal_is_refused(demo_dir: Path, name: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        read_manifest_zip(zip_of(demo_dir, extra={name: b"x"}))
    assert [str(p) for p in caught.value.problems] == [message]


def test_a_zip_with_two_members_of_the_same_name_is_refused(demo_dir: Path) -> None:
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = zip_of(demo_dir, extra={"release.yaml": b"format: 1\n"})
    with pytest.raises(ManifestError) as caught:
        read_manifest_zip(data)
    assert [str(p) for p in caught.value.problems] == ["release.yaml: appears twice in the archive; refused"]


def test_a_zip_with_a_symlink_is_refused(demo_dir: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("tasks/link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    with pytest.raises(ManifestError) as caught:
        read_manifest_zip(buffer.getvalue())
    assert [str(p) for p in caught.value.problems] == ["tasks/link: is a symbolic link; refused"]


def test_a_zip_with_too_many_members_is_refused(demo_dir: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        read_manifest_zip(zip_of(demo_dir), limits=ZipLimits(max_members=5))
    assert str(caught.value.problems[0]).startswith("upload.zip: has ")
    assert str(caught.value.problems[0]).endswith(" members; at most 5 are accepted")


def test_a_zip_bomb_member_is_refused_by_its_real_size(demo_dir: Path) -> None:
    (demo_dir / "tasks/a1_stairs_climb/paper.md").unlink()
    data = zip_of(demo_dir, extra={"tasks/a1_stairs_climb/paper.md": b"a" * 5000})
    with pytest.raises(ManifestError) as caught:
        read_manifest_zip(data, limits=ZipLimits(max_file_bytes=4000))
    assert [str(p) for p in caught.value.problems] == [
        "tasks/a1_stairs_climb/paper.md: is larger than 4000 bytes; refused"
    ]


def test_a_file_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        read_manifest_zip(b"PK not really", label="m.zip")
    assert [str(p) for p in caught.value.problems] == [
        "m.zip: is not a zip archive; expected a .zip of the manifest directory"
    ]


def test_the_demo_04_manifest_has_nine_tasks_and_another_lift_anchor(demo_04_dir: Path, demo_dir: Path) -> None:
    older, newer = load_manifest(demo_04_dir), load_manifest(demo_dir)
    assert len(older.tasks) == 9
    assert set(older.task_slugs) < set(newer.task_slugs)
    changed = [s for s in older.task_slugs if older.task(s).paper_value != newer.task(s).paper_value]
    assert changed == ["robomimic_lift_bc_rnn"]
    shutil.rmtree(demo_04_dir)


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA])
def test_a_zip_member_whose_compressed_data_is_damaged_is_a_problem_not_a_500(compression: int) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        archive.writestr("release.yaml", b"format: 1\n" + b"x: aaaa\n" * 200)
    data = bytearray(buffer.getvalue())
    start = 30 + len("release.yaml")  # the member's data follows its local header
    data[start + 14 : start + 30] = bytes(byte ^ 0xFF for byte in data[start + 14 : start + 30])
    with pytest.raises(ManifestError) as caught:
        read_manifest_zip(bytes(data))
    [problem] = [str(p) for p in caught.value.problems]
    assert problem.startswith("release.yaml: cannot be decompressed (")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Aliases: a self-reference recursed forever; ten levels of ten would take hours to walk.
        ("x: &a [*a]\n", "an alias (*name); a manifest writes every value out, with no anchors or aliases"),
        ("a: &a [1, 2]\nb: [*a, *a]\n", "an alias (*name); a manifest writes every value out, with no anchors"),
        ("x: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply to read"),
        # A control character anywhere (a comment too) failed as the loader was built: a traceback.
        ("format: 1\n# a \x00 in a comment\n", "release.yaml:2: is not valid YAML: holds the control character U+0000"),
        ("x: \x1f\n", "holds the control character U+001F"),
        # Explicit tags PyYAML cannot construct raised KeyError / AttributeError.
        ("x: !!bool maybe\n", "a tagged value (!!bool, !!timestamp ...) cannot be read"),
        ("x: !!timestamp hello\n", "a tagged value (!!bool, !!timestamp ...) cannot be read"),
    ],
)
def test_yaml_a_manifest_cannot_need_is_a_problem_not_a_500(demo_dir: Path, text: str, expected: str) -> None:
    (demo_dir / "release.yaml").write_text(text)
    problems = problems_of(demo_dir)
    assert len(problems) == 1 and problems[0].startswith("release.yaml") and expected in problems[0]


def test_a_qualifying_task_id_longer_than_a_race_run_may_report_is_refused(tmp_path: Path) -> None:
    import shutil

    from leaderboard.manifest.types import RACE_TASK_ID_MAX

    race = tmp_path / "demo-race"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "demo-race", race)
    text = (race / "release.yaml").read_text()
    marker = "  task_ids: [public-00,"
    assert marker in text
    too_long = "q" * (RACE_TASK_ID_MAX + 1)
    (race / "release.yaml").write_text(text.replace(marker, f"  task_ids: [{too_long}, public-00,", 1))
    with pytest.raises(ManifestError) as caught:
        load_manifest(race, known_simulators=None)
    problems = [str(problem) for problem in caught.value.problems]
    assert any(f"expected a task id string of at most {RACE_TASK_ID_MAX} characters" in p for p in problems), problems

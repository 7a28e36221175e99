"""leaderboard.manifest.review: contract review and leak audit (seed 003's automated gates)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from leaderboard.manifest import ManifestError, TaskTexts, load_manifest
from leaderboard.manifest.review import leak_audit, mentions_anchor, review_manifest

KNOWN = ["robosuite+robomimic", "pybullet-drones", "carla", "isaacgym-legged"]
LIFT = "tasks/robomimic_lift_bc_rnn"  # anchor 0.96, withheld


def problems_of(path: Path, known: list[str] | None = None) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, known_simulators=KNOWN if known is None else known)
    return [str(problem) for problem in caught.value.problems]


def append(path: Path, text: str) -> int:
    """Append a line; return its line number."""
    content = path.read_text()
    if not content.endswith("\n"):
        content += "\n"
    path.write_text(content + text + "\n")
    return len(path.read_text().splitlines())


def test_the_demo_manifest_passes_both_gates(demo_dir: Path) -> None:
    manifest = load_manifest(demo_dir, known_simulators=[])
    assert review_manifest(manifest, known_simulators=[]) == []


def test_a_leak_in_paper_md_names_file_and_line_but_not_the_value(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "paper.md", "BC-RNN reaches a success rate of 0.96 on Lift (PH).")
    problems = problems_of(demo_dir)
    assert problems == [
        f"{LIFT}/paper.md:{line}: mentions the anchor value of task 'robomimic_lift_bc_rnn'; the agent must never "
        "see it (describe the result without the number)"
    ]
    assert "0.96" not in problems[0] and "96" not in problems[0]


def test_a_leak_in_brief_md_as_a_percentage_is_found(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "brief.md", "Aim for 96% success.")
    assert problems_of(demo_dir) == [
        f"{LIFT}/brief.md:{line}: mentions the anchor value of task 'robomimic_lift_bc_rnn'; the agent must never "
        "see it (describe the result without the number)"
    ]


def test_a_leak_in_the_sandbox_dockerfile_is_found(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "sandbox/Dockerfile", "ENV TARGET_SUCCESS=0.960")
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox/Dockerfile:{line}: mentions the anchor value of task 'robomimic_lift_bc_rnn'; the agent must "
        "never see it (describe the result without the number)"
    ]


def test_a_dockerfile_that_copies_reference_is_refused_once_per_instruction(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "sandbox/Dockerfile", "COPY reference/solution /opt/solution")
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox/Dockerfile:{line}: COPY copies the hidden reference/ tree into the sandbox image; "
        "it must stay outside the build context"
    ]


def test_a_continued_add_of_reference_is_refused_at_its_first_line(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "sandbox/Dockerfile", "ADD --chown=agent \\\n    ../reference \\\n    /opt/ref")
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox/Dockerfile:{line - 2}: ADD copies the hidden reference/ tree into the sandbox image; "
        "it must stay outside the build context"
    ]


def test_a_json_form_copy_of_reference_is_refused(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "sandbox/Dockerfile", 'COPY ["./reference", "/opt/ref"]')
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox/Dockerfile:{line}: COPY copies the hidden reference/ tree into the sandbox image; "
        "it must stay outside the build context"
    ]


def test_a_copy_from_above_the_sandbox_context_is_refused(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "sandbox/Dockerfile", "COPY .. /task")
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox/Dockerfile:{line}: COPY reaches above sandbox/ (..), which would bring the hidden "
        "reference/ tree into the image"
    ]


def test_a_mention_of_the_reference_path_in_the_brief_is_refused(demo_dir: Path) -> None:
    line = append(demo_dir / LIFT / "brief.md", "Do not look at tasks/robomimic_lift_bc_rnn/reference/solution.")
    assert problems_of(demo_dir) == [
        f"{LIFT}/brief.md:{line}: mentions the hidden reference/ path; it is never mounted into the sandbox, "
        "remove the mention"
    ]


def test_the_leak_audit_runs_even_when_task_yaml_is_broken(demo_dir: Path, edit) -> None:
    edit(demo_dir, f"{LIFT}/task.yaml", "genre: reproduction", "genre: remake")
    line = append(demo_dir / LIFT / "paper.md", "Reported: 96 percent.")
    assert problems_of(demo_dir) == [
        f"{LIFT}/task.yaml:6: genre: expected one of reproduction, open, got 'remake'",
        f"{LIFT}/paper.md:{line}: mentions the anchor value of task 'robomimic_lift_bc_rnn'; the agent must never "
        "see it (describe the result without the number)",
    ]


def test_an_unknown_simulator_is_refused_naming_the_registered_ones(demo_dir: Path, edit) -> None:
    edit(demo_dir, f"{LIFT}/task.yaml", "simulator: robosuite+robomimic", "simulator: mujoco-menagerie")
    assert problems_of(demo_dir) == [
        f"{LIFT}/task.yaml:5: simulator: expected a registered evaluator (carla, isaacgym-legged, pybullet-drones, "
        "robosuite+robomimic), got 'mujoco-menagerie'; declare it under evaluators in release.yaml or register it "
        "in the admin"
    ]


def test_a_simulator_registered_outside_the_manifest_is_accepted(demo_dir: Path, edit) -> None:
    edit(demo_dir, f"{LIFT}/task.yaml", "simulator: robosuite+robomimic", "simulator: mujoco-menagerie")
    manifest = load_manifest(demo_dir, known_simulators=["mujoco-menagerie"])
    assert manifest.task("robomimic_lift_bc_rnn").simulator == "mujoco-menagerie"


def test_a_penalty_on_the_headline_metric_is_inconsistent(demo_dir: Path) -> None:
    path = demo_dir / "tasks/a1_stairs_climb/task.yaml"
    line = append(path, "  - metric: success_rate\n    limit: 0.2") - 1
    assert problems_of(demo_dir) == [
        f"tasks/a1_stairs_climb/task.yaml:{line}: penalties[1].metric: expected a zero-target safety metric other "
        "than the headline metric 'success_rate'"
    ]


def test_read_from_task_config_needs_an_eval_config(demo_dir: Path, edit) -> None:
    edit(demo_dir, "tasks/a1_stairs_climb/task.yaml", "mode: interactive", "mode: read_from_task_config")
    assert problems_of(demo_dir) == [
        "tasks/a1_stairs_climb/task.yaml:8: mode: read_from_task_config fixes the eval procedure in config: "
        "expected a non-empty eval_config mapping"
    ]


def test_an_eval_config_outside_read_from_task_config_is_inconsistent(demo_dir: Path) -> None:
    line = append(demo_dir / "tasks/a1_stairs_climb/task.yaml", "eval_config:\n  stairs: 12")
    assert problems_of(demo_dir) == [
        f"tasks/a1_stairs_climb/task.yaml:{line - 1}: eval_config: only mode read_from_task_config reads "
        "eval_config; this task's mode is interactive"
    ]


def test_an_eval_config_value_writing_the_anchor_is_refused_naming_its_path_not_the_value(demo_dir: Path, edit) -> None:
    # eval_config is published with the contract (task page, /api/v1/tasks/): 47.3 is the
    # withheld anchor of carla_transfuser_longest6 (release.yaml).
    task = "tasks/carla_transfuser_longest6/task.yaml"
    edit(demo_dir, task, "  repetitions: 3\n", "  repetitions: 3\n  thresholds: {pass: 47.3}\n")
    problems = problems_of(demo_dir)
    assert problems == [
        f"{task}:9: eval_config.thresholds.pass: mentions the anchor value of task 'carla_transfuser_longest6'; "
        "eval_config is published with the contract (the anchor belongs in release.yaml only)"
    ]
    assert "47.3" not in problems[0]


def test_release_notes_mentioning_a_withheld_anchor_are_refused_naming_the_field_not_the_value(
    demo_dir: Path, edit
) -> None:
    # The notes are on the release page and in /api/v1/releases/ for everyone: "re-anchors Lift to
    # 0.96" published the anchor release.yaml withholds (robomimic_lift_bc_rnn, 0.96, withheld).
    edit(demo_dir, "release.yaml", "re-anchors robomimic Lift after", "re-anchors robomimic Lift to 0.96 after")
    problems = problems_of(demo_dir)
    assert problems == [
        "release.yaml:13: notes: mentions the withheld anchor value of task 'robomimic_lift_bc_rnn'; this text is "
        "published to everyone (describe it without the number)"
    ]
    assert "0.96" not in problems[0] and "96" not in problems[0]


def test_a_task_title_or_the_benchmark_description_mentioning_a_withheld_anchor_is_refused(
    demo_dir: Path, edit
) -> None:
    edit(demo_dir, f"{LIFT}/task.yaml", ": Lift, BC-RNN", ": Lift, BC-RNN (96% in the paper)")
    edit(
        demo_dir,
        "release.yaml",
        "    Agents reproduce robotics papers",
        "    Lift reaches 0.960. Agents reproduce robotics papers",
    )
    problems = problems_of(demo_dir)
    assert [problem.split(": mentions")[0] for problem in problems] == [
        "release.yaml:7: benchmark.description",
        f"{LIFT}/task.yaml:2: title",
    ]
    assert all("robomimic_lift_bc_rnn" in problem and "96" not in problem for problem in problems)


def test_published_text_may_mention_a_published_anchor(demo_dir: Path, edit) -> None:
    # robosuite_door_open publishes its anchor (0.78): the notes may say it.
    edit(
        demo_dir,
        "release.yaml",
        "re-anchors robomimic Lift after",
        "door opening at 0.78; re-anchors robomimic Lift after",
    )
    manifest = load_manifest(demo_dir, known_simulators=KNOWN)
    assert "0.78" in manifest.notes


@pytest.mark.parametrize(
    ("line", "anchor"),
    [
        ("success 0.7 on Lift", 0.7),
        ("success 0.70 on Lift", 0.7),
        ("success .7 on Lift", 0.7),
        ("success 70% on Lift", 0.7),
        ("success 70 % on Lift", 0.7),
        ("success 70 percent", 0.7),
        ("about 0.73 in the paper", 0.734),
        ("about 73% in the paper", 0.734),
        ("planning takes 1,200 ms", 1200.0),
        ("a lap of 9.8 s.", 9.8),
        ("ends with 12", 12.0),
        ("ENV TARGET_SUCCESS=0.5", 0.5),
        ("scored 0.5: the best", 0.5),
        # A unit written onto the number, a metric:value label, a bracketed decimal (outsider review).
        ("The baseline controller laps the track in 9.8s.", 9.8),
        ("a mean lateral error of 0.21m.", 0.21),
        ("planning takes 12ms per step", 12.0),
        ("runs 0.5x as fast", 0.5),
        ("Paper result: success_rate:0.96", 0.96),
        ("BC-RNN (PH) reaches a success rate of [0.96].", 0.96),
        ("LABEL target=success_rate:0.96", 0.96),
        # A whole number said to be rounded (seed-conformance review: 47.3 withheld).
        ("a driving score of about 47", 47.3),
        ("scores ~47 on longest6", 47.3),
        ("roughly 47 points", 46.6),
        ("approximately 1,200 ms", 1199.7),
    ],
)
def test_an_anchor_is_found_in_its_textual_forms(line: str, anchor: float) -> None:
    assert mentions_anchor(line, anchor) is True


@pytest.mark.parametrize(
    ("line", "anchor"),
    [
        ("see Table 3 for details", 3.0),
        ("as in Fig. 3", 3.0),
        ("cited as [12]", 12.0),
        ("sandbox-base v0.7", 0.7),
        ("version 1.0.7.1", 0.7),
        ("success 0.71", 0.7),
        ("roughly 0.7 of the runs", 0.734),
        ("https://example.org/results/0.7", 0.7),
        ("about 7% of the time", 0.7),
        ("FROM ghcr.io/ale-robotics/sandbox-base:0.5", 0.5),
        ("RUN pip install gymnasium==0.29 mujoco>=2.3", 0.29),
        ("cited as [3, 12]", 12.0),
        ("RUN docker pull ghcr.io/org/sim:0.5", 0.5),
        ("COPY --from=builder:0.5 /app /app", 0.5),
        ("a tolerance of 1e-3", 1.0),
        ("the register 0x1F", 1.0),
        ("an x86_64 image", 86.0),
        ("about 70percent", 0.7),
        # A bare whole number is a count, not a rounding; "about" a one-digit one says too little.
        ("47 tasks in the suite", 47.3),
        ("about 5 of the runs", 4.8),
        ("about 48", 47.3),
    ],
)
def test_other_numbers_are_not_taken_for_the_anchor(line: str, anchor: float) -> None:
    assert mentions_anchor(line, anchor) is False


def test_a_withheld_null_anchor_has_nothing_to_leak() -> None:
    texts = TaskTexts("t", None, {"tasks/t/paper.md": "0.5 and 50%"})
    assert leak_audit(texts) == []


def test_a_dockerfile_json_copy_nested_past_the_parsers_limit_is_read_as_plain_words(demo_dir: Path) -> None:
    # json.loads raised RecursionError (a 500 on sync) on an exec-form COPY nested this deep.
    append(demo_dir / LIFT / "sandbox/Dockerfile", "COPY " + "[" * 100_000 + " app/")
    manifest = load_manifest(demo_dir, known_simulators=[])
    assert review_manifest(manifest, known_simulators=[]) == []


def test_a_leak_in_a_sandbox_workspace_file_is_found(demo_dir: Path) -> None:
    # Every demo Dockerfile COPYs workspace/ into the agent's image: its files were never read.
    line = append(demo_dir / LIFT / "sandbox/workspace/README.md", "Target success rate: 0.96")
    (demo_dir / LIFT / "sandbox/workspace/targets.json").write_text('{"success": 0.96}\n')
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox/workspace/README.md:{line}: mentions the anchor value of task 'robomimic_lift_bc_rnn'; the "
        "agent must never see it (describe the result without the number)",
        f"{LIFT}/sandbox/workspace/targets.json:1: mentions the anchor value of task 'robomimic_lift_bc_rnn'; the "
        "agent must never see it (describe the result without the number)",
    ]


def test_a_binary_sandbox_file_is_pinned_by_its_hash_but_not_audited(demo_dir: Path) -> None:
    weights = bytes(range(256)) * 8 + b"0.96"  # binary data that happens to hold the anchor's digits
    (demo_dir / LIFT / "sandbox/workspace/weights.bin").write_bytes(weights)
    manifest = load_manifest(demo_dir, known_simulators=KNOWN)
    lift = next(task for task in manifest.tasks if task.slug == "robomimic_lift_bc_rnn")
    assert set(lift.sandbox_files) == {"sandbox/workspace/README.md", "sandbox/workspace/weights.bin"}
    assert lift.canonical()["sandbox_files"]["sandbox/workspace/weights.bin"] == hashlib.sha256(weights).hexdigest()


def test_a_sandbox_of_too_many_files_is_refused_before_they_are_read(demo_dir: Path) -> None:
    from leaderboard.manifest.task_parser import MAX_SANDBOX_FILES

    for i in range(MAX_SANDBOX_FILES):  # with README.md: one more than the limit
        (demo_dir / LIFT / f"sandbox/workspace/f{i}.txt").write_text("x\n")
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox: holds {MAX_SANDBOX_FILES + 1} files besides the Dockerfile; at most {MAX_SANDBOX_FILES} "
        "are accepted"
    ]


def test_a_reference_folder_inside_sandbox_is_refused_unread(demo_dir: Path) -> None:
    # COPY workspace/ copies workspace/reference/ with it: the hidden tree would reach the agent.
    hidden = demo_dir / LIFT / "sandbox/workspace/reference"
    hidden.mkdir()
    (hidden / "answer.txt").write_text("success rate 0.96\n")
    assert problems_of(demo_dir) == [
        f"{LIFT}/sandbox/workspace/reference/: a reference/ folder inside sandbox/ is copied into the agent's image "
        "with its parent folder; keep the hidden reference tree outside sandbox/"
    ]


def test_a_reference_folder_inside_sandbox_of_a_zip_is_refused_without_unpacking_it(demo_dir: Path) -> None:
    import io
    import zipfile

    from leaderboard.manifest.sources import read_manifest_zip

    hidden = demo_dir / LIFT / "sandbox/workspace/reference"
    hidden.mkdir()
    (hidden / "answer.txt").write_text("success rate 0.96\n")
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path in sorted(demo_dir.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(demo_dir).as_posix())
    source = read_manifest_zip(data.getvalue())
    assert f"{LIFT}/sandbox/workspace/reference/answer.txt" not in source.files  # never unpacked
    with pytest.raises(ManifestError) as caught:
        load_manifest(source, known_simulators=KNOWN)
    assert [str(problem).split(":")[0] for problem in caught.value.problems] == [f"{LIFT}/sandbox/workspace/reference/"]


@pytest.mark.parametrize(
    "content",
    [
        b"Target success rate: 0.96\n\x00",  # one NUL byte
        "Target success rate: 0.96\n".encode("utf-16"),  # another encoding, with its byte-order mark
        "Ziel: 0.96 (Erfolgsquote, gemäß Tabelle)\n".encode("latin-1"),  # not UTF-8
    ],
    ids=["nul", "utf-16", "latin-1"],
)
def test_a_sandbox_text_file_is_audited_whatever_its_encoding(demo_dir: Path, content: bytes) -> None:
    (demo_dir / LIFT / "sandbox/workspace/notes.txt").write_bytes(content)
    problems = problems_of(demo_dir)
    assert [problem.split(": mentions")[0] for problem in problems] == [f"{LIFT}/sandbox/workspace/notes.txt:1"]


def test_a_large_binary_sandbox_file_is_hashed_and_a_large_text_one_refused(demo_dir: Path) -> None:
    from leaderboard.manifest.types import MAX_FILE_BYTES

    big = bytes(range(256)) * (MAX_FILE_BYTES // 256 + 1)
    (demo_dir / LIFT / "sandbox/workspace/weights.bin").write_bytes(big)
    lift = next(t for t in load_manifest(demo_dir, known_simulators=KNOWN).tasks if t.slug == "robomimic_lift_bc_rnn")
    assert lift.sandbox_files["sandbox/workspace/weights.bin"] == hashlib.sha256(big).hexdigest()
    (demo_dir / LIFT / "sandbox/workspace/data.csv").write_text("step,reward\n" + "1,0.5\n" * (MAX_FILE_BYTES // 6))
    problems = problems_of(demo_dir)
    assert len(problems) == 1 and problems[0].startswith(f"{LIFT}/sandbox/workspace/data.csv: reads as text and is ")


def test_a_symlink_in_sandbox_into_the_reference_tree_is_not_read(demo_dir: Path) -> None:
    reference = demo_dir / LIFT / "reference"
    reference.mkdir(exist_ok=True)
    (reference / "answer.txt").write_text("0.96\n")
    (demo_dir / LIFT / "sandbox/workspace/answer.txt").symlink_to(reference / "answer.txt")
    with pytest.raises(ManifestError) as caught:
        load_manifest(demo_dir, known_simulators=KNOWN)
    assert [str(problem) for problem in caught.value.problems] == [
        f"{LIFT}/sandbox/workspace/answer.txt: leads into the hidden reference/ tree, which is never read"
    ]

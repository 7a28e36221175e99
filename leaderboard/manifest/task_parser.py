"""The task parser: tasks/<slug>/task.yaml and its texts -> TaskContract (pure: no Django, no file I/O).

Files are read through a ManifestFiles view. The anchor is release.yaml's (the
``ReleaseEntry``); a task.yaml may repeat it, and a differing copy is refused
without echoing either value.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderboard.manifest.checker import (
    ANCHOR_EXPECTED,
    CAP_EXPECTED,
    METRIC,
    SIMULATOR,
    Checker,
    cap_ok,
    positive,
)
from leaderboard.manifest.loader import Lines, parse_yaml, unstorable
from leaderboard.manifest.types import (
    DIRECTIONS,
    GENRES,
    MAX_FILE_BYTES,
    METRIC_DIRECTIONS,
    MODES,
    PLATFORMS,
    ManifestFiles,
    Penalty,
    Problem,
    TaskContract,
    TaskTexts,
)

__all__ = ["ReleaseEntry", "parse_task"]

_TASK_KEYS = (
    "slug",
    "title",
    "platform",
    "direction",
    "simulator",
    "genre",
    "mode",
    "metric",
    "penalties",
    "eval_config",
)
_METRIC_KEYS = ("name", "direction", "paper_value", "score_cap", "provenance")
_PENALTY_KEYS = ("metric", "limit")
_LIMIT_EXPECTED = "a number > 0 (factor = 1 - min(1, rate / limit))"
# Field path -> its name in TaskContract.lines (what the review gates quote).
_LINE_FIELDS = (
    ("title", ("title",)),
    ("simulator", ("simulator",)),
    ("mode", ("mode",)),
    ("genre", ("genre",)),
    ("metric.name", ("metric", "name")),
    ("penalties", ("penalties",)),
    ("eval_config", ("eval_config",)),
)


@dataclass
class ReleaseEntry:
    """One item of release.yaml's task list: the authoritative anchor of that task."""

    slug: str
    position: int
    paper_value: float | None
    anchor_published: bool
    valid: bool


@dataclass
class _Metric:
    name: str | None = None
    direction: str | None = None
    cap: float | None = None
    provenance: str = ""


def _read_text(files: ManifestFiles, relpath: str, problems: list[Problem], *, required: bool, what: str) -> str | None:
    raw = files.read(relpath)
    if raw is None:
        if required:
            problems.append(Problem(relpath, None, "", f"file is missing; expected {what}"))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(relpath, None, "", f"is not UTF-8 text (byte {exc.start}); expected {what}"))
        return None
    if not text.strip():
        problems.append(Problem(relpath, None, "", f"file is empty; expected {what}"))
        return None
    reason = unstorable(text)
    if reason:
        problems.append(Problem(relpath, None, "", reason))
        return None
    return text


# Files of a task's sandbox/ besides its Dockerfile: a workspace of READMEs and starter code is a
# handful; more is refused, so that one sync does not read (and audit) thousands of files.
MAX_SANDBOX_FILES = 200
# A sandbox file is hashed up to this size (starter data, small weights); text is audited only up
# to MAX_FILE_BYTES, like paper.md, so a larger file that reads as text is refused.
MAX_SANDBOX_FILE_BYTES = 64 * 1024 * 1024
# Share of printable characters from which a file's bytes are read as text (and audited); below
# it they are binary data, pinned by their hash only: digits in random bytes are not numbers.
_TEXT_SHARE = 0.9


def _text_for_audit(data: bytes) -> str | None:
    """What the audit reads of a sandbox file: its text, decoded leniently (UTF-16 by its byte-order
    mark, else UTF-8 with undecodable bytes replaced, NULs dropped), or None for binary data. A
    NUL byte or another encoding must not hide a file from the audit."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace")
    text = text.replace("\x00", "")
    if not text:
        return text
    readable = sum(1 for char in text if char.isprintable() or char in "\t\n\r")
    return text if readable >= _TEXT_SHARE * len(text) else None


def _sandbox_files(
    files: ManifestFiles, directory: str, problems: list[Problem]
) -> tuple[dict[str, str], dict[str, str]]:
    """The sandbox build context's files other than the Dockerfile: (path below the task
    directory -> SHA-256 of the bytes, manifest path -> text of each text file for the audit).

    A Dockerfile's COPY puts them in the agent's image, so seed 003's "keep them free of targets"
    holds for them as for the brief; binary data is pinned by its hash but cannot be audited. A
    reference/ folder inside sandbox/ is refused unread: a COPY of its parent folder would put the
    hidden reference tree in the image."""
    paths = [path for path in files.files_under(f"{directory}/sandbox") if path != f"{directory}/sandbox/Dockerfile"]
    problems.extend(
        Problem(
            path,
            None,
            "",
            "a reference/ folder inside sandbox/ is copied into the agent's image with its parent folder; "
            "keep the hidden reference tree outside sandbox/",
        )
        for path in paths
        if path.endswith("/reference/")
    )
    paths = [path for path in paths if not path.endswith("/reference/")]
    if len(paths) > MAX_SANDBOX_FILES:
        problems.append(
            Problem(
                f"{directory}/sandbox",
                None,
                "",
                f"holds {len(paths)} files besides the Dockerfile; at most {MAX_SANDBOX_FILES} are accepted",
            )
        )
        return {}, {}
    hashes: dict[str, str] = {}
    texts: dict[str, str] = {}
    for path in paths:
        data = files.read(path, limit=MAX_SANDBOX_FILE_BYTES)
        if data is None:
            continue
        hashes[path.removeprefix(f"{directory}/")] = hashlib.sha256(data).hexdigest()
        text = _text_for_audit(data[: MAX_FILE_BYTES + 1])
        if text is None:
            continue
        if len(data) > MAX_FILE_BYTES:
            problems.append(
                Problem(
                    path,
                    None,
                    "",
                    f"reads as text and is {len(data)} bytes; the leak audit reads at most {MAX_FILE_BYTES} bytes of "
                    "a sandbox text file (split it, or keep large data out of sandbox/)",
                )
            )
            continue
        texts[path] = text
    return hashes, texts


def _read_texts(files: ManifestFiles, entry: ReleaseEntry, problems: list[Problem]) -> TaskTexts:
    """The agent-visible files of the task (read even when task.yaml is broken, for the leak audit)."""
    directory = f"tasks/{entry.slug}"
    visible = {
        f"{directory}/paper.md": _read_text(
            files, f"{directory}/paper.md", problems, required=True, what="the paper the agent reads"
        ),
        f"{directory}/brief.md": _read_text(
            files, f"{directory}/brief.md", problems, required=True, what="the task brief the agent reads"
        ),
        f"{directory}/sandbox/Dockerfile": _read_text(
            files, f"{directory}/sandbox/Dockerfile", problems, required=False, what="the sandbox image's Dockerfile"
        ),
    }
    hashes, sandbox_texts = _sandbox_files(files, directory, problems)
    return TaskTexts(
        entry.slug,
        entry.paper_value,
        {k: v for k, v in visible.items() if v is not None} | sandbox_texts,
        sandbox_files=hashes,
    )


def parse_task(
    files: ManifestFiles,
    entry: ReleaseEntry,
    release_cap: float,
    problems: list[Problem],
    texts: list[TaskTexts],
) -> TaskContract | None:
    """The task's contract, or None after recording every problem; its texts are appended to ``texts``."""
    directory = f"tasks/{entry.slug}"
    file = f"{directory}/task.yaml"
    start = len(problems)
    raw = files.read(file)
    task_texts = _read_texts(files, entry, problems)
    texts.append(task_texts)
    if raw is None:
        problems.append(
            Problem(file, None, "", f"file is missing; every task listed in release.yaml needs {directory}/task.yaml")
        )
        return None
    parsed = parse_yaml(raw, file, problems)
    if parsed is None:
        return None
    data, lines = parsed
    check = Checker(file, lines, problems)
    task = check.mapping(data, (), "a mapping of task contract fields")
    if task is None:
        return None
    check.known_keys(task, _TASK_KEYS, ())
    slug = check.string(task, "slug", (), max_len=100)
    if slug is not None and slug != entry.slug:
        check.problem(("slug",), f"expected {entry.slug!r} (the task directory's name), got {slug!r}")
    fields = {
        "title": check.string(task, "title", (), max_len=300),
        "platform": check.choice(task, "platform", (), PLATFORMS),
        "direction": check.choice(task, "direction", (), DIRECTIONS),
        "simulator": check.string(
            task,
            "simulator",
            (),
            pattern=SIMULATOR,
            pattern_text="a simulator id like robosuite+robomimic",
            max_len=100,
        ),
        "genre": check.choice(task, "genre", (), GENRES),
        "mode": check.choice(task, "mode", (), MODES),
    }
    metric = _parse_metric(task, check, entry, release_cap)
    penalties = _parse_penalties(task, check)
    eval_config = _parse_eval_config(task, check)
    if len(problems) > start or not entry.valid:
        return None
    return _contract(entry, fields, metric, penalties, eval_config, task_texts, lines)


def _contract(
    entry: ReleaseEntry,
    fields: Mapping[str, str | None],
    metric: _Metric,
    penalties: list[Penalty] | None,
    eval_config: dict[str, Any] | None,
    texts: TaskTexts,
    lines: Lines,
) -> TaskContract:
    """Called only when no problem was recorded: every reader returned a value."""
    directory = f"tasks/{entry.slug}"
    values = {name: value for name, value in fields.items() if value}
    assert len(values) == len(fields) and metric.name and metric.direction and metric.cap is not None
    assert penalties is not None
    dockerfile = texts.files.get(f"{directory}/sandbox/Dockerfile")
    return TaskContract(
        slug=entry.slug,
        title=values["title"],
        platform=values["platform"],
        direction=values["direction"],
        simulator=values["simulator"],
        genre=values["genre"],
        mode=values["mode"],
        metric_name=metric.name,
        metric_direction=metric.direction,
        paper_value=entry.paper_value,
        anchor_published=entry.anchor_published,
        score_cap=metric.cap,
        penalties=tuple(penalties),
        eval_config=eval_config,
        provenance=metric.provenance,
        paper_md=texts.files[f"{directory}/paper.md"],
        brief_md=texts.files[f"{directory}/brief.md"],
        sandbox_dockerfile=dockerfile,
        sandbox_files=dict(texts.sandbox_files),
        position=entry.position,
        lines={name: line for name, path in _LINE_FIELDS if (line := lines.line(path)) is not None}
        | {f"penalties[{i}].metric": lines.line(("penalties", i, "metric")) or 0 for i in range(len(penalties))},
    )


def _parse_metric(task: Mapping[str, Any], check: Checker, entry: ReleaseEntry, release_cap: float) -> _Metric:
    if not check.required(task, "metric", ()):
        return _Metric(cap=release_cap)
    metric = check.mapping(task["metric"], ("metric",), "a mapping with name, direction, paper_value, score_cap")
    if metric is None:
        return _Metric(cap=release_cap)
    path = ("metric",)
    check.known_keys(metric, _METRIC_KEYS, path)
    parsed = _Metric(
        name=check.string(
            metric, "name", path, pattern=METRIC, pattern_text="a metric name like success_rate", max_len=100
        ),
        direction=check.choice(metric, "direction", path, METRIC_DIRECTIONS),
        cap=check.number(metric, "score_cap", path, expected=CAP_EXPECTED, accept=cap_ok, default=release_cap),
        provenance=check.string(metric, "provenance", path, required=False, max_len=2000) or "",
    )
    if "paper_value" in metric and entry.valid:
        _check_local_anchor(metric, check, entry)
    return parsed


def _check_local_anchor(metric: Mapping[str, Any], check: Checker, entry: ReleaseEntry) -> None:
    """A task.yaml copy of the anchor must equal release.yaml's; no message carries either value."""
    path = ("metric",)
    local = metric["paper_value"]
    if local is None:
        if entry.paper_value is not None:
            check.problem(
                (*path, "paper_value"),
                f"is null but release.yaml (tasks[{entry.position}].paper_value) gives an anchor; "
                "remove it here or make the two equal",
            )
        return
    local = check.number(metric, "paper_value", path, expected=ANCHOR_EXPECTED, accept=positive, echo=False)
    if local is not None and (
        entry.paper_value is None or not math.isclose(local, entry.paper_value, rel_tol=0, abs_tol=0)
    ):
        check.problem(
            (*path, "paper_value"),
            f"does not equal the authoritative anchor in release.yaml (tasks[{entry.position}]."
            "paper_value); remove it here or make the two equal",
        )


def _parse_eval_config(task: Mapping[str, Any], check: Checker) -> dict[str, Any] | None:
    if "eval_config" not in task:
        return None
    eval_config = check.mapping(task["eval_config"], ("eval_config",), "a mapping (the fixed eval procedure)")
    if eval_config is None:
        return None
    try:
        json.dumps(eval_config, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        check.problem(("eval_config",), "expected plain values (strings, numbers, lists, mappings)")
        return None
    return eval_config


def _parse_penalties(task: Mapping[str, Any], check: Checker) -> list[Penalty] | None:
    items = check.sequence(task, "penalties", (), required=False)
    if items is None:
        return [] if "penalties" not in task else None
    penalties: list[Penalty] = []
    seen: set[str] = set()
    ok = True
    for index, item in enumerate(items):
        penalty = _parse_penalty(item, ("penalties", index), check, seen)
        if penalty is None:
            ok = False
            continue
        seen.add(penalty.metric)
        penalties.append(penalty)
    return penalties if ok else None


def _parse_penalty(item: Any, path: tuple[Any, ...], check: Checker, seen: set[str]) -> Penalty | None:
    data = check.mapping(item, path, "a mapping with metric and limit")
    if data is None:
        return None
    check.known_keys(data, _PENALTY_KEYS, path)
    metric = check.string(data, "metric", path, pattern=METRIC, pattern_text="a metric name like collision_rate")
    if "limit" not in data:
        check.problem(path, f"missing required field 'limit' ({_LIMIT_EXPECTED})")
        return None
    limit = check.number(data, "limit", path, expected=_LIMIT_EXPECTED, accept=positive)
    if metric is None or limit is None:
        return None
    if metric in seen:
        check.problem((*path, "metric"), f"duplicate penalty metric {metric!r}; declare each once")
        return None
    return Penalty(metric=metric, limit=limit)

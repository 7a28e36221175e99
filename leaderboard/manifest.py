"""Release manifests: reading, parsing and validating (pure: stdlib + PyYAML).

A manifest is a directory (or a .zip of one)::

    release.yaml                 # benchmark, version, policy, anchors, evaluators, task list
    tasks/<slug>/task.yaml       # the seed-003 contract of one task
    tasks/<slug>/paper.md        # mounted read-only into the agent's sandbox
    tasks/<slug>/brief.md        # mounted read-only into the agent's sandbox
    tasks/<slug>/sandbox/Dockerfile   # optional
    tasks/<slug>/reference/      # HIDDEN: never opened, never read into the database

The format is documented in docs/manifest.md. Invariants kept here:

* every problem is collected (not just the first) into :class:`ManifestError`,
  each naming the file relative to the manifest, the line (from the YAML node
  marks), the field path and what was expected;
* no message ever contains an anchor (``paper_value``): a withheld anchor never
  leaves the server, and a refused manifest's errors may be shown to anyone
  who can upload one;
* nothing under a ``reference/`` directory is ever opened, from a directory or
  from a zip;
* :meth:`ReleaseManifest.canonical_json` is a deterministic form of everything
  the database will hold (file texts by SHA-256), so its hash decides whether a
  re-sync changes anything.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import math
import re
import stat
import zipfile
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import yaml

__all__ = [
    "DEFAULT_SCORE_CAP",
    "DIRECTIONS",
    "FORMAT_VERSION",
    "GENRES",
    "METRIC_DIRECTIONS",
    "MISSING_TASK_POLICIES",
    "MODES",
    "PLATFORMS",
    "SCHEMES",
    "BenchmarkSpec",
    "EpisodeLevel",
    "EpisodeSet",
    "EvaluatorSpec",
    "ManifestError",
    "ManifestSource",
    "ParsedManifest",
    "Penalty",
    "Problem",
    "ReleaseManifest",
    "TaskContract",
    "TaskTexts",
    "ZipLimits",
    "load_manifest",
    "parse_manifest",
    "read_manifest_dir",
    "read_manifest_zip",
]

FORMAT_VERSION = 1
DEFAULT_SCORE_CAP = 1.5
SCHEMES = ("paper_gap", "scorecard", "race")
PLATFORMS = ("manipulation", "uav", "vehicle", "quadruped")
DIRECTIONS = ("learning", "planning", "control", "navigation", "locomotion")
GENRES = ("reproduction", "open")
MODES = ("interactive", "batch", "read_from_task_config")
METRIC_DIRECTIONS = ("higher_is_better", "lower_is_better")
MISSING_TASK_POLICIES = ("exclude", "zero")

RELEASE_FILE = "release.yaml"
TASK_FILES = ("task.yaml", "paper.md", "brief.md", "sandbox/Dockerfile")
# Larger text files are refused: a paper rendering is a few hundred KiB at most.
MAX_FILE_BYTES = 2 * 1024 * 1024
# A hidden Sokoban level: XSB of at most 50 x 50 cells (scoring.sokoban.engine.MAX_SIDE) plus newlines.
MAX_LEVEL_CHARS = 51 * 50
# BFS states per level at sync. Every level is solved on every sync, so the budget bounds
# how long a sync takes; the demo set's largest level needs a few thousand.
LEVEL_SEARCH_MAX_NODES = 200_000

_TASK_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
_BENCHMARK_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$")
_SIMULATOR = re.compile(r"^[a-z0-9][a-z0-9_.+-]{0,99}$")
_METRIC = re.compile(r"^[a-z][a-z0-9_]{0,99}$")
_BUDGET_KEY = re.compile(r"^[a-z][a-z0-9_.-]{0,99}$")


# ------------------------------------------------------------------ problems


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a manifest.

    ``file`` is relative to the manifest directory, ``line`` 1-based (None when
    the problem is about a whole file), ``field`` a path like
    ``tasks[2].paper_value`` or ``metric.direction`` ("" for the whole file).
    """

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}


class ManifestError(ValueError):
    """A manifest that cannot be synced; ``problems`` lists every reason."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        count = len(self.problems)
        head = f"the manifest has {count} problem{'s' if count != 1 else ''}:"
        super().__init__("\n".join([head, *(f"  {problem}" for problem in self.problems)]))


# ------------------------------------------------------------------- sources


class ManifestSource:
    """Read access to the files of one manifest, by POSIX path relative to its root.

    Implementations never open anything under a ``reference/`` directory.
    """

    label: str = "manifest"

    def read(self, relpath: str) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        raise NotImplementedError

    def task_dirs(self) -> list[str]:
        """Names of the directories directly under ``tasks/``."""
        raise NotImplementedError


def _is_hidden_reference(relpath: str) -> bool:
    return "reference" in PurePosixPath(relpath).parts


class _DirSource(ManifestSource):
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.label = str(root)

    def read(self, relpath: str) -> bytes | None:
        if _is_hidden_reference(relpath):
            raise ManifestError([Problem(relpath, None, "", "the hidden reference/ tree is never read")])
        target = (self.root / relpath).resolve()
        # A symlink must not lead out of the manifest (e.g. to a reference tree elsewhere).
        if not target.is_relative_to(self.root):
            raise ManifestError([Problem(relpath, None, "", "points outside the manifest directory")])
        if not target.is_file():
            return None
        size = target.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ManifestError([Problem(relpath, None, "", f"is {size} bytes; at most {MAX_FILE_BYTES} are accepted")])
        return target.read_bytes()

    def task_dirs(self) -> list[str]:
        tasks = self.root / "tasks"
        if not tasks.is_dir():
            return []
        return sorted(entry.name for entry in tasks.iterdir() if entry.is_dir())


class _MemorySource(ManifestSource):
    def __init__(self, files: Mapping[str, bytes], label: str) -> None:
        self.files = dict(files)
        self.label = label

    def read(self, relpath: str) -> bytes | None:
        return self.files.get(relpath)

    def task_dirs(self) -> list[str]:
        names = set()
        for name in self.files:
            parts = PurePosixPath(name).parts
            if len(parts) >= 3 and parts[0] == "tasks":
                names.add(parts[1])
        return sorted(names)


def read_manifest_dir(path: str | Path) -> ManifestSource:
    """A manifest directory as a source (files are read lazily, ``reference/`` never)."""
    root = Path(path)
    if not root.is_dir():
        raise ManifestError([Problem(str(path), None, "", "expected a manifest directory containing release.yaml")])
    return _DirSource(root)


@dataclass(frozen=True)
class ZipLimits:
    """Bounds on an uploaded manifest archive (checked on the real decompressed bytes)."""

    max_members: int = 1000
    max_file_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = 32 * 1024 * 1024


def _zip_member_problem(name: str, info: zipfile.ZipInfo) -> str | None:
    if "\x00" in name or "\\" in name:
        return "has a malformed name (NUL or backslash)"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "is an absolute path; expected paths relative to the manifest"
    if ".." in PurePosixPath(name).parts:
        return "climbs out of the manifest (..); refused"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "is a symbolic link; refused"
    if info.flag_bits & 0x1:
        return "is encrypted; expected a plain zip"
    return None


def read_manifest_zip(
    data: bytes | BinaryIO, *, limits: ZipLimits | None = None, label: str = "upload.zip"
) -> ManifestSource:
    """Read a zipped manifest into memory, safely.

    Refuses absolute paths, ``..``, symlinks, encrypted members, more than
    ``limits.max_members`` members and more bytes than the limits allow
    (counted while decompressing, never trusting the headers). Members under
    ``reference/`` are skipped without being decompressed. A zip of the
    directory itself (one top-level folder holding release.yaml) is accepted.
    """
    limits = limits or ZipLimits()
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ManifestError(
            [Problem(label, None, "", "is not a zip archive; expected a .zip of the manifest directory")]
        ) from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            raise ManifestError(
                [Problem(label, None, "", f"has {len(infos)} members; at most {limits.max_members} are accepted")]
            )
        problems = [
            Problem(info.filename, None, "", reason)
            for info in infos
            if (reason := _zip_member_problem(info.filename, info)) is not None
        ]
        seen: set[str] = set()
        for info in infos:
            # Which of two same-named members wins differs between unzip tools; refuse the ambiguity.
            if info.filename in seen:
                problems.append(Problem(info.filename, None, "", "appears twice in the archive; refused"))
            seen.add(info.filename)
        if problems:
            raise ManifestError(problems)
        members = [info for info in infos if not info.is_dir()]
        names = {info.filename for info in members}
        prefix = ""
        if RELEASE_FILE not in names:
            tops = {PurePosixPath(name).parts[0] for name in names if len(PurePosixPath(name).parts) > 1}
            if len(tops) == 1 and f"{next(iter(tops))}/{RELEASE_FILE}" in names:
                prefix = f"{next(iter(tops))}/"
        files: dict[str, bytes] = {}
        total = 0
        for info in members:
            if not info.filename.startswith(prefix):
                continue
            relpath = info.filename[len(prefix) :]
            parts = PurePosixPath(relpath).parts
            if not parts or _is_hidden_reference(relpath) or parts[0] == "__MACOSX" or parts[-1] == ".DS_Store":
                continue
            content = _read_member(archive, info, limits.max_file_bytes)
            if content is None:
                raise ManifestError(
                    [Problem(relpath, None, "", f"is larger than {limits.max_file_bytes} bytes; refused")]
                )
            total += len(content)
            if total > limits.max_total_bytes:
                raise ManifestError(
                    [Problem(label, None, "", f"unpacks to more than {limits.max_total_bytes} bytes; refused")]
                )
            files[relpath] = content
    return _MemorySource(files, label)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes | None:
    chunks = []
    size = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(64 * 1024):
                size += len(chunk)
                if size > limit:
                    return None
                chunks.append(chunk)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError) as exc:
        raise ManifestError([Problem(info.filename, None, "", f"cannot be decompressed ({exc})")]) from None
    return b"".join(chunks)


# -------------------------------------------------------------- data classes


@dataclass(frozen=True)
class BenchmarkSpec:
    slug: str
    name: str
    scheme: str
    description: str = ""


@dataclass(frozen=True)
class EvaluatorSpec:
    simulator: str
    name: str = ""
    description: str = ""


@dataclass(frozen=True)
class Penalty:
    metric: str
    limit: float


@dataclass(frozen=True)
class EpisodeLevel:
    """One hidden level: its XSB text and the optimal length BFS found at parse time."""

    level_id: str
    optimal_len: int
    xsb: str


@dataclass(frozen=True)
class EpisodeSet:
    """The hidden episode set of a scorecard release (every level solved by BFS at parse)."""

    size: int
    levels: tuple[EpisodeLevel, ...]


@dataclass(frozen=True)
class TaskContract:
    """One task: its task.yaml contract, the authoritative anchor from release.yaml, and its texts."""

    slug: str
    title: str
    platform: str
    direction: str
    simulator: str
    genre: str
    mode: str
    metric_name: str
    metric_direction: str
    # Authoritative anchor from release.yaml; None = withheld with no value at all.
    paper_value: float | None
    anchor_published: bool
    score_cap: float
    penalties: tuple[Penalty, ...]
    eval_config: Mapping[str, Any] | None
    provenance: str
    paper_md: str
    brief_md: str
    sandbox_dockerfile: str | None
    position: int = 0
    # Field path -> line in task.yaml, for the review gates' messages.
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def directory(self) -> str:
        return f"tasks/{self.slug}"

    @property
    def public_paper_value(self) -> float | None:
        return self.paper_value if self.anchor_published else None

    def public_contract(self) -> dict[str, Any]:
        """The task.yaml contract without the anchor or its provenance: safe to show anyone."""
        return {
            "slug": self.slug,
            "title": self.title,
            "platform": self.platform,
            "direction": self.direction,
            "simulator": self.simulator,
            "genre": self.genre,
            "mode": self.mode,
            "metric": {"name": self.metric_name, "direction": self.metric_direction, "score_cap": self.score_cap},
            "penalties": [{"metric": p.metric, "limit": p.limit} for p in self.penalties],
            "eval_config": dict(self.eval_config) if self.eval_config is not None else None,
        }

    def canonical(self) -> dict[str, Any]:
        contract = self.public_contract()
        contract["metric"].update(
            paper_value=self.paper_value, anchor_published=self.anchor_published, provenance=self.provenance
        )
        contract["position"] = self.position
        contract["files"] = {
            "paper.md": _sha256(self.paper_md),
            "brief.md": _sha256(self.brief_md),
            "sandbox/Dockerfile": None if self.sandbox_dockerfile is None else _sha256(self.sandbox_dockerfile),
        }
        return contract


@dataclass(frozen=True)
class ReleaseManifest:
    """A parsed, validated release manifest (see docs/manifest.md)."""

    format: int
    benchmark: BenchmarkSpec
    version: str
    title: str
    notes: str
    published: bool
    published_at: str | None
    missing_task_policy: str
    default_score_cap: float
    budgets: Mapping[str, Any]
    benchmark_versions: Mapping[str, str]
    evaluators: tuple[EvaluatorSpec, ...]
    tasks: tuple[TaskContract, ...]
    episode_set: EpisodeSet | None = None
    qualifying_task_ids: tuple[str, ...] = ()
    # Field path -> line in release.yaml, for problems found later (e.g. by the sync against the database).
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def task_slugs(self) -> list[str]:
        return [task.slug for task in self.tasks]

    def task(self, slug: str) -> TaskContract:
        for task in self.tasks:
            if task.slug == slug:
                return task
        raise KeyError(slug)

    @property
    def required_task_set_hash(self) -> str:
        """scoring.gap.required_task_set_hash over the required set.

        The required set is the task slugs for paper_gap and scorecard
        releases, and the public qualifying task ids for race releases.
        """
        from scoring.gap import required_task_set_hash

        required = self.qualifying_task_ids if self.benchmark.scheme == "race" else self.task_slugs
        return required_task_set_hash(required)

    def to_release_spec(self) -> Any:
        """The scoring.gap.ReleaseSpec of this release.

        Raises ManifestError when a task has no anchor (paper_value null):
        such a task cannot be scored until release.yaml gives one.
        """
        from scoring.gap import ReleaseSpec, TaskSpec

        missing = [
            Problem(
                RELEASE_FILE,
                None,
                f"tasks[{task.position}].paper_value",
                f"task {task.slug!r} has no anchor; it cannot be scored until release.yaml gives one",
            )
            for task in self.tasks
            if task.paper_value is None
        ]
        if missing:
            raise ManifestError(missing)
        specs = {
            task.slug: TaskSpec(
                slug=task.slug,
                genre=task.genre,
                direction=task.metric_direction,
                paper_value=float(task.paper_value),  # type: ignore[arg-type]  # None was refused above
                cap=task.score_cap,
                penalties={p.metric: p.limit for p in task.penalties},
            )
            for task in self.tasks
        }
        return ReleaseSpec(tasks=specs, missing_task_policy=self.missing_task_policy)

    def canonical(self) -> dict[str, Any]:
        """Everything a sync writes, in a deterministic JSON-able form (file texts by SHA-256)."""
        return {
            "format": self.format,
            "benchmark": {
                "slug": self.benchmark.slug,
                "name": self.benchmark.name,
                "scheme": self.benchmark.scheme,
                "description": self.benchmark.description,
            },
            "version": self.version,
            "title": self.title,
            "notes": self.notes,
            "published": self.published,
            "published_at": self.published_at,
            "missing_task_policy": self.missing_task_policy,
            "default_score_cap": self.default_score_cap,
            "budgets": dict(self.budgets),
            "benchmark_versions": dict(self.benchmark_versions),
            "evaluators": [
                {"simulator": e.simulator, "name": e.name, "description": e.description}
                for e in sorted(self.evaluators, key=lambda e: e.simulator)
            ],
            "tasks": [task.canonical() for task in self.tasks],
            "episode_set": None
            if self.episode_set is None
            else {
                "size": self.episode_set.size,
                # The level texts by hash only: Release.manifest is never shown, but it need not hold them.
                "levels": [
                    {"id": level.level_id, "optimal_len": level.optimal_len, "xsb_sha256": _sha256(level.xsb)}
                    for level in self.episode_set.levels
                ],
            },
            "qualifying": {"task_ids": list(self.qualifying_task_ids)} if self.benchmark.scheme == "race" else None,
            "required_task_set_hash": self.required_task_set_hash,
        }

    def canonical_json(self) -> str:
        """Sorted keys, no whitespace, UTF-8 text: identical manifests give identical strings."""
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------- YAML + lines


def _field_path(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class _Lines:
    """Looks up the line of a field path in a composed YAML node tree."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root

    def line(self, path: tuple[Any, ...]) -> int | None:
        """The line of the deepest node on ``path`` (a mapping field's key line, a list item's own line)."""
        node = self.root
        if node is None:
            return None
        line = node.start_mark.line
        for part in path:
            child = None
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == part:
                        child, line = value, key.start_mark.line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child = node.value[part]
                line = child.start_mark.line
            if child is None:
                break
            node = child
        return line + 1


def _duplicate_keys(node: yaml.Node | None, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], int, str]]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    yield path, key.start_mark.line + 1, key.value
                seen.add(key.value)
                yield from _duplicate_keys(value, (*path, key.value))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*path, index))


def _parse_yaml(raw: bytes, file: str, problems: list[Problem]) -> tuple[Any, _Lines] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(file, None, "", f"is not UTF-8 text (byte {exc.start}); expected UTF-8 YAML"))
        return None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        detail = exc.problem or "malformed YAML"
        if mark is not None:
            detail += f" at column {mark.column + 1}"
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            detail += f" ({exc.context} started at line {exc.context_mark.line + 1})"
        problems.append(Problem(file, mark.line + 1 if mark else None, "", f"is not valid YAML: {detail}"))
        return None
    except yaml.YAMLError as exc:
        problems.append(Problem(file, None, "", f"is not valid YAML: {exc}"))
        return None
    finally:
        loader.dispose()
    for path, line, key in _duplicate_keys(node):
        problems.append(Problem(file, line, _field_path((*path, key)), "duplicate key; each key may appear once"))
    return data, _Lines(node)


class _Checker:
    """Typed field readers that record a Problem (with line) instead of raising."""

    def __init__(self, file: str, lines: _Lines, problems: list[Problem]) -> None:
        self.file = file
        self.lines = lines
        self.problems = problems

    def problem(self, path: tuple[Any, ...], message: str) -> None:
        self.problems.append(Problem(self.file, self.lines.line(path), _field_path(path), message))

    def mapping(self, value: Any, path: tuple[Any, ...], what: str = "a mapping") -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"expected {what}, got {_describe(value)}")
            return None
        return value

    def known_keys(self, data: Mapping[Any, Any], allowed: Collection[str], path: tuple[Any, ...]) -> None:
        for key in data:
            if key not in allowed:
                self.problem((*path, key), f"unknown field; expected one of {', '.join(sorted(allowed))}")

    def required(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...]) -> bool:
        if key not in data:
            self.problem(path, f"missing required field {key!r}")
            return False
        return True

    def string(
        self,
        data: Mapping[str, Any],
        key: str,
        path: tuple[Any, ...],
        *,
        required: bool = True,
        pattern: re.Pattern[str] | None = None,
        pattern_text: str = "",
        max_len: int = 200,
        default: str = "",
    ) -> str | None:
        if key not in data or (not required and data[key] is None):
            if required:
                self.problem(path, f"missing required field {key!r}")
                return None
            return default
        value = data[key]
        where = (*path, key)
        if isinstance(value, bool) or not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, int | float | dt.date) and not isinstance(value, bool) else ""
            self.problem(where, f"expected a string{hint}, got {_describe(value)}")
            return None
        value = value.strip()
        if required and not value:
            self.problem(where, "expected a non-empty string")
            return None
        if pattern is not None and not pattern.match(value):
            self.problem(where, f"expected {pattern_text}, got {value!r}")
            return None
        if len(value) > max_len:
            self.problem(where, f"expected at most {max_len} characters, got {len(value)}")
            return None
        return value

    def choice(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], choices: tuple[str, ...]) -> str | None:
        if key not in data:
            self.problem(path, f"missing required field {key!r} (one of {', '.join(choices)})")
            return None
        value = data[key]
        if not isinstance(value, str) or value not in choices:
            self.problem((*path, key), f"expected one of {', '.join(choices)}, got {_describe(value)}")
            return None
        return value

    def boolean(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], *, default: bool | None) -> bool | None:
        if key not in data:
            if default is None:
                self.problem(path, f"missing required field {key!r} (true or false)")
            return default
        value = data[key]
        if not isinstance(value, bool):
            self.problem((*path, key), f"expected true or false, got {_describe(value)}")
            return None
        return value

    def number(
        self,
        data: Mapping[str, Any],
        key: str,
        path: tuple[Any, ...],
        *,
        expected: str,
        accept: Callable[[float], bool],
        default: float | None = None,
        echo: bool = True,
    ) -> float | None:
        """A finite number satisfying ``accept``; ``echo=False`` keeps the value out of the message."""
        if key not in data:
            return default
        value = data[key]
        where = (*path, key)
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or not accept(float(value)):
            got = f", got {_describe(value)}" if echo or not ok else ""
            self.problem(where, f"expected {expected}{got}")
            return None
        return float(value)

    def integer(
        self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], *, minimum: int, required: bool = True
    ) -> int | None:
        if key not in data:
            if required:
                self.problem(path, f"missing required field {key!r} (an integer >= {minimum})")
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.problem((*path, key), f"expected an integer >= {minimum}, got {_describe(value)}")
            return None
        return value

    def sequence(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], *, required: bool) -> list[Any] | None:
        if key not in data:
            if required:
                self.problem(path, f"missing required field {key!r} (a list)")
            return None
        value = data[key]
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem((*path, key), f"expected a list, got {_describe(value)}")
            return None
        return value


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return repr(shown)
    return repr(value)


def _positive(value: float) -> bool:
    return value > 0


def _cap_ok(value: float) -> bool:
    return value >= 1.0


# ------------------------------------------------------------------- parsing

_RELEASE_KEYS = (
    "format",
    "benchmark",
    "version",
    "title",
    "notes",
    "published",
    "published_at",
    "missing_task_policy",
    "default_score_cap",
    "budgets",
    "benchmark_versions",
    "evaluators",
    "tasks",
    "episode_set",
    "qualifying",
)
_BENCHMARK_KEYS = ("slug", "name", "scheme", "description")
_EVALUATOR_KEYS = ("simulator", "name", "description")
_RELEASE_TASK_KEYS = ("slug", "paper_value", "anchor_published")
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

_ANCHOR_EXPECTED = "a number > 0, or null to withhold the anchor entirely"
_CAP_EXPECTED = "a number >= 1 (a cap lets beating the paper score above 1.0)"
_LIMIT_EXPECTED = "a number > 0 (factor = 1 - min(1, rate / limit))"


@dataclass
class _ReleaseEntry:
    slug: str
    position: int
    paper_value: float | None
    anchor_published: bool
    valid: bool


@dataclass(frozen=True)
class TaskTexts:
    """The agent-visible files of one task (path relative to the manifest -> text), for the leak audit.

    Kept apart from TaskContract so the audit runs even when task.yaml is broken.
    """

    slug: str
    paper_value: float | None
    files: Mapping[str, str]


@dataclass
class ParsedManifest:
    """What :func:`parse_manifest` could read: the manifest when valid, else the parts that parsed."""

    manifest: ReleaseManifest | None
    tasks: list[TaskContract]
    evaluators: list[EvaluatorSpec]
    problems: list[Problem]
    texts: list[TaskTexts] = field(default_factory=list)


def parse_manifest(source: ManifestSource) -> ParsedManifest:
    """Parse and validate every file of a manifest, collecting all problems."""
    problems: list[Problem] = []
    raw = source.read(RELEASE_FILE)
    if raw is None:
        problems.append(Problem(RELEASE_FILE, None, "", "file is missing; expected release.yaml at the manifest root"))
        return ParsedManifest(None, [], [], problems)
    parsed = _parse_yaml(raw, RELEASE_FILE, problems)
    if parsed is None:
        return ParsedManifest(None, [], [], problems)
    data, lines = parsed
    check = _Checker(RELEASE_FILE, lines, problems)
    release = check.mapping(data, (), "a mapping of release fields")
    if release is None:
        return ParsedManifest(None, [], [], problems)
    check.known_keys(release, _RELEASE_KEYS, ())

    fmt = release.get("format")
    if "format" not in release:
        check.problem((), f"missing required field 'format' (expected {FORMAT_VERSION})")
    elif fmt != FORMAT_VERSION or isinstance(fmt, bool):
        check.problem(("format",), f"expected {FORMAT_VERSION} (the only manifest format), got {_describe(fmt)}")

    benchmark = _parse_benchmark(release, check)
    scheme = benchmark.scheme if benchmark else None
    version = check.string(release, "version", (), pattern=_VERSION, pattern_text='a version like "0.5"', max_len=50)
    title = check.string(release, "title", (), required=False, max_len=200)
    notes = check.string(release, "notes", (), required=False, max_len=20000)
    published = check.boolean(release, "published", (), default=None)
    published_at = _parse_published_at(release, check, published)
    policy = "exclude"
    if "missing_task_policy" in release:
        policy = check.choice(release, "missing_task_policy", (), MISSING_TASK_POLICIES) or "exclude"
    cap = check.number(
        release, "default_score_cap", (), expected=_CAP_EXPECTED, accept=_cap_ok, default=DEFAULT_SCORE_CAP
    )
    budgets = _parse_budgets(release, check)
    versions = _parse_benchmark_versions(release, check)
    evaluators = _parse_evaluators(release, check)
    entries = _parse_release_tasks(release, check, scheme)
    episode_set = _parse_episode_set(release, check, scheme, source, problems)
    qualifying = _parse_qualifying(release, check, scheme)

    listed = {entry.slug for entry in entries}
    problems.extend(
        Problem(f"tasks/{name}/", None, "", "directory is not listed in release.yaml tasks; list it or remove it")
        for name in source.task_dirs()
        if name not in listed
    )

    tasks: list[TaskContract] = []
    texts: list[TaskTexts] = []
    release_cap = cap if cap is not None else DEFAULT_SCORE_CAP
    for entry in entries:
        task = _parse_task(source, entry, release_cap, problems, texts)
        if task is not None:
            tasks.append(task)

    manifest = None
    if not problems and benchmark is not None and version is not None and published is not None and cap is not None:
        manifest = ReleaseManifest(
            format=FORMAT_VERSION,
            benchmark=benchmark,
            version=version,
            title=title or "",
            notes=notes or "",
            published=published,
            published_at=published_at,
            missing_task_policy=policy,
            default_score_cap=cap,
            budgets=budgets,
            benchmark_versions=versions,
            evaluators=tuple(evaluators),
            tasks=tuple(tasks),
            episode_set=episode_set,
            qualifying_task_ids=tuple(qualifying),
            lines={
                name: line
                for name, path in (
                    ("version", ("version",)),
                    ("published", ("published",)),
                    ("benchmark.scheme", ("benchmark", "scheme")),
                    ("benchmark.slug", ("benchmark", "slug")),
                    ("tasks", ("tasks",)),
                )
                if (line := lines.line(path)) is not None
            },
        )
    return ParsedManifest(manifest, tasks, evaluators, problems, texts)


def _parse_benchmark(release: Mapping[str, Any], check: _Checker) -> BenchmarkSpec | None:
    if not check.required(release, "benchmark", ()):
        return None
    data = check.mapping(release["benchmark"], ("benchmark",))
    if data is None:
        return None
    path = ("benchmark",)
    check.known_keys(data, _BENCHMARK_KEYS, path)
    slug = check.string(
        data, "slug", path, pattern=_BENCHMARK_SLUG, pattern_text="a lower-case slug (a-z, 0-9, - and _)", max_len=64
    )
    name = check.string(data, "name", path, max_len=200)
    scheme = check.choice(data, "scheme", path, SCHEMES)
    description = check.string(data, "description", path, required=False, max_len=20000)
    if slug is None or name is None or scheme is None or description is None:
        return None
    return BenchmarkSpec(slug=slug, name=name, scheme=scheme, description=description)


def _parse_published_at(release: Mapping[str, Any], check: _Checker, published: bool | None) -> str | None:
    if "published_at" not in release or release["published_at"] is None:
        return None
    value = release["published_at"]
    moment: dt.datetime | None = None
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            moment = None
    if moment is None:
        check.problem(
            ("published_at",), f"expected an ISO 8601 date or time like 2026-03-01T12:00:00Z, got {_describe(value)}"
        )
        return None
    if published is False:
        check.problem(("published_at",), "expected no published_at while published is false")
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).isoformat()


def _parse_budgets(release: Mapping[str, Any], check: _Checker) -> dict[str, Any]:
    if "budgets" not in release or release["budgets"] is None:
        return {}
    data = check.mapping(release["budgets"], ("budgets",), "a mapping of budget name to number or string")
    if data is None:
        return {}
    budgets: dict[str, Any] = {}
    for key, value in data.items():
        where = ("budgets", key)
        if not isinstance(key, str) or not _BUDGET_KEY.match(key):
            check.problem(where, "expected a lower-case budget name (a-z, 0-9, _ . -)")
        elif not _budget_value_ok(value):
            check.problem(where, f"expected a number >= 0 or a string, got {_describe(value)}")
        else:
            budgets[key] = value
    return budgets


def _budget_value_ok(value: Any) -> bool:
    if isinstance(value, str):
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0


def _parse_benchmark_versions(release: Mapping[str, Any], check: _Checker) -> dict[str, str]:
    if "benchmark_versions" not in release or release["benchmark_versions"] is None:
        return {}
    data = check.mapping(release["benchmark_versions"], ("benchmark_versions",), "a mapping of component to version")
    if data is None:
        return {}
    versions: dict[str, str] = {}
    for key, value in data.items():
        where = ("benchmark_versions", key)
        if not isinstance(key, str) or not _BUDGET_KEY.match(key.lower()):
            check.problem(where, "expected a component name (letters, digits, _ . -)")
        elif not isinstance(value, str) or not value.strip():
            hint = ' (quote it, e.g. "1.10")' if isinstance(value, int | float) and not isinstance(value, bool) else ""
            check.problem(where, f"expected a version string{hint}, got {_describe(value)}")
        else:
            versions[key] = value.strip()
    return versions


def _parse_evaluators(release: Mapping[str, Any], check: _Checker) -> list[EvaluatorSpec]:
    items = check.sequence(release, "evaluators", (), required=False) or []
    evaluators: list[EvaluatorSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        path = ("evaluators", index)
        data = check.mapping(item, path, "a mapping with simulator, name, description")
        if data is None:
            continue
        check.known_keys(data, _EVALUATOR_KEYS, path)
        simulator = check.string(
            data,
            "simulator",
            path,
            pattern=_SIMULATOR,
            pattern_text="a simulator id like robosuite+robomimic (a-z, 0-9, _ . + -)",
            max_len=100,
        )
        name = check.string(data, "name", path, required=False, max_len=200)
        description = check.string(data, "description", path, required=False, max_len=20000)
        if simulator is None or name is None or description is None:
            continue
        if simulator in seen:
            check.problem((*path, "simulator"), f"duplicate evaluator {simulator!r}; list each simulator once")
            continue
        seen.add(simulator)
        evaluators.append(EvaluatorSpec(simulator=simulator, name=name, description=description))
    return evaluators


def _parse_release_tasks(release: Mapping[str, Any], check: _Checker, scheme: str | None) -> list[_ReleaseEntry]:
    items = check.sequence(release, "tasks", (), required=True)
    if items is None:
        return []
    if not items and scheme == "paper_gap":
        check.problem(("tasks",), "expected at least one task for scheme paper_gap")
    entries: list[_ReleaseEntry] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        path = ("tasks", index)
        data = check.mapping(item, path, "a mapping with slug, paper_value, anchor_published")
        if data is None:
            continue
        check.known_keys(data, _RELEASE_TASK_KEYS, path)
        slug = check.string(
            data, "slug", path, pattern=_TASK_SLUG, pattern_text="a lower-case slug (a-z, 0-9, - and _)", max_len=100
        )
        valid = True
        paper_value: float | None = None
        if "paper_value" not in data:
            check.problem(path, f"missing required field 'paper_value' ({_ANCHOR_EXPECTED})")
            valid = False
        elif data["paper_value"] is not None:
            paper_value = check.number(
                data, "paper_value", path, expected=_ANCHOR_EXPECTED, accept=_positive, echo=False
            )
            valid = paper_value is not None
        anchor_published = check.boolean(data, "anchor_published", path, default=False)
        if anchor_published is None:
            valid = False
        elif anchor_published and "paper_value" in data and data["paper_value"] is None:
            check.problem((*path, "anchor_published"), "expected false while paper_value is null (nothing to publish)")
            valid = False
        if slug is None:
            continue
        if slug in seen:
            check.problem((*path, "slug"), f"duplicate task slug {slug!r}; each task may be listed once")
            continue
        seen.add(slug)
        entries.append(_ReleaseEntry(slug, index, paper_value, bool(anchor_published), valid))
    return entries


def _parse_episode_set(
    release: Mapping[str, Any], check: _Checker, scheme: str | None, source: ManifestSource, problems: list[Problem]
) -> EpisodeSet | None:
    present = "episode_set" in release
    if scheme != "scorecard":
        if present and scheme is not None:
            check.problem(("episode_set",), f"only scheme scorecard has an episode_set; this benchmark is {scheme}")
        return None
    if not present:
        check.problem((), "missing required field 'episode_set' (scheme scorecard needs its hidden episode set)")
        return None
    data = check.mapping(release["episode_set"], ("episode_set",), "a mapping with size and levels or levels_file")
    if data is None:
        return None
    path = ("episode_set",)
    check.known_keys(data, ("size", "levels", "levels_file"), path)
    size = check.integer(data, "size", path, minimum=1)
    if ("levels" in data) == ("levels_file" in data):
        check.problem(path, "expected exactly one of 'levels' (a list) or 'levels_file' (a YAML file of that list)")
        return None
    if "levels" in data:
        levels = _parse_levels(data["levels"], check, (*path, "levels"))
    else:
        name = check.string(data, "levels_file", path, max_len=200)
        if name is None:
            return None
        relpath = PurePosixPath(name)
        if relpath.is_absolute() or ".." in relpath.parts or "reference" in relpath.parts:
            check.problem((*path, "levels_file"), "expected a path inside the manifest, outside reference/")
            return None
        raw = source.read(str(relpath))
        if raw is None:
            check.problem((*path, "levels_file"), f"expected the file {name!r} in the manifest; it is missing")
            return None
        parsed = _parse_yaml(raw, str(relpath), problems)
        if parsed is None:
            return None
        levels = _parse_levels(parsed[0], _Checker(str(relpath), parsed[1], problems), ())
    if size is None or levels is None:
        return None
    if len(levels) != size:
        check.problem((*path, "size"), f"expected {len(levels)} (the number of levels listed), got {size}")
        return None
    return EpisodeSet(size=size, levels=tuple(levels))


def _parse_levels(value: Any, check: _Checker, path: tuple[Any, ...]) -> list[EpisodeLevel] | None:
    """Each level's XSB text, solved by BFS here so a level that cannot be served never syncs.

    Refused, naming the file, line and level: malformed XSB, no solution, no
    solution found within LEVEL_SEARCH_MAX_NODES states, and a stated
    ``optimal_len`` that differs from the BFS length."""
    if not isinstance(value, list) or not value:
        check.problem(path, f"expected a non-empty list of {{id, xsb, optimal_len}}, got {_describe(value)}")
        return None
    levels: list[EpisodeLevel] = []
    seen: set[str] = set()
    ok = True
    for index, item in enumerate(value):
        where = (*path, index)
        data = check.mapping(item, where, "a mapping with id, xsb and optionally optimal_len")
        if data is None:
            ok = False
            continue
        check.known_keys(data, ("id", "xsb", "optimal_len"), where)
        level_id = check.string(data, "id", where, max_len=100)
        stated = check.integer(data, "optimal_len", where, minimum=1, required=False)
        if level_id is None or not check.required(data, "xsb", where):
            ok = False
            continue
        if level_id in seen:
            check.problem((*where, "id"), f"duplicate level id {level_id!r}")
            ok = False
            continue
        seen.add(level_id)
        optimal = _solve_level(data["xsb"], level_id, check, (*where, "xsb"))
        if optimal is None:
            ok = False
            continue
        if stated is not None and stated != optimal:
            check.problem(
                (*where, "optimal_len"),
                f"level {level_id!r}: optimal_len is {stated}, but BFS finds a shortest solution of {optimal} moves",
            )
            ok = False
            continue
        levels.append(EpisodeLevel(level_id, optimal, data["xsb"].strip("\n")))
    return levels if ok else None


def _solve_level(text: Any, level_id: str, check: _Checker, where: tuple[Any, ...]) -> int | None:
    from scoring.sokoban import OVER_BUDGET, UNSOLVABLE, LevelError, parse_xsb, solve

    if not isinstance(text, str) or len(text) > MAX_LEVEL_CHARS:
        check.problem(where, f"level {level_id!r}: expected XSB text of at most {MAX_LEVEL_CHARS} characters")
        return None
    try:
        level = parse_xsb(text)
    except LevelError as exc:
        check.problem(where, f"level {level_id!r}: malformed XSB: {exc}")
        return None
    solution = solve(level, max_nodes=LEVEL_SEARCH_MAX_NODES)
    if solution.status == UNSOLVABLE:
        check.problem(where, f"level {level_id!r}: has no solution (BFS searched every reachable state)")
        return None
    if solution.status == OVER_BUDGET:
        check.problem(
            where,
            f"level {level_id!r}: not solved within the search budget of {LEVEL_SEARCH_MAX_NODES} states; "
            "expected a smaller level",
        )
        return None
    return solution.length


def _parse_qualifying(release: Mapping[str, Any], check: _Checker, scheme: str | None) -> list[str]:
    if "qualifying" not in release:
        return []
    if scheme != "race":
        if scheme is not None:
            check.problem(("qualifying",), f"only scheme race has a qualifying task set; this benchmark is {scheme}")
        return []
    data = check.mapping(release["qualifying"], ("qualifying",), "a mapping with task_ids")
    if data is None:
        return []
    check.known_keys(data, ("task_ids",), ("qualifying",))
    items = check.sequence(data, "task_ids", ("qualifying",), required=True) or []
    ids: list[str] = []
    for index, item in enumerate(items):
        where = ("qualifying", "task_ids", index)
        if not isinstance(item, str) or not item.strip() or "\n" in item or len(item) > 200:
            check.problem(where, f"expected a task id string, got {_describe(item)}")
        elif item.strip() in ids:
            check.problem(where, f"duplicate task id {item.strip()!r}")
        else:
            ids.append(item.strip())
    return ids


def _read_text(
    source: ManifestSource, relpath: str, problems: list[Problem], *, required: bool, what: str
) -> str | None:
    raw = source.read(relpath)
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
    return text


def _parse_task(
    source: ManifestSource,
    entry: _ReleaseEntry,
    release_cap: float,
    problems: list[Problem],
    texts: list[TaskTexts],
) -> TaskContract | None:
    directory = f"tasks/{entry.slug}"
    file = f"{directory}/task.yaml"
    start = len(problems)
    raw = source.read(file)
    paper = _read_text(source, f"{directory}/paper.md", problems, required=True, what="the paper the agent reads")
    brief = _read_text(source, f"{directory}/brief.md", problems, required=True, what="the task brief the agent reads")
    dockerfile = _read_text(
        source, f"{directory}/sandbox/Dockerfile", problems, required=False, what="the sandbox image's Dockerfile"
    )
    visible = {
        f"{directory}/paper.md": paper,
        f"{directory}/brief.md": brief,
        f"{directory}/sandbox/Dockerfile": dockerfile,
    }
    texts.append(TaskTexts(entry.slug, entry.paper_value, {k: v for k, v in visible.items() if v is not None}))
    if raw is None:
        problems.append(
            Problem(file, None, "", f"file is missing; every task listed in release.yaml needs {directory}/task.yaml")
        )
        return None
    parsed = _parse_yaml(raw, file, problems)
    if parsed is None:
        return None
    data, lines = parsed
    check = _Checker(file, lines, problems)
    task = check.mapping(data, (), "a mapping of task contract fields")
    if task is None:
        return None
    check.known_keys(task, _TASK_KEYS, ())
    slug = check.string(task, "slug", (), max_len=100)
    if slug is not None and slug != entry.slug:
        check.problem(("slug",), f"expected {entry.slug!r} (the task directory's name), got {slug!r}")
    title = check.string(task, "title", (), max_len=300)
    platform = check.choice(task, "platform", (), PLATFORMS)
    direction = check.choice(task, "direction", (), DIRECTIONS)
    simulator = check.string(
        task, "simulator", (), pattern=_SIMULATOR, pattern_text="a simulator id like robosuite+robomimic", max_len=100
    )
    genre = check.choice(task, "genre", (), GENRES)
    mode = check.choice(task, "mode", (), MODES)

    metric_name = metric_direction = None
    cap: float | None = release_cap
    provenance = ""
    if check.required(task, "metric", ()):
        metric = check.mapping(task["metric"], ("metric",), "a mapping with name, direction, paper_value, score_cap")
        if metric is not None:
            path = ("metric",)
            check.known_keys(metric, _METRIC_KEYS, path)
            metric_name = check.string(
                metric, "name", path, pattern=_METRIC, pattern_text="a metric name like success_rate", max_len=100
            )
            metric_direction = check.choice(metric, "direction", path, METRIC_DIRECTIONS)
            cap = check.number(metric, "score_cap", path, expected=_CAP_EXPECTED, accept=_cap_ok, default=release_cap)
            provenance = check.string(metric, "provenance", path, required=False, max_len=2000) or ""
            if "paper_value" in metric and entry.valid:
                local = metric["paper_value"]
                if local is not None:
                    local = check.number(
                        metric, "paper_value", path, expected=_ANCHOR_EXPECTED, accept=_positive, echo=False
                    )
                    if local is not None and (
                        entry.paper_value is None or not math.isclose(local, entry.paper_value, rel_tol=0, abs_tol=0)
                    ):
                        check.problem(
                            (*path, "paper_value"),
                            f"does not equal the authoritative anchor in release.yaml (tasks[{entry.position}]."
                            "paper_value); remove it here or make the two equal",
                        )
                elif entry.paper_value is not None:
                    check.problem(
                        (*path, "paper_value"),
                        f"is null but release.yaml (tasks[{entry.position}].paper_value) gives an anchor; "
                        "remove it here or make the two equal",
                    )

    penalties = _parse_penalties(task, check)
    eval_config: dict[str, Any] | None = None
    if "eval_config" in task:
        eval_config = check.mapping(task["eval_config"], ("eval_config",), "a mapping (the fixed eval procedure)")
        if eval_config is not None:
            try:
                json.dumps(eval_config, sort_keys=True, allow_nan=False)
            except (TypeError, ValueError):
                check.problem(("eval_config",), "expected plain values (strings, numbers, lists, mappings)")
                eval_config = None

    if len(problems) > start or not entry.valid:
        return None
    assert title and platform and direction and simulator and genre and mode and metric_name and metric_direction
    assert cap is not None and paper is not None and brief is not None and penalties is not None
    return TaskContract(
        slug=entry.slug,
        title=title,
        platform=platform,
        direction=direction,
        simulator=simulator,
        genre=genre,
        mode=mode,
        metric_name=metric_name,
        metric_direction=metric_direction,
        paper_value=entry.paper_value,
        anchor_published=entry.anchor_published,
        score_cap=cap,
        penalties=tuple(penalties),
        eval_config=eval_config,
        provenance=provenance,
        paper_md=paper,
        brief_md=brief,
        sandbox_dockerfile=dockerfile,
        position=entry.position,
        lines={
            name: line
            for name, path in (
                ("simulator", ("simulator",)),
                ("mode", ("mode",)),
                ("genre", ("genre",)),
                ("metric.name", ("metric", "name")),
                ("penalties", ("penalties",)),
                ("eval_config", ("eval_config",)),
            )
            if (line := lines.line(path)) is not None
        }
        | {f"penalties[{i}].metric": lines.line(("penalties", i, "metric")) or 0 for i in range(len(penalties))},
    )


def _parse_penalties(task: Mapping[str, Any], check: _Checker) -> list[Penalty] | None:
    items = check.sequence(task, "penalties", (), required=False)
    if items is None:
        return [] if "penalties" not in task else None
    penalties: list[Penalty] = []
    seen: set[str] = set()
    ok = True
    for index, item in enumerate(items):
        path = ("penalties", index)
        data = check.mapping(item, path, "a mapping with metric and limit")
        if data is None:
            ok = False
            continue
        check.known_keys(data, _PENALTY_KEYS, path)
        metric = check.string(data, "metric", path, pattern=_METRIC, pattern_text="a metric name like collision_rate")
        if "limit" not in data:
            check.problem(path, f"missing required field 'limit' ({_LIMIT_EXPECTED})")
            ok = False
            continue
        limit = check.number(data, "limit", path, expected=_LIMIT_EXPECTED, accept=_positive)
        if metric is None or limit is None:
            ok = False
            continue
        if metric in seen:
            check.problem((*path, "metric"), f"duplicate penalty metric {metric!r}; declare each once")
            ok = False
            continue
        seen.add(metric)
        penalties.append(Penalty(metric=metric, limit=limit))
    return penalties if ok else None


def load_manifest(
    path_or_source: str | Path | ManifestSource, *, known_simulators: Collection[str] | None = None
) -> ReleaseManifest:
    """Load and validate a manifest directory (or an already opened source).

    With ``known_simulators`` (the simulators registered as evaluators), the
    automated review gates of leaderboard.review also run (contract review and
    leak audit) and their problems are reported with the parse problems.
    Raises :class:`ManifestError` listing every problem.
    """
    source = path_or_source if isinstance(path_or_source, ManifestSource) else read_manifest_dir(path_or_source)
    parsed = parse_manifest(source)
    problems = list(parsed.problems)
    if known_simulators is not None:
        from leaderboard import review

        problems.extend(review.review_parsed(parsed, known_simulators=known_simulators))
    if problems or parsed.manifest is None:
        raise ManifestError(problems)
    return parsed.manifest

"""The manifest's data: field vocabularies, problems, and the parsed, validated types (pure).

Every type here is frozen or built once by the parsers; nothing here reads a
file or touches the database. :class:`ManifestFiles` is the one view of a
manifest's files the parsers get (leaderboard.manifest.sources provides it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from scoring.gap import ReleaseSpec, TaskSpec, required_task_set_hash

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


# The longest task id a race run may report (its outcomes[].task_id, submissions.bundle.schema):
# a longer qualifying id in release.yaml could never be reported, so every run would count it unpaid.
RACE_TASK_ID_MAX = 100

# Larger text files are refused: a paper rendering is a few hundred KiB at most.
MAX_FILE_BYTES = 2 * 1024 * 1024


class ManifestFiles(Protocol):
    """Read access to the files of one manifest, by POSIX path relative to its root.

    What the parsers read through: they open nothing themselves. An implementation
    never opens anything under a ``reference/`` directory.
    """

    def read(self, relpath: str, *, limit: int = MAX_FILE_BYTES) -> bytes | None:
        """The file's bytes, or None when it does not exist; more than ``limit`` bytes is a problem."""
        ...

    def task_dirs(self) -> list[str]:
        """Names of the directories directly under ``tasks/``."""
        ...

    def files_under(self, directory: str) -> list[str]:
        """The paths of every file below ``directory`` (at any depth), sorted; a ``reference/``
        folder is listed as one path ending in "reference/", nothing inside it."""
        ...


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
    # Every other file of the sandbox image's build context (path below the task directory, e.g.
    # "sandbox/workspace/README.md" -> SHA-256 of its bytes): a Dockerfile's COPY puts them in
    # front of the agent, so they are audited (text) and pinned by the release's hash.
    sandbox_files: Mapping[str, str] = field(default_factory=dict)
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

    def canonical(self, *, with_sandbox_files: bool = True) -> dict[str, Any]:
        contract = self.public_contract()
        contract["metric"].update(
            paper_value=self.paper_value, anchor_published=self.anchor_published, provenance=self.provenance
        )
        contract["position"] = self.position
        contract["files"] = {
            "paper.md": sha256_text(self.paper_md),
            "brief.md": sha256_text(self.brief_md),
            "sandbox/Dockerfile": None if self.sandbox_dockerfile is None else sha256_text(self.sandbox_dockerfile),
        }
        if with_sandbox_files:
            # Always present, if empty: it marks a release hashed with its sandbox files (release_sync
            # accepts the hash without them only for a release whose stored manifest has no such key).
            contract["sandbox_files"] = dict(self.sandbox_files)
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
        required = self.qualifying_task_ids if self.benchmark.scheme == "race" else self.task_slugs
        return required_task_set_hash(required)

    def to_release_spec(self) -> ReleaseSpec:
        """The scoring.gap.ReleaseSpec of this release.

        Raises ManifestError when a task has no anchor (paper_value null):
        such a task cannot be scored until release.yaml gives one.
        """
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
                paper_value=float(task.paper_value or 0.0),  # every None was refused just above
                cap=task.score_cap,
                penalties={p.metric: p.limit for p in task.penalties},
            )
            for task in self.tasks
        }
        return ReleaseSpec(tasks=specs, missing_task_policy=self.missing_task_policy)

    def canonical(self, *, with_sandbox_files: bool = True) -> dict[str, Any]:
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
            "tasks": [task.canonical(with_sandbox_files=with_sandbox_files) for task in self.tasks],
            "episode_set": None
            if self.episode_set is None
            else {
                "size": self.episode_set.size,
                # The level texts by hash only: Release.manifest is never shown, but it need not hold them.
                "levels": [
                    {"id": level.level_id, "optimal_len": level.optimal_len, "xsb_sha256": sha256_text(level.xsb)}
                    for level in self.episode_set.levels
                ],
            },
            "qualifying": {"task_ids": list(self.qualifying_task_ids)} if self.benchmark.scheme == "race" else None,
            "required_task_set_hash": self.required_task_set_hash,
        }

    def canonical_json(self, *, with_sandbox_files: bool = True) -> str:
        """Sorted keys, no whitespace, UTF-8 text: identical manifests give identical strings."""
        return json.dumps(
            self.canonical(with_sandbox_files=with_sandbox_files),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    @property
    def sha256_before_sandbox_files(self) -> str:
        """The hash as a site computed it before the sandbox's other files were pinned: a release
        synced then (its stored manifest has no ``sandbox_files`` key), and synced again
        unchanged, is still "unchanged" (release_sync)."""
        return hashlib.sha256(self.canonical_json(with_sandbox_files=False).encode("utf-8")).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TaskTexts:
    """The agent-visible files of one task (path relative to the manifest -> text), for the leak audit.

    Kept apart from TaskContract so the audit runs even when task.yaml is broken.
    """

    slug: str
    paper_value: float | None
    files: Mapping[str, str]
    # The sandbox's other files, path below the task directory -> SHA-256 of their bytes
    # (TaskContract.sandbox_files); the text ones are in ``files`` too.
    sandbox_files: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ParsedManifest:
    """What :func:`parse_manifest` could read: the manifest when valid, else the parts that parsed."""

    manifest: ReleaseManifest | None
    tasks: list[TaskContract]
    evaluators: list[EvaluatorSpec]
    problems: list[Problem]
    texts: list[TaskTexts] = field(default_factory=list)

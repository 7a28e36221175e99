"""The release parser: release.yaml (and, through the task and episode parsers, every file) -> ParsedManifest.

Pure: no Django, no file I/O; files are read through a ManifestFiles view.
Every problem is collected (not just the first), each naming the file, the
line, the field path and what was expected; no message carries an anchor.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from leaderboard.manifest.checker import (
    ANCHOR_EXPECTED,
    CAP_EXPECTED,
    SIMULATOR,
    Checker,
    cap_ok,
    describe,
    is_finite_number,
    positive,
)
from leaderboard.manifest.episode_parser import parse_episode_set
from leaderboard.manifest.loader import Lines, parse_yaml
from leaderboard.manifest.task_parser import ReleaseEntry, parse_task
from leaderboard.manifest.types import (
    DEFAULT_SCORE_CAP,
    FORMAT_VERSION,
    MISSING_TASK_POLICIES,
    RACE_TASK_ID_MAX,
    RELEASE_FILE,
    SCHEMES,
    BenchmarkSpec,
    EvaluatorSpec,
    ManifestFiles,
    ParsedManifest,
    Problem,
    ReleaseManifest,
    TaskContract,
    TaskTexts,
)

__all__ = ["parse_manifest"]

_TASK_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
_BENCHMARK_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$")
_BUDGET_KEY = re.compile(r"^[a-z][a-z0-9_.-]{0,99}$")

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
# Field path -> its name in ReleaseManifest.lines (for problems the sync finds against the database,
# and the published-text audit's: leaderboard.manifest.review.published_text_audit).
_LINE_FIELDS = (
    ("title", ("title",)),
    ("notes", ("notes",)),
    ("benchmark.name", ("benchmark", "name")),
    ("benchmark.description", ("benchmark", "description")),
    ("version", ("version",)),
    ("published", ("published",)),
    ("episode_set", ("episode_set",)),
    ("benchmark.scheme", ("benchmark", "scheme")),
    ("benchmark.slug", ("benchmark", "slug")),
    ("tasks", ("tasks",)),
)


def parse_manifest(files: ManifestFiles) -> ParsedManifest:
    """Parse and validate every file of a manifest, collecting all problems."""
    problems: list[Problem] = []
    read = _read_release(files, problems)
    if read is None:
        return ParsedManifest(None, [], [], problems)
    release, check, lines = read
    check.known_keys(release, _RELEASE_KEYS, ())
    _check_format(release, check)
    benchmark = _parse_benchmark(release, check)
    scheme = benchmark.scheme if benchmark else None
    version = check.string(release, "version", (), pattern=_VERSION, pattern_text='a version like "0.5"', max_len=50)
    title = check.string(release, "title", (), required=False, max_len=200)
    notes = check.string(release, "notes", (), required=False, max_len=20000)
    published = check.boolean(release, "published", (), default=None)
    published_at = _parse_published_at(release, check, published)
    policy = _parse_policy(release, check)
    cap = check.number(
        release, "default_score_cap", (), expected=CAP_EXPECTED, accept=cap_ok, default=DEFAULT_SCORE_CAP
    )
    budgets = _parse_budgets(release, check)
    versions = _parse_benchmark_versions(release, check)
    evaluators = _parse_evaluators(release, check)
    entries = _parse_release_tasks(release, check, scheme)
    episode_set = parse_episode_set(release, check, scheme, files, problems)
    qualifying = _parse_qualifying(release, check, scheme)
    problems.extend(_unlisted_task_dirs(files, entries))
    tasks, texts = _parse_tasks(files, entries, cap if cap is not None else DEFAULT_SCORE_CAP, problems)

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
            lines={name: line for name, path in _LINE_FIELDS if (line := lines.line(path)) is not None},
        )
    return ParsedManifest(manifest, tasks, evaluators, problems, texts)


def _read_release(files: ManifestFiles, problems: list[Problem]) -> tuple[dict[str, Any], Checker, Lines] | None:
    """release.yaml as a mapping with its checker, or None after recording why it cannot be read."""
    raw = files.read(RELEASE_FILE)
    if raw is None:
        problems.append(Problem(RELEASE_FILE, None, "", "file is missing; expected release.yaml at the manifest root"))
        return None
    parsed = parse_yaml(raw, RELEASE_FILE, problems)
    if parsed is None:
        return None
    data, lines = parsed
    check = Checker(RELEASE_FILE, lines, problems)
    release = check.mapping(data, (), "a mapping of release fields")
    if release is None:
        return None
    return release, check, lines


def _parse_tasks(
    files: ManifestFiles, entries: list[ReleaseEntry], release_cap: float, problems: list[Problem]
) -> tuple[list[TaskContract], list[TaskTexts]]:
    """Every listed task's contract that parsed, and every task's agent-visible texts (for the leak audit)."""
    tasks: list[TaskContract] = []
    texts: list[TaskTexts] = []
    for entry in entries:
        task = parse_task(files, entry, release_cap, problems, texts)
        if task is not None:
            tasks.append(task)
    return tasks, texts


def _check_format(release: Mapping[str, Any], check: Checker) -> None:
    fmt = release.get("format")
    if "format" not in release:
        check.problem((), f"missing required field 'format' (expected {FORMAT_VERSION})")
    elif fmt != FORMAT_VERSION or isinstance(fmt, bool):
        check.problem(("format",), f"expected {FORMAT_VERSION} (the only manifest format), got {describe(fmt)}")


def _parse_policy(release: Mapping[str, Any], check: Checker) -> str:
    if "missing_task_policy" not in release:
        return "exclude"
    return check.choice(release, "missing_task_policy", (), MISSING_TASK_POLICIES) or "exclude"


def _unlisted_task_dirs(files: ManifestFiles, entries: list[ReleaseEntry]) -> list[Problem]:
    listed = {entry.slug for entry in entries}
    return [
        Problem(f"tasks/{name}/", None, "", "directory is not listed in release.yaml tasks; list it or remove it")
        for name in files.task_dirs()
        if name not in listed
    ]


def _parse_benchmark(release: Mapping[str, Any], check: Checker) -> BenchmarkSpec | None:
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


def _parse_published_at(release: Mapping[str, Any], check: Checker, published: bool | None) -> str | None:
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
            ("published_at",), f"expected an ISO 8601 date or time like 2026-03-01T12:00:00Z, got {describe(value)}"
        )
        return None
    if published is False:
        check.problem(("published_at",), "expected no published_at while published is false")
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return moment.astimezone(dt.UTC).isoformat()
    except OverflowError:  # 9999-12-31T23:59-05:00 is in year 10000 in UTC
        check.problem(("published_at",), f"expected a moment within the years 1 to 9999 in UTC, got {describe(value)}")
        return None


def _parse_budgets(release: Mapping[str, Any], check: Checker) -> dict[str, Any]:
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
            check.problem(where, f"expected a number >= 0 or a string, got {describe(value)}")
        else:
            budgets[key] = value
    return budgets


def _budget_value_ok(value: Any) -> bool:
    return isinstance(value, str) or (is_finite_number(value) and value >= 0)


def _parse_benchmark_versions(release: Mapping[str, Any], check: Checker) -> dict[str, str]:
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
            check.problem(where, f"expected a version string{hint}, got {describe(value)}")
        else:
            versions[key] = value.strip()
    return versions


def _parse_evaluators(release: Mapping[str, Any], check: Checker) -> list[EvaluatorSpec]:
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
            pattern=SIMULATOR,
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


def _parse_release_tasks(release: Mapping[str, Any], check: Checker, scheme: str | None) -> list[ReleaseEntry]:
    items = check.sequence(release, "tasks", (), required=True)
    if items is None:
        return []
    if not items and scheme == "paper_gap":
        check.problem(("tasks",), "expected at least one task for scheme paper_gap")
    entries: list[ReleaseEntry] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        entry = _parse_release_task(item, index, check)
        if entry is None:
            continue
        if entry.slug in seen:
            check.problem(("tasks", index, "slug"), f"duplicate task slug {entry.slug!r}; each task may be listed once")
            continue
        seen.add(entry.slug)
        entries.append(entry)
    return entries


def _parse_release_task(item: Any, index: int, check: Checker) -> ReleaseEntry | None:
    """One item of release.yaml's task list (None when its slug is unusable; ``valid`` false on other problems)."""
    path = ("tasks", index)
    data = check.mapping(item, path, "a mapping with slug, paper_value, anchor_published")
    if data is None:
        return None
    check.known_keys(data, _RELEASE_TASK_KEYS, path)
    slug = check.string(
        data, "slug", path, pattern=_TASK_SLUG, pattern_text="a lower-case slug (a-z, 0-9, - and _)", max_len=100
    )
    valid = True
    paper_value: float | None = None
    if "paper_value" not in data:
        check.problem(path, f"missing required field 'paper_value' ({ANCHOR_EXPECTED})")
        valid = False
    elif data["paper_value"] is not None:
        paper_value = check.number(data, "paper_value", path, expected=ANCHOR_EXPECTED, accept=positive, echo=False)
        valid = paper_value is not None
    anchor_published = check.boolean(data, "anchor_published", path, default=False)
    if anchor_published is None:
        valid = False
    elif anchor_published and "paper_value" in data and data["paper_value"] is None:
        check.problem((*path, "anchor_published"), "expected false while paper_value is null (nothing to publish)")
        valid = False
    if slug is None:
        return None
    return ReleaseEntry(slug, index, paper_value, bool(anchor_published), valid)


def _parse_qualifying(release: Mapping[str, Any], check: Checker, scheme: str | None) -> list[str]:
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
    seen: set[str] = set()  # a set: the list made this check quadratic (40,000 ids took minutes)
    for index, item in enumerate(items):
        where = ("qualifying", "task_ids", index)
        if not isinstance(item, str) or not item.strip() or "\n" in item or len(item) > RACE_TASK_ID_MAX:
            check.problem(
                where, f"expected a task id string of at most {RACE_TASK_ID_MAX} characters, got {describe(item)}"
            )
        elif item.strip() in seen:
            check.problem(where, f"duplicate task id {item.strip()!r}")
        else:
            ids.append(item.strip())
            seen.add(item.strip())
    return ids

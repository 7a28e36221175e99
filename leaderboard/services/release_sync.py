"""Release sync: a manifest (directory, zip source or loaded) -> the registry's rows, in one transaction.

Invariants:

* ``release_sync`` validates everything (parse, contract review, leak audit)
  before the first write, then writes in one transaction: a refused manifest
  leaves the database exactly as it was.
* Syncing a manifest whose canonical hash equals the release's stored
  ``manifest_sha256`` writes nothing ("unchanged").
* A published release never changes: a different manifest for its version is
  refused with a message that says to bump the version. So does an unpublished
  release that already has runs, whose scores rest on its current anchors.
* A manifest that says ``published: true`` syncs unpublished until the human
  gates (leaderboard.services.release_gates) pass; the sync reports what is
  waiting (docs/manifest.md "Publishing").
* A re-sync of an unpublished release clears a task's anchor sign-off when its
  anchor or metric changed, and its faithfulness calibration when its genre,
  paper.md or brief.md changed: a gate signed for other content does not carry over.
* No message written here contains an anchor value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from leaderboard.manifest import (
    RELEASE_FILE,
    ManifestError,
    ManifestSource,
    Problem,
    ReleaseManifest,
    TaskContract,
    load_manifest,
    read_manifest_dir,
)
from leaderboard.manifest.review import review_manifest
from leaderboard.models import Benchmark, Evaluator, Release, ReleaseTask, ScorecardLevel, Task
from leaderboard.services.races import race_hidden_tasks_named
from leaderboard.services.release_gates import (
    BENCHMARK_TEXT_FIELDS,
    benchmark_text_changes,
    benchmark_text_write,
    clear_anchor_sign_off,
    clear_calibration,
    played_levels_reused,
    publish_release_text,
    published_at_of,
    release_actor,
    release_gate_failures,
)

__all__ = ["SyncResult", "release_sync"]


@dataclass
class SyncResult:
    """What a sync did. ``status`` is "created", "updated" or "unchanged"."""

    status: str
    release: Release
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        head = f"{self.release.benchmark.slug} {self.release.version}: {self.status}"
        return [head, *(f"  {change}" for change in self.changes), *(f"  note: {note}" for note in self.notes)]


def _resolve(manifest: ReleaseManifest | ManifestSource | str | os.PathLike[str]) -> ReleaseManifest:
    known = set(Evaluator.objects.values_list("simulator", flat=True))
    if isinstance(manifest, ReleaseManifest):
        problems = review_manifest(manifest, known_simulators=known)
        if problems:
            raise ManifestError(problems)
        return manifest
    source = manifest if isinstance(manifest, ManifestSource) else read_manifest_dir(os.fspath(manifest))
    return load_manifest(source, known_simulators=known)


def release_sync(
    *,
    manifest: ReleaseManifest | ManifestSource | str | os.PathLike[str] | None = None,
    path_or_manifest: ReleaseManifest | ManifestSource | str | os.PathLike[str] | None = None,
    user: Any = None,
) -> SyncResult:
    """Sync one manifest (a loaded ReleaseManifest, a source, or a directory path) into the registry.

    ``path_or_manifest`` is an alias of ``manifest``. Raises ManifestError
    listing every problem (nothing written), PermissionDenied for a user who
    is not staff.
    """
    given = manifest if manifest is not None else path_or_manifest
    if given is None:
        raise TypeError("release_sync() needs manifest= (a ReleaseManifest, a ManifestSource or a directory path)")
    actor = release_actor(user)
    loaded = _resolve(given)
    try:
        with transaction.atomic():
            return _sync(loaded, actor)
    except IntegrityError:
        # Two first syncs of the same benchmark/version raced on a unique constraint; the
        # loser wrote nothing (its transaction rolled back) and a retry sees the winner's rows.
        raise ManifestError(
            [Problem(RELEASE_FILE, None, "", "another sync of this release ran at the same time; sync again")]
        ) from None


def _sync(m: ReleaseManifest, actor: Any) -> SyncResult:
    changes: list[str] = []
    benchmark = Benchmark.objects.select_for_update().filter(slug=m.benchmark.slug).first()
    if benchmark is not None and benchmark.scheme != m.benchmark.scheme:
        raise ManifestError(
            [
                Problem(
                    RELEASE_FILE,
                    m.lines.get("benchmark.scheme"),
                    "benchmark.scheme",
                    f"expected {benchmark.scheme} (benchmark {benchmark.slug!r} already uses it; "
                    f"a release cannot change its benchmark's scheme), got {m.benchmark.scheme!r}",
                )
            ]
        )
    release = None
    if benchmark is not None:
        release = Release.objects.select_for_update().filter(benchmark=benchmark, version=m.version).first()
    if release is not None and (
        release.manifest_sha256 == m.sha256
        or (_hashed_before_sandbox_files(release) and release.manifest_sha256 == m.sha256_before_sandbox_files)
    ):
        return SyncResult("unchanged", release, [], _publish_notes(release, m))
    if release is not None and release.published:
        raise ManifestError(
            [
                Problem(
                    RELEASE_FILE,
                    m.lines.get("version"),
                    "version",
                    f"release {m.benchmark.slug} {m.version} is published and cannot change; "
                    "bump the version to release a changed manifest",
                )
            ]
        )
    if release is not None and _has_scored_runs(release):
        raise ManifestError(
            [
                Problem(
                    RELEASE_FILE,
                    m.lines.get("version"),
                    "version",
                    f"release {m.benchmark.slug} {m.version} already has runs scored against it and cannot change; "
                    "bump the version to release a changed manifest",
                )
            ]
        )

    if benchmark is not None:
        _refuse_played_levels(benchmark, release, m)
        _refuse_hidden_race_tasks(benchmark, m)
    benchmark = _upsert_benchmark(benchmark, m, changes)
    evaluators = _upsert_evaluators(m, changes)
    tasks = _upsert_tasks(benchmark, m, evaluators, changes)
    created = release is None
    release = _upsert_release(benchmark, release, m, actor, changes)
    _upsert_release_tasks(release, m, tasks, evaluators, changes)
    _replace_scorecard_levels(release, m, changes)

    notes: list[str] = []
    if m.published and not release.published:
        if release_gate_failures(release):
            notes = _publish_notes(release, m)
        else:
            release.published = True
            release.published_at = published_at_of(m)
            release.save(update_fields=["published", "published_at"])
            changes.append("release published")
    if release.published:
        # Published now or before (a re-sync of a release without runs): its text is public, and
        # the shared rows show it where it is the newest published release.
        publish_release_text(release)
    return SyncResult("created" if created else "updated", release, changes, notes)


def _has_scored_runs(release: Release) -> bool:
    """Runs of any scheme exist for ``release``: their scores rest on its current contents."""
    # Reverse accessors of submissions' Run, ScorecardRun, Card and RaceRun (release FKs, PROTECT):
    # an open card's episodes rest on the hidden levels as synced.
    for accessor in ("runs", "scorecards", "cards", "race_runs"):
        related = getattr(release, accessor, None)
        if related is not None and related.exists():
            return True
    return False


def _publish_notes(release: Release, m: ReleaseManifest) -> list[str]:
    if not m.published or release.published:
        return []
    failures = release_gate_failures(release)
    if not failures:
        return ["release.yaml says published: true; every gate has passed, publish it with the admin's publish action"]
    return [
        "release.yaml says published: true, but the release stays unpublished until its human gates pass: "
        + "; ".join(failures)
    ]


def _upsert_benchmark(benchmark: Benchmark | None, m: ReleaseManifest, changes: list[str]) -> Benchmark:
    """The manifest's benchmark, created when new. An existing benchmark's name and description
    are public once one of its releases is: they then change only when a release publishes
    (``publish_release_text``), never from a draft's sync, which would show the text of an
    unpublished release on the home page and every published board."""
    spec = m.benchmark
    if benchmark is None:
        changes.append(f"benchmark {spec.slug}: created")
        return Benchmark.objects.create(
            slug=spec.slug, name=spec.name, scheme=spec.scheme, description=spec.description
        )
    text = {name: getattr(spec, name) for name in BENCHMARK_TEXT_FIELDS}
    changed = benchmark_text_changes(benchmark, text)
    if not changed:
        return benchmark
    if benchmark.releases.filter(published=True).exists():
        changes.append(f"benchmark {spec.slug}: {', '.join(changed)} changed (shown once this release is published)")
        return benchmark
    benchmark_text_write(benchmark, text, changed=changed)
    changes.append(f"benchmark {spec.slug}: {', '.join(changed)} updated")
    return benchmark


def _upsert_evaluators(m: ReleaseManifest, changes: list[str]) -> dict[str, Evaluator]:
    needed = {task.simulator for task in m.tasks} | {spec.simulator for spec in m.evaluators}
    existing = {e.simulator: e for e in Evaluator.objects.select_for_update().filter(simulator__in=needed)}
    for spec in m.evaluators:
        evaluator = existing.get(spec.simulator)
        if evaluator is None:
            existing[spec.simulator] = Evaluator.objects.create(
                simulator=spec.simulator, name=spec.name, description=spec.description
            )
            changes.append(f"evaluator {spec.simulator}: registered")
            continue
        # A manifest may leave name/description empty to keep what the admin registered.
        changed = [
            name
            for name in ("name", "description")
            if getattr(spec, name) and getattr(evaluator, name) != getattr(spec, name)
        ]
        if changed:
            for name in changed:
                setattr(evaluator, name, getattr(spec, name))
            evaluator.save(update_fields=changed)
            changes.append(f"evaluator {spec.simulator}: {', '.join(changed)} updated")
    return existing


def _task_values(task: TaskContract) -> dict[str, Any]:
    return {
        "title": task.title,
        "platform": task.platform,
        "direction": task.direction,
        "genre": task.genre,
        "mode": task.mode,
        "metric_name": task.metric_name,
        "metric_direction": task.metric_direction,
        "paper_md": task.paper_md,
        "brief_md": task.brief_md,
        "sandbox_dockerfile": task.sandbox_dockerfile or "",
        "contract": task.public_contract(),
        "anchor_provenance": task.provenance,
    }


def _upsert_tasks(
    benchmark: Benchmark, m: ReleaseManifest, evaluators: dict[str, Evaluator], changes: list[str]
) -> dict[str, Task]:
    """The Task rows the manifest names, creating the missing ones.

    An existing Task row is never rewritten here: its text is that of the newest published
    release containing it (``publish_release_text``), and the text this manifest brings lives
    in its own release's ReleaseTask snapshot. So syncing an unpublished release cannot
    change what any published release, or /api/v1/tasks/, shows.
    """
    existing = {
        task.slug: task for task in Task.objects.select_for_update().filter(benchmark=benchmark, slug__in=m.task_slugs)
    }
    tasks: dict[str, Task] = {}
    for contract in m.tasks:
        row = existing.get(contract.slug)
        if row is None:
            row = Task.objects.create(
                benchmark=benchmark,
                slug=contract.slug,
                simulator=evaluators[contract.simulator],
                **_task_values(contract),
            )
            changes.append(f"task {contract.slug}: created")
        tasks[contract.slug] = row
    return tasks


def _upsert_release(
    benchmark: Benchmark, release: Release | None, m: ReleaseManifest, actor: Any, changes: list[str]
) -> Release:
    values = {
        "title": m.title,
        "notes": m.notes,
        "required_task_set_hash": m.required_task_set_hash,
        "missing_task_policy": m.missing_task_policy,
        "default_score_cap": m.default_score_cap,
        "budgets": dict(m.budgets),
        "benchmark_versions": dict(m.benchmark_versions),
        "manifest": m.canonical(),
        "manifest_sha256": m.sha256,
        "episode_set_size": m.episode_set.size if m.episode_set else None,
        "qualifying_task_ids": list(m.qualifying_task_ids),
        "synced_by": actor,
    }
    if release is None:
        changes.append(f"release {m.benchmark.slug} {m.version}: created")
        return Release.objects.create(benchmark=benchmark, version=m.version, published=False, **values)
    changed = [
        name
        for name in values
        if name not in {"manifest", "manifest_sha256", "synced_by"} and getattr(release, name) != values[name]
    ]
    for name, value in values.items():
        setattr(release, name, value)
    release.save()
    changes.append(
        f"release {m.benchmark.slug} {m.version}: updated"
        + (f" ({', '.join(changed)})" if changed else " (task contents)")
    )
    return release


def _upsert_release_tasks(
    release: Release,
    m: ReleaseManifest,
    tasks: dict[str, Task],
    evaluators: dict[str, Evaluator],
    changes: list[str],
) -> None:
    existing = {row.task.slug: row for row in release.release_tasks.select_related("task").select_for_update()}
    for slug in sorted(set(existing) - set(tasks)):
        existing[slug].delete()
        changes.append(f"release task {slug}: removed")
    for contract in m.tasks:
        values = {
            **_task_values(contract),
            "simulator_id": evaluators[contract.simulator].pk,
            "position": contract.position,
            "genre": contract.genre,
            "metric_direction": contract.metric_direction,
            "paper_value": contract.paper_value,
            "anchor_published": contract.anchor_published,
            "score_cap": contract.score_cap,
            "penalties": [{"metric": p.metric, "limit": p.limit} for p in contract.penalties],
        }
        row = existing.get(contract.slug)
        if row is None:
            ReleaseTask.objects.create(release=release, task=tasks[contract.slug], **values)
            changes.append(f"release task {contract.slug}: added")
            continue
        changed = {name for name, value in values.items() if getattr(row, name) != value}
        for name in changed:
            setattr(row, name, values[name])
        notes = []
        anchor_moved = bool(changed & {"paper_value", "metric_direction", "metric_name"})
        if anchor_moved and row.anchor_signed_off_at is not None:
            clear_anchor_sign_off(row)
            notes.append("anchor sign-off cleared")
        content_moved = bool(changed & {"genre", "paper_md", "brief_md"})
        if content_moved and row.faithfulness_calibrated_at is not None:
            clear_calibration(row)
            notes.append("faithfulness calibration cleared")
        if changed or notes:
            row.save()
            # "paper_value" is reported as "anchor" with no values: this line may be printed anywhere.
            names = {"paper_value": "anchor", "simulator_id": "simulator"}
            shown = sorted(names.get(name, name) for name in changed)
            changes.append(
                f"release task {contract.slug}: " + ", ".join([*(f"{name} changed" for name in shown), *notes])
            )


def _hashed_before_sandbox_files(release: Release) -> bool:
    """Whether ``release`` was synced before the sandbox's other files joined the manifest hash:
    its stored manifest's tasks carry no ``sandbox_files`` key (every task synced since does, if
    empty). Only such a release is "unchanged" when the manifest matches it without those files
    (docs/manifest.md): one synced since must match them too, or its workspace could change."""
    tasks = (release.manifest or {}).get("tasks") or []
    return bool(tasks) and not any("sandbox_files" in task for task in tasks if isinstance(task, dict))


def _refuse_hidden_race_tasks(benchmark: Benchmark, m: ReleaseManifest) -> None:
    """Refuse a qualifying set that names a task of a race not yet released (its hidden set)."""
    if not m.qualifying_task_ids:
        return
    named = race_hidden_tasks_named(benchmark=benchmark, task_ids=list(m.qualifying_task_ids))
    if named:
        raise ManifestError([Problem(RELEASE_FILE, m.lines.get("qualifying.task_ids"), "qualifying.task_ids", named)])


def _refuse_played_levels(benchmark: Benchmark, release: Release | None, m: ReleaseManifest) -> None:
    """Refuse a scorecard release that reuses a level of another published release of its
    benchmark (``release_gates.played_levels_reused``, which publishing checks too)."""
    if m.episode_set is None:
        return
    reused = played_levels_reused(
        benchmark=benchmark, release=release, levels=[(level.level_id, level.xsb) for level in m.episode_set.levels]
    )
    if reused:
        raise ManifestError([Problem(RELEASE_FILE, m.lines.get("episode_set"), "episode_set", reused)])


def _replace_scorecard_levels(release: Release, m: ReleaseManifest, changes: list[str]) -> None:
    wanted = sorted(
        (level.level_id, level.optimal_len, level.xsb) for level in (m.episode_set.levels if m.episode_set else ())
    )
    current = list(
        ScorecardLevel.objects.filter(release=release)
        .order_by("level_id")
        .values_list("level_id", "optimal_len", "xsb")
    )
    if wanted == current:
        return
    ScorecardLevel.objects.filter(release=release).delete()
    ScorecardLevel.objects.bulk_create(
        [
            ScorecardLevel(release=release, level_id=level_id, optimal_len=length, xsb=xsb)
            for level_id, length, xsb in wanted
        ]
    )
    changes.append(f"scorecard levels: {len(wanted)} written")

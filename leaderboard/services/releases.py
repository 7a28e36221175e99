"""Releases: syncing manifests into the registry, the human review gates, publishing, diffs.

Invariants:

* ``release_sync`` validates everything (parse, contract review, leak audit)
  before the first write, then writes in one transaction: a refused manifest
  leaves the database exactly as it was.
* Syncing a manifest whose canonical hash equals the release's stored
  ``manifest_sha256`` writes nothing ("unchanged").
* A published release never changes: a different manifest for its version is
  refused with a message that says to bump the version. So does an unpublished
  release that already has runs, whose scores rest on its current anchors.
* Anchor sign-off and faithfulness calibration are human gates recorded per
  ReleaseTask (who, when). A release is published only when every task's anchor
  is signed off and every reproduction-genre task is calibrated. A manifest that
  says ``published: true`` syncs unpublished until then; the sync reports what is
  waiting (docs/manifest.md "Publishing").
* A re-sync of an unpublished release clears a task's anchor sign-off when its
  anchor or metric changed, and its faithfulness calibration when its genre,
  paper.md or brief.md changed: a gate signed for other content does not carry over.
* No message written here contains an anchor value.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard import review
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
from leaderboard.models import Benchmark, Evaluator, Release, ReleaseTask, ScorecardLevel, Task
from leaderboard.users import Viewer

__all__ = [
    "AnchorChange",
    "ReleaseDiff",
    "ReleaseGateError",
    "SyncResult",
    "anchor_within_tolerance",
    "release_diff",
    "release_gate_failures",
    "release_publish",
    "release_sign_off_all",
    "release_sync",
    "release_task_calibrate_faithfulness",
    "release_task_sign_off_anchor",
]


class ReleaseGateError(ValueError):
    """A human gate or publish step that cannot happen now; the message says why."""


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


# ------------------------------------------------------------------- helpers


def _label(release: Release) -> str:
    return f"{release.benchmark.slug} {release.version}"


def _actor(user: Viewer | None) -> User | None:
    """The user to record, or None for a script (management command, demo loader).

    A user who is not staff may not pass a human gate.
    """
    if user is None:
        return None
    if not getattr(user, "is_authenticated", False) or not (user.is_staff or user.is_superuser):
        raise PermissionDenied("only staff members may sync, sign off or publish releases")
    return user if user.pk is not None else None


def _resolve(manifest: ReleaseManifest | ManifestSource | str | os.PathLike[str]) -> ReleaseManifest:
    known = set(Evaluator.objects.values_list("simulator", flat=True))
    if isinstance(manifest, ReleaseManifest):
        problems = review.review_manifest(manifest, known_simulators=known)
        if problems:
            raise ManifestError(problems)
        return manifest
    source = manifest if isinstance(manifest, ManifestSource) else read_manifest_dir(os.fspath(manifest))
    return load_manifest(source, known_simulators=known)


def _published_at(manifest: ReleaseManifest | dict[str, Any]) -> dt.datetime:
    value = manifest.published_at if isinstance(manifest, ReleaseManifest) else manifest.get("published_at")
    return dt.datetime.fromisoformat(value) if value else timezone.now()


def release_gate_failures(release: Release) -> list[str]:
    """Why ``release`` cannot be published yet (empty when it can). Slugs only, never anchors."""
    rows = list(release.release_tasks.select_related("task").order_by("position", "task__slug"))
    no_anchor = [row.task.slug for row in rows if row.paper_value is None]
    unsigned = [row.task.slug for row in rows if row.paper_value is not None and row.anchor_signed_off_at is None]
    uncalibrated = [
        row.task.slug for row in rows if row.genre == Task.Genre.REPRODUCTION and row.faithfulness_calibrated_at is None
    ]
    failures = []
    if no_anchor:
        failures.append(f"no anchor (paper_value is null) for {', '.join(no_anchor)}")
    if unsigned:
        failures.append(f"anchor sign-off missing for {', '.join(unsigned)}")
    if uncalibrated:
        failures.append(f"faithfulness calibration missing for {', '.join(uncalibrated)}")
    return failures


# ---------------------------------------------------------------------- sync


def release_sync(
    *,
    manifest: ReleaseManifest | ManifestSource | str | os.PathLike[str] | None = None,
    path_or_manifest: ReleaseManifest | ManifestSource | str | os.PathLike[str] | None = None,
    user: Viewer | None = None,
) -> SyncResult:
    """Sync one manifest (a loaded ReleaseManifest, a source, or a directory path) into the registry.

    ``path_or_manifest`` is an alias of ``manifest``. Raises ManifestError
    listing every problem (nothing written), PermissionDenied for a user who
    is not staff.
    """
    given = manifest if manifest is not None else path_or_manifest
    if given is None:
        raise TypeError("release_sync() needs manifest= (a ReleaseManifest, a ManifestSource or a directory path)")
    actor = _actor(user)
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


def _sync(m: ReleaseManifest, actor: Viewer | None) -> SyncResult:
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
    if release is not None and release.manifest_sha256 == m.sha256:
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
            release.published_at = _published_at(m)
            release.save(update_fields=["published", "published_at"])
            _publish_task_text(release)
            changes.append("release published")
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
    spec = m.benchmark
    if benchmark is None:
        changes.append(f"benchmark {spec.slug}: created")
        return Benchmark.objects.create(
            slug=spec.slug, name=spec.name, scheme=spec.scheme, description=spec.description
        )
    changed = [name for name in ("name", "description") if getattr(benchmark, name) != getattr(spec, name)]
    if changed:
        for name in changed:
            setattr(benchmark, name, getattr(spec, name))
        benchmark.save(update_fields=changed)
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


_TASK_FIELDS = (
    "title",
    "platform",
    "direction",
    "genre",
    "mode",
    "metric_name",
    "metric_direction",
    "paper_md",
    "brief_md",
    "sandbox_dockerfile",
    "contract",
    "anchor_provenance",
)


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
    release containing it (``_publish_task_text``), and the text this manifest brings lives
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


def _publish_task_text(release: Release) -> None:
    """Copy ``release``'s text snapshot onto each Task row for which it is now the newest
    published release (by publication time), so the shared row always shows published text."""
    rows = list(release.release_tasks.select_related("task"))
    for row in rows:
        newest = (
            ReleaseTask.objects.filter(task_id=row.task_id, release__published=True)
            .order_by(F("release__published_at").desc(nulls_last=True), "-release_id")
            .values_list("release_id", flat=True)
            .first()
        )
        if newest != release.pk:
            continue
        task = row.task
        for name in _TASK_FIELDS:
            setattr(task, name, getattr(row, name))
        if row.simulator_id is not None:
            task.simulator_id = row.simulator_id
        task.save()


def _upsert_release(
    benchmark: Benchmark, release: Release | None, m: ReleaseManifest, actor: Viewer | None, changes: list[str]
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
            _clear_anchor_sign_off(row)
            notes.append("anchor sign-off cleared")
        content_moved = bool(changed & {"genre", "paper_md", "brief_md"})
        if content_moved and row.faithfulness_calibrated_at is not None:
            _clear_calibration(row)
            notes.append("faithfulness calibration cleared")
        if changed or notes:
            row.save()
            # "paper_value" is reported as "anchor" with no values: this line may be printed anywhere.
            names = {"paper_value": "anchor", "simulator_id": "simulator"}
            shown = sorted(names.get(name, name) for name in changed)
            changes.append(
                f"release task {contract.slug}: " + ", ".join([*(f"{name} changed" for name in shown), *notes])
            )


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


# --------------------------------------------------------------------- gates


_ANCHOR_EVIDENCE_FIELDS = (
    "anchor_signed_off_by",
    "anchor_signed_off_at",
    "anchor_cited_source",
    "anchor_reproduced_value",
    "anchor_tolerance",
    "anchor_sign_off_note",
)
_CALIBRATION_FIELDS = (
    "faithfulness_calibrated_by",
    "faithfulness_calibrated_at",
    "faithfulness_rubric_version",
    "faithfulness_dry_run_outcome",
)


def _clear_anchor_sign_off(row: ReleaseTask) -> None:
    """Forget a sign-off and its evidence (the anchor or metric it was given for changed)."""
    for name in _ANCHOR_EVIDENCE_FIELDS:
        setattr(row, name, "" if name in ("anchor_cited_source", "anchor_sign_off_note") else None)


def _clear_calibration(row: ReleaseTask) -> None:
    for name in _CALIBRATION_FIELDS:
        setattr(row, name, "" if name.startswith("faithfulness_rubric") or name.endswith("outcome") else None)


def anchor_within_tolerance(*, anchor: float, reproduced: float, tolerance: float) -> bool:
    """Whether the hidden reference reproduced the anchor: |reproduced - anchor| <= tolerance * |anchor|.

    The tolerance is relative (0.05 = within 5% of the anchor), so one number fits metrics
    of any scale; an anchor of 0 cannot be scored as a ratio and never gets here.
    """
    return abs(reproduced - anchor) <= tolerance * abs(anchor) + 1e-12


@transaction.atomic
def release_task_sign_off_anchor(
    *,
    release_task: ReleaseTask,
    user: Viewer | None,
    cited_source: str,
    reproduced_value: float,
    tolerance: float,
    note: str = "",
) -> ReleaseTask:
    """Record that ``user`` traced the anchor to ``cited_source`` (a table or figure of paper.md)
    and reproduced it with the hidden reference as ``reproduced_value``, within the relative
    ``tolerance`` (seed 003 "Anchor sign-off"). One task per call: every task has its own evidence.

    Idempotent: an existing sign-off is kept as it was (with its evidence). Raises
    ReleaseGateError when the evidence is missing or the reproduction is outside the
    tolerance; its messages never carry the anchor.
    """
    actor = _actor(user)
    row = ReleaseTask.objects.select_for_update().select_related("release__benchmark", "task").get(pk=release_task.pk)
    if row.anchor_signed_off_at is not None:
        return row
    slug = row.task.slug
    if row.paper_value is None:
        raise ReleaseGateError(
            f"task {slug} of {_label(row.release)} has no anchor (paper_value is null); "
            "give one in release.yaml and sync before signing off"
        )
    cited = (cited_source or "").strip()
    if not cited:
        raise ReleaseGateError(
            f"task {slug}: cited source: name the table or figure of paper.md the anchor comes from (e.g. 'Table 2')"
        )
    if len(cited) > 300:
        raise ReleaseGateError(f"task {slug}: cited source: at most 300 characters")
    if not _finite(reproduced_value):
        raise ReleaseGateError(f"task {slug}: reproduced value: expected the number the hidden reference reproduced")
    if not _finite(tolerance) or not 0 <= float(tolerance) <= 1:
        raise ReleaseGateError(f"task {slug}: tolerance: expected a relative tolerance between 0 and 1 (0.05 = 5%)")
    if not anchor_within_tolerance(anchor=row.paper_value, reproduced=float(reproduced_value), tolerance=tolerance):
        raise ReleaseGateError(
            f"task {slug}: the reproduced value is outside the tolerance of the anchor; "
            "the anchor cannot be signed off until the reference reproduces it"
        )
    row.anchor_signed_off_by = actor
    row.anchor_signed_off_at = timezone.now()
    row.anchor_cited_source = cited
    row.anchor_reproduced_value = float(reproduced_value)
    row.anchor_tolerance = float(tolerance)
    row.anchor_sign_off_note = (note or "").strip()
    row.save(update_fields=list(_ANCHOR_EVIDENCE_FIELDS))
    return row


def _finite(value: Any) -> bool:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return number == number and number not in (float("inf"), float("-inf")) and not isinstance(value, bool)


@transaction.atomic
def release_task_calibrate_faithfulness(
    *, release_task: ReleaseTask, user: Viewer | None, rubric_version: str, dry_run_outcome: str, dry_run_passed: bool
) -> ReleaseTask:
    """Record that ``user`` authored rubric ``rubric_version`` and dry-ran it (reproduction genre
    only): ``dry_run_outcome`` says what the judge concluded on the hidden reference and on a
    shortcut. A dry run that did not behave as intended (``dry_run_passed`` false) is refused.

    Idempotent: an existing calibration is kept as it was.
    """
    actor = _actor(user)
    row = ReleaseTask.objects.select_for_update().select_related("release__benchmark", "task").get(pk=release_task.pk)
    if row.faithfulness_calibrated_at is not None:
        return row
    slug = row.task.slug
    if row.genre != Task.Genre.REPRODUCTION:
        raise ReleaseGateError(f"task {slug} is open genre: the faithfulness gate applies to reproduction tasks only")
    version = (rubric_version or "").strip()
    outcome = (dry_run_outcome or "").strip()
    if not version or len(version) > 100:
        raise ReleaseGateError(f"task {slug}: rubric version: expected the rubric's version (at most 100 characters)")
    if not outcome:
        raise ReleaseGateError(
            f"task {slug}: dry-run outcome: say what the judge concluded on the reference and on a shortcut"
        )
    if not dry_run_passed:
        raise ReleaseGateError(
            f"task {slug}: the dry run did not behave as intended; fix the rubric and dry-run it again"
        )
    row.faithfulness_calibrated_by = actor
    row.faithfulness_calibrated_at = timezone.now()
    row.faithfulness_rubric_version = version
    row.faithfulness_dry_run_outcome = outcome
    row.save(update_fields=list(_CALIBRATION_FIELDS))
    return row


@transaction.atomic
def release_publish(*, release: Release, user: Viewer | None) -> Release:
    """Publish ``release`` once every human gate has passed; publishing twice is a no-op.

    ``published_at`` is the manifest's when it gives one, else now.
    """
    _actor(user)
    row = Release.objects.select_for_update().select_related("benchmark").get(pk=release.pk)
    if row.published:
        return row
    failures = release_gate_failures(row)
    if failures:
        raise ReleaseGateError(f"release {_label(row)} cannot be published: {'; '.join(failures)}")
    row.published = True
    row.published_at = _published_at(row.manifest or {})
    row.save(update_fields=["published", "published_at"])
    _publish_task_text(row)
    return row


SCRIPTED_NOTE = "scripted sign-off (a script standing in for the maintainers, e.g. the demo loader)"


@transaction.atomic
def release_sign_off_all(*, release: Release, user: Viewer | None) -> Release:
    """Pass every gate of ``release`` from each task's own manifest data, then publish if
    release.yaml asks to. For scripts that stand in for the maintainers (the demo loader):
    each task's evidence is its own (its provenance as the cited source, the anchor as the
    reproduced value with tolerance 0, rubric "scripted"), and the note says it was scripted,
    so staff can tell these from a maintainer's sign-off. The admin offers no bulk sign-off.

    Tasks without an anchor cannot be signed off, so such a release stays
    unpublished (ReleaseGateError from the publish step names them).
    """
    for row in release.release_tasks.select_related("task"):
        if row.paper_value is not None:
            release_task_sign_off_anchor(
                release_task=row,
                user=user,
                cited_source=(row.anchor_provenance or f"release.yaml of {_label(release)}")[:300],
                reproduced_value=row.paper_value,
                tolerance=0.0,
                note=SCRIPTED_NOTE,
            )
        if row.genre == Task.Genre.REPRODUCTION:
            release_task_calibrate_faithfulness(
                release_task=row,
                user=user,
                rubric_version="scripted",
                dry_run_outcome=SCRIPTED_NOTE,
                dry_run_passed=True,
            )
    fresh = Release.objects.get(pk=release.pk)
    if (fresh.manifest or {}).get("published") and not fresh.published:
        fresh = release_publish(release=fresh, user=user)
    return fresh


# ---------------------------------------------------------------------- diff


@dataclass(frozen=True)
class AnchorChange:
    slug: str
    old: float | None
    new: float | None
    old_published: bool
    new_published: bool


@dataclass
class ReleaseDiff:
    """What changed from ``old_version`` to ``new_version`` of one benchmark's release."""

    old_version: str | None
    new_version: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    anchors: list[AnchorChange] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.anchors or self.other)

    def lines(self, *, show_anchors: bool = False) -> list[str]:
        """Human-readable lines. Anchor values only with ``show_anchors`` (admins)."""
        out = [f"task added: {slug}" for slug in self.added]
        out += [f"task removed: {slug}" for slug in self.removed]
        for change in self.anchors:
            if change.old == change.new:
                state = {True: "published", False: "withheld"}
                out.append(f"anchor {state[change.old_published]} -> {state[change.new_published]}: {change.slug}")
            elif show_anchors:
                out.append(f"anchor changed: {change.slug}: {_fmt(change.old)} -> {_fmt(change.new)}")
            else:
                out.append(f"anchor changed: {change.slug}")
        out += self.other
        return out


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:g}"


def _rows(release: Release) -> dict[str, ReleaseTask]:
    return {row.task.slug: row for row in release.release_tasks.select_related("task")}


def release_diff(old: Release | None, new: Release) -> ReleaseDiff:
    """Tasks added/removed, anchors changed and per-task scoring changes between two releases."""
    diff = ReleaseDiff(old_version=old.version if old else None, new_version=new.version)
    new_rows = _rows(new)
    old_rows = _rows(old) if old else {}
    diff.added = sorted(set(new_rows) - set(old_rows))
    diff.removed = sorted(set(old_rows) - set(new_rows))
    for slug in sorted(set(new_rows) & set(old_rows)):
        before, after = old_rows[slug], new_rows[slug]
        if before.paper_value != after.paper_value or before.anchor_published != after.anchor_published:
            diff.anchors.append(
                AnchorChange(
                    slug, before.paper_value, after.paper_value, before.anchor_published, after.anchor_published
                )
            )
        if before.score_cap != after.score_cap:
            diff.other.append(f"score cap changed: {slug}: {before.score_cap:g} -> {after.score_cap:g}")
        if _penalties(before) != _penalties(after):
            diff.other.append(f"penalties changed: {slug}")
        if before.genre != after.genre or before.metric_direction != after.metric_direction:
            diff.other.append(f"genre or metric direction changed: {slug}")
    if old is not None and old.missing_task_policy != new.missing_task_policy:
        diff.other.append(f"missing_task_policy changed: {old.missing_task_policy} -> {new.missing_task_policy}")
    return diff


def _penalties(row: ReleaseTask) -> list[tuple[str, float]]:
    return sorted((p["metric"], float(p["limit"])) for p in row.penalties or [])

"""Release review gates: anchor sign-off, faithfulness calibration, publishing (seed 003's human gates).

Invariants:

* Anchor sign-off and faithfulness calibration are human gates recorded per
  ReleaseTask (who, when, with the evidence). A release is published only when
  every task's anchor is signed off and every reproduction-genre task is
  calibrated (``release_gate_failures`` is the one list of what is missing).
* Only staff (or a script, user None) may pass a gate or publish.
* Publishing copies the release's text snapshot onto each Task row it is now the
  newest published release of, so a shared Task row always shows published text.
* No message written here contains an anchor value.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.manifest import ReleaseManifest
from leaderboard.models import Benchmark, Release, ReleaseTask, ScorecardLevel, SigningKey, SigningKeyTask, Task
from leaderboard.permissions import PUBLISH_RELEASE, staff_write_actor

__all__ = [
    "BENCHMARK_TEXT_FIELDS",
    "SCRIPTED_NOTE",
    "TASK_SNAPSHOT_FIELDS",
    "ReleaseGateError",
    "anchor_within_tolerance",
    "benchmark_text_changes",
    "benchmark_text_write",
    "clear_anchor_sign_off",
    "clear_calibration",
    "publish_release_text",
    "published_at_of",
    "release_actor",
    "release_gate_failures",
    "release_judge_warnings",
    "release_label",
    "release_publish",
    "release_sign_off_all",
    "release_task_calibrate_faithfulness",
    "release_task_sign_off_anchor",
]


class ReleaseGateError(ValueError):
    """A human gate or publish step that cannot happen now; the message says why."""


def release_label(release: Release) -> str:
    return f"{release.benchmark.slug} {release.version}"


def release_actor(user: Any) -> Any:
    """The user to record, or None for a script (management command, demo loader).

    Only staff holding the release change permission pass a human gate (leaderboard.permissions).
    """
    user = staff_write_actor(user, PUBLISH_RELEASE, doing="sync, sign off or publish releases")
    return user if user is not None and user.pk is not None else None


def published_at_of(manifest: ReleaseManifest | dict[str, Any]) -> dt.datetime:
    value = manifest.published_at if isinstance(manifest, ReleaseManifest) else manifest.get("published_at")
    return dt.datetime.fromisoformat(value) if value else timezone.now()


def _level_text(xsb: str) -> str:
    """A level's text as compared for reuse: trailing blanks and empty lines do not make a level new."""
    return "\n".join(line.rstrip() for line in xsb.splitlines() if line.strip())


def played_levels_reused(*, benchmark: Benchmark, release: Release | None, levels: list[tuple[str, str]]) -> str:
    """Why a scorecard release with ``levels`` ((level id, XSB text) pairs) may not be published
    beside the other published releases of ``benchmark``, or "": it reuses a level of one of them.
    Every card there could see that level (a scout card learns the whole set, docs/schemes.md), so
    a "rotated" release carrying it would rank play from memory. Sync and publishing both ask."""
    wanted = {_level_text(xsb): level_id for level_id, xsb in levels}
    if not wanted:
        return ""
    played = ScorecardLevel.objects.filter(release__benchmark=benchmark, release__published=True)
    if release is not None:
        played = played.exclude(release=release)
    seen: dict[str, str] = {}
    for xsb, version in played.values_list("xsb", "release__version").iterator():
        level_id = wanted.get(_level_text(xsb))
        if level_id is not None:
            seen.setdefault(level_id, version)
    if not seen:
        return ""
    first = min(seen)
    return (
        f"{len(seen)} of its levels (first: {first!r}) are levels of published release "
        f"{benchmark.slug} {seen[first]}, which every card there could see; a new release needs a "
        "freshly generated set (python -m scoring.sokoban.generator --count N)"
    )


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
    # Only a scorecard release has a hidden set (its size is on the row): no query for the others.
    levels = list(release.scorecard_levels.values_list("level_id", "xsb")) if release.episode_set_size else []
    reused = played_levels_reused(benchmark=release.benchmark, release=release, levels=levels) if levels else ""
    if reused:
        failures.append(f"episode_set: {reused}")
    return failures


def release_judge_warnings(release: Release) -> list[str]:
    """Reproduction tasks of ``release`` whose calibrated rubric no unrevoked judge key signs for.

    Not a gate: a judge key may be registered after publication. But seed 003's judge is
    fail-closed (no verdict: the task scores 0), so until one is registered every run scores 0 on
    those tasks; staff are told before they publish and on the release page after.
    """
    calibrated = list(
        release.release_tasks.filter(genre=Task.Genre.REPRODUCTION, faithfulness_calibrated_at__isnull=False)
        .select_related("task")
        .order_by("position", "task__slug")
    )
    if not calibrated:
        return []
    judged = set(
        SigningKeyTask.objects.filter(
            signing_key__owner_kind=SigningKey.Owner.JUDGE,
            signing_key__revoked_at__isnull=True,
            task_id__in=[row.task_id for row in calibrated],
        ).values_list("task_id", "rubric_version")
    )
    missing = [
        f"{row.task.slug} (rubric {row.faithfulness_rubric_version})"
        for row in calibrated
        if (row.task_id, row.faithfulness_rubric_version) not in judged
    ]
    if not missing:
        return []
    return [
        f"no judge key signs for {', '.join(missing)}: the judge is fail-closed, so every run scores 0 there "
        "until a judge key is registered for that task and rubric"
    ]


TASK_SNAPSHOT_FIELDS = (
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


def publish_release_text(release: Release) -> None:
    """Copy ``release``'s text onto the rows it shares with other releases, where it is now the
    newest published release (by publication time): each Task row (its snapshot), and the
    Benchmark row (name and description, from the release's manifest). So shared rows always
    show published text: a draft's sync never writes them (leaderboard.services.release_sync)."""
    _publish_benchmark_text(release)
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
        for name in TASK_SNAPSHOT_FIELDS:
            setattr(task, name, getattr(row, name))
        if row.simulator_id is not None:
            task.simulator_id = row.simulator_id
        task.save()


# The benchmark's text a release's manifest carries (and sync or publication writes).
BENCHMARK_TEXT_FIELDS = ("name", "description")


def _publish_benchmark_text(release: Release) -> None:
    spec = (release.manifest or {}).get("benchmark") or {}
    newest = (
        Release.objects.filter(benchmark_id=release.benchmark_id, published=True)
        .order_by(F("published_at").desc(nulls_last=True), "-id")
        .values_list("id", flat=True)
        .first()
    )
    if newest != release.pk or not spec:
        return
    benchmark_text_write(release.benchmark, spec, changed=benchmark_text_changes(release.benchmark, spec))


def benchmark_text_changes(benchmark: Benchmark, spec: Mapping[str, Any]) -> list[str]:
    """Which of the benchmark's name and description ``spec`` (a manifest's) would change."""
    return [name for name in BENCHMARK_TEXT_FIELDS if name in spec and getattr(benchmark, name) != spec[name]]


def benchmark_text_write(benchmark: Benchmark, spec: Mapping[str, Any], *, changed: list[str]) -> None:
    for name in changed:
        setattr(benchmark, name, spec[name])
    if changed:
        benchmark.save(update_fields=changed)


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


def clear_anchor_sign_off(row: ReleaseTask) -> None:
    """Forget a sign-off and its evidence (the anchor or metric it was given for changed)."""
    for name in _ANCHOR_EVIDENCE_FIELDS:
        setattr(row, name, "" if name in ("anchor_cited_source", "anchor_sign_off_note") else None)


def clear_calibration(row: ReleaseTask) -> None:
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
    user: Any,
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
    actor = release_actor(user)
    row = ReleaseTask.objects.select_for_update().select_related("release__benchmark", "task").get(pk=release_task.pk)
    if row.anchor_signed_off_at is not None:
        return row
    slug = row.task.slug
    if row.paper_value is None:
        raise ReleaseGateError(
            f"task {slug} of {release_label(row.release)} has no anchor (paper_value is null); "
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
    *, release_task: ReleaseTask, user: Any, rubric_version: str, dry_run_outcome: str, dry_run_passed: bool
) -> ReleaseTask:
    """Record that ``user`` authored rubric ``rubric_version`` and dry-ran it (reproduction genre
    only): ``dry_run_outcome`` says what the judge concluded on the hidden reference and on a
    shortcut. A dry run that did not behave as intended (``dry_run_passed`` false) is refused.

    Idempotent: an existing calibration is kept as it was.
    """
    actor = release_actor(user)
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
def release_publish(*, release: Release, user: Any) -> Release:
    """Publish ``release`` once every human gate has passed; publishing twice is a no-op.

    ``published_at`` is the manifest's when it gives one, else now.
    """
    release_actor(user)
    # The benchmark row first: two drafts that share levels, published at once, must not both pass
    # the played-levels gate (each would check before the other was published).
    Benchmark.objects.select_for_update().filter(pk=release.benchmark_id).first()
    row = Release.objects.select_for_update().select_related("benchmark").get(pk=release.pk)
    if row.published:
        return row
    failures = release_gate_failures(row)
    if failures:
        raise ReleaseGateError(f"release {release_label(row)} cannot be published: {'; '.join(failures)}")
    row.published = True
    row.published_at = published_at_of(row.manifest or {})
    row.save(update_fields=["published", "published_at"])
    publish_release_text(row)
    return row


SCRIPTED_NOTE = "scripted sign-off (a script standing in for the maintainers, e.g. the demo loader)"


@transaction.atomic
def release_sign_off_all(*, release: Release, user: Any, rubric_version: str = "scripted") -> Release:
    """Pass every gate of ``release`` from each task's own manifest data, then publish if
    release.yaml asks to. For scripts that stand in for the maintainers (the demo loader):
    each task's evidence is its own (its provenance as the cited source, the anchor as the
    reproduced value with tolerance 0, rubric ``rubric_version``: the rubric its judge key is
    registered with, or no judge verdict counts), and the note says it was scripted,
    so staff can tell these from a maintainer's sign-off. The admin offers no bulk sign-off.

    Tasks without an anchor cannot be signed off, so such a release stays
    unpublished (ReleaseGateError from the publish step names them).
    """
    for row in release.release_tasks.select_related("task"):
        if row.paper_value is not None:
            release_task_sign_off_anchor(
                release_task=row,
                user=user,
                cited_source=(row.anchor_provenance or f"release.yaml of {release_label(release)}")[:300],
                reproduced_value=row.paper_value,
                tolerance=0.0,
                note=SCRIPTED_NOTE,
            )
        if row.genre == Task.Genre.REPRODUCTION:
            release_task_calibrate_faithfulness(
                release_task=row,
                user=user,
                rubric_version=rubric_version,
                dry_run_outcome=SCRIPTED_NOTE,
                dry_run_passed=True,
            )
    current = Release.objects.get(pk=release.pk)
    if (current.manifest or {}).get("published") and not current.published:
        current = release_publish(release=current, user=user)
    return current

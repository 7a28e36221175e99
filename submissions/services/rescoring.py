"""Rescoring: re-verify a release's stored bundles in bulk, dry run first.

1. ``rescore_propose`` (staff; admin action or ``manage.py rescore``) writes a Rescore and one
   RescoreItem per paper-gap run of the release, and enqueues ``submissions.tasks.compute_rescore``
   on commit.
2. ``rescore_compute`` (on the workers) re-opens each stored bundle (never deleted; the site keys
   still decrypt it), recomputes its breakdown with the release's *current* scoring inputs and the
   *current* scoring code (``scoring.gap.score_run``: the authoritative recomputation; the claim is
   not compared again, since a corrected anchor makes every old claim differ) and records before,
   after and a per-field diff on the item. Nothing on any run changes. The rescore becomes
   ``proposed`` once every item is done.
3. Staff read the diffs (admin, or the command's output) and ``rescore_apply``: each changed run's
   scores and task results are rewritten, an event is appended to its verification log (its
   level is unchanged: the evidence, the stored bundle, is the same), its intervals are recomputed
   after commit, and each changed agent version's board rows are updated. An item whose run changed since the
   proposal (another rescore, an attestation) is skipped as stale, never overwritten.

Each stage is safe to run twice: the Rescore row's state and each item's state say what is left.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from leaderboard.models import Release, ReleaseTask
from leaderboard.services.standings import standings_update_version
from submissions.models import Rescore, RescoreItem, Run, TaskResult, VerificationEvent

logger = logging.getLogger(__name__)

# Values closer than this are "unchanged" (float noise between two recomputations is not a change).
TOLERANCE = 1e-9
AGGREGATES = ("overall", "reproduction", "open", "pass_rate")


class RescoreError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _snapshot_run(run: Run) -> dict[str, Any]:
    finals = dict(run.task_results.values_list("release_task__task__slug", "final"))
    return {
        **{name: getattr(run, name) for name in AGGREGATES},
        "covered": run.covered,
        "complete": run.complete,
        "tasks": {slug: finals[slug] for slug in sorted(finals)},
    }


def _snapshot_breakdown(breakdown: dict[str, Any]) -> dict[str, Any]:
    aggregates = breakdown["aggregates"]
    return {
        **{name: aggregates[name] for name in AGGREGATES},
        "covered": aggregates["coverage"]["covered"],
        "complete": aggregates["coverage"]["complete"],
        "tasks": {slug: entry["final"] for slug, entry in sorted(breakdown["tasks"].items())},
    }


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return not math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE)
    return a != b


def snapshot_diff(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-field changes between two snapshots: [{"path", "before", "after"}], tasks as tasks.<slug>."""
    rows = [
        {"path": name, "before": before.get(name), "after": after.get(name)}
        for name in (*AGGREGATES, "covered", "complete")
        if _differs(before.get(name), after.get(name))
    ]
    tasks_before, tasks_after = before.get("tasks", {}), after.get("tasks", {})
    rows += [
        {"path": f"tasks.{slug}", "before": tasks_before.get(slug), "after": tasks_after.get(slug)}
        for slug in sorted(set(tasks_before) | set(tasks_after))
        if _differs(tasks_before.get(slug), tasks_after.get(slug))
    ]
    return rows


@transaction.atomic
def rescore_propose(*, release: Release, user: User, reason: str = "") -> Rescore:
    """Stage 1: a dry-run rescore of every paper-gap run of ``release`` (staff only)."""
    if not getattr(user, "is_staff", False):
        raise RescoreError("staff_only", "only staff can rescore a release")
    if release.benchmark.scheme != "paper_gap":
        raise RescoreError("not_paper_gap", f"release {release}: only paper-gap releases are rescored")
    open_rescore = Rescore.objects.filter(release=release).exclude(state=Rescore.State.APPLIED).first()
    if open_rescore is not None:
        raise RescoreError(
            "rescore_open",
            f"rescore {open_rescore.pk} of this release is still {open_rescore.state}; apply or delete it first",
        )
    rescore = Rescore.objects.create(release=release, created_by=user, reason=reason.strip()[:2000])
    RescoreItem.objects.bulk_create(
        RescoreItem(rescore=rescore, run_id=run_id)
        for run_id in Run.objects.filter(release=release).order_by("pk").values_list("pk", flat=True)
    )
    transaction.on_commit(lambda: _enqueue("compute_rescore", rescore.pk))
    return rescore


def _enqueue(task_name: str, rescore_id: int) -> None:
    from submissions import tasks  # tasks import the services: import late

    getattr(tasks, task_name).delay(rescore_id)


def _recompute(run: Run, spec: Any) -> dict[str, Any]:
    from scoring import gap
    from submissions.bundle.evaluate import scoring_results
    from submissions.services.verification import bundle_local_path, open_stored_bundle

    with bundle_local_path(run.submission.file.name) as path:
        bundle = open_stored_bundle(path)
    return gap.score_run(spec, scoring_results(bundle)).to_dict()


def rescore_compute(*, rescore_id: Any) -> Rescore | None:
    """Stage 2 (workers): recompute every pending item; changes nothing on any run.

    A bundle that no longer opens or scores marks its item failed (with the reason) rather than
    stopping the rescore; transient faults (database, storage I/O) propagate so the task retries,
    and a retry resumes at the first pending item."""
    from leaderboard.selectors.releases import release_spec
    from scoring.errors import ScoringError
    from submissions.bundle.errors import BundleError

    rescore = Rescore.objects.select_related("release").filter(pk=rescore_id).first()
    if rescore is None or rescore.state != Rescore.State.PROPOSING:
        return rescore
    try:
        spec = release_spec(rescore.release)
    except ScoringError as exc:
        spec, spec_error = None, str(exc)[:300]
    pending = RescoreItem.objects.filter(rescore=rescore, state=RescoreItem.State.PENDING).select_related(
        "run__submission"
    )
    for item in pending:
        run = item.run
        item.before = _snapshot_run(run)
        if spec is None:
            item.state, item.error = RescoreItem.State.FAILED, spec_error
        else:
            try:
                breakdown = _recompute(run, spec)
            except (BundleError, ScoringError) as exc:
                item.state = RescoreItem.State.FAILED
                item.error = f"{getattr(exc, 'code', 'not_scorable')}: {str(getattr(exc, 'message', exc))[:250]}"
            else:
                item.breakdown = breakdown
                item.after = _snapshot_breakdown(breakdown)
                item.diff = snapshot_diff(item.before, item.after)
                item.state = RescoreItem.State.CHANGED if item.diff else RescoreItem.State.UNCHANGED
        item.save(update_fields=["before", "after", "breakdown", "diff", "state", "error"])
    with transaction.atomic():
        locked = Rescore.objects.select_for_update().get(pk=rescore.pk)
        if (
            locked.state == Rescore.State.PROPOSING
            and not RescoreItem.objects.filter(rescore=locked, state=RescoreItem.State.PENDING).exists()
        ):
            locked.state = Rescore.State.PROPOSED
            locked.proposed_at = timezone.now()
            locked.save(update_fields=["state", "proposed_at"])
    return locked


def _write_run(run: Run, breakdown: dict[str, Any], rescore: Rescore, diff: list[dict[str, Any]]) -> None:
    aggregates = breakdown["aggregates"]
    run.overall = aggregates["overall"]
    run.reproduction = aggregates["reproduction"]
    run.open = aggregates["open"]
    run.pass_rate = aggregates["pass_rate"]
    run.covered = aggregates["coverage"]["covered"]
    run.required = aggregates["coverage"]["required"]
    run.complete = aggregates["coverage"]["complete"]
    run.breakdown = breakdown
    run.confidence = {}  # recomputed after commit from the corrected inputs
    run.save(
        update_fields=[
            "overall",
            "reproduction",
            "open",
            "pass_rate",
            "covered",
            "required",
            "complete",
            "breakdown",
            "confidence",
        ]
    )
    release_tasks = dict(ReleaseTask.objects.filter(release=run.release).values_list("task__slug", "pk"))
    existing = {result.release_task_id: result for result in TaskResult.objects.filter(run=run)}
    keep = []
    for slug, entry in breakdown["tasks"].items():
        values = {
            "measured": entry["measured"],
            "gap": entry["gap"],
            "factors": entry["penalties"],
            "factor": entry["factor"],
            "score": entry["score"],
            "final": entry["final"],
            "pass_rate": entry["pass_rate"],
        }
        result = existing.get(release_tasks[slug])
        if result is None:
            result = TaskResult.objects.create(run=run, release_task_id=release_tasks[slug], episodes=0, **values)
        else:
            TaskResult.objects.filter(pk=result.pk).update(**values)
        keep.append(result.pk)
    TaskResult.objects.filter(run=run).exclude(pk__in=keep).delete()
    changed = ", ".join(row["path"] for row in diff[:10]) + (" ..." if len(diff) > 10 else "")
    VerificationEvent.objects.create(
        run=run,
        level=run.level,
        actor=rescore.applied_by,
        method=f"rescored (rescore {rescore.pk}): recomputed from the stored bundle with the release's current inputs",
        evidence_sha256=run.submission.sha256,
        note=(f"{rescore.reason} — " if rescore.reason else "") + f"changed: {changed}",
    )


def rescore_apply(*, rescore_id: Any, user: User) -> Rescore:
    """Stage 3: write every changed item of a proposed rescore (staff only); safe to run twice."""
    from submissions.services.runs import _enqueue_confidence

    if not getattr(user, "is_staff", False):
        raise RescoreError("staff_only", "only staff can apply a rescore")
    with transaction.atomic():
        rescore = Rescore.objects.select_for_update().select_related("release").filter(pk=rescore_id).first()
        if rescore is None:
            raise RescoreError("not_found", f"rescore {rescore_id}: no such rescore")
        if rescore.state == Rescore.State.APPLIED:
            return rescore
        if rescore.state != Rescore.State.PROPOSED:
            raise RescoreError("not_proposed", f"rescore {rescore.pk} is {rescore.state}; wait for its proposal")
        rescore.applied_by = user
        items = RescoreItem.objects.filter(rescore=rescore, state=RescoreItem.State.CHANGED).select_related(
            "run__submission", "run__release"
        )
        moved_versions: set[int] = set()
        for item in items:
            run = Run.objects.select_for_update().get(pk=item.run_id)
            run.submission, run.release = item.run.submission, item.run.release
            if snapshot_diff(_snapshot_run(run), item.before):
                item.state, item.error = RescoreItem.State.FAILED, "stale: the run changed since the proposal"
                item.save(update_fields=["state", "error"])
                continue
            _write_run(run, item.breakdown, rescore, item.diff)
            moved_versions.add(run.agent_version_id)
            item.state = RescoreItem.State.APPLIED
            item.save(update_fields=["state"])
            _enqueue_confidence(run.pk)
        rescore.state = Rescore.State.APPLIED
        rescore.applied_at = timezone.now()
        rescore.save(update_fields=["state", "applied_by", "applied_at"])
        # The boards move through the incremental standings service, once per agent version changed.
        for agent_version_id in sorted(moved_versions):
            standings_update_version(release=rescore.release, agent_version_id=agent_version_id)
    return rescore


def rescore_summary(rescore: Rescore) -> dict[str, int]:
    """How many items are in each state."""
    counts = dict.fromkeys(RescoreItem.State.values, 0)
    for state in RescoreItem.objects.filter(rescore=rescore).values_list("state", flat=True):
        counts[state] += 1
    return counts

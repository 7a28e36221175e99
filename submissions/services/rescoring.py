"""Rescoring: re-verify a release's stored bundles in bulk, dry run first.

Longer than 500 lines on purpose: propose, compute and apply (in place or onto a newer
release) share the snapshot and diff format that staff review between the stages.

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

Carrying onto a newer release (``target_release``): corrected inputs are published as a new
version of the benchmark (0.5 -> 0.6), so the proposal re-verifies each stored bundle of the source
release against the *target's* spec instead: ``before`` is the run's score on the source release,
``after`` its recomputation on the target. A run that cannot be carried is marked failed with a
per-run reason (``carry_refusal``: a different required task set, a task the target dropped, a genre
the target changed, a revoked, withdrawn or hidden run, a run already carried there). Applying
creates exactly one run on the target per source run (its own submission row naming the same stored
bundle; the database's unique constraints make a second apply create nothing), records where it was
carried from, by whom and when (``Run.carried_from``, its first verification event, the item), and
updates the target's standings. The source runs and their board do not change.

Each stage is safe to run twice: the Rescore row's state and each item's state say what is left.
"""

from __future__ import annotations

import logging
import math
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard.disclosure import anchor_is_public, published_score
from leaderboard.models import Benchmark, Release, ReleaseTask, Run, TaskResult, VerificationEvent
from leaderboard.permissions import ADD_RESCORE, CHANGE_RESCORE, staff_may
from leaderboard.selectors.releases import release_spec, release_task_simulator, version_key
from leaderboard.services.declarations import run_cost_refresh
from leaderboard.services.paper_gap_standings import standings_update_version
from scoring import gap
from scoring.errors import ScoringError
from submissions.bundle.errors import BundleError
from submissions.bundle.evaluate import scoring_results
from submissions.models import Rescore, RescoreItem, Submission
from submissions.services.enqueue import enqueue_on_commit
from submissions.services.runs import (
    _enqueue_confidence,
    scoped_evaluator_keys,
    scoped_judge_keys,
    task_result_scores,
)
from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle

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


def _check_target(release: Release, target: Release) -> None:
    """A run is carried only forward, within its benchmark."""
    if target.benchmark_id != release.benchmark_id:
        raise RescoreError(
            "other_benchmark", f"release {target.version} belongs to another benchmark than release {release.version}"
        )
    if version_key(target.version) <= version_key(release.version):
        raise RescoreError(
            "target_not_newer",
            f"release {target.version} is not newer than release {release.version}; runs are carried forward only",
        )


@transaction.atomic
def rescore_propose(
    *, release: Release, user: User, reason: str = "", target_release: Release | None = None
) -> Rescore:
    """Stage 1: a dry-run rescore of every paper-gap run of ``release`` (staff only), in place or,
    with ``target_release`` (a newer version of the same benchmark), onto that release."""
    if not staff_may(user, ADD_RESCORE):
        raise RescoreError("staff_only", f"only staff with the permission {ADD_RESCORE!r} can rescore a release")
    if release.benchmark.scheme != Benchmark.Scheme.PAPER_GAP:
        raise RescoreError("not_paper_gap", f"release {release}: only paper-gap releases are rescored")
    if target_release is not None and target_release.pk == release.pk:
        target_release = None  # onto itself is the in-place rescore
    if target_release is not None:
        _check_target(release, target_release)
    open_rescore = (
        Rescore.objects.filter(release=release, target_release=target_release)
        .exclude(state=Rescore.State.APPLIED)
        .first()
    )
    if open_rescore is not None:
        onto = f" onto release {target_release.version}" if target_release is not None else ""
        raise RescoreError(
            "rescore_open",
            f"rescore {open_rescore.pk} of this release{onto} is still {open_rescore.state}; apply or delete it first",
        )
    rescore = Rescore.objects.create(
        release=release, target_release=target_release, created_by=user, reason=reason.strip()[:2000]
    )
    RescoreItem.objects.bulk_create(
        RescoreItem(rescore=rescore, run_id=run_id)
        for run_id in Run.objects.filter(release=release).order_by("pk").values_list("pk", flat=True)
    )
    rescore_enqueue(rescore=rescore)
    return rescore


def rescore_enqueue(*, rescore: Rescore) -> None:
    """Hand ``rescore``'s computation to a worker once the caller's transaction commits, and stamp
    when. A broker outage is logged and the sweeper hands it over later (``rescores_stuck_ids``;
    submissions.services.enqueue), never a 503 claiming nothing changed for a recorded proposal."""
    Rescore.objects.filter(pk=rescore.pk).update(enqueued_at=timezone.now())
    rescore_id = rescore.pk
    enqueue_on_commit(lambda: _enqueue("compute_rescore", rescore_id), what=f"rescore {rescore_id}")


def rescores_stuck_ids(*, now: Any = None) -> list[Any]:
    """Rescores still proposing whose computation was last handed over longer than
    settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS ago: the enqueue was lost (a broker outage, a
    Redis restart without persistence). A computation running that long gets a second worker,
    which only recomputes items still pending (the same values)."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS)
    return list(
        Rescore.objects.filter(state=Rescore.State.PROPOSING)
        .filter(Q(enqueued_at__lt=cutoff) | Q(enqueued_at__isnull=True, created_at__lt=cutoff))
        .order_by("pk")
        .values_list("pk", flat=True)[:RESCORE_SWEEP_BATCH]
    )


# At most this many rescores are handed back per sweep.
RESCORE_SWEEP_BATCH = 20


def _enqueue(task_name: str, rescore_id: int) -> None:
    from submissions import tasks  # tasks import the services: import late

    getattr(tasks, task_name).delay(rescore_id)


def _recompute(run: Run, spec: Any) -> dict[str, Any]:
    with bundle_local_path(run.submission.file.name) as path:
        bundle = open_stored_bundle(path)
    return gap.score_run(spec, scoring_results(bundle)).to_dict()


def _short(digest: str) -> str:
    return digest[:12] + "…"


def _off_record_refusal(run: Run) -> str:
    """Why ``run`` is off the public record and so is not carried ("code: reason"), or "": checked
    when a carry is proposed and again, on the locked run, when it is applied (a run hidden or
    withdrawn in between was carried, as a private copy no one could withdraw, restore or unhide)."""
    if run.level == Run.Level.REVOKED:
        return "revoked: the run was revoked by staff; a revoked run is not carried"
    if run.withdrawn_at is not None:
        return "withdrawn: the submitter withdrew the run"
    if run.hidden_at is not None:
        return f"hidden: hidden by staff ({run.hidden_reason or 'no reason given'})"[:300]
    return ""


def carry_refusal(
    *, run: Run, source: Release, target: Release, source_spec: gap.ReleaseSpec, target_spec: gap.ReleaseSpec
) -> str:
    """Why ``run`` (of ``source``) cannot be carried onto ``target`` ("code: reason"), or "".

    The stored bundle was made against the source's required task set: only a target that requires
    the same set, still holds each task the run has results for, and gives each the same genre can
    re-verify it without reinterpreting the evidence. Runs off the public record stay off it."""
    off_record = _off_record_refusal(run)
    if off_record:
        return off_record
    carried = Run.objects.filter(carried_from=run, release=target).values_list("pk", flat=True).first()
    if carried is not None:
        return f"already_carried: run {carried} on release {target.version} was carried from it"
    slugs = sorted(run.breakdown.get("tasks", {})) or sorted(
        run.task_results.values_list("release_task__task__slug", flat=True)
    )
    missing = [slug for slug in slugs if slug not in target_spec.tasks]
    if missing:
        return (
            f"tasks_missing: release {target.version} has no task {', '.join(missing[:5])}"
            + (" …" if len(missing) > 5 else "")
            + " that the run has results for"
        )[:300]
    if source.required_task_set_hash != target.required_task_set_hash:
        return (
            f"task_set_mismatch: release {target.version} requires another task set (required_task_set_hash "
            f"{_short(target.required_task_set_hash)}, the run was made against {source.version}'s "
            f"{_short(source.required_task_set_hash)})"
        )
    changed = [
        slug
        for slug in slugs
        if slug in source_spec.tasks and source_spec.tasks[slug].genre != target_spec.tasks[slug].genre
    ]
    if changed:
        return f"genre_changed: release {target.version} changed the genre of {', '.join(changed[:5])}"[:300]
    return ""


def rescore_compute(*, rescore_id: Any) -> Rescore | None:
    """Stage 2 (workers): recompute every pending item; changes nothing on any run.

    A bundle that no longer opens or scores marks its item failed (with the reason) rather than
    stopping the rescore; transient faults (database, storage I/O) propagate so the task retries,
    and a retry resumes at the first pending item."""

    rescore = Rescore.objects.select_related("release", "target_release").filter(pk=rescore_id).first()
    if rescore is None or rescore.state != Rescore.State.PROPOSING:
        return rescore
    target = rescore.target_release
    source_spec: gap.ReleaseSpec | None = None
    spec_error = ""
    try:
        # Carrying: the target's spec scores; the source's says what the run was made against.
        spec = release_spec(target or rescore.release)
        if target is not None:
            source_spec = release_spec(rescore.release)
    except ScoringError as exc:
        spec, spec_error = None, str(exc)[:300]
    pending = RescoreItem.objects.filter(rescore=rescore, state=RescoreItem.State.PENDING).select_related(
        "run__submission"
    )
    for item in pending:
        _compute_item(item, rescore=rescore, spec=spec, spec_error=spec_error, source_spec=source_spec)
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


def _compute_item(
    item: RescoreItem,
    *,
    rescore: Rescore,
    spec: gap.ReleaseSpec | None,
    spec_error: str,
    source_spec: gap.ReleaseSpec | None,
) -> None:
    """Recompute one item of a proposal and save it (its run is never changed here)."""
    run = item.run
    target = rescore.target_release
    item.before = _snapshot_run(run)
    refusal = ""
    if spec is not None and target is not None and source_spec is not None:
        refusal = carry_refusal(
            run=run, source=rescore.release, target=target, source_spec=source_spec, target_spec=spec
        )
    if spec is None:
        item.state, item.error = RescoreItem.State.FAILED, spec_error
    elif refusal:
        item.state, item.error = RescoreItem.State.FAILED, refusal
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


def _public_changes(diff: list[dict[str, Any]], public_tasks: set[str]) -> str:
    """The "changed:" list of the run's public log entry: only what a visitor can see change.
    A task whose anchor is withheld is left out (whether a withheld anchor changed is what
    docs/security-model.md's guarantee 7 keeps), and an aggregate is named only when its
    published two-decimal value moved (guarantee 8: that is all a visitor sees of it). Staff
    read the whole diff on the rescore's items."""
    paths = []
    for row in diff:
        path = str(row["path"])
        if path.startswith("tasks."):
            if path.removeprefix("tasks.") in public_tasks:
                paths.append(path)
        elif path in AGGREGATES:
            if published_score(row["before"]) != published_score(row["after"]):
                paths.append(path)
        else:
            paths.append(path)  # coverage: public as it is
    if not paths:
        return "no published value"
    return ", ".join(paths[:10]) + (" ..." if len(paths) > 10 else "")


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
    rows = ReleaseTask.objects.filter(release=run.release).values_list("task__slug", "pk", "anchor_published")
    release_tasks = {slug: pk for slug, pk, _ in rows}
    public_tasks = {
        slug
        for slug, _, published in rows
        if anchor_is_public(release_published=run.release.published, anchor_published=published)
    }
    existing = {result.release_task_id: result for result in TaskResult.objects.filter(run=run)}
    keep = []
    for slug, entry in breakdown["tasks"].items():
        values = task_result_scores(entry)
        result = existing.get(release_tasks[slug])
        if result is None:
            result = TaskResult.objects.create(run=run, release_task_id=release_tasks[slug], episodes=0, **values)
        else:
            TaskResult.objects.filter(pk=result.pk).update(**values)
        keep.append(result.pk)
    TaskResult.objects.filter(run=run).exclude(pk__in=keep).delete()
    changed = _public_changes(diff, public_tasks)
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
    if not staff_may(user, CHANGE_RESCORE):
        raise RescoreError("staff_only", f"only staff with the permission {CHANGE_RESCORE!r} can apply a rescore")
    with transaction.atomic():
        rescore = (
            Rescore.objects.select_for_update(of=("self",))
            .select_related("release", "target_release")
            .filter(pk=rescore_id)
            .first()
        )
        if rescore is None:
            raise RescoreError("not_found", f"rescore {rescore_id}: no such rescore")
        if rescore.state == Rescore.State.APPLIED:
            return rescore
        if rescore.state != Rescore.State.PROPOSED:
            raise RescoreError("not_proposed", f"rescore {rescore.pk} is {rescore.state}; wait for its proposal")
        rescore.applied_by = user
        if rescore.target_release is not None:
            _apply_carry(rescore)
            return rescore
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


# A carried run keeps its source's level, except "verified": that official re-run was compared
# with the source release's scores, so the carried run is attested until re-run on the target.
CARRIED_LEVEL = {Run.Level.VERIFIED: Run.Level.ATTESTED}


def carry_attestation_caps(*, source: Run, target: Release) -> list[str]:
    """Why ``source``'s signatures do not attest the run carried onto ``target`` (empty: they do).

    The carried run is recorded now, on another release, so its signers are judged as
    verification would judge them now, with its one rule for keys (``scoped_evaluator_keys`` and
    ``scoped_judge_keys``): a key revoked since counts for nothing (revocation looks forward), and a
    judge's verdict counts only under the rubric ``target``'s own faithfulness gate was calibrated
    with (seed 003), not the source release's."""
    rows = (
        ReleaseTask.objects.filter(release=target)
        .annotate(release_simulator=release_task_simulator())
        .values_list("task__slug", "release_simulator", "faithfulness_rubric_version", "faithfulness_calibrated_at")
    )
    simulators = {slug: simulator for slug, simulator, _, _ in rows}
    calibrated = {slug: rubric for slug, _, rubric, at in rows if rubric and at is not None}
    evaluators = scoped_evaluator_keys(benchmark_id=target.benchmark_id)
    judges = scoped_judge_keys(benchmark_id=target.benchmark_id, calibrated=calibrated)
    caps = []
    results = TaskResult.objects.filter(run=source).select_related("release_task__task", "signing_key", "judge_key")
    for result in results.order_by("release_task__position", "pk"):
        slug = result.release_task.task.slug
        key = result.signing_key
        if result.signature == "valid" and key is not None:
            scope = evaluators.get(key.key_id)
            if scope is None:
                caps.append(f"evaluator key {key.key_id} is revoked")
            elif not scope.covers(task=slug, simulator=simulators.get(slug, "")):
                caps.append(f"evaluator key {key.key_id} does not sign task {slug!r} there")
        judge_key = result.judge_key
        if result.faithfulness_source == "judge_signed" and judge_key is not None:
            judge = judges.get(judge_key.key_id)
            if judge is None:
                caps.append(f"judge key {judge_key.key_id} is revoked")
            elif judge.rubrics.get(slug) != result.rubric_version:
                caps.append(
                    f"judge {result.judge} signed {slug!r} under rubric {result.rubric_version!r}, "
                    f"not the rubric release {target.version} calibrated"
                )
    return list(dict.fromkeys(caps))


def _carry_run(source: Run, breakdown: dict[str, Any], rescore: Rescore) -> Run:
    """Create the run (and its submission row) on the target release; the caller holds the locks."""
    target = rescore.target_release
    assert target is not None
    origin = source.submission
    now = timezone.now()
    level = CARRIED_LEVEL.get(Run.Level(source.level), source.level)
    caps = carry_attestation_caps(source=source, target=target) if level == Run.Level.ATTESTED else []
    uncarried = f"not attested on release {target.version}: " + "; ".join(caps) if caps else ""
    if caps:
        level = Run.Level.VALIDATED
    submission = Submission(
        submitter_id=origin.submitter_id,
        kind=origin.kind,
        release=target,
        declared_benchmark_id=origin.declared_benchmark_id,
        original_name=origin.original_name,
        sha256=origin.sha256,
        size=origin.size,
        status=Submission.Status.DONE,
        verdict=Submission.Verdict.VALIDATED if caps else origin.verdict,
        results_digest=origin.results_digest,
        bundle_format=origin.bundle_format,
        is_private=origin.is_private,
        finished_at=now,
        carried_from=origin,
    )
    submission.file.name = origin.file.name  # the same stored bundle: never copied, never deleted
    submission.save()
    aggregates = breakdown["aggregates"]
    coverage = aggregates["coverage"]
    run = Run.objects.create(
        release=target,
        agent_version_id=source.agent_version_id,
        level=level,
        overall=aggregates["overall"],
        reproduction=aggregates["reproduction"],
        open=aggregates["open"],
        pass_rate=aggregates["pass_rate"],
        confidence={},  # computed after commit from the stored bundle against the target's inputs
        covered=coverage["covered"],
        required=coverage["required"],
        complete=coverage["complete"],
        runtime_seconds=source.runtime_seconds,
        tokens_in=source.tokens_in,
        tokens_out=source.tokens_out,
        effort_tier=source.effort_tier,
        breakdown=breakdown,
        is_private=source.is_private,
        carried_from=source,
    )
    submission.run = run
    submission.save(update_fields=["run"])
    release_tasks = dict(ReleaseTask.objects.filter(release=target).values_list("task__slug", "pk"))
    # What verification established per task (episodes, signatures, faithfulness) is the same
    # evidence: copied from the source run; the scores are the target's recomputation.
    evidence = {
        result.release_task.task.slug: result
        for result in TaskResult.objects.filter(run=source).select_related("release_task__task")
    }
    rows = []
    for slug, entry in breakdown["tasks"].items():
        seen = evidence.get(slug)
        rows.append(
            TaskResult(
                run=run,
                release_task_id=release_tasks[slug],
                **task_result_scores(entry),
                episodes=seen.episodes if seen else 0,
                faithful=seen.faithful if seen else None,
                signature=seen.signature if seen else "unsigned",
                signing_key_id=seen.signing_key_id if seen else None,
                faithfulness_source=seen.faithfulness_source if seen else "",
                judge=seen.judge if seen else "",
                rubric_version=seen.rubric_version if seen else "",
                judge_key_id=seen.judge_key_id if seen else None,
            )
        )
    TaskResult.objects.bulk_create(rows)
    VerificationEvent.objects.create(
        run=run,
        level=level,
        actor=rescore.applied_by,
        method=(
            f"carried over from run {source.pk} of release {rescore.release.version} (rescore {rescore.pk}): "
            f"its stored bundle recomputed with release {target.version}'s inputs"
        )[:200],
        evidence_sha256=origin.sha256,
        note=" — ".join(filter(None, [rescore.reason, uncarried])),
    )
    run_cost_refresh(run=run)
    return run


def _apply_carry(rescore: Rescore) -> None:
    """Apply a carrying rescore (inside rescore_apply's transaction, the rescore row locked)."""
    target = rescore.target_release
    assert target is not None
    items = RescoreItem.objects.filter(
        rescore=rescore, state__in=[RescoreItem.State.CHANGED, RescoreItem.State.UNCHANGED]
    ).select_related("run__submission")
    moved_versions: set[int] = set()
    for item in items:
        # The run is locked; its submission (a reverse one-to-one: the nullable side of an outer join)
        # cannot be, and is only read.
        source = Run.objects.select_for_update(of=("self",)).select_related("submission").get(pk=item.run_id)
        if snapshot_diff(_snapshot_run(source), item.before):
            item.state, item.error = RescoreItem.State.FAILED, "stale: the run changed since the proposal"
            item.save(update_fields=["state", "error"])
            continue
        off_record = _off_record_refusal(source)
        if off_record:
            item.state, item.error = RescoreItem.State.FAILED, f"stale: {off_record}"[:300]
            item.save(update_fields=["state", "error"])
            continue
        carried = Run.objects.filter(carried_from=source, release=target).first()
        if carried is None:
            carried = _carry_run(source, item.breakdown, rescore)
            moved_versions.add(carried.agent_version_id)
            _enqueue_confidence(carried.pk)
        item.state, item.carried_run = RescoreItem.State.APPLIED, carried
        item.save(update_fields=["state", "carried_run"])
    rescore.state = Rescore.State.APPLIED
    rescore.applied_at = timezone.now()
    rescore.save(update_fields=["state", "applied_by", "applied_at"])
    for agent_version_id in sorted(moved_versions):
        standings_update_version(release=target, agent_version_id=agent_version_id)


def rescore_summary(rescore: Rescore) -> dict[str, int]:
    """How many items are in each state."""
    counts = dict.fromkeys(RescoreItem.State.values, 0)
    for state in RescoreItem.objects.filter(rescore=rescore).values_list("state", flat=True):
        counts[state] += 1
    return counts

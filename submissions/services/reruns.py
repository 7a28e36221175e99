"""Official re-runs, downgrades and revocations of paper-gap runs.

``verified`` means re-run: staff record the official re-run's own results, either as a
bundle of the same format as a submission (sealed to the site key; through the admin or
``POST /api/v1/admin/runs/<id>/reruns/``) or entered in the admin as per-task values. The
server recomputes them with the same pure functions as verification
(``submissions.bundle.evaluate.evaluate_paper_gap``, ``scoring.gap.score_run``), compares
each task's final score with the submitted run's (``scoring.rerun.compare_finals``, absolute
tolerance ``RERUN_TOLERANCE``) and:

* every submitted task within tolerance -> the run becomes ``verified``;
* otherwise the re-run is recorded as disagreeing and the level does not rise.

Staff can lower any level (to attested, validated, or revoked = off every board) with a
reason. Every one of these appends a VerificationEvent; nothing is edited or deleted, and
the log is public on the run page and in the API.

Later uploads onto a verified agent version: a verified run's numbers belong to that run,
never to its agent version. A later bundle naming the same agent version is verified like
any other submission and carries its own (automatic) level; it cannot inherit
``verified`` and is shown as a separate run with its own badge (docs/scoring.md).

This module is separate from the verification pipeline (submissions.services.verification)
on purpose: it only reuses its pure recomputation and bundle-opening functions.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.files import File
from django.db import transaction

from leaderboard.models import OfficialRerun, Run, VerificationEvent
from leaderboard.permissions import CHANGE_RUN, staff_may
from leaderboard.selectors.carried import run_carried_copy_ids
from leaderboard.selectors.releases import release_spec
from leaderboard.services.paper_gap_standings import standings_update_version
from leaderboard.storable_text import NAMES, field_path, unstorable_strings
from scoring import gap
from scoring.errors import ScoringError
from scoring.rerun import DEFAULT_RERUN_TOLERANCE, compare_finals
from submissions.bundle.errors import BundleError
from submissions.bundle.evaluate import evaluate_paper_gap
from submissions.services.signing_keys import evaluator_public_keys
from submissions.services.stored_bundles import open_stored_bundle
from submissions.services.submissions import SubmissionRejected, bundle_spool

__all__ = [
    "RERUN_TOLERANCE",
    "RerunError",
    "run_level_change",
    "run_rerun_record_bundle",
    "run_rerun_record_results",
]

# Absolute tolerance on each task's final (normalised) score; see scoring.rerun.
RERUN_TOLERANCE = DEFAULT_RERUN_TOLERANCE

# Order of levels, lowest first: a change by staff may only go down.
LEVEL_ORDER: list[str] = [Run.Level.REVOKED, Run.Level.VALIDATED, Run.Level.ATTESTED, Run.Level.VERIFIED]


class RerunError(Exception):
    """A re-run or level change that cannot be recorded; ``code`` is stable, ``message`` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _staff(actor: User | None) -> Any:
    if not staff_may(actor, CHANGE_RUN):
        raise PermissionDenied(
            f"only staff members with the permission {CHANGE_RUN!r} may record re-runs or change a run's level"
        )
    return actor


def _locked(run: Run) -> Run:
    # The run's own row only (of=self): locking the joined release, benchmark and agent rows too
    # made a level change and a change of its carried copy at once a deadlock on PostgreSQL.
    locked = (
        Run.objects.select_for_update(of=("self",))
        .select_related("release__benchmark", "agent_version__agent")
        .get(pk=run.pk)
    )
    if locked.level == Run.Level.REVOKED:
        raise RerunError("run_revoked", f"run {locked.pk} is revoked; a revoked run is not re-run or re-levelled")
    return locked


def _submitted_finals(run: Run) -> dict[str, float | None]:
    return dict(run.task_results.values_list("release_task__task__slug", "final").order_by())


def _record(
    *,
    run: Run,
    actor: User | None,
    source: str,
    evidence_sha256: str,
    breakdown: dict[str, Any],
    note: str,
    bundle_path: Path | None = None,
) -> OfficialRerun:
    rerun_finals = {slug: entry.get("final") for slug, entry in (breakdown.get("tasks") or {}).items()}
    rows, confirmed = compare_finals(_submitted_finals(run), rerun_finals, tolerance=RERUN_TOLERANCE)
    measured = {slug: entry.get("measured") for slug, entry in (breakdown.get("tasks") or {}).items()}
    submitted_measured = dict(run.task_results.values_list("release_task__task__slug", "measured").order_by())
    comparison = [
        {
            **row.to_dict(),
            "submitted_measured": submitted_measured.get(row.task),
            "rerun_measured": measured.get(row.task),
        }
        for row in rows
    ]
    rerun = OfficialRerun(
        run=run,
        actor=actor,
        source=source,
        evidence_sha256=evidence_sha256,
        tolerance=RERUN_TOLERANCE,
        breakdown=breakdown,
        comparison=comparison,
        outcome=OfficialRerun.Outcome.CONFIRMED if confirmed else OfficialRerun.Outcome.DISAGREES,
        note=note.strip(),
    )
    if bundle_path is not None:
        with bundle_path.open("rb") as handle:
            rerun.bundle.save(f"{evidence_sha256}.age", File(handle), save=False)
    rerun.save()
    if confirmed:
        method = f"official re-run: every task within {RERUN_TOLERANCE:g} of the submitted final score"
        level: str = Run.Level.VERIFIED
    else:
        outside = [row.task for row in rows if row.decides and not row.within]
        method = f"official re-run disagrees on {', '.join(outside)} (tolerance {RERUN_TOLERANCE:g})"[:200]
        level = run.level  # a disagreeing re-run does not raise the level; staff may lower it
    VerificationEvent.objects.create(
        run=run, level=level, actor=actor, method=method, evidence_sha256=evidence_sha256, note=rerun.note, rerun=rerun
    )
    if level != run.level:
        run.level = level
        run.save(update_fields=["level"])
    standings_update_version(release=run.release, agent_version_id=run.agent_version_id)
    return rerun


def _spool(uploaded: Any) -> tuple[Path, str]:
    """Copy an uploaded bundle to a temporary file through the upload service's one loop
    (size limit and SHA-256 per chunk), so a re-run is refused with the same codes and words."""
    handle = tempfile.NamedTemporaryFile(prefix="podium-rerun-", suffix=".age", delete=False)  # noqa: SIM115 - kept past the block
    try:
        with handle:
            sha256, _size = bundle_spool(uploaded, handle)
    except SubmissionRejected as exc:
        Path(handle.name).unlink(missing_ok=True)
        raise RerunError(exc.code, exc.message) from None
    return Path(handle.name), sha256


@transaction.atomic
def run_rerun_record_bundle(*, run: Run, actor: User | None, bundle_file: Any, note: str = "") -> OfficialRerun:
    """Record an official re-run from a bundle of the submission format (an open binary file).

    The bundle must name the run's release and agent version, open with the site keys and
    be self-consistent (its claimed breakdown matches its recomputation). Raises RerunError
    (nothing written) or PermissionDenied for anyone but staff.
    """
    actor = _staff(actor)
    locked = _locked(run)
    path, sha256 = _spool(bundle_file)
    try:
        try:
            bundle = open_stored_bundle(path)
        except BundleError as exc:
            raise RerunError(exc.code, exc.message) from None
        manifest = bundle.manifest
        expected = (locked.release.benchmark.slug, locked.release.version)
        if (str(manifest.benchmark), str(manifest.release)) != expected:
            raise RerunError(
                "rerun_wrong_release",
                f"manifest.json: the re-run is for {manifest.benchmark} {manifest.release}; "
                f"run {locked.pk} is on {expected[0]} {expected[1]}",
            )
        agent = locked.agent_version
        if (manifest.agent.name, manifest.agent.version) != (agent.agent.name, agent.version):
            raise RerunError(
                "rerun_wrong_agent",
                f"manifest.json: the re-run is of {manifest.agent.name} {manifest.agent.version}; "
                f"run {locked.pk} is of {agent.agent.name} {agent.version}",
            )
        try:
            spec = release_spec(locked.release)
        except ScoringError as exc:
            raise RerunError("release_unscorable", str(exc)) from None
        outcome = evaluate_paper_gap(
            bundle,
            release_spec=spec,
            required_task_set_hash=locked.release.required_task_set_hash,
            signing_keys=evaluator_public_keys(),
            bootstrap_resamples=0,
        )
        if outcome.verdict == "rejected":
            raise RerunError(outcome.error_code, outcome.message)
        if outcome.verdict == "mismatch":
            raise RerunError("rerun_inconsistent", f"the re-run bundle is not self-consistent: {outcome.message}")
        return _record(
            run=locked,
            actor=actor,
            source=OfficialRerun.Source.BUNDLE,
            evidence_sha256=sha256,
            breakdown=outcome.breakdown or {},
            note=note,
            bundle_path=path,
        )
    finally:
        path.unlink(missing_ok=True)


def _entered_results(results: object, spec: gap.ReleaseSpec) -> dict[str, gap.TaskResult]:
    """Entered values -> one summary episode per task: {"measured": x, "rates": {...}, "faithful": bool}.
    ``results`` is whatever staff sent; anything but a non-empty object is refused here."""
    if not isinstance(results, Mapping) or not results:
        raise RerunError("results_invalid", "results: expected an object of task slug -> {measured, rates, faithful}")
    for path, kind, is_key in unstorable_strings(results):
        where = ".".join(filter(None, ("results", field_path(path)))) + (" (a key)" if is_key else "")
        raise RerunError("results_invalid", f"{where}: holds {NAMES[kind]}, which no text can hold; leave it out")
    out: dict[str, gap.TaskResult] = {}
    for slug, entry in results.items():
        where = f"results[{slug!r}]"
        if slug not in spec.tasks:
            raise RerunError("unknown_task", f"{where}: not a task of this run's release")
        if not isinstance(entry, Mapping):
            raise RerunError("results_invalid", f"{where}: expected an object with 'measured'")
        measured = entry.get("measured")
        if isinstance(measured, bool) or not isinstance(measured, int | float) or not math.isfinite(measured):
            raise RerunError("results_invalid", f"{where}.measured: expected a finite number")
        # Absent or null: no rates. Anything else must be the object ([] or 0 was read as {}).
        rates = entry.get("rates")
        rates = {} if rates is None else rates
        if not isinstance(rates, Mapping) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in rates.values()
        ):
            raise RerunError("results_invalid", f"{where}.rates: expected an object of metric -> finite number")
        faithful = entry.get("faithful")
        if faithful is not None and not isinstance(faithful, bool):
            raise RerunError("results_invalid", f"{where}.faithful: expected true, false or null")
        if spec.tasks[slug].genre == gap.REPRODUCTION and faithful is None:
            raise RerunError("results_invalid", f"{where}.faithful: a reproduction task needs the judge's verdict")
        episode = gap.Episode(metric=float(measured), rates={str(k): float(v) for k, v in rates.items()})
        out[str(slug)] = gap.TaskResult(episodes=[episode], faithful=faithful)
    return out


@transaction.atomic
def run_rerun_record_results(*, run: Run, actor: User | None, results: object, note: str = "") -> OfficialRerun:
    """Record an official re-run from values staff enter: per task the measured metric, the
    safety rates and (reproduction) the faithfulness verdict. Recomputed with scoring.gap."""
    actor = _staff(actor)
    locked = _locked(run)
    try:
        spec = release_spec(locked.release)
    except ScoringError as exc:
        raise RerunError("release_unscorable", str(exc)) from None
    inputs = _entered_results(results, spec)
    try:
        breakdown = gap.score_run(spec, inputs).to_dict()
    except ScoringError as exc:
        raise RerunError("results_invalid", f"results: {exc}") from None
    canonical = json.dumps(results, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return _record(
        run=locked,
        actor=actor,
        source=OfficialRerun.Source.ENTERED,
        evidence_sha256=hashlib.sha256(canonical.encode()).hexdigest(),
        breakdown=breakdown,
        note=note,
    )


@transaction.atomic
def run_level_change(*, run: Run, actor: User | None, level: str, reason: str) -> VerificationEvent:
    """Lower a run's level (attested, validated, or revoked: off every board), with a reason.

    Raises RerunError for a level that is not lower than the current one or a missing reason.
    """
    actor = _staff(actor)
    reason = (reason or "").strip()
    if not reason:
        raise RerunError("reason_missing", "reason: say why the level is lowered (it is shown on the run page)")
    if level not in LEVEL_ORDER:
        raise RerunError("level_invalid", f"level: expected one of {', '.join(LEVEL_ORDER[:-1])}, got {level!r}")
    locked = _locked(run)
    if LEVEL_ORDER.index(level) >= LEVEL_ORDER.index(locked.level):
        raise RerunError(
            "level_not_lower",
            f"level: run {locked.pk} is {locked.level}; staff may only lower it "
            "(raising to verified takes an official re-run)",
        )
    method = "revoked by staff" if level == Run.Level.REVOKED else f"downgraded by staff from {locked.level}"
    event = VerificationEvent.objects.create(run=locked, level=level, actor=actor, method=method, note=reason)
    locked.level = level
    locked.save(update_fields=["level"])
    standings_update_version(release=locked.release, agent_version_id=locked.agent_version_id)
    # Its carried copies rest on the same evidence: none stays above the level staff gave it
    # (revoked: off every board, as the form says), each with its own event naming the source.
    copies = Run.objects.select_for_update().filter(pk__in=run_carried_copy_ids(run_id=locked.pk)).order_by("pk")
    for copy in copies:
        if LEVEL_ORDER.index(level) >= LEVEL_ORDER.index(copy.level):
            continue
        VerificationEvent.objects.create(
            run=copy, level=level, actor=actor, method=f"{method} on run {locked.pk}, which it was carried from",
            note=reason,
        )  # fmt: skip
        copy.level = level
        copy.save(update_fields=["level"])
        standings_update_version(release=copy.release, agent_version_id=copy.agent_version_id)
    return event

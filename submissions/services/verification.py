"""Verifying a submission: the state machine on the Submission row.

    received --claim--> verifying --finish--> done (rejected | mismatch | validated | attested)
                            |
                            +--transient fault--> error --claim--> verifying ...

Invariants:

* A claim is its own short transaction (select_for_update): ``attempts`` is
  counted and committed *before* the bundle is touched, so a bundle that kills
  its worker (out of memory, segfault, kill -9) is still counted. Once a claim
  finds ``attempts`` at settings.PODIUM_MAX_ATTEMPTS the submission ends as
  rejected (``worker_crashed``) instead of being tried again: it never loops.
* The verdict is written in a second transaction that re-locks the row and
  re-checks it is not done yet, and the Run is created with get_or_create on the
  submission (a one-to-one): running verification twice, concurrently or after
  a worker died mid-way, writes exactly one Run and changes nothing the second
  time. A finished submission is never re-verified.
* A claim leaves alone a row another worker claimed less than
  settings.PODIUM_STUCK_AFTER_SECONDS ago (a duplicate delivery); past that
  limit its worker is presumed dead and the claim takes over (the sweeper).
* A rejected or mismatched submission writes no run rows; the stored bundle is
  never deleted.
* Transient faults (database unavailable, storage I/O) leave the row in
  ``error`` and are re-raised so the Celery task retries with backoff.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from submissions import site_keys
from submissions.models import Submission

logger = logging.getLogger(__name__)

# Faults worth retrying: the bundle is fine, the infrastructure hiccupped.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, OSError)


class VerificationRejected(Exception):
    """A bundle the server refuses, with a stable code and a human message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Verdict:
    """What verification concluded, before it is written."""

    verdict: str
    error_code: str = ""
    message: str = ""
    diff: list[Any] | None = None


# ------------------------------------------------------------------ the claim


def _claim(submission_id: Any) -> Submission | None:
    """Move the row to verifying and count the attempt; None when there is nothing to do."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            logger.warning("submission %s does not exist; nothing to verify", submission_id)
            return None
        if submission.status == Submission.Status.DONE:
            return None
        now = timezone.now()
        if submission.status == Submission.Status.VERIFYING and _recent(submission.verifying_since, now):
            # A live worker claimed it less than the stuck limit ago (a duplicate delivery):
            # leave it alone. If that worker died, the sweeper brings it back after the limit.
            logger.info("submission %s is being verified by another worker; skipped", submission.pk)
            return None
        if submission.attempts >= settings.PODIUM_MAX_ATTEMPTS:
            if submission.status == Submission.Status.ERROR:
                code = "verification_failed"
                message = (
                    f"verification was interrupted by a fault on the server {submission.attempts} times and "
                    "has been given up; the site's maintainers have been told (the bundle is kept)"
                )
            else:
                code = "worker_crashed"
                message = (
                    f"the verification worker crashed or was killed {submission.attempts} times while "
                    "processing this bundle (for example it ran out of memory); it will not be tried again"
                )
            _finish(submission, Verdict(Submission.Verdict.REJECTED, code, message), now=now)
            logger.error(
                "submission %s ended as rejected (%s) after %s attempts", submission.pk, code, submission.attempts
            )
            return None
        submission.status = Submission.Status.VERIFYING
        submission.attempts += 1
        submission.verifying_since = now
        submission.save(update_fields=["status", "attempts", "verifying_since", "updated_at"])
        return submission


def _recent(moment: Any, now: Any) -> bool:
    return moment is not None and now - moment < timedelta(seconds=settings.PODIUM_STUCK_AFTER_SECONDS)


def _finish(submission: Submission, verdict: Verdict, *, now: Any = None) -> None:
    submission.status = Submission.Status.DONE
    submission.verdict = verdict.verdict
    submission.error_code = verdict.error_code
    submission.error_message = verdict.message
    submission.diff = verdict.diff or []
    submission.finished_at = now or timezone.now()
    submission.save(
        update_fields=[
            "status",
            "verdict",
            "error_code",
            "error_message",
            "diff",
            "finished_at",
            "kind",
            "release",
            "race",
            "updated_at",
        ]
    )


# What a submitter sees while a transient fault is being retried. The fault itself is
# logged, never shown: it may name hosts, paths or internals.
RETRYING_MESSAGE = "verification was interrupted by a temporary fault on the server; it will be retried automatically"


def _mark_error(submission_id: Any, message: str = RETRYING_MESSAGE) -> None:
    """Record a transient fault; best effort (the database itself may be the fault)."""
    try:
        with transaction.atomic():
            Submission.objects.filter(pk=submission_id).exclude(status=Submission.Status.DONE).update(
                status=Submission.Status.ERROR, error_message=message[:2000], updated_at=timezone.now()
            )
    except DatabaseError:
        logger.exception("could not record the transient error of submission %s", submission_id)


# -------------------------------------------------------------- the bundle


@contextlib.contextmanager
def bundle_local_path(name: str) -> Iterator[Path]:
    """A local scratch copy of the stored bundle, read through the storage API.

    Always a copy, even from local storage: the worker never assumes the bundle sits
    in its own MEDIA_ROOT (with object storage, a worker host has none of the bundles),
    and the copy is deleted when the block ends.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    with tempfile.NamedTemporaryFile(prefix="podium-bundle-", suffix=".age") as local:
        try:
            with default_storage.open(name, "rb") as remote:
                shutil.copyfileobj(remote, local, 1024 * 1024)
        except (BotoCoreError, ClientError) as exc:
            # The object store is unreachable or refused (S3): storage I/O, so a transient
            # fault the task retries (TRANSIENT_ERRORS has OSError), like a local disk error.
            raise OSError(f"bundle storage: cannot read {name}: {type(exc).__name__}") from exc
        local.flush()
        yield Path(local.name)


def _test_delay() -> None:
    """FOR TESTS ONLY: settings.PODIUM_VERIFY_DELAY_SECONDS keeps a claimed submission in
    "verifying" for that long, so the worker-kill test can kill -9 it deterministically."""
    delay = getattr(settings, "PODIUM_VERIFY_DELAY_SECONDS", 0)
    if delay:
        time.sleep(delay)


# --------------------------------------------------------------- the service


def submission_verify(*, submission_id: Any) -> Submission | None:
    """Verify one submission end to end; safe to call any number of times.

    Returns the submission as left (None when it does not exist). Raises a
    TRANSIENT_ERRORS exception, after recording status ``error``, when the
    caller should retry.
    """
    from submissions.bundle.errors import BundleError

    submission = _claim(submission_id)
    if submission is None:
        return Submission.objects.filter(pk=submission_id).first()
    _test_delay()
    try:
        with bundle_local_path(submission.file.name) as path:
            try:
                bundle = _open_bundle(path)
            except BundleError as exc:
                return _conclude(submission, Verdict(Submission.Verdict.REJECTED, exc.code, exc.message), None)
            return _dispatch(submission, bundle)
    except TRANSIENT_ERRORS as exc:
        logger.warning("transient fault verifying submission %s: %s: %s", submission.pk, type(exc).__name__, exc)
        _mark_error(submission.pk)
        raise
    except Exception:
        # A bug of ours, not the submitter's: keep the bundle, record a neutral message
        # (never a stack trace for the user), and let the bounded attempts end it.
        logger.exception("unexpected failure verifying submission %s", submission.pk)
        _mark_error(submission.pk)
        raise


def open_stored_bundle(path: Path) -> Any:
    """Decrypt and read a stored bundle with every site key and the server's limits."""
    from submissions.bundle.bundle import open_bundle

    return open_bundle(path, site_keys.all_identities(), limits=bundle_limits())


def _open_bundle(path: Path) -> Any:
    return open_stored_bundle(path)


def bundle_limits() -> Any:
    """The archive limits the server applies: the bundle package's defaults, with the site's upload cap."""
    from submissions.bundle.archive import Limits

    return Limits(max_bundle_bytes=settings.PODIUM_MAX_BUNDLE_BYTES)


def _dispatch(submission: Submission, bundle: Any) -> Submission:
    kind = bundle.kind
    declared = submission.declared_benchmark
    if declared is not None and str(bundle.manifest.benchmark) != declared.slug:
        return _conclude(
            submission,
            Verdict(
                Submission.Verdict.REJECTED,
                "benchmark_mismatch",
                f"manifest.json: benchmark is {str(bundle.manifest.benchmark)[:64]!r}, but the bundle was uploaded "
                f"for {declared.slug!r}; upload it again naming the benchmark it is for",
            ),
            None,
        )
    if kind == Submission.Kind.PAPER_GAP:
        return _verify_paper_gap(submission, bundle)
    if kind == Submission.Kind.RACE_RUN:
        return _dispatch_scheme(submission, bundle, kind)
    return _conclude(
        submission,
        Verdict(Submission.Verdict.REJECTED, "unsupported_kind", f"manifest.json: unknown bundle kind {kind!r}"),
        None,
    )


def _verify_paper_gap(submission: Submission, bundle: Any) -> Submission:
    """Recompute a paper-gap run against its release and record the verdict (and the Run)."""
    from leaderboard.models import Release
    from leaderboard.selectors.releases import release_spec
    from scoring.errors import ScoringError
    from submissions.bundle.evaluate import evaluate_paper_gap
    from submissions.services.runs import run_record_paper_gap
    from submissions.services.signing_keys import evaluator_public_keys

    submission.kind = Submission.Kind.PAPER_GAP
    benchmark, version = bundle_release_ref(bundle)
    release = (
        Release.objects.select_related("benchmark")
        .filter(benchmark__slug=benchmark, version=version, benchmark__scheme="paper_gap")
        .first()
    )
    if release is None or not release.published:
        state = "is not published" if release is not None else "is not a paper-gap release on this site"
        return _conclude(
            submission,
            Verdict(
                Submission.Verdict.REJECTED,
                "unknown_release",
                f"manifest.json: benchmark {benchmark!r} release {version!r} {state}",
            ),
            None,
        )
    submission.release = release
    try:
        spec = release_spec(release)
    except ScoringError:
        # A published release with a task that has no anchor: ours to fix, not the submitter's.
        logger.exception("release %s cannot be scored", release.pk)
        return _conclude(
            submission,
            Verdict(
                Submission.Verdict.REJECTED,
                "release_not_scorable",
                f"release {benchmark!r} {version!r} cannot be scored on this site yet (a task has no anchor); "
                "the maintainers have been told, please resubmit later",
            ),
            None,
        )
    outcome = evaluate_paper_gap(
        bundle,
        release_spec=spec,
        required_task_set_hash=release.required_task_set_hash,
        # Keys are only consulted for a signed result: an unsigned bundle skips the query.
        signing_keys=evaluator_public_keys() if any(r.signed for r in bundle.results.values()) else {},
        # The confidence intervals are computed after commit by submissions.tasks.compute_run_confidence
        # (several times the cost of the rest of verification); run_record_paper_gap enqueues it.
        bootstrap_resamples=0,
    )
    verdict = str(outcome.verdict)
    if verdict == Submission.Verdict.REJECTED:
        return _conclude(submission, Verdict(verdict, outcome.error_code, outcome.message), None)
    if verdict == Submission.Verdict.MISMATCH:
        return _conclude(
            submission,
            Verdict(verdict, "", outcome.message or "", _jsonable_diff(outcome.diff)),
            None,
        )

    def write(locked: Submission) -> Verdict:
        run_record_paper_gap(submission=locked, release=release, outcome=outcome)
        return Verdict(verdict, "", outcome.message or "", _jsonable_diff(outcome.diff))

    return _conclude(submission, None, write)


def bundle_release_ref(bundle: Any) -> tuple[str, str]:
    """(benchmark slug, release version) a bundle's manifest names."""
    return str(bundle.manifest.benchmark), str(bundle.manifest.release)


def _jsonable_diff(diff: Any) -> list[Any]:
    """The field-by-field comparison as JSON (scoring.compare.FieldDiff or dicts)."""
    rows = []
    for entry in diff or []:
        if isinstance(entry, dict):
            rows.append(entry)
        else:
            rows.append(
                {
                    "path": entry.path,
                    "claimed": entry.claimed,
                    "recomputed": entry.recomputed,
                    "status": entry.status,
                }
            )
    return rows


def _dispatch_scheme(submission: Submission, bundle: Any, kind: str) -> Submission:
    """Race bundles are verified by the scheme's own service, under our row lock."""
    try:
        from submissions.services.races import race_run_submission_verify as verify
    except ImportError:
        return _conclude(
            submission,
            Verdict(
                Submission.Verdict.REJECTED,
                "unsupported_kind",
                f"this site does not accept {kind} bundles yet",
            ),
            None,
        )

    def write(locked: Submission) -> Verdict:
        result = verify(submission=locked, bundle=bundle)
        return _scheme_verdict(locked, result)

    return _conclude(submission, None, write)


def _scheme_verdict(submission: Submission, result: Any) -> Verdict:
    """Normalise what a scheme verifier returned (a verdict string, an outcome, or nothing)."""
    if isinstance(result, Verdict):
        return result
    if isinstance(result, str):
        return Verdict(result)
    if result is not None and hasattr(result, "verdict"):
        return Verdict(
            str(result.verdict),
            getattr(result, "error_code", "") or "",
            getattr(result, "message", "") or "",
            list(getattr(result, "diff", None) or []),
        )
    # The scheme wrote the verdict fields on the row itself.
    return Verdict(
        submission.verdict or Submission.Verdict.VALIDATED,
        submission.error_code,
        submission.error_message,
        list(submission.diff or []),
    )


def _conclude(submission: Submission, verdict: Verdict | None, write: Any) -> Submission:
    """Write the outcome under a fresh row lock, unless another run of this task got there first.

    ``write(locked)`` (optional) creates the run rows inside the same transaction and
    returns the Verdict; a BundleError it raises turns into a rejection with nothing written.
    """
    from submissions.bundle.errors import BundleError

    try:
        with transaction.atomic():
            locked = Submission.objects.select_for_update().get(pk=submission.pk)
            if locked.status == Submission.Status.DONE:
                return locked  # a concurrent run finished it: change nothing
            for field in ("kind", "release_id", "race_id"):
                if getattr(submission, field) and not getattr(locked, field):
                    setattr(locked, field, getattr(submission, field))
            if write is not None:
                # No savepoint needed: a rejection raised inside leaves this whole transaction
                # (rolled back, partial rows and all) before the handler below records it.
                verdict = write(locked)
            _finish(locked, verdict)
    except (BundleError, VerificationRejected) as exc:
        with transaction.atomic():
            locked = Submission.objects.select_for_update().get(pk=submission.pk)
            if locked.status == Submission.Status.DONE:
                return locked
            _finish(locked, Verdict(Submission.Verdict.REJECTED, exc.code, exc.message))
    logger.info("submission %s: %s %s", locked.pk, locked.verdict, locked.error_code)
    return locked


def stuck_submission_ids(*, now: Any = None) -> list[Any]:
    """Submissions that should be verifying but nobody is working on (for the beat sweeper)."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.PODIUM_STUCK_AFTER_SECONDS)
    return list(
        Submission.objects.filter(
            status__in=[Submission.Status.RECEIVED, Submission.Status.VERIFYING, Submission.Status.ERROR],
            updated_at__lt=cutoff,
        ).values_list("pk", flat=True)
    )

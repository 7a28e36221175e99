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
* Leases: a claim writes a lease on the row (``lease_owner``, the caller's
  token, and ``lease_expires_at``, settings.PODIUM_LEASE_SECONDS ahead), and a
  heartbeat thread renews it every third of that while the bundle is verified.
  A claim leaves alone a row whose lease another owner still holds (a
  duplicate delivery); once the lease has run out (the worker was killed, lost
  its database or hangs) the next claim takes over, counting an attempt. The
  same owner token reclaims its own row at once: the Celery task passes its
  task id, which a retry keeps, so the retry after a dropped database
  connection goes on where it stopped instead of waiting for the lease.
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
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
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


def _claim(submission_id: Any, owner: str = "") -> Submission | None:
    """Move the row to verifying under ``owner``'s lease (a fresh token when empty) and count the
    attempt; None when there is nothing to do (done, missing, or leased by another live owner)."""
    owner = owner or uuid.uuid4().hex
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            logger.warning("submission %s does not exist; nothing to verify", submission_id)
            return None
        if submission.status == Submission.Status.DONE:
            return None
        now = timezone.now()
        if (
            submission.status == Submission.Status.VERIFYING
            and submission.lease_owner != owner
            and lease_held(submission, now)
        ):
            # A live worker holds the lease (a duplicate delivery): leave it alone. If that worker
            # dies, its lease runs out within settings.PODIUM_LEASE_SECONDS and the sweeper brings it back.
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
        if submission.status == Submission.Status.VERIFYING and submission.lease_owner != owner:
            logger.warning("submission %s: the lease of %s ran out; taken over", submission.pk, submission.lease_owner)
        submission.status = Submission.Status.VERIFYING
        submission.attempts += 1
        submission.verifying_since = now
        submission.lease_owner = owner
        submission.lease_expires_at = now + timedelta(seconds=settings.PODIUM_LEASE_SECONDS)
        submission.save(
            update_fields=["status", "attempts", "verifying_since", "lease_owner", "lease_expires_at", "updated_at"]
        )
        return submission


def lease_held(submission: Submission, now: Any) -> bool:
    """Whether the row's lease is still running (a row from before leases: its claim time plus one lease)."""
    expires: Any = submission.lease_expires_at
    if expires is None and submission.verifying_since is not None:
        expires = submission.verifying_since + timedelta(seconds=settings.PODIUM_LEASE_SECONDS)
    return expires is not None and expires > now


class _Heartbeat:
    """Renews ``owner``'s lease on a submission every third of settings.PODIUM_LEASE_SECONDS, on
    a thread of its own, while the verification runs (used as a context manager).

    The thread touches the database only if the verification outlives one interval (most take
    milliseconds), on its own connection, closed when it stops. A renewal that fails (the
    database is down) is logged and tried again at the next beat: the lease then simply runs
    out, which is what should happen to a worker that cannot reach the database. It renews
    only while the row is still verifying under ``owner``, so a taken-over row is never claimed back.
    """

    def __init__(self, submission_id: Any, owner: str) -> None:
        self.submission_id = submission_id
        self.owner = owner
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"lease-{submission_id}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join()

    def _run(self) -> None:
        interval = settings.PODIUM_LEASE_SECONDS / 3
        try:
            while not self.stopped.wait(interval):
                try:
                    renewed = Submission.objects.filter(
                        pk=self.submission_id, status=Submission.Status.VERIFYING, lease_owner=self.owner
                    ).update(lease_expires_at=timezone.now() + timedelta(seconds=settings.PODIUM_LEASE_SECONDS))
                except DatabaseError:
                    logger.warning("could not renew the lease on submission %s", self.submission_id, exc_info=True)
                    connection.close()  # reconnect at the next beat
                    continue
                if not renewed:
                    return  # finished, or taken over: nothing left to hold
        finally:
            connection.close()  # this thread's own connection


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
    # The one place a verdict is written, so the one place it is announced (in the same
    # transaction; delivery happens after commit and can never fail or delay the verdict).
    from submissions.services.notifications import notifications_for_verdict

    notifications_for_verdict(submission=submission)


# What a submitter sees while a transient fault is being retried. The fault itself is
# logged, never shown: it may name hosts, paths or internals.
RETRYING_MESSAGE = "verification was interrupted by a temporary fault on the server; it will be retried automatically"


def _mark_error(submission_id: Any, message: str = RETRYING_MESSAGE) -> None:
    """Record a transient fault; best effort (the database itself may be the fault).

    A connection the fault left unusable (the server ended it) is closed first, so this
    write, and the retry after it, open a fresh one instead of failing on the dead one.
    """
    if not connection.in_atomic_block and not connection.is_usable():
        connection.close()
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


def submission_verify(*, submission_id: Any, lease_owner: str = "") -> Submission | None:
    """Verify one submission end to end; safe to call any number of times.

    ``lease_owner`` names the caller for the lease (the Celery task passes its task id, which
    its retries keep, so a retry reclaims its own row); a fresh token when empty. Returns the
    submission as left (None when it does not exist). Raises a TRANSIENT_ERRORS exception,
    after recording status ``error``, when the caller should retry.
    """
    owner = (lease_owner or uuid.uuid4().hex)[:64]
    submission = _claim(submission_id, owner)
    if submission is None:
        return Submission.objects.filter(pk=submission_id).first()
    with _Heartbeat(submission.pk, owner):
        return _verify_claimed(submission)


def _verify_claimed(submission: Submission) -> Submission:
    from submissions.bundle.errors import BundleError

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
        # One message whether the version is unpublished or absent (issue 11): it must not tell which exists.
        from leaderboard.selectors.releases import unknown_release_message

        return _conclude(
            submission,
            Verdict(
                Submission.Verdict.REJECTED,
                "unknown_release",
                unknown_release_message(benchmark, version, where="manifest.json"),
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
    """Submissions that should be verifying but nobody is working on (for the beat sweeper).

    Verifying rows whose lease ran out, and received or error rows untouched for
    settings.PODIUM_STUCK_AFTER_SECONDS (their task lost with the broker, or a retry lost).
    Each returned row's ``updated_at`` is touched, so a row the sweeper re-enqueued is not
    re-enqueued again by every sweep while its task waits in a queue (at most once per lease
    or stuck period): a backlog is not multiplied by the sweeper's cadence.
    """
    now = now or timezone.now()
    lease = timedelta(seconds=settings.PODIUM_LEASE_SECONDS)
    stuck = Q(
        status__in=[Submission.Status.RECEIVED, Submission.Status.ERROR],
        updated_at__lt=now - timedelta(seconds=settings.PODIUM_STUCK_AFTER_SECONDS),
    ) | Q(
        # Lease expired (or, for a row from before leases, claimed over a lease ago) and not
        # re-enqueued within the last lease period.
        Q(lease_expires_at__lt=now)
        | Q(Q(verifying_since__isnull=True) | Q(verifying_since__lt=now - lease), lease_expires_at__isnull=True),
        status=Submission.Status.VERIFYING,
        updated_at__lt=now - lease,
    )
    with transaction.atomic():
        ids = list(Submission.objects.filter(stuck).values_list("pk", flat=True))
        if ids:
            Submission.objects.filter(pk__in=ids).update(updated_at=now)
    return ids

"""Verifying a submission: the state machine on the Submission row.

Longer than 500 lines on purpose: the one verification contract (claim, lease, dispatch,
verdict) lives in one module so every scheme passes through the same transitions.

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

import datetime as dt
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from submissions.bundle.errors import BundleError
from submissions.models import Submission
from submissions.services import races, runs
from submissions.services.challenges import challenge_check, challenge_consume, results_duplicate_check
from submissions.services.notifications import notifications_for_verdict
from submissions.services.signing_keys import SigningKeysRevoked, signing_keys_revoked
from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle
from submissions.services.visibility import runs_hide_copies

if TYPE_CHECKING:
    from submissions.bundle.bundle import Bundle


logger = logging.getLogger(__name__)

# Faults worth retrying: the bundle is fine, the infrastructure hiccupped.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, OSError)


# The one rejection type, from the archive reader to the recording services.
VerificationRejected = BundleError


@dataclass(frozen=True)
class Verdict:
    """What verification concluded, before it is written."""

    verdict: str
    error_code: str = ""
    message: str = ""
    diff: list[Any] | None = None


# ------------------------------------------------------------------ the claim


def _claim(submission_id: uuid.UUID | str, owner: str = "") -> Submission | None:
    """Move the row to verifying under ``owner``'s lease (a fresh token when empty) and count the
    attempt; None when there is nothing to do (done, missing, or leased by another live owner).

    What counts towards settings.PODIUM_MAX_ATTEMPTS is a claim that may follow a crash: the
    first one, and one of a row left verifying (its worker died, or could not record why it
    stopped). A row in ``error`` recorded a transient fault itself (storage or database away):
    its retries are not counted, or an outage of seconds would reject valid bundles for good;
    they are bounded by time instead (settings.PODIUM_FAULT_GIVE_UP_SECONDS after the upload)."""
    owner = owner or uuid.uuid4().hex
    with transaction.atomic():
        # get(), not first(): one row by primary key needs no ORDER BY (first() compiles the
        # model's ordering on every verification).
        try:
            submission = Submission.objects.select_for_update().get(pk=submission_id)
        except Submission.DoesNotExist:
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
        after_fault = submission.status == Submission.Status.ERROR
        refusal = _given_up(submission, now) if after_fault else _crashed_too_often(submission)
        if refusal is not None:
            _finish(submission, refusal, now=now)
            logger.error(
                "submission %s ended as rejected (%s) after %s attempts",
                submission.pk,
                refusal.error_code,
                submission.attempts,
            )
            return None
        if submission.status == Submission.Status.VERIFYING and submission.lease_owner != owner:
            logger.warning("submission %s: the lease of %s ran out; taken over", submission.pk, submission.lease_owner)
        submission.status = Submission.Status.VERIFYING
        if not after_fault:
            submission.attempts += 1
        submission.verifying_since = now
        submission.lease_owner = owner
        submission.lease_expires_at = now + timedelta(seconds=settings.PODIUM_LEASE_SECONDS)
        submission.save(
            update_fields=["status", "attempts", "verifying_since", "lease_owner", "lease_expires_at", "updated_at"]
        )
        return submission


def _crashed_too_often(submission: Submission) -> Verdict | None:
    """``worker_crashed`` once settings.PODIUM_MAX_ATTEMPTS counted attempts ended without a word."""
    if submission.attempts < settings.PODIUM_MAX_ATTEMPTS:
        return None
    return Verdict(
        Submission.Verdict.REJECTED,
        "worker_crashed",
        f"the verification worker crashed, was killed or failed {submission.attempts} times while processing "
        "this bundle (for example it ran out of memory); it will not be tried again",
    )


def _given_up(submission: Submission, now: dt.datetime) -> Verdict | None:
    """``verification_failed`` once transient faults have kept the bundle from a verdict for
    settings.PODIUM_FAULT_GIVE_UP_SECONDS since its upload (a stored file gone for good, say)."""
    limit = settings.PODIUM_FAULT_GIVE_UP_SECONDS
    if now - submission.created_at < timedelta(seconds=limit):
        return None
    return Verdict(
        Submission.Verdict.REJECTED,
        "verification_failed",
        f"verification kept being interrupted by faults on the server for {limit / 3600:g} hours and has been "
        "given up; the bundle is kept, and the site's maintainers can queue it again",
    )


def lease_held(submission: Submission, now: dt.datetime) -> bool:
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

    def __init__(self, submission_id: uuid.UUID | str, owner: str) -> None:
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


# A verdict's message is shown on pages, in mails and webhooks; it may quote the bundle (a key,
# a claimed value), which a submitter makes as long as the upload allows: its head is kept.
MAX_VERDICT_MESSAGE_CHARS = 2000


def _storable(text: str) -> str:
    """Text any database column takes: a lone surrogate (from a bundle's bytes) is escaped, never
    a crash; at most MAX_VERDICT_MESSAGE_CHARS of it."""
    if len(text) > MAX_VERDICT_MESSAGE_CHARS:
        text = text[:MAX_VERDICT_MESSAGE_CHARS] + f"... (message cut at {MAX_VERDICT_MESSAGE_CHARS} characters)"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# The columns a verdict writes (``_finish``).
VERDICT_FIELDS = (
    "status",
    "verdict",
    "error_code",
    "error_message",
    "diff",
    "finished_at",
    "kind",
    "release",
    "race",
    "results_digest",
    "bundle_format",
    "updated_at",
)


def _finish(
    submission: Submission, verdict: Verdict, *, now: dt.datetime | None = None, save: bool = True
) -> tuple[str, ...]:
    """The one place a verdict is written (the row is locked by the caller); returns its columns.

    ``save=False`` sets them on ``submission`` without writing them: the caller hands them to a
    record step that writes them in its own UPDATE of the row, in the same transaction
    (``Scheme.record_writes_verdict``)."""
    submission.status = Submission.Status.DONE
    submission.verdict = verdict.verdict
    submission.error_code = verdict.error_code
    submission.error_message = _storable(verdict.message)
    submission.diff = verdict.diff or []
    submission.finished_at = now or timezone.now()
    if save:
        submission.save(update_fields=VERDICT_FIELDS)
    # The one place a verdict is written, so the one place it is announced (in the same
    # transaction; delivery happens after commit and can never fail or delay the verdict).

    notifications_for_verdict(submission=submission)
    return VERDICT_FIELDS


# What a submitter sees while a transient fault is being retried. The fault itself is
# logged, never shown: it may name hosts, paths or internals.
RETRYING_MESSAGE = "verification was interrupted by a temporary fault on the server; it will be retried automatically"


# How long a worker keeps trying to record a transient fault on its row: a database that is
# back within it gets the fault recorded (status error), so the retry is not counted as a crash.
MARK_ERROR_SECONDS = 10.0


def _mark_error(submission: Submission, message: str = RETRYING_MESSAGE, *, transient: bool = True) -> None:
    """Record why the attempt stopped; best effort (the database itself may be the fault),
    retried for MARK_ERROR_SECONDS: unrecorded, the row stays verifying and its retry counts as
    a crash. Only while the row is still this attempt's (its lease owner): a worker that lost
    its lease during an outage must not mark the row another worker took over.

    ``transient``: status ``error`` (retried, not counted as an attempt). Otherwise (a bug of
    ours) the lease is ended instead, so the next claim counts it like a crash and the bounded
    attempts end a bundle that fails every time.

    A connection the fault left unusable (the server ended it) is closed first, so this
    write, and the retry after it, open a fresh one instead of failing on the dead one.
    """
    now = timezone.now()
    values: dict[str, Any] = {"error_message": message[:MAX_VERDICT_MESSAGE_CHARS], "updated_at": now}
    if transient:
        values["status"] = Submission.Status.ERROR
    else:
        values["lease_expires_at"] = now
    deadline = time.monotonic() + MARK_ERROR_SECONDS
    while True:
        if not connection.in_atomic_block and not connection.is_usable():
            connection.close()
        try:
            with transaction.atomic():
                Submission.objects.filter(
                    pk=submission.pk, status=Submission.Status.VERIFYING, lease_owner=submission.lease_owner
                ).update(**values)
        except DatabaseError:
            if connection.in_atomic_block or time.monotonic() >= deadline:
                logger.exception("could not record the transient error of submission %s", submission.pk)
                return
            time.sleep(1.0)
        else:
            return


def submission_requeue(*, submission: Submission) -> bool:
    """Staff queue again a submission that ended rejected for the server's reasons
    (``verification_failed``, ``worker_crashed``): back to received with its attempts reset,
    then queued. True when it was queued; any other finished submission keeps its verdict
    (False), and one still in progress is simply queued again.

    Queued at once, not on commit, so a broker that is down is the caller's error (the staff
    page's 503): call it outside a transaction. The reset row is received whatever happens
    next, which the sweeper re-enqueues if this send is lost."""
    from submissions.tasks import verify_submission  # tasks import the services: import late

    with transaction.atomic():
        row = Submission.objects.select_for_update().get(pk=submission.pk)
        if row.status == Submission.Status.DONE:
            if row.verdict != Submission.Verdict.REJECTED or row.error_code not in SERVER_FAULT_CODES:
                return False
            row.status = Submission.Status.RECEIVED
            row.verdict = row.error_code = row.error_message = ""
            row.diff = []
            row.attempts = 0
            row.finished_at = row.verifying_since = row.lease_expires_at = None
            row.lease_owner = ""
            row.save(
                update_fields=[
                    "status",
                    "verdict",
                    "error_code",
                    "error_message",
                    "diff",
                    "attempts",
                    "finished_at",
                    "verifying_since",
                    "lease_expires_at",
                    "lease_owner",
                    "updated_at",
                ]
            )
    verify_submission.delay(str(row.pk))
    return True


# Rejections that say the server failed, not the bundle: staff may queue them again.
SERVER_FAULT_CODES = frozenset({"verification_failed", "worker_crashed"})


# -------------------------------------------------------------- the bundle


def _test_delay() -> None:
    """FOR TESTS ONLY: settings.PODIUM_VERIFY_DELAY_SECONDS keeps a claimed submission in
    "verifying" for that long, so the worker-kill test can kill -9 it deterministically."""
    delay = getattr(settings, "PODIUM_VERIFY_DELAY_SECONDS", 0)
    if delay:
        time.sleep(delay)


# --------------------------------------------------------------- the service


def submission_verify(*, submission_id: uuid.UUID | str, lease_owner: str = "") -> Submission | None:
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
        _mark_error(submission)
        raise
    except Exception:
        # A bug of ours, not the submitter's: keep the bundle, record a neutral message
        # (never a stack trace for the user), and let the bounded attempts end it.
        logger.exception("unexpected failure verifying submission %s", submission.pk)
        _mark_error(submission, transient=False)
        raise


def _open_bundle(path: Path) -> Bundle:
    return open_stored_bundle(path)


@dataclass(frozen=True)
class Scheme:
    """One scheme's half of the verification contract.

    ``load(submission=, bundle=)`` reads what the pure evaluator needs and refuses what only
    the database can tell (raising BundleError; it writes nothing). ``evaluate(bundle,
    context)`` is pure: bundle + release spec -> outcome (verdict, code, message, diff,
    recomputed values, results digest). ``record(submission=, outcome=, context=)`` writes
    the accepted run inside the verification transaction. Everything else -- the challenge,
    duplicate results, ownership errors, the verdict itself -- is this module's, once.
    A new scheme is its pure evaluator (``submissions/bundle/evaluate_<scheme>.py``) and its
    recording service (``submissions/services/<scheme>.py``) plus one line in ``schemes()``.
    """

    kind: str
    load: Any
    evaluate: Any
    record: Any
    # Whether ``record`` takes ``verdict_fields``: the verdict's columns, set on the locked row
    # by ``_finish(..., save=False)`` and written by ``record`` in the UPDATE that links the run
    # (one statement instead of two, still before the record step's standings update).
    record_writes_verdict: bool = False


def schemes() -> dict[str, Scheme]:
    """The registry of bundle kinds. Built on first use: the scheme services import models
    and scoring, which this module's importers (the Celery task module) must not pay for."""

    return {
        Submission.Kind.PAPER_GAP: Scheme(
            Submission.Kind.PAPER_GAP,
            runs.paper_gap_load,
            runs.paper_gap_evaluate,
            runs.paper_gap_record,
            record_writes_verdict=True,
        ),
        Submission.Kind.RACE_RUN: Scheme(
            Submission.Kind.RACE_RUN, races.race_run_load, races.race_run_evaluate, races.race_run_record
        ),
    }


def _dispatch(submission: Submission, bundle: Bundle) -> Submission:
    """The one dispatcher: declared benchmark, then the bundle's scheme through the contract."""
    kind = bundle.kind
    declared = submission.declared_benchmark
    if declared is not None and str(bundle.manifest.benchmark) != declared.slug:
        return _conclude(
            submission,
            Verdict(
                Submission.Verdict.REJECTED,
                "benchmark_mismatch",
                f"manifest.json: benchmark is {str(bundle.manifest.benchmark)[:64]!r}, but the bundle was uploaded "
                f"for {declared.slug!r}; seal it again (a new seal is new bytes: these are already a submission) "
                "and upload it naming the benchmark it is for",
            ),
            None,
        )
    scheme = schemes().get(kind)
    if scheme is None:
        return _conclude(
            submission,
            Verdict(Submission.Verdict.REJECTED, "unsupported_kind", f"manifest.json: unknown bundle kind {kind!r}"),
            None,
        )
    while True:  # each pass again needs a key revoked during it: there are only so many keys
        try:
            return _verify_with(scheme, submission, bundle)
        except SigningKeysRevoked as exc:
            # Nothing was written (the verdict's transaction rolled back). Reached again: the keys
            # are read anew, so the revoked ones count as unregistered.
            logger.info("submission %s: %s; verified again", submission.pk, exc)


def _verify_with(scheme: Scheme, submission: Submission, bundle: Bundle) -> Submission:
    """load -> challenge -> pure evaluate -> duplicate results -> record and verdict, in that order.

    Nothing is written before the verdict is known: a refusal at any step leaves only the
    verdict on the submission (no Agent, AgentVersion, run or challenge change).
    """
    submission.kind = scheme.kind
    submission.bundle_format = str(bundle.manifest.format)
    try:
        context = scheme.load(submission=submission, bundle=bundle)
        challenge = None
        if bundle.manifest.bound:
            agent = bundle.manifest.agent
            assert bundle.manifest.challenge is not None  # schema.parse_manifest requires it in a bound format
            challenge = challenge_check(
                token=bundle.manifest.challenge,
                user=submission.submitter,
                release=context.release,
                race=getattr(context, "race", None),
                agent_name=agent.name,
                agent_version=agent.version,
            )
    except BundleError as exc:
        return _conclude(submission, Verdict(Submission.Verdict.REJECTED, exc.code, exc.message), None)
    outcome = scheme.evaluate(bundle, context)
    verdict = str(outcome.verdict)
    if verdict == Submission.Verdict.REJECTED:
        return _conclude(submission, Verdict(verdict, outcome.error_code, outcome.message), None)
    diff = _jsonable_diff(outcome.diff)
    if verdict == Submission.Verdict.MISMATCH:

        def write_mismatch(locked: Submission) -> Verdict:
            if challenge is not None:
                challenge_consume(challenge=challenge, submission=locked)
            return Verdict(verdict, outcome.error_code, outcome.message or "", diff)

        return _conclude(submission, None, write_mismatch)

    def write(locked: Submission) -> Verdict:
        _signers_unrevoked(outcome)
        # In the verdict's transaction (serialized per digest), so two simultaneous uploads of
        # the same results cannot both pass; a refusal here rolls everything back.
        copies = results_duplicate_check(
            digest=outcome.results_digest,
            submission=locked,
            signed_unbound=outcome.signed_unbound,
            signed_digests=outcome.signed_digests,
            legacy_digest=outcome.legacy_results_digest,
            signed_bound=getattr(outcome, "signed_bound", False),
        )
        if challenge is not None:
            challenge_consume(challenge=challenge, submission=locked)
        locked.results_digest = outcome.results_digest
        accepted = Verdict(verdict, "", outcome.message or "", diff)
        # The verdict is written in the same transaction as the run (a refusal from the record
        # step rolls both back) and before the record step's standings update, which takes the
        # release's row lock: concurrent verifications of one release hold that lock only for
        # the standings themselves and the commit, not for the verdict's writes.
        if scheme.record_writes_verdict:
            # The verdict's columns go out with the run link, in the record step's one UPDATE of
            # the row (right after the run's INSERT): one statement, not two.
            scheme.record(
                submission=locked,
                outcome=outcome,
                context=context,
                verdict_fields=_finish(locked, accepted, save=False),
            )
        else:
            _finish(locked, accepted)
            scheme.record(submission=locked, outcome=outcome, context=context)
        # Earlier unbound filings of these results by other accounts: copies of this run's.
        runs_hide_copies(runs=[copy.run for copy in copies if copy.run is not None])
        return accepted

    return _conclude(submission, None, write)


def _signers_unrevoked(outcome: Any) -> None:
    """Raise SigningKeysRevoked when a key ``outcome`` counted was revoked since ``load`` read the
    keys (before the recomputation): it must not attest (or file) a run recorded after its
    revocation. Called in the verdict's transaction, which then holds the keys until it commits."""
    revoked = signing_keys_revoked(key_ids=outcome.signer_key_ids)
    if revoked:
        raise SigningKeysRevoked(revoked)


def bundle_release_ref(bundle: Bundle) -> tuple[str, str]:
    """(benchmark slug, release version) a bundle's manifest names."""
    return str(bundle.manifest.benchmark), str(bundle.manifest.release)


# A stored diff quotes the bundle's claims: bounded, since a claim may be any JSON a submitter
# wrote (a 10 MB string was stored, and shown, whole). Enough rows for every field of a large
# release; a claimed value whose JSON is longer than a number's is replaced by its head.
MAX_DIFF_ROWS = 500
MAX_DIFF_VALUE_CHARS = 200


def _jsonable_diff(diff: Any) -> list[Any]:
    """The field-by-field comparison as JSON (scoring.compare.FieldDiff or dicts), bounded."""
    rows = []
    for entry in list(diff or [])[:MAX_DIFF_ROWS]:
        if isinstance(entry, dict):
            row = dict(entry)
        else:
            row = {"path": entry.path, "claimed": entry.claimed, "recomputed": entry.recomputed, "status": entry.status}
        rows.append({key: _bounded(value) for key, value in row.items()})
    return rows


def _bounded(value: Any) -> Any:
    """``value``, or the head of its JSON text when that is longer than MAX_DIFF_VALUE_CHARS."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) <= MAX_DIFF_VALUE_CHARS:
        return value
    return text[:MAX_DIFF_VALUE_CHARS] + f"... ({len(text)} characters)"


def _locked(submission_id: uuid.UUID) -> Submission:
    """The submission row, locked (its own row only), with its submitter and the submitter's
    webhook read in the same query (two LEFT JOINs, no lock on either): every verdict needs the
    submitter (the duplicate-results check, the run's owner, the notification's email) and the
    notification needs the webhook's URL, which were two more queries and a savepoint around
    the second. Read in the verdict's transaction, as the notification read it before."""
    return (
        Submission.objects.select_for_update(of=("self",))
        .select_related("submitter", "submitter__webhook")
        .get(pk=submission_id)
    )


def _conclude(
    submission: Submission, verdict: Verdict | None, write: Callable[[Submission], Verdict] | None
) -> Submission:
    """Write the outcome under a fresh row lock, unless another run of this task got there first.

    ``write(locked)`` (optional) creates the run rows inside the same transaction and
    returns the Verdict; a BundleError it raises turns into a rejection with nothing written.
    """

    def known(locked: Submission) -> None:
        for field in ("kind", "release_id", "race_id", "bundle_format"):
            if getattr(submission, field) and not getattr(locked, field):
                setattr(locked, field, getattr(submission, field))

    try:
        with transaction.atomic():
            locked = _locked(submission.pk)
            if locked.status == Submission.Status.DONE:
                return locked  # a concurrent run finished it: change nothing
            known(locked)
            if write is not None:
                # No savepoint needed: a rejection raised inside leaves this whole transaction
                # (rolled back, partial rows and all) before the handler below records it.
                verdict = write(locked)
            if locked.status != Submission.Status.DONE:  # ``write`` may have written it already
                assert verdict is not None  # every caller passes a verdict or a writer that returns one
                _finish(locked, verdict)
    except BundleError as exc:
        with transaction.atomic():
            locked = _locked(submission.pk)
            if locked.status == Submission.Status.DONE:
                return locked
            known(locked)
            locked.results_digest = ""
            _finish(locked, Verdict(Submission.Verdict.REJECTED, exc.code, exc.message))
    logger.info("submission %s: %s %s", locked.pk, locked.verdict, locked.error_code)
    return locked


def stuck_submission_ids(*, now: dt.datetime | None = None) -> list[uuid.UUID]:
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

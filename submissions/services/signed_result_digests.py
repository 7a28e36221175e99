"""Backfill of ``SignedResultDigest`` rows for podium-bundle/1 runs accepted before they were kept.

Verification stores one row per evaluator-signed result document of an accepted podium-bundle/1
paper-gap bundle (``submissions.services.challenges.results_duplicate_check``), so each such
document is accepted once. A run accepted before submissions migration 0003 has no rows: one of
its signed files could be filed once more without being caught. ``signed_result_digests_backfill``
(``manage.py signed_result_digests backfill``) re-opens each such stored bundle with the site
keys and stores what verification would have stored:

* which submissions: the ones verification writes rows for, i.e. done and accepted (validated
  or attested), paper-gap, podium-bundle/1, not a rescore's carried copy (verification never
  sees those), with at least one result whose signature was valid when it was accepted (its
  TaskResult says so), and no row yet;
* which digests: ``submissions.bundle.evaluate.signed_result_digests``, the function whose
  parts the evaluator uses, with the registered evaluator keys verification reads today
  (``runs.scoped_evaluator_keys``), written by ``challenges.signed_result_digests_record``
  under ``challenges.results_digests_lock``, as verification does.

One transaction per submission, under its row lock, re-checking that it still has no row:
running it twice (or twice at once) stores each row once. A document already accepted for
another submission is stored all the same and reported as already duplicated (two runs rank
on the same signed result; nothing is deleted: staff decide). A submission that cannot be
backfilled is skipped with a reason code, never a traceback:

* ``bundle_missing`` (error): the stored file is gone;
* ``storage_error`` (error): the storage could not be read;
* ``cannot_decrypt`` (error): no site key opens the bundle (``site_keys check``);
* ``bundle_unreadable`` (error): the bundle opens but no longer reads (detail: its code);
* ``signature_invalid`` (error): a registered key no longer verifies a signed result;
* ``no_registered_signature``: no result's signature verifies with a registered key any more
  (its key was revoked): verification would keep no digest for it today, and a copy filed now
  is read as unsigned, as results that establish nothing;
* ``unexpected_error`` (error): a fault of ours (detail: its type), logged.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from leaderboard.models import TaskResult
from submissions.bundle.errors import BundleError
from submissions.bundle.evaluate import signed_result_digests
from submissions.bundle.schema import FORMAT_V1
from submissions.bundle.signatures import VALID
from submissions.models import SignedResultDigest, Submission
from submissions.services.challenges import results_digests_lock, signed_result_digests_record
from submissions.services.runs import scoped_evaluator_keys
from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle

logger = logging.getLogger(__name__)

BUNDLE_MISSING = "bundle_missing"
STORAGE_ERROR = "storage_error"
CANNOT_DECRYPT = "cannot_decrypt"
BUNDLE_UNREADABLE = "bundle_unreadable"
SIGNATURE_INVALID = "signature_invalid"
NO_REGISTERED_SIGNATURE = "no_registered_signature"
UNEXPECTED_ERROR = "unexpected_error"
# The skips that need the operator (the command exits non-zero): the rest are expected.
ERROR_REASONS = frozenset(
    {BUNDLE_MISSING, STORAGE_ERROR, CANNOT_DECRYPT, BUNDLE_UNREADABLE, SIGNATURE_INVALID, UNEXPECTED_ERROR}
)
# BundleError codes of a bundle no site key decrypts (submissions.bundle.envelope).
_DECRYPT_CODES = frozenset({"wrong_key"})

ACCEPTED_VERDICTS = (Submission.Verdict.VALIDATED, Submission.Verdict.ATTESTED)


@dataclass(frozen=True)
class BackfillSkip:
    submission_id: uuid.UUID
    reason: str
    detail: str = ""

    @property
    def error(self) -> bool:
        return self.reason in ERROR_REASONS


@dataclass(frozen=True)
class BackfillDuplicate:
    """One signed result document of ``submission_id`` already accepted for ``other_ids`` too."""

    submission_id: uuid.UUID
    digest: str
    other_ids: tuple[uuid.UUID, ...]


@dataclass
class BackfillReport:
    dry_run: bool
    checked: int = 0
    backfilled: int = 0  # submissions given rows (in a dry run: that would be)
    digests: int = 0  # rows written (in a dry run: that would be)
    skipped: list[BackfillSkip] = field(default_factory=list)
    duplicates: list[BackfillDuplicate] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(skip.error for skip in self.skipped)

    @property
    def duplicated_submissions(self) -> int:
        return len({duplicate.submission_id for duplicate in self.duplicates})


def backfill_candidates() -> QuerySet[Submission]:
    """The submissions verification would have stored rows for that have none, oldest first."""
    signed = TaskResult.objects.filter(run_id=OuterRef("run_id"), signature=VALID)
    return (
        Submission.objects.filter(
            status=Submission.Status.DONE,
            verdict__in=ACCEPTED_VERDICTS,
            kind=Submission.Kind.PAPER_GAP,
            bundle_format=FORMAT_V1,
            carried_from__isnull=True,
            run__isnull=False,
        )
        .filter(Exists(signed))
        .exclude(Exists(SignedResultDigest.objects.filter(submission_id=OuterRef("pk"))))
        .order_by("created_at", "pk")
    )


def _batches(batch_size: int) -> Iterator[list[Submission]]:
    """The candidates in batches, by (created_at, pk) from where the last batch ended: a backfilled
    submission leaves the candidates, a skipped one stays, so paging never re-reads either."""
    after: Submission | None = None
    while True:
        query = backfill_candidates().select_related("release")
        if after is not None:
            query = query.filter(Q(created_at__gt=after.created_at) | Q(created_at=after.created_at, pk__gt=after.pk))
        batch = list(query[:batch_size])
        if not batch:
            return
        yield batch
        after = batch[-1]


def _digests_of(submission: Submission, keys_by_benchmark: dict[int, dict[str, bytes | str]]) -> tuple[str, ...]:
    """The signed result digests of the stored bundle, as verification computes them (raises
    BundleError or OSError as opening or checking it does)."""
    assert submission.release is not None  # an accepted paper-gap submission names its release
    benchmark_id = submission.release.benchmark_id
    if benchmark_id not in keys_by_benchmark:
        public_keys: dict[str, bytes | str] = {
            key_id: key.public_key for key_id, key in scoped_evaluator_keys(benchmark_id=benchmark_id).items()
        }
        keys_by_benchmark[benchmark_id] = public_keys
    with bundle_local_path(submission.file.name) as path:
        bundle = open_stored_bundle(path)
    return signed_result_digests(bundle, keys_by_benchmark[benchmark_id])


def _skip_for(submission: Submission, exc: BaseException) -> BackfillSkip:
    if isinstance(exc, BundleError):
        if exc.code in _DECRYPT_CODES:
            return BackfillSkip(submission.pk, CANNOT_DECRYPT, exc.code)
        if exc.code == "bad_signature":
            return BackfillSkip(submission.pk, SIGNATURE_INVALID, exc.message[:200])
        return BackfillSkip(submission.pk, BUNDLE_UNREADABLE, exc.code)
    if isinstance(exc, FileNotFoundError):
        return BackfillSkip(submission.pk, BUNDLE_MISSING, submission.file.name)
    if isinstance(exc, OSError | BotoCoreError | ClientError):
        return BackfillSkip(submission.pk, STORAGE_ERROR, f"{type(exc).__name__}: {exc}"[:200])
    return BackfillSkip(submission.pk, UNEXPECTED_ERROR, type(exc).__name__)


def _store(submission_id: uuid.UUID, digests: tuple[str, ...]) -> tuple[bool, dict[str, list[uuid.UUID]]]:
    """(stored, digest -> other submissions holding it) in one transaction under the row lock;
    stored is False when the submission got its rows meanwhile (a concurrent run)."""
    with transaction.atomic():
        locked = Submission.objects.select_for_update().get(pk=submission_id)
        if SignedResultDigest.objects.filter(submission=locked).exists():
            return False, {}
        results_digests_lock(digests=digests)
        others = _holders(digests, exclude=submission_id)
        signed_result_digests_record(submission=locked, digests=digests)
    return True, others


def _holders(digests: tuple[str, ...], *, exclude: uuid.UUID) -> dict[str, list[uuid.UUID]]:
    holders: dict[str, list[uuid.UUID]] = defaultdict(list)
    rows = (
        SignedResultDigest.objects.filter(digest__in=set(digests))
        .exclude(submission_id=exclude)
        .order_by("digest", "submission__created_at", "submission_id")
        .values_list("digest", "submission_id")
    )
    for digest, holder in rows:
        if holder not in holders[digest]:
            holders[digest].append(holder)
    return holders


def _backfill_one(
    submission: Submission,
    *,
    dry_run: bool,
    keys_by_benchmark: dict[int, dict[str, bytes | str]],
) -> tuple[tuple[str, ...], dict[str, list[uuid.UUID]]] | BackfillSkip | None:
    """(digests stored, digest -> other submissions holding it), a skip, or None when a
    concurrent run stored them first."""
    try:
        if not default_storage.exists(submission.file.name):
            return BackfillSkip(submission.pk, BUNDLE_MISSING, submission.file.name)
        digests = tuple(sorted(set(_digests_of(submission, keys_by_benchmark))))
        if not digests:
            return BackfillSkip(submission.pk, NO_REGISTERED_SIGNATURE)
        if dry_run:
            return digests, _holders(digests, exclude=submission.pk)
        stored, others = _store(submission.pk, digests)
    except Exception as exc:  # one submission's fault never stops the repair of the others
        skip = _skip_for(submission, exc)
        if skip.reason == UNEXPECTED_ERROR:
            logger.exception("signed result digests: unexpected failure backfilling submission %s", submission.pk)
        return skip
    return (digests, others) if stored else None


def signed_result_digests_backfill(*, dry_run: bool = False, batch_size: int = 100) -> BackfillReport:
    """Store the missing ``SignedResultDigest`` rows of accepted podium-bundle/1 submissions (see
    the module docstring), ``batch_size`` submissions read at a time. ``dry_run`` opens and checks
    every bundle the same way and writes nothing. Never raises for one submission: each that
    cannot be backfilled is a skip in the report."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    report = BackfillReport(dry_run=dry_run)
    keys_by_benchmark: dict[int, dict[str, bytes | str]] = {}
    # A dry run stores nothing, so duplicates among the candidates themselves are found here.
    seen: dict[str, list[uuid.UUID]] = defaultdict(list)
    for batch in _batches(batch_size):
        for submission in batch:
            report.checked += 1
            outcome = _backfill_one(submission, dry_run=dry_run, keys_by_benchmark=keys_by_benchmark)
            if isinstance(outcome, BackfillSkip):
                report.skipped.append(outcome)
            if not isinstance(outcome, tuple):
                continue
            digests, others = outcome
            report.backfilled += 1
            report.digests += len(digests)
            for digest in digests:
                holders = [*others.get(digest, []), *(h for h in seen[digest] if h not in others.get(digest, []))]
                if holders:
                    report.duplicates.append(BackfillDuplicate(submission.pk, digest, tuple(holders)))
                seen[digest].append(submission.pk)
    return report

"""Receiving an uploaded bundle: the one upload service of the website and the API.

``submission_upload`` is what both upload views call (they validate the form and
delegate): limit, hash, store, count the daily quota, write the row, enqueue.
``submission_create`` is the same path without the daily quota, for the demo
loaders, benches and tests that file bundles on an account's behalf.

The upload is streamed once: each chunk is counted against the size limit and
fed to SHA-256 in the same loop (the way forklift's upload handler does it), and
spooled to a temporary file, so a large bundle is never held in memory. Only
then is it stored, under a name derived from its hash (never the client's file
name), and the Submission row written in one transaction; the verification task
is enqueued on commit, so a worker never sees a row that is not there yet.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction

from leaderboard.api_query import boolean
from leaderboard.models import Benchmark
from leaderboard.unavailable import StorageUnavailable
from submissions.models import ApiKey, Submission
from submissions.quotas import QuotaExceeded, QuotaResult, quota_consume, quota_peek, quota_refund, quota_scope

logger = logging.getLogger(__name__)

# Bytes read per loop iteration: large enough to keep the hashing loop cheap,
# small enough that memory stays flat whatever the bundle size.
UPLOAD_CHUNK_BYTES = 1024 * 1024
# Longest original file name kept for display (the model's column width).
ORIGINAL_NAME_MAX = 255


class SubmissionRejected(Exception):
    """An upload refused before it became a submission.

    ``code`` is stable (API clients switch on it); ``message`` is for people.
    """

    def __init__(self, code: str, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # The form field refused as unknown, if that is the refusal (the API names it in "fields").
        self.field = field

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    @property
    def status(self) -> int:
        """The HTTP status both upload views answer with: 413 for a bundle over the limit, 409 for a
        retry that contradicts the earlier upload, else 400."""
        return {"too_large": 413, "upload_differs": 409}.get(self.code, 400)


def _chunks(uploaded_file: Any) -> Iterator[bytes]:
    """Chunks of a Django UploadedFile, or of any binary file-like object."""
    if hasattr(uploaded_file, "chunks"):
        yield from uploaded_file.chunks(UPLOAD_CHUNK_BYTES)
        return
    while True:
        chunk = uploaded_file.read(UPLOAD_CHUNK_BYTES)
        if not chunk:
            return
        yield chunk


# The upload form's fields, on the API and on the page (which also carries its CSRF token); any
# other is refused by name: a script sending, say, ``agent`` or ``is_private`` would otherwise
# have it silently ignored, and a run it meant to keep private published.
UPLOAD_FIELDS = ("bundle", "benchmark", "private")


def upload_fields_check(counts: Mapping[str, int], *, also: Collection[str] = ()) -> None:
    """Refuse an upload form that holds a field other than UPLOAD_FIELDS (and ``also``: the
    page's CSRF token) or one of them more than once (``invalid``, naming it). ``counts``: how
    many times each field name was sent. Read as the last, "-F private=false -F private=true"
    was private and a second bundle part replaced the first without a word."""
    unknown = sorted(str(name)[:40] for name in counts if name not in UPLOAD_FIELDS and name not in also)
    if unknown:
        raise SubmissionRejected(
            "invalid", f"{unknown[0]}: unknown field; expected {', '.join(UPLOAD_FIELDS)}.", field=unknown[0]
        )
    for name in UPLOAD_FIELDS:
        if counts.get(name, 0) > 1:
            raise SubmissionRejected("invalid", f"{name}: given {counts[name]} times; send it once.")


def upload_private_flag(raw: object) -> bool:
    """The upload's ``private`` field (absent: public), read by one rule for both upload views:
    true/false, 1/0, yes/no, or refused (``invalid``). The page read only "1" as private, so a
    script sending ``private=true`` or ``yes`` to it published a run meant to stay private."""
    value = boolean(raw) if isinstance(raw, str) else None
    if value is None:
        raise SubmissionRejected("invalid", f"private: expected true or false, got {str(raw)[:20]!r}.")
    return value


def bundle_storage_name(sha256: str) -> str:
    """Content-addressed storage name: the same bytes always land at the same place."""
    return f"bundles/{sha256[:2]}/{sha256}.age"


def bundle_too_large() -> SubmissionRejected:
    """The one refusal of an oversized bundle, whoever notices first (the declared length, the
    streaming guard in front of the API, or the hashing loop below): same code, same words."""
    limit = settings.PODIUM_MAX_BUNDLE_BYTES
    mib = f" ({limit / (1024 * 1024):g} MiB)" if limit >= 1024 * 1024 else ""
    return SubmissionRejected(
        "too_large",
        f"the bundle is larger than the limit of {limit} bytes{mib}; split the run or ask the site's maintainers",
    )


def bundle_spool(uploaded_file: Any, spool: IO[bytes]) -> tuple[str, int]:
    """Copy the upload to ``spool``, returning (sha256 hex, size); enforce the size limit while reading."""
    limit = settings.PODIUM_MAX_BUNDLE_BYTES
    digest = hashlib.sha256()
    size = 0
    for chunk in _chunks(uploaded_file):
        size += len(chunk)
        if size > limit:
            # Stop reading at once: an oversized upload costs at most limit + one chunk.
            raise bundle_too_large()
        digest.update(chunk)
        spool.write(chunk)
    if size == 0:
        raise SubmissionRejected("empty_file", "the uploaded file is empty (0 bytes); expected an age-encrypted bundle")
    return digest.hexdigest(), size


def _existing(*, sha256: str, user: User) -> Submission | None:
    """The account's own earlier upload of these bytes (an identical retry), if any.

    The same bytes from another account are a new submission of theirs: verification decides
    it (a bound bundle's challenge is not theirs, an unbound one's results are held by the
    first account: ``challenge_not_yours``, ``duplicate_results``). Refusing them at upload
    let a stranger who uploaded a victim's sealed file first block the victim's own upload.
    """
    return Submission.objects.filter(sha256=sha256, submitter=user, carried_from__isnull=True).first()


def _same_upload(existing: Submission, *, benchmark: Any, is_private: bool) -> None:
    """An identical retry answers the earlier submission; a retry of the same bytes that asks for
    another benchmark or another privacy is refused (``upload_differs``): answered with the earlier
    submission, it was read as done, so a run re-sent as private stayed public."""
    differs = []
    declared = existing.declared_benchmark
    if declared is not None and declared.pk != benchmark.pk:
        differs.append(f"benchmark {declared.slug!r}")
    if existing.is_private != is_private:
        differs.append("private" if existing.is_private else "public")
    if differs:
        raise SubmissionRejected(
            "upload_differs",
            f"bundle: you already uploaded these bytes as submission {existing.pk} ({', '.join(differs)}); "
            "a retry sends the same benchmark and privacy (a public run is taken off the boards by "
            "withdrawing it on its page).",
        )


def _display_name(original_name: str, uploaded_file: Any) -> str:
    name = original_name or getattr(uploaded_file, "name", "") or ""
    # Display only: keep the last path component, never trust it as a path.
    return str(name).replace("\\", "/").rsplit("/", 1)[-1][:ORIGINAL_NAME_MAX]


def _store(name: str, spool: IO[bytes]) -> None:
    """Put the spooled bundle in the storage (local or S3) under its content name.

    Raises StorageUnavailable (answered 503 with Retry-After, nothing written to the
    database) when the storage cannot be reached: the upload is refused whole, never
    half-recorded.
    """

    try:
        if not default_storage.exists(name):
            spool.seek(0)
            stored = default_storage.save(name, File(spool, name=name))
            if stored != name:  # a concurrent upload of the same bytes won the race for the name
                default_storage.delete(stored)
    except (OSError, BotoCoreError, ClientError) as exc:
        # An outage, not a bug: one line per failed store; the traceback would add only the client's internals.
        logger.error("could not store bundle %s: %s: %s", name, type(exc).__name__, exc)  # noqa: TRY400
        raise StorageUnavailable(f"cannot store {name}") from exc


def submission_create(
    *,
    user: User,
    uploaded_file: Any,
    api_key: ApiKey | None = None,
    original_name: str = "",
    is_private: bool = False,
    declared_benchmark: Any = None,
) -> tuple[Submission, bool]:
    """Store an uploaded bundle and queue its verification, without counting a daily quota.

    Returns (submission, created). The same bytes from the same user return the
    existing submission with created=False; from another user they are a new
    submission of theirs. Raises SubmissionRejected for ``empty_file`` and
    ``too_large``. ``declared_benchmark`` is the benchmark the uploader named (and
    whose daily allowance was counted); verification rejects a bundle for another
    one with ``benchmark_mismatch``. The file is stored before the row is written: a crash in
    between leaves at worst an orphan file under its hash (reused by a retry),
    never a row without its file.
    """
    with tempfile.TemporaryFile(prefix="podium-upload-") as spool:
        sha256, size = bundle_spool(uploaded_file, spool)
        existing = _existing(sha256=sha256, user=user)
        if existing is not None:
            return existing, False
        name = bundle_storage_name(sha256)
        _store(name, spool)
    fields = {
        "submitter": user,
        "api_key": api_key,
        "original_name": _display_name(original_name, uploaded_file),
        "is_private": is_private,
        "declared_benchmark": declared_benchmark,
    }
    return _record(name=name, sha256=sha256, size=size, fields=fields)


@dataclass(frozen=True)
class UploadResult:
    """What an upload view answers with: the submission, whether it is new, and the account's
    daily quota after this upload (an identical retry counts nothing)."""

    submission: Submission
    created: bool
    quota: QuotaResult


def bundle_benchmark_check(benchmark: Any) -> None:
    """Refuse (``wrong_scheme``) a bundle or a challenge for a scorecard benchmark, before anything
    is counted: its cards are played on the server (seed 001, nothing self-reported), so a bundle
    could never be scored, and it spent the allowance that limits card openings."""
    if benchmark.scheme == Benchmark.Scheme.SCORECARD:
        raise SubmissionRejected(
            "wrong_scheme",
            f"benchmark: {benchmark.slug!r} is a scorecard benchmark; its cards are played on the server over "
            "the API (POST /api/v1/scorecards/, docs/api.md), never uploaded as bundles",
        )


def submission_upload(
    *,
    user: Any,
    api_key: ApiKey | None,
    benchmark: Any,
    file: Any,
    original_name: str = "",
    is_private: bool = False,
) -> UploadResult:
    """Receive a bundle uploaded to ``benchmark`` from the website or the API.

    One loop reads the upload: the size limit and SHA-256 are applied to each chunk
    as it is spooled. An identical retry of one's own bundle returns the existing
    submission and counts nothing. Otherwise one unit of the account's daily quota
    for the benchmark is consumed before the file is stored and given back if
    anything after it fails (or a concurrent identical upload won), so only
    accepted uploads count. Raises SubmissionRejected (``too_large``, ``empty_file``)
    and QuotaExceeded, both with nothing written.
    """
    bundle_benchmark_check(benchmark)
    scope = quota_scope(benchmark)
    limit = benchmark.daily_submission_limit
    with tempfile.TemporaryFile(prefix="podium-upload-") as spool:
        sha256, size = bundle_spool(file, spool)

        def identical_retry() -> UploadResult | None:
            """The account's own submission of these bytes, answered again for free, or None."""
            existing = _existing(sha256=sha256, user=user)
            if existing is None:
                return None
            _same_upload(existing, benchmark=benchmark, is_private=is_private)
            return UploadResult(existing, False, quota_peek(user=user, api_key=api_key, scope=scope, limit=limit))

        retry = identical_retry()
        if retry is not None:
            return retry
        try:
            quota = quota_consume(user=user, api_key=api_key, scope=scope, limit=limit)
        except QuotaExceeded:
            # Identical uploads in flight each take a unit until the losers' inserts fail: the
            # last unit may be held by the copy that has just committed, and a retry is free.
            retry = identical_retry()
            if retry is None:
                raise
            return retry
        name = bundle_storage_name(sha256)
        fields = {
            "submitter": user,
            "api_key": api_key,
            "original_name": _display_name(original_name, file),
            "is_private": is_private,
            "declared_benchmark": benchmark,
        }
        try:
            _store(name, spool)
            submission, created = _record(name=name, sha256=sha256, size=size, fields=fields)
        except BaseException:
            quota_refund(user=user, api_key=api_key, scope=scope)
            raise
    if not created:
        quota_refund(user=user, api_key=api_key, scope=scope)
        quota = quota_peek(user=user, api_key=api_key, scope=scope, limit=limit)
    return UploadResult(submission, created, quota)


def _record(*, name: str, sha256: str, size: int, fields: dict[str, Any]) -> tuple[Submission, bool]:
    """Write the Submission row of a stored bundle and enqueue its verification on commit."""
    try:
        with transaction.atomic():
            submission = Submission(sha256=sha256, size=size, **fields)
            submission.file.name = name
            submission.save()
            transaction.on_commit(lambda: _enqueue(submission.pk))
    except IntegrityError:
        # The same bytes were committed by a concurrent request between our check and insert.
        existing = _existing(sha256=sha256, user=fields["submitter"])
        if existing is None:
            raise
        return existing, False
    logger.info("submission %s received (%s bytes, sha256 %s)", submission.pk, size, sha256)
    return submission, True


def _enqueue(submission_id: Any) -> None:
    from submissions.tasks import verify_submission  # the task module imports the services

    try:
        verify_submission.delay(str(submission_id))
    except Exception:
        # The row is committed and the file stored: a broker outage must not fail the
        # upload. The beat sweeper re-enqueues submissions left in "received".
        logger.exception("could not enqueue verification of submission %s; the sweeper will", submission_id)
